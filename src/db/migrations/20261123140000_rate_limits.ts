/**
 * Rate-limit counters: one row per (bucket, fixed window), incremented by one upsert per request
 * so that several server processes on one database share each budget. A bucket is
 * `org:<id>`, `user:<id>` or `auth:<address>`. On Postgres the table is UNLOGGED: counters need
 * no crash safety (a crash loses at most the current minute's counts), and skipping the WAL keeps
 * the per-request write cheap.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('rate_limits', (t) => {
    t.string('bucket', 100).notNullable();
    // Unix seconds at which the window starts.
    t.bigInteger('window_start').notNullable();
    t.integer('count').notNullable();
    t.primary(['bucket', 'window_start']);
    t.index(['window_start']);
  });
  const client: Knex.Client = knex.client;
  if (client.dialect === 'postgresql') await knex.raw('alter table rate_limits set unlogged');
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTable('rate_limits');
}
