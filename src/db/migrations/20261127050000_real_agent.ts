/**
 * What the real `buildkite-agent` sends and Windsock keeps:
 * - `agents`: the registration's `pid`, `machine_id`, agent `build`, `script_eval_enabled`,
 *   `ignore_in_dispatches` and `features` (JSON list); `os` becomes text, as Linux agents send
 *   the whole of `/etc/os-release` (SQLite never enforced the old 100-character length).
 * - `jobs.chunks_failed_count`: the log chunks the agent gave up sending (from its finish).
 * - `jobs.agent_header_times`: the section header times the agent reported (`header_times`),
 *   JSON `{index: unix nanoseconds}`, which take the place of the chunks' arrival times.
 */
import type { Knex } from 'knex';
import { isPostgres } from '../knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('agents', (t) => {
    t.integer('pid');
    t.string('machine_id', 255);
    t.string('build', 100);
    t.boolean('script_eval_enabled');
    t.boolean('ignore_in_dispatches');
    t.text('features');
  });
  // Postgres enforces varchar lengths; widening in place keeps the rows (SQLite's alter would rebuild the table).
  if (isPostgres(knex)) await knex.raw('alter table agents alter column os type text');
  await knex.schema.alterTable('jobs', (t) => {
    t.integer('chunks_failed_count');
    t.text('agent_header_times');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('agent_header_times');
    t.dropColumn('chunks_failed_count');
  });
  if (isPostgres(knex)) await knex.raw('alter table agents alter column os type varchar(100) using left(os, 100)');
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('features');
    t.dropColumn('ignore_in_dispatches');
    t.dropColumn('script_eval_enabled');
    t.dropColumn('build');
    t.dropColumn('machine_id');
    t.dropColumn('pid');
  });
}
