/**
 * `step_uploads`: each `buildkite-agent pipeline upload` a build received (the REST step uploads
 * API reads them): the job that sent it, the agent's `uuid` (a retried send records nothing
 * new), its outcome (`applied` with the jobs it created, or `rejected` with a rejection type and
 * a message), and the definition as JSON. Rows go with their build.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('step_uploads', (t) => {
    t.uuid('id').primary();
    t.uuid('build_id').notNullable().references('builds.id').onDelete('CASCADE');
    t.uuid('source_job_id').notNullable();
    t.string('upload_uuid', 64).nullable();
    t.string('state', 20).notNullable();
    t.boolean('replace_existing_steps').notNullable().defaultTo(false);
    t.integer('created_jobs_count').nullable();
    t.string('rejection_type', 40).nullable();
    t.text('message').nullable();
    t.text('definition').nullable();
    t.integer('definition_bytes').notNullable().defaultTo(0);
    t.timestamp('created_at', { useTz: true }).notNullable();
    t.timestamp('processed_at', { useTz: true }).nullable();
    t.index(['build_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('step_uploads');
}
