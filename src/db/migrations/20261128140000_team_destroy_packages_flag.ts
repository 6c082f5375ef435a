/**
 * The team flag teams.md documents beside the registry ones: whether members may delete packages
 * (`members_can_destroy_packages`). Stored and returned, off by default; Windsock has no package
 * registries.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('teams', (t) => {
    t.boolean('members_can_destroy_packages').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('teams', (t) => {
    t.dropColumn('members_can_destroy_packages');
  });
}
