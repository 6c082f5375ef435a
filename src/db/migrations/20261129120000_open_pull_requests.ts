/**
 * `open_pull_requests`: the pull request open from each branch of a pipeline's own repository,
 * as the provider's deliveries last told it (GitHub's `pull_request` actions; a `closed` one
 * removes it). github.md: commits pushed to a pull request's branch in the repository itself
 * build from the `push` delivery, which carries the pull request's details; the `synchronize`
 * delivery builds nothing but refreshes those details. Forks' pull requests are not kept: their
 * commits send no `push`.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('open_pull_requests', (t) => {
    t.uuid('pipeline_id').notNullable().references('id').inTable('pipelines').onDelete('CASCADE');
    t.string('branch', 255).notNullable();
    // The build's `pull_request` as a push build of the branch carries it (JSON).
    t.text('pull_request').notNullable();
    t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable();
    t.primary(['pipeline_id', 'branch']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('open_pull_requests');
}
