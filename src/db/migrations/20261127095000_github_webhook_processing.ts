/**
 * Whether a pipeline processes incoming GitHub webhooks (issue 30: the docs' "GitHub webhook
 * processing" operations on `.../pipelines/{slug}/github-webhooks`). A row means disabled, with
 * who disabled it and when; no row, enabled (every existing pipeline).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('pipeline_github_webhooks', (t) => {
    t.uuid('pipeline_id').primary().references('id').inTable('pipelines').onDelete('CASCADE');
    t.timestamp('disabled_at', { useTz: true, precision: 3 }).notNullable();
    t.uuid('disabled_by').nullable().references('id').inTable('users').onDelete('SET NULL');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('pipeline_github_webhooks');
}
