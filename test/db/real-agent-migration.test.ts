import * as realAgent from '../../src/db/migrations/20261127050000_real_agent';
import { describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

describeEachDatabase('the real agent migration', (ctx) => {
  it('goes down and up again with agents and their jobs in place', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: true\n');
    await givenBuild(ctx(), org.slug, slug, token);
    const agent = await givenAgent(ctx(), reg, 'kept');
    const job = (await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body.job;
    const db = ctx().services.db;
    await realAgent.down(db);
    for (const column of ['pid', 'machine_id', 'build', 'script_eval_enabled', 'ignore_in_dispatches', 'features'])
      expect(await db.schema.hasColumn('agents', column)).toBe(false);
    expect(await db.schema.hasColumn('jobs', 'agent_header_times')).toBe(false);
    await realAgent.up(db);
    if (ctx().kind === 'postgres') {
      // Postgres keeps each connection's prepared statements, planned for the old columns of
      // `jobs.*`: the pool starts afresh, as a server does when it starts after a migration.
      await db.destroy();
      db.initialize();
    }
    expect(await db('agents').where({ id: agent.id }).first()).toMatchObject({ name: 'kept', pid: null });
    expect(await db('jobs').where({ id: job.id }).first()).toMatchObject({ agent_id: agent.id, chunks_failed_count: null });
    // The held job still works with the agent after the round trip.
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(agent.token)).expect(200);
  });
});
