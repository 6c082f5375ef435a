/**
 * Pipeline templates (an organization's shared step configurations; a pipeline names one in
 * `pipelines.pipeline_template_uuid`, whose configuration then governs its builds) and an
 * organization's custom emojis (`GET .../emojis`, added with `windsock emoji add`).
 *
 * A template's id is text, not a uuid column: `pipelines.pipeline_template_uuid` (text since the
 * foundation) is joined to it, and Postgres has no `uuid = varchar` operator. The service stores
 * ids lower-case. No foreign key from pipelines: the column already held values before templates
 * existed, and the templates' service refuses to delete a template a pipeline uses. The parsed
 * steps and env are kept beside the YAML, as for pipelines, so a build does not parse it again.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });
  await knex.schema.createTable('pipeline_templates', (t) => {
    t.string('id', 36).primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 255).notNullable();
    t.text('description');
    t.text('configuration').notNullable();
    t.text('steps').notNullable();
    t.text('env').notNullable();
    t.boolean('available').notNullable().defaultTo(false);
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    t.uuid('updated_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    ts(t, 'updated_at').notNullable();
    t.index(['organization_id', 'name']);
  });
  await knex.schema.alterTable('pipelines', (t) => {
    t.index(['pipeline_template_uuid']);
  });
  await knex.schema.createTable('emojis', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 100).notNullable();
    t.string('url', 2000).notNullable();
    t.text('aliases').notNullable();
    ts(t, 'created_at').notNullable();
    t.unique(['organization_id', 'name']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('emojis');
  await knex.schema.alterTable('pipelines', (t) => {
    t.dropIndex(['pipeline_template_uuid']);
  });
  await knex.schema.dropTableIfExists('pipeline_templates');
}
