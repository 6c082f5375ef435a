/**
 * Test Engine: suites (with their team grants), runs, tests, executions, and the two tables
 * that make flaky detection an ingestion-time job: per (test, commit) pass/fail flags, and one
 * row per flaky instance (a commit on which the test both passed and failed), so that the
 * flaky list is an index range scan rather than a scan of execution history.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });

  await knex.schema.createTable('suites', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('slug', 100).notNullable();
    t.string('name', 255).notNullable();
    t.string('default_branch', 255);
    t.string('application_name', 255);
    t.string('color', 50);
    t.string('emoji', 100);
    // SHA-256 of the upload API token: the token is random and shown once, so a fast hash is
    // enough, and it is what uploads are looked up by.
    t.string('api_token_hash', 64).notNullable().unique();
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    t.unique(['organization_id', 'slug']);
    t.index(['organization_id', 'created_at']);
  });

  await knex.schema.createTable('suite_teams', (t) => {
    t.uuid('suite_id').notNullable().references('suites.id').onDelete('CASCADE');
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.primary(['suite_id', 'team_id']);
    t.index(['team_id']);
  });

  await knex.schema.createTable('test_runs', (t) => {
    t.uuid('id').primary();
    t.uuid('suite_id').notNullable().references('suites.id').onDelete('CASCADE');
    t.string('run_key', 255).notNullable();
    t.string('ci', 100);
    t.string('branch', 255);
    t.string('commit_sha', 255);
    t.string('number', 100);
    t.string('job_id', 255);
    t.text('message');
    t.string('url', 2000);
    t.string('collector', 255);
    t.string('version', 100);
    t.string('test_runner', 100);
    t.text('tags').notNullable(); // JSON object
    t.integer('executions_count').notNullable().defaultTo(0);
    t.integer('passed_count').notNullable().defaultTo(0);
    t.integer('failed_count').notNullable().defaultTo(0);
    ts(t, 'created_at').notNullable();
    ts(t, 'updated_at').notNullable();
    t.unique(['suite_id', 'run_key']);
    t.index(['suite_id', 'created_at']);
  });

  await knex.schema.createTable('tests', (t) => {
    t.uuid('id').primary();
    t.uuid('suite_id').notNullable().references('suites.id').onDelete('CASCADE');
    // SHA-256 of (scope, name, location): a test's identity, short enough for a btree index.
    t.string('identity_hash', 64).notNullable();
    t.text('scope');
    t.text('name').notNullable();
    t.string('location', 4096);
    t.string('file_name', 4096);
    ts(t, 'created_at').notNullable();
    // Totals kept at ingestion, so reading a test never aggregates its executions.
    t.integer('executions_count').notNullable().defaultTo(0);
    t.integer('passed_count').notNullable().defaultTo(0);
    t.integer('failed_count').notNullable().defaultTo(0);
    t.integer('skipped_count').notNullable().defaultTo(0);
    t.integer('pending_count').notNullable().defaultTo(0);
    t.integer('unknown_count').notNullable().defaultTo(0);
    t.integer('duration_count').notNullable().defaultTo(0);
    t.double('duration_sum').notNullable().defaultTo(0);
    t.double('duration_min');
    t.double('duration_max');
    t.unique(['suite_id', 'identity_hash']);
  });

  await knex.schema.createTable('test_executions', (t) => {
    t.uuid('id').primary();
    t.uuid('run_id').notNullable().references('test_runs.id').onDelete('CASCADE');
    t.uuid('test_id').notNullable().references('tests.id').onDelete('CASCADE');
    t.string('client_id', 255);
    t.string('result', 10).notNullable();
    t.text('failure_reason');
    t.text('failure_expanded'); // JSON or null
    t.double('duration');
    t.text('history'); // JSON or null
    t.integer('position').notNullable(); // order within the run's uploads
    ts(t, 'created_at').notNullable();
    t.index(['run_id', 'result', 'position']);
    t.index(['test_id', 'created_at']);
  });

  await knex.schema.createTable('test_commit_results', (t) => {
    t.uuid('test_id').notNullable().references('tests.id').onDelete('CASCADE');
    t.string('commit_sha', 255).notNullable();
    t.boolean('passed').notNullable().defaultTo(false);
    t.boolean('failed').notNullable().defaultTo(false);
    t.primary(['test_id', 'commit_sha']);
  });

  await knex.schema.createTable('flaky_instances', (t) => {
    t.uuid('test_id').notNullable().references('tests.id').onDelete('CASCADE');
    t.string('commit_sha', 255).notNullable();
    t.uuid('suite_id').notNullable().references('suites.id').onDelete('CASCADE');
    t.string('branch', 255);
    ts(t, 'detected_at').notNullable();
    t.primary(['test_id', 'commit_sha']);
    t.index(['suite_id', 'detected_at']);
    t.index(['suite_id', 'branch', 'detected_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['flaky_instances', 'test_commit_results', 'test_executions', 'tests', 'test_runs', 'suite_teams', 'suites']) {
    await knex.schema.dropTableIfExists(table);
  }
}
