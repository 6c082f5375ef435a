/**
 * The GitHub webhook event a build was created for, as JSON (`{event, action, label}`): a step's
 * `if` reads it as `build.source_event`, `build.source_action` and `build.pull_request.label`,
 * at creation and at every pipeline upload into the build. Null on builds no webhook created.
 */
import type { Knex } from 'knex';
import { withoutOutboxTriggers } from './20261126090000_outbox';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('builds', (t) => {
    t.text('webhook_event');
  });
}

export async function down(knex: Knex): Promise<void> {
  // Dropping a column rebuilds the table on SQLite: the outbox's triggers on builds are set aside.
  await withoutOutboxTriggers(knex, async () => {
    await knex.schema.alterTable('builds', (t) => {
      t.dropColumn('webhook_event');
    });
  });
}
