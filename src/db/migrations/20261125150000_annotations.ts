/**
 * Annotations of builds (`buildkite-agent annotate`, the REST API's annotations): one row per
 * context of a build (scope `build`) or of a job (scope `job`). `scope_key` is '' for a build's
 * own annotations and the job's id for a job's, so one unique index holds "one annotation per
 * context" for both scopes (a null job id would not collide in a unique index). The Markdown
 * source is kept beside its rendered, sanitised HTML: an append renders the whole body again,
 * and reads serve the HTML as stored.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });
  await knex.schema.createTable('annotations', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('build_id').notNullable().references('builds.id').onDelete('CASCADE');
    t.uuid('job_id').references('jobs.id').onDelete('CASCADE');
    t.string('scope', 10).notNullable();
    t.string('scope_key', 64).notNullable();
    t.string('context', 100).notNullable();
    t.string('style', 10).notNullable();
    t.integer('priority').notNullable();
    t.text('body').notNullable();
    t.text('body_html').notNullable();
    ts(t, 'created_at').notNullable();
    ts(t, 'updated_at').notNullable();
    t.unique(['build_id', 'scope_key', 'context']);
    t.index(['build_id', 'priority', 'created_at']);
    t.index(['job_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('annotations');
}
