/**
 * A test suite's API token, sealed (src/security/secret-box.ts), beside the SHA-256 that
 * uploads are looked up by: the suites API shows the token again with `show_api_token` (the
 * docs' get, list and update), which a hash alone cannot. Suites made before this have none
 * (null), and their token cannot be shown.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('suites', (t) => {
    t.text('api_token_sealed').nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('suites', (t) => {
    t.dropColumn('api_token_sealed');
  });
}
