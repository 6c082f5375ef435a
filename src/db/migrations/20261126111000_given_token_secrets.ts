/**
 * Tokens whose secret is given rather than issued (WINDSOCK_ADMIN_TOKEN, fixture tokens): only
 * the SHA-256 of the secret is stored (`secret_hash`, unique, null for issued JWTs), and a bearer
 * that is not a JWT is looked up by it. `installation_admin` marks the one token the first start
 * made, so "the admin token" (compared with WINDSOCK_ADMIN_TOKEN on a restart, required by the
 * test-control endpoints) is well defined.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('access_tokens', (t) => {
    t.string('secret_hash', 64);
    t.boolean('installation_admin').notNullable().defaultTo(false);
  });
  await knex.schema.alterTable('access_tokens', (t) => {
    t.unique(['secret_hash'], { indexName: 'access_tokens_secret_hash_unique' });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('access_tokens', (t) => {
    t.dropUnique(['secret_hash'], 'access_tokens_secret_hash_unique');
  });
  await knex.schema.alterTable('access_tokens', (t) => {
    t.dropColumn('installation_admin');
    t.dropColumn('secret_hash');
  });
}
