/**
 * Agents and what running jobs records: the organization's agent registration tokens (hashed),
 * the registered agents (each with its own hashed access token), the agent holding each job,
 * and the job's log as the chunks the agent sent.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  const ts = (t: Knex.CreateTableBuilder, name: string) => t.timestamp(name, { useTz: true, precision: 3 });

  await knex.schema.createTable('agent_tokens', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.text('description');
    // sha256 of the token: the token itself is shown once, at creation.
    t.string('token_hash', 64).notNullable().unique();
    t.uuid('creator_id').references('users.id').onDelete('SET NULL');
    ts(t, 'created_at').notNullable();
    t.index(['organization_id', 'created_at']);
  });

  await knex.schema.createTable('agents', (t) => {
    t.uuid('id').primary();
    t.uuid('organization_id').notNullable().references('organizations.id').onDelete('CASCADE');
    t.uuid('agent_token_id').references('agent_tokens.id').onDelete('SET NULL');
    t.string('access_token_hash', 64).notNullable().unique();
    t.string('name', 255).notNullable();
    t.string('hostname', 255);
    t.string('ip_address', 64);
    t.string('user_agent', 255);
    t.string('version', 100);
    t.string('os', 100);
    t.string('arch', 100);
    t.text('meta_data').notNullable(); // JSON array of `key=value` tags
    t.integer('priority');
    t.string('connection_state', 20).notNullable();
    t.uuid('job_id');
    ts(t, 'created_at').notNullable();
    ts(t, 'connected_at');
    ts(t, 'disconnected_at');
    ts(t, 'lost_at');
    ts(t, 'stopped_at');
    ts(t, 'last_heartbeat_at');
    ts(t, 'last_job_finished_at');
    t.index(['organization_id', 'created_at']);
  });

  await knex.schema.alterTable('jobs', (t) => {
    t.uuid('agent_id').references('agents.id').onDelete('SET NULL');
    // Dispatch looks for scheduled jobs, oldest first.
    t.index(['state', 'created_at']);
  });

  await knex.schema.createTable('job_log_chunks', (t) => {
    t.uuid('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.integer('sequence').notNullable();
    t.integer('offset').notNullable();
    t.integer('size').notNullable();
    t.text('content').notNullable();
    ts(t, 'created_at').notNullable();
    t.primary(['job_id', 'sequence']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('job_log_chunks');
  await knex.schema.alterTable('jobs', (t) => {
    t.dropIndex(['state', 'created_at']);
    t.dropForeign(['agent_id']);
    t.dropColumn('agent_id');
  });
  await knex.schema.dropTableIfExists('agents');
  await knex.schema.dropTableIfExists('agent_tokens');
}
