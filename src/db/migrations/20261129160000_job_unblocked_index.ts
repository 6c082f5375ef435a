/**
 * A job's environment names who unblocked its build last (BUILDKITE_UNBLOCKER...): the context
 * every agent call reads a job with looks up the build's latest unblock up to when the job
 * became runnable (src/builds/jobs/repository.ts, withContext). A partial index over exactly the
 * unblocked jobs, newest last per build, answers it with one seek however many jobs the build has
 * (a build without one answers from an empty range).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create index jobs_unblocked_index on jobs (build_id, unblocked_at, position) where unblocked_at is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index jobs_unblocked_index');
}
