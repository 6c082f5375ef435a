/**
 * `jobs.log_size`: the bytes of log chunks the agent sent for the job, kept with each stored
 * chunk, so the log's cap (JOB_LOG_LIMIT_BYTES) is checked by one guarded UPDATE of the job's
 * row instead of adding up its chunks on every append.
 */
import type { Knex } from 'knex';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.bigInteger('log_size').notNullable().defaultTo(0);
  });
  await knex('jobs').update({
    log_size: knex.raw('coalesce((select sum(c.size) from job_log_chunks as c where c.job_id = jobs.id), 0)'),
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('jobs', (t) => {
    t.dropColumn('log_size');
  });
}
