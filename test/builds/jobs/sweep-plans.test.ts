/**
 * What the sweeper and every agent poll read is served by an index on both stores, never by
 * reading all running jobs: the job an agent holds (by agent_id, with its build's latest unblock
 * from the partial index of unblocked jobs), the jobs of silent agents
 * (from the agents' heartbeat index), running jobs with a timeout (a partial index), and the
 * jobs a poll may dispatch (the partial dispatch index, one class at a time), the idle agents of a
 * higher priority a poll leaves jobs to (a partial index of agents with a priority).
 * The queries are JobRepository's own. (On Postgres seq scans are disabled for the check, as in
 * test/builds/plans.test.ts.)
 */
import type { Knex } from 'knex';
import { JobRepository } from '../../../src/builds/jobs/repository';
import { AgentRepository } from '../../../src/agents/repository';
import { describeEachDatabase } from '../../support/context';

describeEachDatabase('sweeper and agent poll query plans', (ctx) => {
  async function plan(q: Knex.QueryBuilder | Knex.Raw): Promise<string> {
    const db = ctx().services.db;
    const { sql, bindings } = q.toSQL();
    if (ctx().kind === 'sqlite')
      return ((await db.raw(`explain query plan ${sql}`, bindings as never)) as { detail: string }[]).map((r) => r.detail).join('\n');
    return db.transaction(async (trx) => {
      await trx.raw('set local enable_seqscan = off');
      return ((await trx.raw(`explain ${sql}`, bindings as never)).rows as Record<string, string>[]).map((r) => r['QUERY PLAN']).join('\n');
    });
  }
  const jobs = () => new JobRepository(ctx().services.db);

  it('reads the idle agents of a higher priority from the partial index of agents with one, with or without a priority of its own', async () => {
    const agents = new AgentRepository(ctx().services.db);
    for (const priority of [null, 3]) {
      const text = await plan(agents.idleAboveQuery(crypto.randomUUID(), null, priority, 32).query);
      expect(text).toMatch(/agents_idle_priority_index/);
    }
  });

  it('finds the job an agent holds by its agent_id index', async () => {
    const text = await plan(jobs().heldByQuery(crypto.randomUUID()).query);
    expect(text).toMatch(/jobs_agent_id_index/);
  });

  it("reads the build's latest unblock for the job's environment from the partial index of unblocked jobs, never the build's jobs", async () => {
    const text = await plan(jobs().heldByQuery(crypto.randomUUID()).query);
    // Twice: the unblocker's snapshot, and their id for their teams.
    expect(text.match(/jobs_unblocked_index/g)).toHaveLength(2);
    expect(text).not.toMatch(/jobs_build_id_position_index|SCAN jobs|Seq Scan/);
  });

  it('finds running jobs with a timeout, oldest start first, by the partial index and without a sort', async () => {
    const text = await plan(jobs().timedRunningQuery(100).query);
    expect(text).toMatch(/jobs_state_started_at_timed_index/);
    expect(text).not.toMatch(/TEMP B-TREE|Sort/);
  });

  it("lists an organization's dispatch classes by seeks in the dispatch index, never a scan of its jobs", async () => {
    const text = await plan(jobs().dispatchClassesQuery(crypto.randomUUID()).query);
    expect(text).toMatch(/jobs_dispatch_index/);
    expect(text).not.toMatch(/SCAN jobs|Seq Scan|Bitmap/);
  });

  it("reads each matching class's first jobs in dispatch order from the index, sorting only what it read", async () => {
    const text = await plan(jobs().dispatchCandidatesQuery(crypto.randomUUID(), ['a', 'b', 'c'], 32).query);
    expect(text.match(/jobs_dispatch_index/g)).toHaveLength(3);
    expect(text).not.toMatch(/SCAN jobs|Seq Scan|Bitmap/);
    // Postgres merges the classes' index-ordered runs; SQLite sorts each class's 32 rows to merge them.
    if (ctx().kind === 'postgres') expect(text).toMatch(/Merge Append/);
  });

  it('finds the jobs of silent agents from the agents, then each job by agent_id', async () => {
    const q = jobs().silentAgentJobsQuery(new Date(), 100).query;
    const text = await plan(q);
    expect(text).toMatch(/agents_connection_state_last_heartbeat_at_index/);
    expect(text).toMatch(/jobs_agent_id_index/);
  });
});
