/**
 * Pausing agents (`PUT .../agents/{id}/pause`): when, by whom, why, for how long, and the time
 * the pause ends by itself (`paused_until`), which dispatch and reads compare with the clock,
 * so a pause that timed out needs no sweep to end. Stopping is a connection state (`stopping`).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.timestamp('paused_at', { useTz: true, precision: 3 });
    t.timestamp('paused_until', { useTz: true, precision: 3 });
    t.uuid('paused_by_id');
    t.string('paused_note', 1000);
    t.integer('paused_timeout_in_minutes');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('paused_at');
    t.dropColumn('paused_until');
    t.dropColumn('paused_by_id');
    t.dropColumn('paused_note');
    t.dropColumn('paused_timeout_in_minutes');
  });
}
