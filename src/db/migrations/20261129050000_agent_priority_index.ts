/**
 * Dispatch reads, at a poll that has jobs to offer, the idle connected agents of the
 * organization with a higher priority than the polling agent's (agents with one are assigned
 * work first: src/builds/jobs/agent-work.ts). A partial index over exactly those rows that
 * have a priority: an organization whose agents set none answers from an empty range.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(
    `create index agents_idle_priority_index on agents (organization_id, priority) where connection_state = 'connected' and job_id is null and priority is not null`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index agents_idle_priority_index');
}
