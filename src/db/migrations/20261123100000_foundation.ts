/**
 * Users, organizations, memberships, teams, access tokens and pipelines.
 * Timestamps are `timestamp(3) with time zone` on Postgres and epoch milliseconds on SQLite
 * (Knex binds Date as a number there); src/db/values.ts reads both.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });

  await knex.schema.createTable('users', (t) => {
    t.uuid('id').primary();
    t.string('name', 255).notNullable();
    t.string('email', 255).notNullable().unique();
    ts(t, 'created_at').notNullable();
  });

  await knex.schema.createTable('organizations', (t) => {
    t.uuid('id').primary();
    t.string('slug', 100).notNullable().unique();
    t.string('name', 255).notNullable();
    t.boolean('teams_enabled').notNullable().defaultTo(false);
    ts(t, 'created_at').notNullable();
  });

  await knex.schema.createTable('organization_members', (t) => {
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('role', 20).notNullable(); // admin | member
    t.primary(['organization_id', 'user_id']);
    t.index(['user_id']);
  });

  await knex.schema.createTable('teams', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('slug', 100).notNullable();
    t.string('name', 255).notNullable();
    ts(t, 'created_at').notNullable();
    t.unique(['organization_id', 'slug']);
  });

  await knex.schema.createTable('team_members', (t) => {
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.primary(['team_id', 'user_id']);
    t.index(['user_id']);
  });

  await knex.schema.createTable('access_tokens', (t) => {
    // The JWT's `jti`. Nothing secret is stored: the JWT is verified by signature, and this
    // row is the authority on scopes, reach, expiry and revocation.
    t.uuid('id').primary();
    t.uuid('user_id').notNullable().references('users.id').onDelete('CASCADE');
    t.string('description', 255);
    t.text('scopes').notNullable(); // JSON array
    ts(t, 'created_at').notNullable();
    ts(t, 'expires_at').notNullable();
    ts(t, 'revoked_at');
    t.index(['user_id']);
  });

  await knex.schema.createTable('access_token_organizations', (t) => {
    t.uuid('access_token_id').notNullable().references('access_tokens.id').onDelete('CASCADE');
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.primary(['access_token_id', 'organization_id']);
  });

  await knex.schema.createTable('pipelines', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('slug', 100).notNullable();
    t.string('name', 255).notNullable();
    t.text('description');
    t.string('repository', 1024).notNullable();
    t.string('provider_id', 30).notNullable();
    t.text('provider_settings').notNullable(); // JSON: only what was set; defaults are applied on read
    t.string('default_branch', 255);
    t.text('branch_configuration');
    t.boolean('skip_queued_branch_builds').notNullable().defaultTo(false);
    t.text('skip_queued_branch_builds_filter');
    t.boolean('cancel_running_branch_builds').notNullable().defaultTo(false);
    t.text('cancel_running_branch_builds_filter');
    t.boolean('allow_rebuilds').notNullable().defaultTo(true);
    t.string('cluster_id', 100);
    t.string('pipeline_template_uuid', 100);
    t.string('visibility', 20).notNullable().defaultTo('private');
    t.text('tags'); // JSON array or null
    t.text('configuration'); // YAML; null for visual steps
    t.text('steps').notNullable(); // JSON, normalised
    t.text('env').notNullable(); // JSON
    t.integer('default_timeout_in_minutes');
    t.integer('maximum_timeout_in_minutes');
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    ts(t, 'archived_at');
    // SHA-256 of the webhook token; the token itself is derived from the server key and never stored.
    t.string('webhook_token_hash', 64).notNullable().unique();
    // Per-pipeline build number counter, bumped by UPDATE ... RETURNING when a build is created.
    t.integer('builds_counter').notNullable().defaultTo(0);
    t.unique(['organization_id', 'slug']);
    t.unique(['organization_id', 'name']);
    t.index(['organization_id', 'created_at']);
  });

  await knex.schema.createTable('pipeline_teams', (t) => {
    t.uuid('pipeline_id').notNullable().references('pipelines.id').onDelete('CASCADE');
    t.uuid('team_id').notNullable().references('teams.id').onDelete('CASCADE');
    t.string('access_level', 30).notNullable();
    t.primary(['pipeline_id', 'team_id']);
    t.index(['team_id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of [
    'pipeline_teams',
    'pipelines',
    'access_token_organizations',
    'access_tokens',
    'team_members',
    'teams',
    'organization_members',
    'organizations',
    'users',
  ]) {
    await knex.schema.dropTableIfExists(table);
  }
}
