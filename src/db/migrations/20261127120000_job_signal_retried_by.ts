/**
 * Two fields of the documented job (issue 30): `signal`, the name of the signal that stopped the
 * job's process as the agent reports it on finish (`SIGTERM`), and `retried_by`, the user who
 * retried the job, kept as a snapshot like `unblocked_by` (id, name, email, created_at as JSON),
 * null for a job not retried or retried automatically. Existing jobs get null for both.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.string('signal', 50);
    t.text('retried_by');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('signal');
    t.dropColumn('retried_by');
  });
}
