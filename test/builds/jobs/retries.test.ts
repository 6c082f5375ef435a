import { automaticRetryRule, countedRetry } from '../../../src/builds/jobs/retry';
import type { ScriptStep } from '../../../src/pipelines/configuration';
import { auth, describeEachDatabase, type TestContext } from '../../support/context';
import { takeNextJob, agentAuth, runNextJob, givenAgent, givenBuildAndAgent, givenRegistrationToken, type TestAgent } from '../../support/agents';
import { givenBuild, givenPipeline } from '../../support/given';
import type { BuildJson } from '../../support/types';

/** The agent takes the next job and finishes it with this exit status (and signal reason). */
const runNext = async (ctx: TestContext, agent: TestAgent, exitStatus: number, signalReason?: string) =>
  (await runNextJob(ctx, agent, exitStatus, signalReason)).id;

describeEachDatabase('automatic and manual retry rules', (ctx) => {
  async function setup(configuration: string) {
    const { token, agent, url } = await givenBuildAndAgent(ctx(), configuration);
    const read = async () => (await ctx().http().get(`${url}?include_retried_jobs=true`).set(auth(token)).expect(200)).body as BuildJson;
    const retry = (id: string) => ctx().http().put(`${url}/jobs/${id}/retry`).set(auth(token));
    return { token, agent, url, read, retry };
  }

  it('retries `automatic: true` failures at once, twice, then lets the job fail the build', async () => {
    const s = await setup('steps:\n  - command: flaky\n    retry:\n      automatic: true\n');
    const first = await runNext(ctx(), s.agent, 1);
    let b = await s.read();
    expect(b.state).toBe('running');
    expect(b.jobs).toHaveLength(2);
    // An automatic retry was nobody's: `retried_by` stays null.
    expect(b.jobs[0]).toMatchObject({ id: first, state: 'failed', retried: true, retried_in_job_id: b.jobs[1]!.id, retried_by: null });
    expect(b.jobs[1]).toMatchObject({ state: 'scheduled', retries_count: 1, retry_type: 'automatic', retried: false, exit_status: null });
    await runNext(ctx(), s.agent, 2);
    b = await s.read();
    expect(b.jobs.map((j) => [j.state, j.retries_count, j.retry_type])).toEqual([
      ['failed', null, null],
      ['failed', 1, 'automatic'],
      ['scheduled', 2, 'automatic'],
    ]);
    await runNext(ctx(), s.agent, 1);
    b = await s.read();
    expect(b.jobs).toHaveLength(3);
    expect(b.jobs[2]).toMatchObject({ state: 'failed', retried: false });
    expect(b.state).toBe('failed');
  });

  it('retries only the exit statuses and signal reasons the rules name, up to their limits, and not successes', async () => {
    const s = await setup(
      [
        'steps:',
        '  - command: picky',
        '    retry:',
        '      automatic:',
        '        - exit_status: [3, 4]',
        '          limit: 1',
        '        - exit_status: "*"',
        '          signal_reason: agent_stop',
        '          limit: 3',
      ].join('\n'),
    );
    await runNext(ctx(), s.agent, 3); // rule 1
    await runNext(ctx(), s.agent, 137, 'agent_stop'); // rule 2: its own count, 0 < 3
    await runNext(ctx(), s.agent, 4); // rule 1 again, but its limit (1) is used up
    const b = await s.read();
    expect(b.jobs.map((j) => [j.state, j.exit_status, j.retry_type])).toEqual([
      ['failed', 3, null],
      ['failed', 137, 'automatic'],
      ['failed', 4, 'automatic'],
    ]);
    expect(b.state).toBe('failed');

    const other = await setup('steps:\n  - command: ok\n    retry:\n      automatic:\n        exit_status: 5\n');
    await runNext(ctx(), other.agent, 6);
    expect((await other.read()).jobs.map((j) => j.state)).toEqual(['failed']);
  });

  it('decides in one function that other failure paths can call', () => {
    const step = { type: 'script', retry: { automatic: [{ exit_status: -1, limit: 2 }] } } as unknown as ScriptStep;
    expect(automaticRetryRule(step, [], -1, null)).toBe(0);
    expect(automaticRetryRule(step, [2], -1, null)).toBeNull();
    expect(automaticRetryRule(step, [], 0, null)).toBeNull();
    const none = { type: 'script', retry: { automatic: [{ exit_status: '*', limit: 1, signal_reason: 'none' }] } } as unknown as ScriptStep;
    expect(automaticRetryRule(none, [], 1, null)).toBe(0);
    expect(automaticRetryRule(none, [], 1, 'cancel')).toBeNull();
    // The docs' signal: either case, SIG optional, `none` for no signal.
    const killed = { type: 'script', retry: { automatic: [{ exit_status: '*', limit: 1, signal: 'kill' }] } } as unknown as ScriptStep;
    expect(automaticRetryRule(killed, [], 137, null, 'SIGKILL')).toBe(0);
    expect(automaticRetryRule(killed, [], 137, null, 'SIGTERM')).toBeNull();
    expect(automaticRetryRule(killed, [], 1, null, null)).toBeNull();
    const unsignalled = { type: 'script', retry: { automatic: [{ exit_status: '*', limit: 1, signal: 'none' }] } } as unknown as ScriptStep;
    expect(automaticRetryRule(unsignalled, [], 1, null, null)).toBe(0);
    expect(automaticRetryRule(unsignalled, [], 1, null, 'SIGINT')).toBeNull();
    // The docs' "*": any exit status from 1 to 255, so not a lost agent's -1 (`automatic: true` included).
    const any = { type: 'script', retry: { automatic: [{ exit_status: '*', limit: 2 }] } } as unknown as ScriptStep;
    expect([1, 255].map((status) => automaticRetryRule(any, [], status, null))).toEqual([0, 0]);
    expect([-1, 0].map((status) => automaticRetryRule(any, [], status, null))).toEqual([null, null]);
    // Each rule counts its own retries: the second rule retries as often as its limit says, whatever the first did.
    const two = {
      type: 'script',
      retry: {
        automatic: [
          { exit_status: 5, limit: 1 },
          { exit_status: '*', limit: 2 },
        ],
      },
    } as unknown as ScriptStep;
    expect(automaticRetryRule(two, [1, 1], 1, null)).toBe(1);
    expect(automaticRetryRule(two, [1, 2], 1, null)).toBeNull();
    expect(automaticRetryRule(two, [1, 0], 5, null)).toBeNull();
    // The docs' lists of signals and signal reasons: any one of them matches.
    const listed = {
      type: 'script',
      retry: { automatic: [{ exit_status: '*', limit: 1, signal: ['kill', 'SIGINT'], signal_reason: ['cancel', 'agent_stop'] }] },
    } as unknown as ScriptStep;
    expect(automaticRetryRule(listed, [], 137, 'agent_stop', 'SIGKILL')).toBe(0);
    expect(automaticRetryRule(listed, [], 130, 'cancel', 'int')).toBe(0);
    expect(automaticRetryRule(listed, [], 143, 'cancel', 'SIGTERM')).toBeNull();
    expect(automaticRetryRule(listed, [], 137, 'agent_refused', 'SIGKILL')).toBeNull();
    expect(countedRetry([], 1)).toEqual([0, 1]);
    expect(countedRetry([2, 1], 0)).toEqual([3, 1]);
  });

  it("counts each rule's retries on its own, as the docs' retry page says; a manual retry counts for no rule", async () => {
    const s = await setup(
      [
        'steps:',
        '  - command: picky',
        '    retry:',
        '      automatic:',
        '        - { exit_status: 5, limit: 1 }',
        '        - { exit_status: "*", limit: 2 }',
      ].join('\n'),
    );
    for (const status of [5, 1, 1, 1]) await runNext(ctx(), s.agent, status);
    let b = await s.read();
    // Rule 1 retried once, rule 2 twice: three retries, one more than either limit alone.
    expect(b.jobs.map((j) => [j.state, j.exit_status, j.retries_count])).toEqual([
      ['failed', 5, null],
      ['failed', 1, 1],
      ['failed', 1, 2],
      ['failed', 1, 3],
    ]);
    expect(b.state).toBe('failed');

    const once = await setup('steps:\n  - command: once\n    retry:\n      automatic:\n        - { exit_status: 1, limit: 1 }\n');
    const unmatched = await runNext(ctx(), once.agent, 7);
    await once.retry(unmatched).expect(200);
    await runNext(ctx(), once.agent, 1); // the manual retry used none of the rule's one retry
    await runNext(ctx(), once.agent, 1);
    b = await once.read();
    expect(b.jobs.map((j) => [j.state, j.exit_status, j.retry_type])).toEqual([
      ['failed', 7, null],
      ['failed', 1, 'manual'],
      ['failed', 1, 'automatic'],
    ]);
    expect(b.state).toBe('failed');
  });

  it('reads lists of signal reasons in a rule from the pipeline YAML', async () => {
    const s = await setup('steps:\n  - command: host\n    retry:\n      automatic:\n        - { signal_reason: [agent_stop, agent_refused], limit: 1 }\n');
    await runNext(ctx(), s.agent, 1, 'agent_refused');
    await runNext(ctx(), s.agent, 1, 'agent_stop');
    expect((await s.read()).jobs.map((j) => [j.state, j.retry_type, j.retried])).toEqual([
      ['failed', null, true],
      ['failed', 'automatic', false],
    ]);
  });

  it('does not retry a lost agent\'s job (-1) under `automatic: true`: the docs\' "*" is 1 to 255', async () => {
    const s = await setup('steps:\n  - command: host\n    retry:\n      automatic: true\n');
    const id = await runNext(ctx(), s.agent, -1);
    const b = await s.read();
    expect(b.jobs.map((j) => [j.id, j.state, j.exit_status, j.retried])).toEqual([[id, 'failed', -1, false]]);
    expect(b.state).toBe('failed');
  });

  it("takes the docs' limit: 0, which stops the rules at the first one matching, and a signal read from the finish", async () => {
    const s = await setup(
      [
        'steps:',
        '  - command: provision',
        '    retry:',
        '      automatic:',
        '        - { signal_reason: stack_error, limit: 0 }',
        '        - { exit_status: "*", signal: kill, limit: 1 }',
      ].join('\n'),
    );
    // Stopped by SIGKILL: the second rule retries it.
    const first = await takeNextJob(ctx(), s.agent);
    await ctx().http().put(`/v3/jobs/${first.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: '137', signal: 'SIGKILL' }).expect(200);
    let b = await s.read();
    expect(b.jobs.map((j) => [j.state, j.retry_type])).toEqual([
      ['failed', null],
      ['scheduled', 'automatic'],
    ]);
    // A stack error: the first rule matches, with limit 0, so nothing retries it.
    const second = await takeNextJob(ctx(), s.agent);
    await ctx().http().put(`/v3/jobs/${second.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: '1', signal_reason: 'stack_error' }).expect(200);
    b = await s.read();
    expect([b.state, b.jobs.length]).toEqual(['failed', 2]);
  });

  it('honours retry.manual: a refused retry says the reason; permit_on_passed allows passed jobs', async () => {
    const s = await setup(
      [
        'steps:',
        '  - command: deploy',
        '    retry:',
        '      manual:',
        '        allowed: false',
        '        reason: Deploys must not run twice',
        '  - command: report',
        '    retry:',
        '      manual:',
        '        permit_on_passed: true',
        '  - command: plain',
      ].join('\n'),
    );
    const ids: Record<string, string> = {};
    for (const exit of [1, 0, 0]) {
      const id = await runNext(ctx(), s.agent, exit);
      ids[(await s.read()).jobs.find((j) => j.id === id)!.command!] = id;
    }
    const refused = await s.retry(ids.deploy!);
    expect(refused.status).toBe(422);
    expect(refused.body.message).toBe('Deploys must not run twice');
    const passed = await s.retry(ids.report!);
    expect(passed.status).toBe(200);
    expect(passed.body).toMatchObject({ command: 'report', state: 'scheduled', retry_type: 'manual', retries_count: 1 });
    const plain = await s.retry(ids.plain!);
    expect(plain.status).toBe(400);
    expect(plain.body.message).toBe('Only failed, timed out or canceled jobs can be retried');
  });

  it('keeps failing_at once set, through a retry that passes (the docs: it is not cleared)', async () => {
    const s = await setup('steps:\n  - command: flaky\n  - command: other\n');
    await runNext(ctx(), s.agent, 1);
    let b = await s.read();
    expect(b.state).toBe('failing');
    const failingAt = b.failing_at;
    expect(failingAt).toEqual(expect.stringMatching(/Z$/));
    await s.retry(b.jobs[0]!.id).expect(200);
    b = await s.read();
    expect([b.state, b.failing_at]).toEqual(['running', failingAt]);
    await runNext(ctx(), s.agent, 0);
    await runNext(ctx(), s.agent, 0);
    b = await s.read();
    expect([b.state, b.failing_at]).toEqual(['passed', failingAt]);
  });

  it('makes a failure and its automatic retry one step: a job passing at that moment never sees the build fail', async () => {
    // Before, the failure was committed before its retry: the other job's finish in between ran
    // the build's machine on a failed job with no retry, and the build failed (and notified it).
    const { org, token, reg, slug, agent } = await givenBuildAndAgent(
      ctx(),
      'steps:\n  - command: flaky\n    parallelism: 2\n    retry:\n      automatic: [{ exit_status: 1, limit: 1 }]\n',
    );
    const agents = [agent, await givenAgent(ctx(), reg, 'second')];
    const builds = `/v2/organizations/${org.slug}/pipelines/${slug}/builds`;
    // The helper's build is the first; each round takes one build's two jobs on two agents and finishes them at once.
    for (let round = 0; round < 6; round++) {
      const number = round + 1;
      if (round > 0) await givenBuild(ctx(), org.slug, slug, token);
      const [a, b] = [await takeNextJob(ctx(), agents[0]!), await takeNextJob(ctx(), agents[1]!)];
      const finish = (job: { id: string }, by: TestAgent, exit: number) =>
        ctx()
          .http()
          .put(`/v3/jobs/${job.id}/finish`)
          .set(agentAuth(by.token))
          .send({ exit_status: String(exit) })
          .expect(200);
      await Promise.all([finish(a, agents[0]!, 1), finish(b, agents[1]!, 0)]);
      const build = (await ctx().http().get(`${builds}/${number}`).set(auth(token)).expect(200)).body as BuildJson;
      expect([build.state, build.failing_at, build.finished_at]).toEqual(['running', null, null]);
      const moves = await ctx().services.db('outbox_events').where({ subject_id: build.id }).pluck('to_state');
      expect(moves.filter((m) => m === 'failing' || m === 'failed')).toEqual([]);
      // The retry passes: the build passes, having never failed.
      const retried = await takeNextJob(ctx(), agents[0]!);
      await finish(retried, agents[0]!, 0);
      expect((await ctx().http().get(`${builds}/${number}`).set(auth(token)).expect(200)).body.state).toBe('passed');
    }
  });
});

