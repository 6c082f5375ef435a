/**
 * Artifacts: the files a job uploads. A row is made `new` when the agent registers the file
 * (batch create), gets its content's address (`content_sha256`, the content-addressed storage
 * key) when the content is uploaded and checked, and becomes `finished` or `error` when the
 * agent reports; `deleted` keeps the row without content. Read per build (REST list, agent
 * search) and per job, oldest first; a batch is found again by the agent's own id (per job) and
 * by the service's batch id (the upload form).
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('artifacts', (t) => {
    t.uuid('id').primary();
    t.uuid('job_id').notNullable().references('jobs.id').onDelete('CASCADE');
    t.uuid('build_id').notNullable().references('builds.id').onDelete('CASCADE');
    t.uuid('batch_id').notNullable();
    t.string('client_batch_id', 100);
    t.integer('batch_index').notNullable();
    t.string('state', 20).notNullable();
    t.text('path').notNullable();
    t.string('content_type', 255).notNullable();
    t.bigInteger('file_size').notNullable();
    t.string('sha1sum', 40).notNullable();
    t.string('sha256sum', 64);
    t.string('content_sha256', 64);
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable();
    t.timestamp('finished_at', { useTz: true, precision: 3 });
    t.timestamp('deleted_at', { useTz: true, precision: 3 });
    t.index(['build_id', 'created_at']);
    t.index(['job_id', 'created_at']);
    t.index(['batch_id', 'batch_index']);
    t.index(['job_id', 'client_batch_id']);
    t.index(['content_sha256']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('artifacts');
}
