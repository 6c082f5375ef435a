/**
 * Two job operations of issue 15: reprioritizing a job (`PUT .../jobs/{id}/reprioritize`, build
 * scoped and by id within the organization), which dispatch then follows, and retrying a
 * build's failed jobs in one call (`PUT .../builds/{number}/retry_failed_jobs`) with its
 * documented `states` filter and answers.
 */
import { auth, describeEachDatabase, type TestContext } from '../../support/context';
import { agentAuth, givenAgent, givenBuildAndAgent, runNextJob, type TestAgent } from '../../support/agents';
import type { JobJson } from '../../support/types';

const ping = async (ctx: TestContext, agent: TestAgent) =>
  (await ctx.http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body.job as JobJson | null;

describeEachDatabase('reprioritizing a job', (ctx) => {
  it('changes the priority dispatch follows, through either path, and answers the job', async () => {
    const { org, token, reg, url, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: first\n  - command: second\n  - command: third\n');
    const [, second, third] = build.jobs as JobJson[];
    const res = await ctx().http().put(`${url}/jobs/${third!.id}/reprioritize`).set(auth(token)).send({ priority: 5 }).expect(200);
    expect(res.body).toMatchObject({ id: third!.id, state: 'scheduled', priority: { number: 5 } });
    const byId = await ctx().http().put(`/v2/organizations/${org.slug}/jobs/${second!.id}/reprioritize`).set(auth(token)).send({ priority: 3 }).expect(200);
    expect(byId.body).toMatchObject({ id: second!.id, priority: { number: 3 } });
    const shown = (await ctx().http().get(url).set(auth(token)).expect(200)).body.jobs as JobJson[];
    expect(shown.map((j) => j.priority)).toEqual([{ number: 0 }, { number: 3 }, { number: 5 }]);

    // The agent that already took the first job is busy: fresh agents take the others by priority.
    const a = await givenAgent(ctx(), reg, 'a');
    const b = await givenAgent(ctx(), reg, 'b');
    const c = await givenAgent(ctx(), reg, 'c');
    expect([(await ping(ctx(), a))?.command, (await ping(ctx(), b))?.command, (await ping(ctx(), c))?.command]).toEqual(['third', 'second', 'first']);
    // Negative priorities are allowed and run after the default.
    const lowered = await ctx().http().put(`${url}/jobs/${second!.id}/reprioritize`).set(auth(token)).send({ priority: -2 });
    expect(lowered.status).toBe(200);
    expect(lowered.body.priority).toEqual({ number: -2 });
  });

  it('answers a body without an integer priority as the real API does', async () => {
    const { token, url, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: one\n');
    for (const body of [{}, { priority: 'high' }, { priority: 1.5 }, { priority: null }]) {
      const res = await ctx().http().put(`${url}/jobs/${build.jobs[0]!.id}/reprioritize`).set(auth(token)).send(body);
      expect([JSON.stringify(body), res.status, res.body.message]).toEqual([JSON.stringify(body), 400, 'Priority must be an integer']);
      expect(res.body.errors[0].field).toBe('priority');
    }
  });

  it('refuses finished jobs and jobs that are not commands, and hides other organizations’ jobs', async () => {
    const { org, token, agent, url, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: done\n  - wait\n  - command: later\n');
    await runNextJob(ctx(), agent, 0);
    const finished = await ctx().http().put(`${url}/jobs/${build.jobs[0]!.id}/reprioritize`).set(auth(token)).send({ priority: 1 });
    expect([finished.status, finished.body.message]).toEqual([
      422,
      "This job can't be reprioritized because it is passed: only jobs that have not finished can be.",
    ]);
    const waiter = await ctx().http().put(`${url}/jobs/${build.jobs[1]!.id}/reprioritize`).set(auth(token)).send({ priority: 1 });
    expect([waiter.status, waiter.body.message]).toEqual([422, "This job can't be reprioritized: only command steps' jobs can be."]);

    const stranger = await ctx().givenAdmin();
    const other = await ctx()
      .http()
      .put(`/v2/organizations/${stranger.org.slug}/jobs/${build.jobs[2]!.id}/reprioritize`)
      .set(auth(stranger.token))
      .send({ priority: 9 });
    expect([other.status, other.body]).toEqual([404, { message: 'No job found' }]);
    const missing = await ctx()
      .http()
      .put(`/v2/organizations/${org.slug}/jobs/5b3ceff6-78cb-4fe9-88ae-51be5f145977/reprioritize`)
      .set(auth(token))
      .send({ priority: 9 });
    expect(missing.status).toBe(404);
    const unchanged = (await ctx().http().get(url).set(auth(token)).expect(200)).body.jobs as JobJson[];
    expect(unchanged[2]!.priority).toEqual({ number: 0 });
  });
});

describeEachDatabase('retrying failed jobs of a build', (ctx) => {
  /** A build of five commands ending passed, failed, soft-failed, failed, and failed again where the step forbids manual retries. */
  const givenFailures = async () => {
    const setup = await givenBuildAndAgent(
      ctx(),
      [
        'steps:',
        '  - command: ok',
        '  - command: broken',
        '  - command: soft',
        '    soft_fail: true',
        '  - command: also-broken',
        '  - command: locked',
        '    retry: { manual: { allowed: false, reason: locked } }',
        '',
      ].join('\n'),
    );
    for (const status of [0, 1, 2, 3, 4]) await runNextJob(ctx(), setup.agent, status);
    return setup;
  };

  it('retries every failed job once when no states are named, and answers 202 with the build and the count', async () => {
    const { token, url } = await givenFailures();
    const before = (await ctx().http().get(url).set(auth(token)).expect(200)).body;
    expect(before.state).toBe('failed');
    const res = await ctx().http().put(`${url}/retry_failed_jobs`).set(auth(token)).send({});
    expect(res.status).toBe(202);
    expect(res.body.retried_jobs_count).toBe(3);
    expect(res.body.number).toBe(before.number);
    const commands = (res.body.jobs as JobJson[]).map((j) => [j.command, j.state, j.retries_count]);
    expect(commands).toEqual([
      ['ok', 'passed', null],
      ['broken', 'scheduled', 1],
      ['soft', 'scheduled', 1],
      ['also-broken', 'scheduled', 1],
      ['locked', 'failed', null],
    ]);
    // Each job is retried once: a second call finds nothing left to retry.
    const again = await ctx().http().put(`${url}/retry_failed_jobs`).set(auth(token)).expect(202);
    expect(again.body.retried_jobs_count).toBe(0);
  });

  it('retries only the states named, hard failures apart from soft ones', async () => {
    const { token, url } = await givenFailures();
    const soft = await ctx().http().put(`${url}/retry_failed_jobs`).set(auth(token)).send({ states: 'soft_failed' }).expect(202);
    expect(soft.body.retried_jobs_count).toBe(1);
    expect((soft.body.jobs as JobJson[]).filter((j) => j.state === 'scheduled').map((j) => j.command)).toEqual(['soft']);
    const none = await ctx().http().put(`${url}/retry_failed_jobs`).set(auth(token)).send({ states: 'canceled, timed_out,expired' }).expect(202);
    expect(none.body.retried_jobs_count).toBe(0);
    const hard = await ctx().http().put(`${url}/retry_failed_jobs`).set(auth(token)).send({ states: 'failed' }).expect(202);
    expect(hard.body.retried_jobs_count).toBe(2);
  });

  it('answers the documented 400 for unknown states, and 422 for a canceled build', async () => {
    const { token, url, build } = await givenFailures();
    const bad = await ctx().http().put(`${url}/retry_failed_jobs`).set(auth(token)).send({ states: 'failed,invalid' });
    expect([bad.status, bad.body]).toEqual([400, { message: 'Invalid states: invalid. Valid states are canceled, expired, failed, soft_failed, timed_out.' }]);

    const running = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n  - command: b\n');
    await ctx().http().put(`${running.url}/cancel`).set(auth(running.token)).expect(200);
    const canceled = await ctx().http().put(`${running.url}/retry_failed_jobs`).set(auth(running.token));
    expect([canceled.status, canceled.body]).toEqual([422, { message: 'Jobs from canceled builds cannot be retried' }]);

    const stranger = await ctx().givenAdmin();
    const hidden = await ctx()
      .http()
      .put(`/v2/organizations/${stranger.org.slug}/pipelines/${build.pipeline!.slug}/builds/${build.number}/retry_failed_jobs`)
      .set(auth(stranger.token));
    expect(hidden.status).toBe(404);
  });
});
