/**
 * A pipeline's `emoji` and `color`, the optional create and update properties the docs'
 * pipelines page lists ("An emoji to represent this pipeline", "A color hex code to represent
 * this pipeline"). They were dropped without a word; now kept and shown.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.string('emoji', 255).nullable();
    t.string('color', 7).nullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('pipelines', (t) => {
    t.dropColumn('emoji');
    t.dropColumn('color');
  });
}
