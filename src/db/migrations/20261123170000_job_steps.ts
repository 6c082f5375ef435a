/**
 * Trigger steps, pipeline uploads and log section headers:
 * - `jobs.triggered_build`: a snapshot (JSON `{id, number, pipeline_slug}`) of the build a
 *   trigger job created, so reading a build's jobs needs no join.
 * - `jobs.uploaded_by_step_id`: the step whose `pipeline upload` added the job, so a later
 *   upload of that step goes after everything the earlier ones added; `jobs.upload_id`: the
 *   agent's id for the upload, so an upload sent again adds nothing.
 * - `builds.triggered_from_job_id` and `builds.trigger_depth`: the trigger job that created a
 *   build (its result ends that job when the trigger is synchronous) and how many triggers deep
 *   the build is, which bounds trigger loops.
 * - `job_log_chunks.header_times`: JSON list of the times (Unix nanoseconds) at which the
 *   section headers starting in that chunk reached the server.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.text('triggered_build');
    t.uuid('uploaded_by_step_id');
    t.uuid('upload_id');
  });
  await knex.schema.alterTable('builds', (t) => {
    t.uuid('triggered_from_job_id');
    t.integer('trigger_depth').notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('job_log_chunks', (t) => {
    t.text('header_times');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('job_log_chunks', (t) => {
    t.dropColumn('header_times');
  });
  await knex.schema.alterTable('builds', (t) => {
    t.dropColumn('triggered_from_job_id');
    t.dropColumn('trigger_depth');
  });
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('triggered_build');
    t.dropColumn('uploaded_by_step_id');
    t.dropColumn('upload_id');
  });
}
