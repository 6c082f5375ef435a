/**
 * An execution's own tags: the `tags` of a test result in a JSON upload (importing_json.md's
 * "Execution level custom tags"), a JSON object or null. They sit over the upload's tags (kept
 * on the run) and under the execution's mutable `mut.` tags, in the failed executions' `tags`
 * and in the test lists' `tags` filter.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('test_executions', (t) => {
    t.text('tags'); // JSON object or null
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('test_executions', (t) => {
    t.dropColumn('tags');
  });
}
