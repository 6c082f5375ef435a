/**
 * Concurrency groups (the docs' "Controlling concurrency"): a command job keeps the group its
 * step named (`concurrency_group`), the step's limit (`concurrency`) and method
 * (`concurrency_method`, null for the default `ordered`) as they were when the job was created, as
 * Buildkite does ("Changing concurrency limits"). A partial index over the jobs that have a group
 * lets the service read one group's unfinished jobs, oldest first, without reading the others.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.text('concurrency_group');
    t.integer('concurrency_limit');
    t.string('concurrency_method', 16);
  });
  await knex.raw(`create index jobs_concurrency_index on jobs (organization_id, concurrency_group, created_at, position) where concurrency_group is not null`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index jobs_concurrency_index');
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('concurrency_group');
    t.dropColumn('concurrency_limit');
    t.dropColumn('concurrency_method');
  });
}
