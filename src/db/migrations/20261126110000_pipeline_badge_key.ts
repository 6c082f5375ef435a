/**
 * A pipeline's status badge is served at `/badges/<key>.svg`, the key derived from the server key
 * and the pipeline's id (src/pipelines/service.ts, `badgeKey`): kept here so a badge request finds
 * its pipeline by index. A migration cannot derive keys (it has no server key), so the column
 * starts empty and the badges area fills the keys it misses (src/badges/service.ts).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.string('badge_key', 64).unique();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.dropUnique(['badge_key']);
  });
  await knex.schema.alterTable('pipelines', (t) => {
    t.dropColumn('badge_key');
  });
}
