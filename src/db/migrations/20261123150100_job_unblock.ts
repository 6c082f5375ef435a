/**
 * Who unblocked a block step, and when. A snapshot of the user as the job shows it, so reading
 * a build's jobs needs no join. Its own migration: 20261123150000_agents had already landed.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.text('unblocked_by');
    t.timestamp('unblocked_at', { useTz: true, precision: 3 });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('unblocked_by');
    t.dropColumn('unblocked_at');
  });
}
