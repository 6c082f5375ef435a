/**
 * `jobs.dispatch_at`: where a scheduled job stands in its dispatch class's first-in-first-out
 * order, after its priority. The docs' job priority page: jobs are dispatched by priority, then by
 * `scheduled_at` ("jobs inherit `scheduled_at` from pipeline upload jobs, meaning jobs that are
 * uploaded by a pipeline in an older build will be dispatched before builds created after that"),
 * then by upload order. A build's own jobs take the build's creation, an uploaded job its
 * uploader's `dispatch_at`, a retry the time of the retry. The dispatch index orders by it in
 * place of `created_at`, which for an uploaded job is the upload's time. Existing rows take their
 * `created_at`.
 */
import type { Knex } from 'knex';

/** The columns of jobs this migration reads and writes, as they were when it was written. */
interface JobsThen {
  created_at: Date | string;
  dispatch_at: Date | string | null;
}

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.timestamp('dispatch_at', { useTz: true, precision: 3 });
  });
  await knex<JobsThen>('jobs').update({ dispatch_at: knex.ref('created_at') });
  await knex.raw('drop index jobs_dispatch_index');
  await knex.raw(
    `create index jobs_dispatch_index on jobs (organization_id, dispatch_key, priority desc, dispatch_at, position) where state = 'scheduled' and type = 'script'`,
  );
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index jobs_dispatch_index');
  await knex.raw(
    `create index jobs_dispatch_index on jobs (organization_id, dispatch_key, priority desc, created_at, position) where state = 'scheduled' and type = 'script'`,
  );
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('dispatch_at');
  });
}
