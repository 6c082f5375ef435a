/**
 * Builds, their meta data and their jobs. Indexes follow the list queries: newest first per
 * pipeline (the unique (pipeline_id, number)), per organization, and the branch, state, commit
 * and meta-data filters; jobs are read per build in order, and counted per pipeline and state.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });

  // Per-organization build sequence: `org_number` orders the organization's builds and lets a
  // deep page be found by arithmetic (a seek) instead of skipping rows, as long as no builds
  // were deleted (builds_count == builds_counter; deleting a pipeline leaves gaps).
  await knex.schema.alterTable('organizations', (t) => {
    t.integer('builds_counter').notNullable().defaultTo(0);
    t.integer('builds_count').notNullable().defaultTo(0);
  });

  await knex.schema.createTable('builds', (t) => {
    t.uuid('id').primary();
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.integer('number').notNullable();
    // Set as the transaction's last statement (null only inside an uncommitted create).
    t.integer('org_number');
    t.string('state', 20).notNullable();
    t.boolean('blocked').notNullable().defaultTo(false);
    t.text('message');
    t.string('commit', 255).notNullable();
    t.string('branch', 255).notNullable();
    t.string('tag', 255);
    t.text('env').notNullable();
    t.text('meta_data').notNullable();
    t.string('source', 30).notNullable();
    t.text('author');
    t.uuid('creator_id').references('users.id').onDelete('SET NULL');
    t.text('pull_request');
    t.boolean('clean_checkout').notNullable().defaultTo(false);
    t.uuid('rebuilt_from_id');
    t.integer('rebuilt_from_number');
    t.text('cancel_reason');
    ts(t, 'created_at').notNullable();
    ts(t, 'scheduled_at');
    ts(t, 'started_at');
    ts(t, 'failing_at');
    ts(t, 'finished_at');
    t.unique(['pipeline_id', 'number']);
    t.unique(['organization_id', 'org_number']);
    t.index(['pipeline_id', 'branch', 'number']);
    t.index(['pipeline_id', 'state', 'number']);
    t.index(['organization_id', 'branch', 'org_number']);
    t.index(['organization_id', 'state', 'org_number']);
    t.index(['organization_id', 'created_at']);
    t.index(['organization_id', 'finished_at']);
    t.index(['commit']);
    t.index(['creator_id']);
    t.index(['created_at', 'id']);
  });

  await knex.schema.createTable('build_meta_data', (t) => {
    t.uuid('build_id').notNullable().references('builds.id').onDelete('CASCADE');
    t.string('key', 255).notNullable();
    t.text('value').notNullable();
    // The value's first 255 characters: long values cannot go in a btree index, and the
    // `meta_data[key]=value` filter narrows by (key, value_key) before comparing whole values.
    t.string('value_key', 255).notNullable();
    t.primary(['build_id', 'key']);
    t.index(['key', 'value_key', 'build_id']);
  });

  await knex.schema.createTable('jobs', (t) => {
    t.uuid('id').primary();
    t.uuid('build_id').notNullable().references('builds.id').onDelete('CASCADE');
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.string('type', 20).notNullable();
    t.string('state', 20).notNullable();
    t.text('name');
    t.string('step_key', 100);
    t.uuid('step_id').notNullable();
    t.text('step_signature');
    t.text('step').notNullable(); // JSON of the source step
    t.text('command');
    t.text('agent_query_rules').notNullable();
    t.text('env').notNullable();
    t.text('artifact_paths');
    t.integer('timeout_in_minutes');
    t.integer('parallel_group_index');
    t.integer('parallel_group_total');
    t.boolean('soft_failed').notNullable().defaultTo(false);
    t.integer('exit_status');
    t.text('broken_reason');
    t.boolean('retried').notNullable().defaultTo(false);
    t.uuid('retried_in_job_id');
    t.integer('retries_count');
    t.string('retry_type', 20);
    t.text('retry_source');
    ts(t, 'created_at').notNullable();
    ts(t, 'scheduled_at');
    ts(t, 'runnable_at');
    ts(t, 'started_at');
    ts(t, 'finished_at');
    t.index(['build_id', 'position']);
    t.index(['pipeline_id', 'state']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('jobs');
  await knex.schema.dropTableIfExists('build_meta_data');
  await knex.schema.dropTableIfExists('builds');
  await knex.schema.alterTable('organizations', (t) => {
    t.dropColumn('builds_counter');
    t.dropColumn('builds_count');
  });
}
