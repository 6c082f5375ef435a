/**
 * Indexes for the sweeper and for agents' polls, which otherwise read every running job: a
 * ping finds the job its agent holds by `agent_id` (no index on that foreign key before), and
 * the timeout rule looks only at running jobs that have a timeout, oldest start first (a
 * partial index of the jobs that have one: same syntax on SQLite and Postgres).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.index(['agent_id']);
  });
  await knex.raw(`create index jobs_state_started_at_timed_index on jobs (state, started_at) where timeout_in_minutes is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index jobs_state_started_at_timed_index');
  await knex.schema.alterTable('jobs', (t) => {
    t.dropIndex(['agent_id']);
  });
}
