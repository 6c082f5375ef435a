/**
 * Clusters (an organization's isolated sets of agents and pipelines), their queues (with a
 * dispatch pause), their agent registration tokens (stored as hashes, with the CIDR ranges an
 * agent must register from), their maintainers (a user or a team) and their secrets (values
 * encrypted with a key derived from the service's keys, never stored in the clear). Agents
 * registered with a cluster token belong to the cluster and a queue of it; jobs record the
 * cluster and queue of their pipeline at creation, and dispatch keeps each cluster's jobs to
 * its agents (the cluster is part of a job's dispatch key). Pipelines already had `cluster_id`,
 * a free string until now: values that name no cluster (none can, before this) are cleared.
 */
import type { Knex } from 'knex';

const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('clusters', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.string('name', 255).notNullable();
    t.string('description', 1000);
    t.string('emoji', 255);
    t.string('color', 255);
    t.uuid('default_queue_id');
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    t.unique(['organization_id', 'name']);
  });
  await knex.schema.createTable('cluster_queues', (t) => {
    t.uuid('id').primary();
    t.uuid('cluster_id').notNullable().references('clusters.id').onDelete('CASCADE');
    t.string('key', 255).notNullable();
    t.string('description', 1000);
    t.string('retry_agent_affinity', 30).notNullable().defaultTo('prefer-warmest');
    ts(t, 'dispatch_paused_at');
    t.uuid('dispatch_paused_by_id').references('users.id').onDelete('SET NULL');
    t.string('dispatch_paused_note', 1000);
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    t.unique(['cluster_id', 'key']);
  });
  await knex.schema.createTable('cluster_tokens', (t) => {
    t.uuid('id').primary();
    t.uuid('cluster_id').notNullable().references('clusters.id').onDelete('CASCADE');
    t.string('description', 255).notNullable();
    t.string('allowed_ip_addresses', 2000);
    ts(t, 'expires_at');
    t.string('token_hash', 64).notNullable().unique();
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    t.index(['cluster_id', 'created_at']);
  });
  await knex.schema.createTable('cluster_maintainers', (t) => {
    t.uuid('id').primary();
    t.uuid('cluster_id').notNullable().references('clusters.id').onDelete('CASCADE');
    t.uuid('user_id').references('users.id').onDelete('CASCADE');
    t.uuid('team_id').references('teams.id').onDelete('CASCADE');
    ts(t, 'created_at').notNullable();
    t.unique(['cluster_id', 'user_id']);
    t.unique(['cluster_id', 'team_id']);
  });
  await knex.schema.createTable('cluster_secrets', (t) => {
    t.uuid('id').primary();
    t.uuid('cluster_id').notNullable().references('clusters.id').onDelete('CASCADE');
    t.string('key', 255).notNullable();
    // The key upper-cased: keys are unique, and looked up, without regard to case.
    t.string('key_upper', 255).notNullable();
    t.string('description', 1000);
    t.text('policy');
    // AES-256-GCM: iv, tag and ciphertext, base64url, joined by dots.
    t.text('value_encrypted').notNullable();
    t.uuid('created_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    t.uuid('updated_by_id').references('users.id').onDelete('SET NULL');
    ts(t, 'updated_at').notNullable();
    ts(t, 'last_read_at');
    t.unique(['cluster_id', 'key_upper']);
  });
  await knex.schema.alterTable('agents', (t) => {
    // No foreign keys: SQLite can't add one to an existing table. A cluster with agents can't
    // be deleted (src/clusters/service.ts); a deleted queue or token leaves the agent idle.
    t.uuid('cluster_id');
    t.uuid('cluster_queue_id');
    t.uuid('cluster_token_id');
  });
  await knex.schema.alterTable('jobs', (t) => {
    t.uuid('cluster_id');
    t.uuid('cluster_queue_id');
  });
  await knex('pipelines').whereNotNull('cluster_id').update({ cluster_id: null });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('cluster_id');
    t.dropColumn('cluster_queue_id');
  });
  await knex.schema.alterTable('agents', (t) => {
    t.dropColumn('cluster_id');
    t.dropColumn('cluster_queue_id');
    t.dropColumn('cluster_token_id');
  });
  for (const table of ['cluster_secrets', 'cluster_maintainers', 'cluster_tokens', 'cluster_queues', 'clusters']) await knex.schema.dropTable(table);
}
