import { auth, describeEachDatabase, type TestContext } from '../../support/context';
import { agentAuth, runNextJob, givenAgent, givenBuildAndAgent, takeNextJob, type TestAgent } from '../../support/agents';
import { yaml } from '../../support/configuration';
import type { BuildJson, JobJson } from '../../support/types';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The agent takes the next job it is offered and runs it to this exit status; answers its command. */
const runNext = async (ctx: TestContext, agent: TestAgent, exitStatus: number) => (await runNextJob(ctx, agent, exitStatus)).command;

describeEachDatabase('the job and build state machines', (ctx) => {
  async function setup(configuration: string) {
    const s = await givenBuildAndAgent(ctx(), configuration);
    const read = async () => (await ctx().http().get(s.url).set(auth(s.token)).expect(200)).body as BuildJson;
    return { ...s, read };
  }
  const states = (b: { jobs: JobJson[] }) => b.jobs.map((j) => j.state);

  it('runs through a wait, a soft failure and a block step to passed, with every timestamp', async () => {
    const s = await setup(
      [
        'steps:',
        '  - command: a',
        '  - command: b',
        '    soft_fail: true',
        '  - wait',
        '  - command: c',
        '  - block: Deploy',
        '    fields:',
        '      - text: Release',
        '        key: release',
        '  - command: d',
      ].join('\n'),
    );
    let b = await s.read();
    expect(b).toMatchObject({ state: 'scheduled', started_at: null, finished_at: null, blocked: false });
    expect(states(b)).toEqual(['scheduled', 'scheduled', 'waiting', 'waiting', 'waiting', 'waiting']);
    expect(b.jobs[3]!.scheduled_at).toBeNull();

    expect(await runNext(ctx(), s.agent, 0)).toBe('a');
    b = await s.read();
    expect(b.state).toBe('running');
    expect(b.started_at).toBe(b.jobs[0]!.started_at);
    expect(b.started_at).toMatch(ISO);
    expect(states(b)).toEqual(['passed', 'scheduled', 'waiting', 'waiting', 'waiting', 'waiting']);

    // A soft failure neither fails the build nor stops the wait.
    expect(await runNext(ctx(), s.agent, 1)).toBe('b');
    b = await s.read();
    expect(b).toMatchObject({ state: 'running', failing_at: null });
    expect(b.jobs[1]).toMatchObject({ state: 'failed', soft_failed: true, exit_status: 1 });
    expect(states(b)).toEqual(['passed', 'failed', 'passed', 'scheduled', 'waiting', 'waiting']);
    expect(b.jobs[2]!.finished_at).toMatch(ISO);
    expect(b.jobs[3]!.scheduled_at).toMatch(ISO);

    // Reaching the block step: the build finishes as passed, blocked.
    expect(await runNext(ctx(), s.agent, 0)).toBe('c');
    b = await s.read();
    expect(b).toMatchObject({ state: 'passed', blocked: true });
    expect(b.finished_at).toMatch(ISO);
    expect(b.jobs[4]).toMatchObject({ type: 'manual', state: 'blocked', unblockable: true, unblocked_by: null });
    expect((await ctx().http().get('/v3/ping').set(agentAuth(s.agent.token))).body.job).toBeNull();

    const unblocked = await ctx()
      .http()
      .put(`${s.url}/jobs/${b.jobs[4]!.id}/unblock`)
      .set(auth(s.token))
      .send({ fields: { release: 'v1.2' } });
    expect(unblocked.status).toBe(200);
    expect(unblocked.body).toMatchObject({ id: b.jobs[4]!.id, state: 'unblocked', unblockable: false, unblocked_by: { id: s.user.id, email: s.user.email } });
    expect(unblocked.body.unblocked_at).toMatch(ISO);
    b = await s.read();
    expect(b).toMatchObject({ state: 'running', blocked: false, finished_at: null, meta_data: { release: 'v1.2' } });
    expect(states(b)).toEqual(['passed', 'failed', 'passed', 'passed', 'unblocked', 'scheduled']);
    // Unblocking twice is refused.
    expect((await ctx().http().put(`${s.url}/jobs/${b.jobs[4]!.id}/unblock`).set(auth(s.token)).send({})).status).toBe(422);

    expect(await runNext(ctx(), s.agent, 0)).toBe('d');
    b = await s.read();
    expect(b).toMatchObject({ state: 'passed', blocked: false });
    expect(b.finished_at).toMatch(ISO);
    expect(new Date(b.finished_at as string).getTime()).toBeGreaterThanOrEqual(new Date(b.jobs[5]!.finished_at!).getTime());
  });

  it('goes failing on a hard failure while jobs still run, and a failed wait stops the rest', async () => {
    const s = await setup(['steps:', '  - command: x', '  - command: y', '  - wait', '  - command: z', '  - block: Later'].join('\n'));
    expect(await runNext(ctx(), s.agent, 2)).toBe('x');
    let b = await s.read();
    expect(b.state).toBe('failing');
    expect(b.failing_at).toMatch(ISO);
    expect(b.finished_at).toBeNull();
    expect(await runNext(ctx(), s.agent, 0)).toBe('y');
    b = await s.read();
    expect(b.state).toBe('failed');
    expect(b.finished_at).toMatch(ISO);
    expect(states(b)).toEqual(['failed', 'passed', 'waiting_failed', 'waiting_failed', 'blocked_failed']);
    expect((await ctx().http().get('/v3/ping').set(agentAuth(s.agent.token))).body.job).toBeNull();
  });

  it('goes on past the failed wait and block step when the failed job is retried and passes', async () => {
    const s = await setup(['steps:', '  - command: x', '  - wait', '  - command: z', '  - block: Later', '  - command: after'].join('\n'));
    expect(await runNext(ctx(), s.agent, 1)).toBe('x');
    let b = await s.read();
    expect(b.state).toBe('failed');
    expect(states(b)).toEqual(['failed', 'waiting_failed', 'waiting_failed', 'blocked_failed', 'waiting_failed']);

    // The retry takes the failed job's place: what it held back waits again, unfinished.
    await ctx().http().put(`${s.url}/jobs/${b.jobs[0]!.id}/retry`).set(auth(s.token)).expect(200);
    b = await s.read();
    expect(b.finished_at).toBeNull();
    expect(b.jobs.filter((j) => !j.retried).map((j) => j.state)).toEqual(['scheduled', 'waiting', 'waiting', 'waiting', 'waiting']);
    expect(b.jobs.filter((j) => j.state === 'waiting').every((j) => j.finished_at === null)).toBe(true);

    expect(await runNext(ctx(), s.agent, 0)).toBe('x');
    b = await s.read();
    expect(b.state).toBe('running');
    expect(b.jobs.filter((j) => !j.retried).map((j) => j.state)).toEqual(['passed', 'passed', 'scheduled', 'waiting', 'waiting']);
    expect(await runNext(ctx(), s.agent, 0)).toBe('z');
    b = await s.read();
    expect(b).toMatchObject({ state: 'passed', blocked: true });
    expect(b.jobs.filter((j) => !j.retried).map((j) => j.state)).toEqual(['passed', 'passed', 'passed', 'blocked', 'waiting']);
  });

  it('cancels the jobs of cancel_on_build_failing steps once the build is failing, and stops the running ones', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - command: lint',
        '  - { command: slow-tests, cancel_on_build_failing: true }',
        '  - { command: e2e, cancel_on_build_failing: true }',
        '  - command: unit',
      ),
    );
    const second = await givenAgent(ctx(), s.reg, 'second');
    const third = await givenAgent(ctx(), s.reg, 'third');
    const lint = await takeNextJob(ctx(), s.agent);
    const slow = await takeNextJob(ctx(), second);
    // Offered, not accepted yet: assigned to the third agent.
    const offered = (await ctx().http().get('/v3/ping').set(agentAuth(third.token)).expect(200)).body.job as JobJson;
    expect([lint.command, slow.command, offered.command]).toEqual(['lint', 'slow-tests', 'e2e']);
    await ctx().http().put(`/v3/jobs/${lint.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: 1 }).expect(200);
    let b = await s.read();
    // The job no agent had accepted is canceled, the running one stopped by its agent; unit has no such attribute.
    expect([b.state, states(b)]).toEqual(['failing', ['failed', 'canceling', 'canceled', 'scheduled']]);
    await ctx().http().put(`/v3/jobs/${slow.id}/finish`).set(agentAuth(second.token)).send({ exit_status: -1, signal_reason: 'cancel' }).expect(200);
    // The third agent holds the canceled job no more: it is offered the next one.
    expect(await runNext(ctx(), third, 0)).toBe('unit');
    b = await s.read();
    expect([b.state, states(b)]).toEqual(['failed', ['failed', 'canceled', 'canceled', 'passed']]);
  });

  it('blocks an input step at once without holding the steps around it, and the build until it is unblocked (the docs’ input step)', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - command: build',
        '  - input: Who is running this?',
        '    key: who',
        '    fields: [{ text: Your name, key: name }]',
        '  - command: test',
        '  - wait',
        '  - command: deploy',
        '  - { command: greet, depends_on: who }',
      ),
    );
    let b = await s.read();
    expect([b.blocked, states(b)]).toEqual([true, ['scheduled', 'blocked', 'scheduled', 'waiting', 'waiting', 'waiting']]);
    expect(await runNext(ctx(), s.agent, 0)).toBe('build');
    expect(await runNext(ctx(), s.agent, 0)).toBe('test');
    // The wait waited for the command steps only.
    expect(await runNext(ctx(), s.agent, 0)).toBe('deploy');
    b = await s.read();
    // Everything else ran: the build is over but blocked on the input, whose dependent still waits.
    expect([b.state, b.blocked, states(b)]).toEqual(['passed', true, ['passed', 'blocked', 'passed', 'passed', 'passed', 'waiting']]);
    const input = b.jobs[1]!;
    await ctx()
      .http()
      .put(`${s.url}/jobs/${input.id}/unblock`)
      .set(auth(s.token))
      .send({ fields: { name: 'Ada' } })
      .expect(200);
    expect(await runNext(ctx(), s.agent, 0)).toBe('greet');
    b = await s.read();
    expect([b.state, b.blocked]).toEqual(['passed', false]);
    const pipeline = (
      await ctx()
        .http()
        .get(s.url.replace(/\/builds\/\d+$/, ''))
        .set(auth(s.token))
        .expect(200)
    ).body;
    expect(pipeline.steps[1]).toMatchObject({ type: 'manual', label: 'Who is running this?', input: true, key: 'who' });
  });

  it('runs the jobs behind a continue_on_failure wait, and the build still fails', async () => {
    const s = await setup(['steps:', '  - command: x', '  - wait:', '    continue_on_failure: true', '  - command: cleanup'].join('\n'));
    expect(await runNext(ctx(), s.agent, 1)).toBe('x');
    let b = await s.read();
    expect(b.state).toBe('failing');
    expect(states(b)).toEqual(['failed', 'passed', 'scheduled']);
    expect(await runNext(ctx(), s.agent, 0)).toBe('cleanup');
    b = await s.read();
    expect(b.state).toBe('failed');
    expect(states(b)).toEqual(['failed', 'passed', 'passed']);
  });

  it('refuses to unblock what is not a reached block step, or in a canceled build', async () => {
    const s = await setup(['steps:', '  - block: First', '  - command: a', '  - block: Second'].join('\n'));
    let b = await s.read();
    // A block step as the first step is reached at once: blocked, the build not yet started.
    expect(b).toMatchObject({ state: 'scheduled', blocked: true });
    const [first, script, second] = b.jobs;
    const unblock = (id: string, body: object = {}) => ctx().http().put(`${s.url}/jobs/${id}/unblock`).set(auth(s.token)).send(body);
    // jobs.md: "400 Bad Request: This job type cannot be unblocked".
    expect((await unblock(script!.id)).status).toBe(400);
    expect((await unblock(script!.id)).body.message).toBe('This job type cannot be unblocked');
    expect((await unblock(second!.id)).body.message).toContain('it is waiting');
    expect((await unblock('00000000-0000-4000-8000-000000000000')).status).toBe(404);
    const stranger = await ctx().givenAdmin();
    // jobs.md: "422 Unprocessable Entity: { "message": "Unblocker is not a valid user id for this organization" }".
    for (const unblocker of [stranger.user.id, 'not-a-user']) {
      const refused = await unblock(first!.id, { unblocker });
      expect([refused.status, refused.body]).toEqual([422, { message: 'Unblocker is not a valid user id for this organization' }]);
    }
    const colleague = await ctx().givenUser(s.org, 'member');
    const ok = await unblock(first!.id, { unblocker: colleague.id });
    expect(ok.body).toMatchObject({ state: 'unblocked', unblocked_by: { id: colleague.id } });
    b = await s.read();
    expect(b).toMatchObject({ state: 'scheduled', blocked: false });
    expect(states(b)).toEqual(['unblocked', 'scheduled', 'waiting']);

    const other = await setup(['steps:', '  - block: Go', '  - command: a'].join('\n'));
    await ctx().http().put(`${other.url}/cancel`).set(auth(other.token)).expect(200);
    const blocked = (await other.read()).jobs[0]!;
    const refused = await ctx().http().put(`${other.url}/jobs/${blocked.id}/unblock`).set(auth(other.token)).send({});
    expect(refused.status).toBe(422);
  });
});
