/**
 * The dispatch and log-size migrations fill their new columns for the jobs already stored: each
 * job's organization and dispatch class, and the bytes of its log, so existing scheduled jobs
 * are still dispatched and existing logs count against the cap.
 */
import * as jobDispatch from '../../src/db/migrations/20261125110000_job_dispatch';
import * as jobLogSize from '../../src/db/migrations/20261125120000_job_log_size';
import { dispatchKey } from '../../src/builds/jobs/dispatch-key';
import { agentAuth, givenBuildAndAgent } from '../support/agents';
import { describeEachDatabase } from '../support/context';

describeEachDatabase('the job dispatch and log size migrations', (ctx) => {
  it('backfill organization_id, dispatch_key and log_size for the jobs already there', async () => {
    const s = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n    agents: { queue: deploy }\n  - command: b\n');
    const db = ctx().services.db;
    const [first] = s.build.jobs;
    await db('job_log_chunks').insert([
      { job_id: first!.id, sequence: 1, offset: 0, size: 6, content: 'hello ', created_at: new Date() },
      { job_id: first!.id, sequence: 2, offset: 6, size: 7, content: 'wörld\n', created_at: new Date() },
    ]);
    await jobLogSize.down(db);
    await jobDispatch.down(db);
    expect(await db.schema.hasColumn('jobs', 'dispatch_key')).toBe(false);
    await jobDispatch.up(db);
    await jobLogSize.up(db);

    const rows = await db('jobs')
      .where({ build_id: s.build.id })
      .orderBy('position')
      .select('id', 'organization_id', 'dispatch_key', 'agent_query_rules', 'log_size');
    expect(rows.map((r) => r.organization_id)).toEqual([s.org.id, s.org.id]);
    expect(rows.map((r) => r.dispatch_key)).toEqual(rows.map((r) => dispatchKey(r.agent_query_rules as string)));
    expect(rows[0]!.dispatch_key).not.toBe(rows[1]!.dispatch_key);
    expect(rows.map((r) => Number(r.log_size))).toEqual([13, 0]);
    // The default-queue job is dispatched to a default agent after the migration.
    const job = (await ctx().http().get('/v3/ping').set(agentAuth(s.agent.token))).body.job;
    expect(job.command).toBe('b');
  });
});
