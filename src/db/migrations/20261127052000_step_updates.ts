/**
 * `step_updates`: the `idempotency_uuid` of each `buildkite-agent step update` applied, per
 * build, so that the agent's retry of the same update (same uuid) changes the step once. Rows go
 * with their build.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('step_updates', (t) => {
    t.uuid('build_id').notNullable().references('builds.id').onDelete('CASCADE');
    t.string('idempotency_uuid', 64).notNullable();
    t.uuid('step_id').notNullable();
    t.primary(['build_id', 'idempotency_uuid']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('step_updates');
}
