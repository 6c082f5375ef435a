/**
 * Promised job failure (the docs' "Promise job failure", `buildkite-agent job promise-failure`):
 * the non-zero exit status a running job declared it will finish with, and when. Both null
 * until it declares one; the REST API shows them only then.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.integer('promised_exit_status');
    t.timestamp('promised_exit_status_at', { useTz: true, precision: 3 });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('promised_exit_status');
    t.dropColumn('promised_exit_status_at');
  });
}
