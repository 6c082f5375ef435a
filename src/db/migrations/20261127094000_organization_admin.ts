/**
 * Organization administration (issue 30): an organization's API settings (the token IP
 * allow-list every request with one of its tokens is checked against, inactive-token revocation,
 * who may create tokens), its audit log (one row per admin action, written in the transaction of
 * the action) and its invitations (an email offered a role and teams, accepted when a user with
 * that email signs up).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('organizations', (t) => {
    t.text('allowed_ip_addresses').nullable();
    t.integer('revoke_inactive_tokens_after_days').nullable();
    t.boolean('restrict_user_api_token_creation').notNullable().defaultTo(false);
  });
  await knex.schema.createTable('audit_events', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.string('type', 100).notNullable();
    t.timestamp('occurred_at', { useTz: true, precision: 3 }).notNullable();
    t.string('actor_type', 50).nullable();
    t.uuid('actor_id').nullable();
    t.string('actor_name', 255).nullable();
    t.string('subject_type', 50).notNullable();
    t.string('subject_id', 100).notNullable();
    t.string('subject_name', 255).nullable();
    t.text('context').nullable();
    t.text('data').notNullable();
    // Newest first, by organization; the id breaks ties within a millisecond.
    t.index(['organization_id', 'occurred_at', 'id']);
  });
  await knex.schema.createTable('organization_invitations', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('id').inTable('organizations').onDelete('CASCADE');
    t.string('email', 255).notNullable();
    t.string('email_lower', 255).notNullable();
    t.string('role', 20).notNullable();
    t.string('sso_mode', 20).notNullable();
    t.text('teams').notNullable();
    t.string('state', 20).notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
    t.uuid('created_by_id').nullable().references('id').inTable('users').onDelete('SET NULL');
    t.timestamp('accepted_at', { useTz: true, precision: 3 }).nullable();
    t.uuid('accepted_by_id').nullable().references('id').inTable('users').onDelete('SET NULL');
    t.timestamp('revoked_at', { useTz: true, precision: 3 }).nullable();
    t.uuid('revoked_by_id').nullable().references('id').inTable('users').onDelete('SET NULL');
    t.index(['organization_id', 'state', 'created_at']);
    t.index(['email_lower', 'state']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('organization_invitations');
  await knex.schema.dropTable('audit_events');
  await knex.schema.alterTable('organizations', (t) => {
    t.dropColumn('allowed_ip_addresses');
    t.dropColumn('revoke_inactive_tokens_after_days');
    t.dropColumn('restrict_user_api_token_creation');
  });
}
