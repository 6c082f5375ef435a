/**
 * Dispatch finds the job an agent can run whatever the rest of the organization's queue holds:
 * a backlog of jobs no agent serves does not hide a runnable job, priority goes before age,
 * agents polling together each get a job of their own, and an idle agent of a higher priority
 * is left the job it may run (the docs' agent prioritization).
 */
import crypto from 'node:crypto';
import { describeEachDatabase, type TestContext } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { existing } from '../support/rows';

/** `count` more scheduled jobs like `jobId` (same rules, organization, build), each older (in dispatch too) than any job before. */
async function cloneJobs(ctx: TestContext, jobId: string, count: number): Promise<void> {
  const db = ctx.services.db;
  const template = existing(await db('jobs').where({ id: jobId }).first(), `job ${jobId}`);
  const oldest = Date.now() - 24 * 3600_000;
  const rows = Array.from({ length: count }, (_, i) => ({
    ...template,
    id: crypto.randomUUID(),
    step_id: crypto.randomUUID(),
    created_at: new Date(oldest - (count - i) * 1000),
    dispatch_at: new Date(oldest - (count - i) * 1000),
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

/** Registers (with the agent's `priority`, as the real agent sends it) and connects an agent. */
async function givenAgentWithPriority(
  ctx: TestContext,
  reg: string,
  name: string,
  priority: number | null,
  tags: string[] = [],
): Promise<{ id: string; token: string }> {
  const body = { name, hostname: `${name}.local`, version: '3.0.0', meta_data: tags, ...(priority === null ? {} : { priority: String(priority) }) };
  const registered = await ctx.http().post('/v3/register').set(agentAuth(reg)).send(body).expect(201);
  const agent = { id: registered.body.id as string, token: registered.body.access_token as string };
  await ctx.http().post('/v3/connect').set(agentAuth(agent.token)).expect(200);
  return agent;
}

describeEachDatabase('dispatch', (ctx) => {
  it('leaves each idle agent of a higher priority that polls the first job it may run; none, busy, silent or unmatched ones hold nothing back', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: work\n');
    const jobOf = async () => (await givenBuild(ctx(), org.slug, slug, token)).jobs[0]!.id;
    const none = await givenAgentWithPriority(ctx(), reg, 'none', null);
    const mid = await givenAgentWithPriority(ctx(), reg, 'mid', 1);
    const high = await givenAgentWithPriority(ctx(), reg, 'high', 5);
    const first = await jobOf();
    // The docs: higher priorities are assigned work first, agents without one last.
    expect(await poll(ctx(), none.token)).toBeNull();
    expect(await poll(ctx(), mid.token)).toBeNull();
    expect((await poll(ctx(), high.token))?.id).toBe(first);
    // high holds a job: of two new ones, mid is left the first and the agent without a priority takes the other.
    const [second, third] = [await jobOf(), await jobOf()];
    expect((await poll(ctx(), none.token))?.id).toBe(third);
    expect((await poll(ctx(), mid.token))?.id).toBe(second);

    // A higher one whose tags the job's rules do not match leaves it to the rest.
    const other = await givenAgentWithPriority(ctx(), reg, 'other', 9, ['queue=elsewhere']);
    const peer = await givenAgentWithPriority(ctx(), reg, 'peer', 5);
    const fourth = await jobOf();
    expect((await poll(ctx(), peer.token))?.id).toBe(fourth);
    expect(await poll(ctx(), other.token)).toBeNull();

    // A higher one that stopped polling is passed over once its heartbeat is old.
    const quiet = await givenAgentWithPriority(ctx(), reg, 'quiet', 7);
    const fifth = await jobOf();
    const later = await givenAgentWithPriority(ctx(), reg, 'later', null);
    expect(await poll(ctx(), later.token)).toBeNull();
    await ctx()
      .services.db('agents')
      .where({ id: quiet.id })
      .update({ last_heartbeat_at: new Date(Date.now() - 60_000) });
    expect((await poll(ctx(), later.token))?.id).toBe(fifth);
  });

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

  it('dispatches a job an older build uploaded before a newer build’s jobs: it takes its uploader’s place (the docs’ job priority)', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug: generator } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: generate\n    agents: { queue: uploaders }\n');
    await givenBuild(ctx(), org.slug, generator, token);
    const uploaders = await givenAgent(ctx(), reg, 'uploader', ['queue=uploaders']);
    const uploader = await poll(ctx(), uploaders.token);
    await ctx().http().put(`/v3/jobs/${uploader!.id}/accept`).set(agentAuth(uploaders.token)).expect(200);
    await ctx().http().put(`/v3/jobs/${uploader!.id}/start`).set(agentAuth(uploaders.token)).expect(200);
    // A newer build's job is scheduled before the upload.
    const { slug: other } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: newer\n');
    await givenBuild(ctx(), org.slug, other, token);
    await ctx()
      .http()
      .post(`/v3/jobs/${uploader!.id}/pipelines`)
      .set(agentAuth(uploaders.token))
      .send({ uuid: crypto.randomUUID(), pipeline: { steps: [{ command: 'uploaded' }] } })
      .expect(201);
    const agent = await givenAgent(ctx(), reg, 'default');
    expect((await poll(ctx(), agent.token))!.command).toBe('uploaded');
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
