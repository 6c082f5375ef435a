/**
 * A job's dispatch priority (`priority.number` in the job representation; a step's `priority`
 * sets it): agents take higher priority first, then the oldest. 0 is the real API's default.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.integer('priority').notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('priority');
  });
}
