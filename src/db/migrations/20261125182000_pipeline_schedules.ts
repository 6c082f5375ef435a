/**
 * Pipeline schedules: a pipeline's cron schedules. `next_build_at` is the minute the schedule
 * creates its next build (null while disabled); the scheduler claims a due minute by moving it
 * on with a conditional UPDATE (`where id = ? and next_build_at = ?`) in the transaction that
 * creates the build, so several server processes on one database create each build once. The
 * (enabled, next_build_at) index serves the scheduler's "enabled schedules due by now".
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });
  await knex.schema.createTable('pipeline_schedules', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.string('label', 255);
    t.string('cronline', 255).notNullable();
    t.text('message');
    t.string('commit', 255).notNullable();
    t.string('branch', 255).notNullable();
    t.text('env').notNullable(); // JSON
    t.boolean('enabled').notNullable();
    ts(t, 'next_build_at');
    t.text('failed_message');
    ts(t, 'failed_at');
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    t.index(['pipeline_id', 'created_at']);
    t.index(['enabled', 'next_build_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('pipeline_schedules');
}
