/**
 * The team flags the official Go client sends and reads beside `members_can_create_pipelines`
 * (issue 30): whether members may create and destroy test suites and package registries. Stored
 * and returned; off by default, so an existing team grants nothing new.
 */
import type { Knex } from 'knex';

const FLAGS = ['members_can_create_suites', 'members_can_destroy_suites', 'members_can_create_registries', 'members_can_destroy_registries'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('teams', (t) => {
    for (const flag of FLAGS) t.boolean(flag).notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('teams', (t) => {
    for (const flag of FLAGS) t.dropColumn(flag);
  });
}
