/**
 * Job acquisition (`buildkite-agent start --acquire-job ID`) and the agents dispatch leaves out:
 * an agent registered with `ignore_in_dispatches: true` is offered nothing by ping and runs the
 * job it acquires (`PUT /v3/jobs/{id}/acquire`: 423 while the job is not runnable yet, 422 when
 * it never will be for this agent, 404 for another organization's); an agent whose finish said
 * `ignore_agent_in_dispatches: true` is offered nothing more. On each store.
 */
import { auth, describeEachDatabase } from '../support/context';
import { acceptAndStart, agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { existing } from '../support/rows';

describeEachDatabase('job acquisition and dispatch', (ctx) => {
  const setUp = async (configuration: string) => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, configuration);
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    return { org, token, reg, slug, build, url };
  };
  /** Registers (with these extra fields) and connects an agent: its access token. */
  const register = async (reg: string, name: string, extra: Record<string, unknown> = {}) => {
    const res = await ctx()
      .http()
      .post('/v3/register')
      .set(agentAuth(reg))
      .send({ name, hostname: `${name}.local`, meta_data: ['queue=default'], ...extra })
      .expect(201);
    await ctx().http().post('/v3/connect').set(agentAuth(res.body.access_token)).expect(200);
    return { id: res.body.id as string, token: res.body.access_token as string };
  };
  const ping = async (token: string) => (await ctx().http().get('/v3/ping').set(agentAuth(token)).expect(200)).body;
  const acquire = (token: string, jobId: string) => ctx().http().put(`/v3/jobs/${jobId}/acquire`).set(agentAuth(token));
  const jobsOf = async (s: { url: string; token: string }) =>
    (await ctx().http().get(s.url).set(auth(s.token)).expect(200)).body.jobs as { id: string; state: string; type: string; agent?: { id: string } | null }[];

  it('offers an ignore_in_dispatches agent nothing, and runs the job it acquires', async () => {
    const s = await setUp('steps:\n  - command: make a\n  - command: make b\n');
    const acquirer = await register(s.reg, 'acquirer', { ignore_in_dispatches: true });
    const [a, b] = await jobsOf(s);
    // Two scheduled jobs it may run: ping offers neither.
    expect(await ping(acquirer.token)).toEqual({ action: 'idle', job: null });

    const acquired = await acquire(acquirer.token, a!.id);
    expect(acquired.status).toBe(200);
    expect(acquired.body).toMatchObject({ id: a!.id, state: 'accepted', chunks_max_size_bytes: expect.any(Number) });
    expect(acquired.body.env.BUILDKITE_COMMAND).toBe('make a');
    // The answer lost and the acquire sent again: the same job, still accepted.
    expect((await acquire(acquirer.token, a!.id).expect(200)).body).toMatchObject({ id: a!.id, state: 'accepted' });
    // Held, never offered by ping (the agent never accepts an acquired job).
    expect(await ping(acquirer.token)).toEqual({ action: 'idle', job: null });
    await ctx().http().put(`/v3/jobs/${a!.id}/start`).set(agentAuth(acquirer.token)).send({}).expect(200);
    await ctx().http().put(`/v3/jobs/${a!.id}/finish`).set(agentAuth(acquirer.token)).send({ exit_status: '0' }).expect(200);
    // Still left out after its job; an ordinary agent is offered the other one.
    expect(await ping(acquirer.token)).toEqual({ action: 'idle', job: null });
    const other = await givenAgent(ctx(), s.reg, 'other');
    expect((await ping(other.token)).job.id).toBe(b!.id);

    const jobs = await jobsOf(s);
    expect(jobs.find((j) => j.id === a!.id)).toMatchObject({ state: 'passed', agent: expect.objectContaining({ id: acquirer.id }) });
  });

  it("answers 423 with Retry-After while the job waits, 422 when it can never be this agent's, 404 for another organization's", async () => {
    const s = await setUp(
      'steps:\n  - command: first\n  - wait\n  - command: second\n  - block: Deploy\n  - command: deploy\n    agents:\n      queue: deploy\n',
    );
    const acquirer = await register(s.reg, 'acquirer', { ignore_in_dispatches: true });
    const runner = await givenAgent(ctx(), s.reg, 'runner');
    const jobs = await jobsOf(s);
    const [first, , second, block, deploy] = jobs;

    const waiting = await acquire(acquirer.token, second!.id);
    expect(waiting.status).toBe(423);
    expect(Number(waiting.headers['retry-after'])).toBeGreaterThan(0);
    expect(waiting.body.message).toMatch(/^The job is (waiting|pending)/);

    // The first job taken by another agent: 422, which the agent does not retry.
    const offered = (await ping(runner.token)).job;
    expect(offered.id).toBe(first!.id);
    const taken = await acquire(acquirer.token, first!.id);
    expect(taken.status).toBe(422);
    expect(taken.body.message).toBe("The job can't be acquired: it is assigned.");
    // A block step is no agent's job; one behind the block is not runnable yet (its rules are judged once it is).
    const blockStep = await acquire(acquirer.token, block!.id);
    expect(blockStep.status).toBe(422);
    expect(blockStep.body.message).toBe("The job can't be acquired: it is a manual job, which no agent runs.");
    expect((await acquire(acquirer.token, deploy!.id)).status).toBe(423);

    // Once the first passed, the second is scheduled and acquired.
    await acceptAndStart(ctx(), runner.token, first!.id);
    await ctx().http().put(`/v3/jobs/${first!.id}/finish`).set(agentAuth(runner.token)).send({ exit_status: 0 }).expect(200);
    expect((await acquire(acquirer.token, second!.id).expect(200)).body.state).toBe('accepted');
    await ctx().http().put(`/v3/jobs/${second!.id}/start`).set(agentAuth(acquirer.token)).expect(200);

    // Another organization's job is as good as missing.
    const t = await setUp('steps:\n  - command: theirs\n');
    const [theirs] = await jobsOf(t);
    const missing = await acquire(acquirer.token, theirs!.id);
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('No job found');
    expect((await acquire(acquirer.token, '00000000-0000-4000-8000-000000000000')).status).toBe(404);
  });

  it('refuses a job whose agent query rules the agent does not satisfy, and any while it holds one', async () => {
    const s = await setUp('steps:\n  - command: deploy\n    agents:\n      queue: deploy\n  - command: build\n  - command: more\n');
    const acquirer = await register(s.reg, 'acquirer', { ignore_in_dispatches: true });
    const [deploy, build, more] = await jobsOf(s);
    const mismatch = await acquire(acquirer.token, deploy!.id);
    expect(mismatch.status).toBe(422);
    expect(mismatch.body.message).toBe("The job can't be acquired: the agent's tags do not match its agent query rules.");
    await acquire(acquirer.token, build!.id).expect(200);
    const busy = await acquire(acquirer.token, more!.id);
    expect(busy.status).toBe(422);
    expect(busy.body.message).toBe("The job can't be acquired: the agent is paused, stopping or already holds a job.");
    // Nothing was written: the job is still scheduled for another agent.
    const deployer = await givenAgent(ctx(), s.reg, 'deployer', ['queue=deploy']);
    expect((await ping(deployer.token)).job.id).toBe(deploy!.id);
  });

  it("keeps a finish's ignore_agent_in_dispatches on the agent: true leaves it out of dispatch, false brings it back", async () => {
    const s = await setUp('steps:\n  - command: a\n  - command: b\n  - command: c\n');
    const agent = await register(s.reg, 'runner');
    const run = async (ignore: boolean) => {
      const job = (await ping(agent.token)).job;
      expect(job).not.toBeNull();
      await acceptAndStart(ctx(), agent.token, job.id);
      await ctx()
        .http()
        .put(`/v3/jobs/${job.id}/finish`)
        .set(agentAuth(agent.token))
        .send({ exit_status: '0', ignore_agent_in_dispatches: ignore })
        .expect(200);
    };
    await run(false);
    expect(existing(await ctx().services.db('agents').where({ id: agent.id }).first(), 'the agent').ignore_in_dispatches).toBeFalsy();
    await run(true);
    expect(Boolean(existing(await ctx().services.db('agents').where({ id: agent.id }).first(), 'the agent').ignore_in_dispatches)).toBe(true);
    // A scheduled job is left, but not for this agent.
    expect(await ping(agent.token)).toEqual({ action: 'idle', job: null });
    expect((await jobsOf(s)).filter((j) => j.state === 'scheduled')).toHaveLength(1);
  });
});
