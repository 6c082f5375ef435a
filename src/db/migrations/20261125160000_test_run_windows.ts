/**
 * Indexes for the Test Engine's windowed reads. A suite's tests over a time window start from
 * the suite's runs that took an upload in it (`updated_at`, the last upload, at or after the
 * window's start); a build's tests and a build's `test_engine` find the runs whose key is the
 * build's UUID, across the organization's suites; the legacy list of a suite's tests is newest
 * first.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('test_runs', (t) => {
    t.index(['suite_id', 'updated_at'], 'test_runs_suite_id_updated_at_index');
    t.index(['run_key'], 'test_runs_run_key_index');
  });
  await knex.schema.alterTable('tests', (t) => {
    t.index(['suite_id', 'created_at'], 'tests_suite_id_created_at_index');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tests', (t) => {
    t.dropIndex(['suite_id', 'created_at'], 'tests_suite_id_created_at_index');
  });
  await knex.schema.alterTable('test_runs', (t) => {
    t.dropIndex(['suite_id', 'updated_at'], 'test_runs_suite_id_updated_at_index');
    t.dropIndex(['run_key'], 'test_runs_run_key_index');
  });
}
