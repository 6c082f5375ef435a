/**
 * Who unblocked a block step, and when. A snapshot of the user as the job shows it, so reading
 * a build's jobs needs no join. Its own migration: 20261123150000_agents had already landed
 * without these columns. For a while main's copy of that migration added them too, so a
 * database migrated then has them already: each is added only where it is missing.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const hasBy = await knex.schema.hasColumn('jobs', 'unblocked_by');
  const hasAt = await knex.schema.hasColumn('jobs', 'unblocked_at');
  if (hasBy && hasAt) return;
  await knex.schema.alterTable('jobs', (t) => {
    if (!hasBy) t.text('unblocked_by');
    if (!hasAt) t.timestamp('unblocked_at', { useTz: true, precision: 3 });
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('unblocked_by');
    t.dropColumn('unblocked_at');
  });
}
