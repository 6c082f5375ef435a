/**
 * `builds.triggered_from`: a snapshot (JSON `{build_id, build_number, build_pipeline_slug}`) of
 * the build whose trigger step created this one, as the build representation shows it. Stored
 * with the build, like `jobs.triggered_build` the other way round, so reading builds costs no
 * join through `triggered_from_job_id` (build lists are a measured hot path).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('builds', (t) => {
    t.text('triggered_from');
  });
  // Builds triggered before this column: their link is known through the trigger job.
  const rows = await knex('builds as b')
    .join('jobs as j', 'j.id', 'b.triggered_from_job_id')
    .join('builds as pb', 'pb.id', 'j.build_id')
    .join('pipelines as p', 'p.id', 'pb.pipeline_id')
    .select<{ id: string; build_id: string; build_number: number; build_pipeline_slug: string }[]>(
      'b.id',
      'pb.id as build_id',
      'pb.number as build_number',
      'p.slug as build_pipeline_slug',
    );
  for (const r of rows) {
    const value = JSON.stringify({ build_id: r.build_id, build_number: Number(r.build_number), build_pipeline_slug: r.build_pipeline_slug });
    await knex('builds').where({ id: r.id }).update({ triggered_from: value });
  }
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('builds', (t) => {
    t.dropColumn('triggered_from');
  });
}
