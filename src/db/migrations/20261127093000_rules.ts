/**
 * Rules: an organization's rules that let one pipeline act on another across clusters
 * (`pipeline.trigger_build.pipeline`, `pipeline.artifacts_read.pipeline`). Deleting either
 * pipeline deletes its rules. Several rules may join the same pipelines (any one whose
 * conditions hold allows). The (type, source, target) index serves the checks a trigger step or an artifact search makes.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rules', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('type', 64).notNullable();
    t.string('description', 255);
    t.uuid('source_pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.uuid('target_pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.text('conditions').notNullable(); // JSON array of strings
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
    t.index(['type', 'source_pipeline_id', 'target_pipeline_id']);
    t.index(['organization_id', 'created_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('rules');
}
