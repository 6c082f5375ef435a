/**
 * Pipeline triggers: a pipeline's incoming webhook endpoints (`/deliver/bktr_...`). The token is
 * kept as its SHA-256 (`token_hash`, unique: the incoming call finds its trigger by it) and its
 * last two characters (the hint); a verification secret, which an HMAC check needs in clear, is
 * sealed (security/secret-box.ts). Deliveries keep the latest 100 per trigger: the request's
 * content type, its headers with the values that are shown (the rest redacted when stored), its
 * payload, and what came of it.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });
  await knex.schema.createTable('pipeline_triggers', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.string('type', 20).notNullable();
    t.string('label', 255).notNullable();
    t.boolean('enabled').notNullable();
    t.text('message');
    t.string('commit', 255);
    t.string('branch', 255);
    t.text('environment').notNullable(); // JSON object of strings
    t.string('verification_strategy', 20);
    t.text('verification_secret_sealed');
    t.string('verification_secret_hint', 10);
    t.string('token_hash', 64).notNullable().unique();
    t.string('token_hint', 10).notNullable();
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    t.uuid('updated_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    ts(t, 'updated_at').notNullable();
    t.index(['pipeline_id', 'created_at']);
  });
  await knex.schema.createTable('pipeline_trigger_deliveries', (t) => {
    t.uuid('id').primary();
    t.uuid('trigger_id').notNullable().references('pipeline_triggers.id').onDelete('CASCADE');
    ts(t, 'received_at').notNullable();
    t.string('content_type', 255);
    t.string('external_id', 255);
    t.string('status', 20);
    t.string('reason', 100);
    t.text('builds').notNullable(); // JSON [{id, number}]
    t.text('headers').notNullable(); // JSON [{name, value, redacted}]
    t.text('payload').notNullable(); // JSON
    t.index(['trigger_id', 'received_at']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('pipeline_trigger_deliveries');
  await knex.schema.dropTableIfExists('pipeline_triggers');
}
