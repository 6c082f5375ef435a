/**
 * `notify` (JSON text, a list of notify entries as written; null reads as none) on:
 * - `pipelines`: the top-level `notify` of the pipeline's YAML configuration;
 * - `pipeline_templates`: the same of the template's configuration, for the pipelines it governs;
 * - `builds`: the entries a build notifies, copied from its pipeline (or template) when it is
 *   created, with the top-level `notify` of each pipeline upload into it appended.
 * Rows written before this migration have none until their configuration is saved again.
 */
import type { Knex } from 'knex';
import { withoutOutboxTriggers } from './20261126090000_outbox';

const TABLES = ['pipelines', 'pipeline_templates', 'builds'] as const;

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.text('notify');
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  // Dropping a column rebuilds the table on SQLite: the outbox's triggers on builds are set aside.
  await withoutOutboxTriggers(knex, async () => {
    for (const table of TABLES) {
      await knex.schema.alterTable(table, (t) => {
        t.dropColumn('notify');
      });
    }
  });
}
