/**
 * A pipeline's Git clone mirror (`clone_mirror_url` of pipelines.md): a repository URL its jobs'
 * agents get as `BUILDKITE_GIT_REMOTE_MIRROR_URL`; null for none.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.text('clone_mirror_url');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.dropColumn('clone_mirror_url');
  });
}
