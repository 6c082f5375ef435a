/**
 * How many times each automatic retry rule of a job's step has retried the job's line so far:
 * JSON, an array of counts by the rule's index in `retry.automatic` (`[2, 0]`), carried to the job
 * that replaces a retried one with the rule that retried it counted once more. The docs' retry
 * page: "Each retry rule tracks its own count independently". Null: no rule has retried it.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.text('automatic_retries');
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('automatic_retries');
  });
}
