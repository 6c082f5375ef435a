/**
 * What the sweeper and every agent poll read is served by an index on both stores, never by
 * reading all running jobs: the job an agent holds (by agent_id), the jobs of silent agents
 * (from the agents' heartbeat index), and running jobs with a timeout (a partial index).
 * The queries are JobRepository's own. (On Postgres seq scans are disabled for the check, as in
 * test/builds/plans.test.ts.)
 */
import type { Knex } from 'knex';
import { JobRepository } from '../../src/jobs/repository';
import { describeEachDatabase } from '../support/context';

describeEachDatabase('sweeper and agent poll query plans', (ctx) => {
  async function plan(q: Knex.QueryBuilder): Promise<string> {
    const db = ctx().services.db;
    const { sql, bindings } = q.toSQL();
    if (ctx().kind === 'sqlite') return ((await db.raw(`explain query plan ${sql}`, bindings as never)) as { detail: string }[]).map((r) => r.detail).join('\n');
    return db.transaction(async (trx) => {
      await trx.raw('set local enable_seqscan = off');
      return ((await trx.raw(`explain ${sql}`, bindings as never)).rows as Record<string, string>[]).map((r) => r['QUERY PLAN']).join('\n');
    });
  }
  const jobs = () => new JobRepository(ctx().services.db);

  it('finds the job an agent holds by its agent_id index', async () => {
    const text = await plan(jobs().heldByQuery(crypto.randomUUID()).query);
    expect(text).toMatch(/jobs_agent_id_index/);
  });

  it('finds running jobs with a timeout, oldest start first, by the partial index and without a sort', async () => {
    const text = await plan(jobs().timedRunningQuery(100).query);
    expect(text).toMatch(/jobs_state_started_at_timed_index/);
    expect(text).not.toMatch(/TEMP B-TREE|Sort/);
  });

  it('finds the jobs of silent agents from the agents, then each job by agent_id', async () => {
    const q = jobs().silentAgentJobsQuery(new Date(), 100).query;
    const text = await plan(q);
    expect(text).toMatch(/agents_connection_state_last_heartbeat_at_index/);
    expect(text).toMatch(/jobs_agent_id_index/);
  });
});
