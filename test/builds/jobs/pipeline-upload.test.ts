import { auth, describeEachDatabase, type TestContext } from '../../support/context';
import { takeNextJob, agentAuth, givenAgent, givenRegistrationToken, type TestAgent } from '../../support/agents';
import { givenPipeline } from '../../support/given';
import type { BuildJson, JobJson } from '../../support/types';

async function take(ctx: TestContext, agent: TestAgent): Promise<{ id: string; command: string; env: Record<string, string> }> {
  const job = await takeNextJob(ctx, agent.token);
  return job;
}

async function finish(ctx: TestContext, agent: TestAgent, jobId: string, exitStatus = 0) {
  await ctx.http().put(`/v3/jobs/${jobId}/finish`).set(agentAuth(agent.token)).send({ exit_status: exitStatus }).expect(200);
}

describeEachDatabase('pipeline upload through the agent API', (ctx) => {
  async function setup(configuration: string) {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, configuration);
    await ctx()
      .http()
      .patch(`/v2/organizations/${org.slug}/pipelines/${slug}`)
      .set(auth(token))
      .send({ configuration: `env:\n  FROM_PIPELINE: p\n  SHARED: pipeline\n${configuration}` })
      .expect(200);
    const created = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines/${slug}/builds`)
      .set(auth(token))
      .send({ commit: 'abc', branch: 'main', env: { FROM_BUILD: 'b' } });
    expect(created.status).toBe(201);
    const agent = await givenAgent(ctx(), reg, 'runner');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${created.body.number}`;
    const read = async () => (await ctx().http().get(url).set(auth(token)).expect(200)).body as BuildJson;
    const upload = (jobId: string, pipeline: unknown, as: TestAgent = agent) =>
      ctx().http().post(`/v3/jobs/${jobId}/pipelines`).set(agentAuth(as.token)).send({ pipeline });
    return { org, token, reg, agent, url, read, upload };
  }
  const commands = (b: { jobs: JobJson[] }) => b.jobs.map((j) => (j.type === 'waiter' ? 'wait' : j.type === 'manual' ? `block:${j.label}` : j.command));

  it('with replace (pipeline upload --replace), removes the pending steps first and keeps what runs or ran', async () => {
    const s = await setup('steps:\n  - command: build\n  - command: buildkite-agent pipeline upload\n  - wait\n  - command: placeholder\n  - block: Ship?\n');
    const built = await take(ctx(), s.agent);
    await finish(ctx(), s.agent, built.id);
    const uploader = await take(ctx(), s.agent);
    const res = await ctx()
      .http()
      .post(`/v3/jobs/${uploader.id}/pipelines`)
      .set(agentAuth(s.agent.token))
      .send({ pipeline: { steps: [{ command: 'generated', key: 'gen' }] }, uuid: 'b1e6f3a2-6d8c-4f0e-9a3b-2c1d0e9f8a7b', replace: true })
      .expect(201);
    expect(res.body.jobs.map((j: JobJson) => j.step_key)).toEqual(['gen']);
    // The docs: 'removes all pending steps from the build before adding the uploaded ones. Jobs that are
    // already running (including the upload step itself) and jobs that have already completed are not affected'.
    let b = await s.read();
    expect(commands(b)).toEqual(['build', 'buildkite-agent pipeline upload', 'generated']);
    expect(b.jobs.map((j) => j.state)).toEqual(['passed', 'running', 'scheduled']);
    // Its retry (a lost answer, the same uuid) removes nothing more and adds nothing.
    await ctx()
      .http()
      .post(`/v3/jobs/${uploader.id}/pipelines`)
      .set(agentAuth(s.agent.token))
      .send({ pipeline: { steps: [{ command: 'generated', key: 'gen' }] }, uuid: 'b1e6f3a2-6d8c-4f0e-9a3b-2c1d0e9f8a7b', replace: true })
      .expect(201);
    expect(commands(await s.read())).toEqual(['build', 'buildkite-agent pipeline upload', 'generated']);
    const uploads = (await ctx().http().get(`${s.url}/step-uploads`).set(auth(s.token)).expect(200)).body.items as { replace_existing_steps: boolean }[];
    expect(uploads.map((u) => u.replace_existing_steps)).toEqual([true]);
    await finish(ctx(), s.agent, uploader.id);
    const generated = await take(ctx(), s.agent);
    expect(generated.command).toBe('generated');
    await finish(ctx(), s.agent, generated.id);
    b = await s.read();
    expect([b.state, b.jobs.length]).toEqual(['passed', 3]);
  });

  it('inserts uploaded steps after the uploading step, in order, later uploads after earlier ones, and runs them', async () => {
    const s = await setup('steps:\n  - command: buildkite-agent pipeline upload\n  - wait\n  - command: last\n');
    const uploader = await take(ctx(), s.agent);
    const before = Date.now();
    const first = await s.upload(
      uploader.id,
      'env:\n  FROM_UPLOAD: u\n  SHARED: upload\nsteps:\n  - command: one\n    env: { FROM_STEP: s }\n  - wait\n  - command: two\n',
    );
    expect(first.status).toBe(201);
    expect(first.body.jobs.map((j: JobJson) => [j.type, j.state])).toEqual([
      ['script', 'scheduled'],
      ['waiter', 'waiting'],
      ['script', 'waiting'],
    ]);
    const upload = (pipeline: unknown) =>
      ctx().http().post(`/v3/jobs/${uploader.id}/pipelines`).set(agentAuth(s.agent.token)).send({ pipeline, uuid: '6b1c7f9e-2f43-4c1e-9a55-0c3f1d2e4a10' });
    const second = await upload({ steps: [{ command: 'three' }] });
    expect(second.status).toBe(201);
    // Sent again with the same uuid (a lost answer): nothing is added, the same jobs are answered.
    const again = await upload({ steps: [{ command: 'three' }] });
    expect(again.status).toBe(201);
    expect(again.body.jobs).toEqual(second.body.jobs);
    let b = await s.read();
    expect(commands(b)).toEqual(['buildkite-agent pipeline upload', 'one', 'wait', 'two', 'three', 'wait', 'last']);
    const one = b.jobs[1]!;
    expect(Date.parse(one.scheduled_at!)).toBeGreaterThanOrEqual(before - 5);

    // Another agent runs `one` while the uploader still runs, with the env merged as for any job.
    const other = await givenAgent(ctx(), s.reg, 'other');
    const taken = await take(ctx(), other);
    expect(taken.command).toBe('one');
    expect(taken.env).toMatchObject({ FROM_PIPELINE: 'p', FROM_UPLOAD: 'u', SHARED: 'upload', FROM_BUILD: 'b', FROM_STEP: 's' });
    await finish(ctx(), other, taken.id);
    await finish(ctx(), s.agent, uploader.id);
    // The uploaded wait passed: two and three run, then the original wait, then last.
    const ran: string[] = [];
    for (let i = 0; i < 3; i++) {
      const job = await take(ctx(), s.agent);
      ran.push(job.command);
      await finish(ctx(), s.agent, job.id);
    }
    expect(ran).toEqual(['two', 'three', 'last']);
    b = await s.read();
    expect(b.state).toBe('passed');
    expect(b.jobs.every((j) => j.state === 'passed')).toBe(true);
  });

  it('puts a nested upload after its uploader, and block steps wait for what comes before them', async () => {
    const s = await setup('steps:\n  - command: upload-a\n  - wait\n  - command: tail\n');
    const a = await take(ctx(), s.agent);
    expect((await s.upload(a.id, 'steps:\n  - command: upload-b\n  - block: Go\n  - command: gated\n')).status).toBe(201);
    const other = await givenAgent(ctx(), s.reg, 'other');
    const bJob = await take(ctx(), other);
    expect(bJob.command).toBe('upload-b');
    expect((await s.upload(bJob.id, [{ command: 'from-b' }], other)).status).toBe(201);
    // A's second upload goes after everything A's first upload brought, B's included.
    expect((await s.upload(a.id, [{ command: 'a-again' }])).status).toBe(201);
    let b = await s.read();
    expect(commands(b)).toEqual(['upload-a', 'upload-b', 'from-b', 'block:Go', 'gated', 'a-again', 'wait', 'tail']);
    expect(b.jobs[3]!.state).toBe('waiting');
    await finish(ctx(), other, bJob.id);
    await finish(ctx(), s.agent, a.id);
    const fromB = await take(ctx(), s.agent);
    expect(fromB.command).toBe('from-b');
    await finish(ctx(), s.agent, fromB.id);
    b = await s.read();
    expect(b.jobs[3]!.state).toBe('blocked');
  });

  it('refuses bad pipelines with field errors, and uploads by anyone but the agent running the job', async () => {
    const s = await setup('steps:\n  - command: upload\n');
    const job = (await ctx().http().get('/v3/ping').set(agentAuth(s.agent.token)).expect(200)).body.job;
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(s.agent.token)).expect(200);
    const early = await s.upload(job.id, 'steps:\n  - command: x\n');
    expect(early.status).toBe(422);
    expect(early.body.message).toContain('running');
    await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(s.agent.token)).expect(200);

    const badYaml = await s.upload(job.id, 'steps: [');
    expect(badYaml.status).toBe(422);
    expect(badYaml.body.errors).toEqual([expect.objectContaining({ field: 'pipeline' })]);
    const badStep = await s.upload(job.id, { steps: [{ command: 'ok' }, { wait: null, trigger: 'x' }] });
    expect(badStep.status).toBe(422);
    expect(badStep.body.errors[0].code).toContain('step 2');
    expect((await s.upload(job.id, 'steps: []')).status).toBe(422);
    expect((await ctx().http().post(`/v3/jobs/${job.id}/pipelines`).set(agentAuth(s.agent.token)).send({})).status).toBe(422);

    const other = await givenAgent(ctx(), s.reg, 'other');
    expect((await s.upload(job.id, 'steps:\n  - command: x\n', other)).status).toBe(404);
    expect((await ctx().http().post(`/v3/jobs/${job.id}/pipelines`).send({ pipeline: 'steps:\n  - command: x\n' })).status).toBe(401);
    expect((await s.read()).jobs).toHaveLength(1);

    await finish(ctx(), s.agent, job.id);
    expect((await s.upload(job.id, 'steps:\n  - command: x\n')).status).toBe(422);
  });
});
