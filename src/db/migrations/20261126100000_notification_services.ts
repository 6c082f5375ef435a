/**
 * Notification services: an organization's webhooks, Slack incoming webhooks and OpenTelemetry
 * tracing endpoints, told of builds and jobs. `settings` holds the provider's settings that are
 * not secret (JSON); `secrets_sealed` the secret ones (a webhook's token, a Slack URL, the
 * OpenTelemetry headers) as one JSON object sealed by the server's key, bound to the row's id:
 * they are sent out, so they must open again, but the database never holds them in the clear.
 * Lists read by (organization_id, created_at, id), the cursor's order.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('notification_services', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('provider', 50).notNullable();
    t.text('description').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.string('scope', 20).notNullable();
    t.text('scope_uuids').notNullable();
    t.text('branch_configuration').notNullable();
    t.text('build_states').notNullable();
    t.text('settings').notNullable();
    t.text('secrets_sealed');
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
    t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
    t.index(['organization_id', 'created_at', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('notification_services');
}
