/**
 * `jobs.group_id`: the group step a job's step was written in, one id per group of each planned
 * configuration (a build's pipeline, or one `pipeline upload`), so two uploads' groups stay apart
 * though both are their configuration's first. The build's machine runs each group beside the
 * steps after it, its wait and block steps holding back its own steps only (the docs' "Parallel
 * groups"). Null: not in a group, or planned before groups were read.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.uuid('group_id');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('group_id');
  });
}
