/**
 * Dispatch finds the job an agent can run whatever the rest of the organization's queue holds:
 * a backlog of jobs no agent serves does not hide a runnable job, priority goes before age,
 * and agents polling together each get a job of their own.
 */
import crypto from 'node:crypto';
import { describeEachDatabase, type TestContext } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { existing } from '../support/rows';

/** `count` more scheduled jobs like `jobId` (same rules, organization, build), each older than any job before. */
async function cloneJobs(ctx: TestContext, jobId: string, count: number): Promise<void> {
  const db = ctx.services.db;
  const template = existing(await db('jobs').where({ id: jobId }).first(), `job ${jobId}`);
  const oldest = Date.now() - 24 * 3600_000;
  const rows = Array.from({ length: count }, (_, i) => ({
    ...template,
    id: crypto.randomUUID(),
    step_id: crypto.randomUUID(),
    created_at: new Date(oldest - (count - i) * 1000),
  }));
  const perInsert = Math.floor(900 / Object.keys(template).length);
  await db.transaction(async (trx) => {
    for (let i = 0; i < rows.length; i += perInsert) await trx('jobs').insert(rows.slice(i, i + perInsert));
  });
}

async function poll(ctx: TestContext, token: string): Promise<{ id: string; command: string } | null> {
  const res = await ctx.http().get('/v3/ping').set(agentAuth(token));
  expect(res.status).toBe(200);
  return (res.body.job as { id: string; command: string } | null) ?? null;
}

describeEachDatabase('dispatch', (ctx) => {
  it('gives an agent the job of its queue behind 10,000 older jobs of a queue nobody serves', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug: stuck } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: stuck\n    agents: { queue: nobody }\n');
    const stuckBuild = await givenBuild(ctx(), org.slug, stuck, token);
    await cloneJobs(ctx(), stuckBuild.jobs[0]!.id, 10_000);
    const { slug: q2 } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: mine\n    agents: { queue: q2 }\n');
    const build = await givenBuild(ctx(), org.slug, q2, token);
    const agent = await givenAgent(ctx(), reg, 'q2-agent', ['queue=q2']);

    const job = await poll(ctx(), agent.token);
    expect(job).toMatchObject({ id: build.jobs[0]!.id, command: 'mine' });
    const left = await ctx().services.db('jobs').where({ state: 'scheduled', build_id: stuckBuild.id }).count({ n: '*' }).first();
    expect(Number(left?.n)).toBe(10_001);
  });

  it('offers jobs of a wildcard queue and of any queue behind a backlog too, and still none of the backlog', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug: stuck } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: stuck\n    agents: { queue: nobody }\n');
    await cloneJobs(ctx(), (await givenBuild(ctx(), org.slug, stuck, token)).jobs[0]!.id, 500);
    const { slug: other } = await givenPipeline(
      ctx(),
      org.slug,
      token,
      'steps:\n  - command: glob\n    agents: { queue: "build-*" }\n  - command: anywhere\n    agents: { queue: "*", os: linux }\n',
    );
    await givenBuild(ctx(), org.slug, other, token);
    const arm = await givenAgent(ctx(), reg, 'arm', ['queue=build-arm']);
    const linux = await givenAgent(ctx(), reg, 'linux', ['queue=elsewhere', 'os=linux']);
    const idle = await givenAgent(ctx(), reg, 'idle', ['queue=nobody-else']);
    expect((await poll(ctx(), arm.token))?.command).toBe('glob');
    expect((await poll(ctx(), linux.token))?.command).toBe('anywhere');
    expect(await poll(ctx(), idle.token)).toBeNull();
  });

  it('takes a job of higher priority before older jobs, then the oldest', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: old\n  - command: older\n');
    const first = await givenBuild(ctx(), org.slug, slug, token);
    const { slug: urgent } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: urgent\n');
    const late = await givenBuild(ctx(), org.slug, urgent, token);
    await ctx().services.db('jobs').where({ id: late.jobs[0]!.id }).update({ priority: 5 });
    const agent = await givenAgent(ctx(), reg, 'default');

    const taken: string[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await poll(ctx(), agent.token);
      taken.push(job!.command);
      // Frees the agent for the next poll.
      await ctx().services.db('jobs').where({ id: job!.id }).update({ state: 'passed' });
      await ctx().services.db('agents').where({ id: agent.id }).update({ job_id: null });
    }
    expect(taken).toEqual(['urgent', 'old', 'older']);
    expect(first.jobs).toHaveLength(2);
  });

  it('gives 16 agents polling at once 16 different jobs, with a backlog of other queues ahead', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug: stuck } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: stuck\n    agents: { queue: nobody }\n');
    await cloneJobs(ctx(), (await givenBuild(ctx(), org.slug, stuck, token)).jobs[0]!.id, 1_000);
    const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: work\n    parallelism: 40\n');
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const agents = await Promise.all(Array.from({ length: 16 }, (_, i) => givenAgent(ctx(), reg, `fleet-${i}`)));

    const jobs = await Promise.all(agents.map((a) => poll(ctx(), a.token)));
    const ids = jobs.map((j) => j?.id);
    expect(ids.every((id) => id !== undefined)).toBe(true);
    expect(new Set(ids).size).toBe(16);
    const rows = await ctx().services.db('jobs').where({ build_id: build.id }).whereNotNull('agent_id').select('id', 'agent_id');
    expect(rows).toHaveLength(16);
    expect(new Set(rows.map((r) => r.agent_id)).size).toBe(16);
    // The oldest 16 of the build, in build order: nothing skipped.
    const first16 = (await ctx().services.db('jobs').where({ build_id: build.id }).orderBy('position').limit(16).select('id')).map((r) => r.id);
    expect(new Set(ids)).toEqual(new Set(first16));
  });
});
