/**
 * Test Engine quarantine and labels: a test's `state` (enabled, muted, skipped) with when it
 * last changed (the muted and skipped lists are newest first, from an index on the suite and
 * state), the labels given through the API (JSON list; `flaky` stays derived from flaky
 * instances), and each execution's mutable tags (`mut.` keys, JSON object or null).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('tests', (t) => {
    t.string('state', 10).notNullable().defaultTo('enabled');
    t.timestamp('state_changed_at', { useTz: true, precision: 3 });
    t.text('labels'); // JSON list or null
    t.index(['suite_id', 'state', 'state_changed_at']);
  });
  await knex.schema.alterTable('test_executions', (t) => {
    t.text('mutable_tags'); // JSON object or null
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('test_executions', (t) => {
    t.dropColumn('mutable_tags');
  });
  await knex.schema.alterTable('tests', (t) => {
    t.dropIndex(['suite_id', 'state', 'state_changed_at']);
    t.dropColumn('labels');
    t.dropColumn('state_changed_at');
    t.dropColumn('state');
  });
}
