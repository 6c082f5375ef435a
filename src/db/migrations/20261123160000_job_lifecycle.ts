/**
 * What jobs that end without a normal finish record: why the agent stopped the process
 * (`signal_reason`, e.g. `cancel`, `timeout`) and when a job nobody took expired. The sweeper
 * looks for agents whose heartbeat stopped: an index on (connection_state, last_heartbeat_at).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.string('signal_reason', 255);
    t.timestamp('expired_at', { useTz: true, precision: 3 });
  });
  await knex.schema.alterTable('agents', (t) => {
    t.index(['connection_state', 'last_heartbeat_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.dropIndex(['connection_state', 'last_heartbeat_at']);
  });
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('signal_reason');
    t.dropColumn('expired_at');
  });
}