describeEachDatabase('log section header times', (ctx) => {
  it('records when each ---, +++ and ~~~ line arrived, also across chunks, as Unix nanoseconds', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: make\n');
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const agent = await givenAgent(ctx(), reg, 'runner');
    const job = await takeNextJob(ctx(), agent.token);
    const send = async (sequence: number, offset: number, content: string) =>
      ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence, offset, content }).expect(201);
    const t0 = Date.now();
    await send(1, 0, '--- :hammer: Build\nnot --- a header\n+++ Tests');
    const t1 = Date.now();
    await new Promise((r) => setTimeout(r, 5));
    // Starts mid-line (the chunk before ended without a newline): its "~~~" is no header.
    await send(2, 39, '~~~ still the tests line\n~~~ Cleanup\n----- not one\n---\n');
    const t2 = Date.now();
    // The same sequence again is ignored, header times included.
    await send(2, 39, '--- ignored\n');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/jobs/${job.id}/log`;
    const log = (await ctx().http().get(url).set(auth(token)).expect(200)).body as { header_times: number[] };
    expect(log.header_times).toHaveLength(4);
    // Nanoseconds beyond 2^53 are not exact in a double: compare in milliseconds.
    expect(log.header_times.every((n) => Number.isInteger(n))).toBe(true);
    const ms = log.header_times.map((n) => Math.round(n / 1e6));
    expect(ms[0]).toBeGreaterThanOrEqual(t0);
    expect(ms[1]).toBe(ms[0]);
    expect(ms[1]).toBeLessThanOrEqual(t1);
    expect(ms[2]).toBeGreaterThan(ms[1]!);
    expect(ms[3]).toBe(ms[2]);
    expect(ms[3]).toBeLessThanOrEqual(t2);
  });
});
