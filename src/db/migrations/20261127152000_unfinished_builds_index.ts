/**
 * The builds the state machine may still move (scheduled, running, failing, canceling; `creating`
 * is never set but is not finished either), indexed by age: every sweep of every server process
 * looks among them for a build whose last job ended without the machine running after it (the
 * process died between the two), which is a handful of rows however many builds there are.
 * Partial, so finished builds (nearly all of them) cost the index nothing.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create index builds_unfinished_index on builds (created_at) where state in ('scheduled', 'running', 'failing', 'canceling', 'creating')`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index builds_unfinished_index');
}
