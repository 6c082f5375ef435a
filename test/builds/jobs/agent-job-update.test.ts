/**
 * `buildkite-agent job update timeout` (PUT /v3/jobs/{id}) and `buildkite-agent job
 * promise-failure` (PUT /v3/jobs/{id}/promise_failure), as the agent's api/jobs.go sends them:
 * a running job's timeout changed; a running job declaring the exit status it will fail with,
 * which makes its build failing at once (the docs' "Promise job failure"). On each store.
 */
import { auth, describeEachDatabase } from '../../support/context';
import { agentAuth, givenAgent, givenBuildAndAgent, takeNextJob } from '../../support/agents';
import { yaml } from '../../support/configuration';
import type { BuildJson } from '../../support/types';

describeEachDatabase('the agent API: job update and promised failure', (ctx) => {
  async function setup(configuration: string) {
    const s = await givenBuildAndAgent(ctx(), configuration);
    const job = await takeNextJob(ctx(), s.agent);
    const read = async () => (await ctx().http().get(s.url).set(auth(s.token)).expect(200)).body as BuildJson;
    const finish = (jobId: string, exitStatus: number, token = s.agent.token) =>
      ctx()
        .http()
        .put(`/v3/jobs/${jobId}/finish`)
        .set(agentAuth(token))
        .send({ exit_status: String(exitStatus) })
        .expect(200);
    const promise = (body: Record<string, unknown>, token = s.agent.token) =>
      ctx().http().put(`/v3/jobs/${job.id}/promise_failure`).set(agentAuth(token)).send(body);
    /** The Jobs API's `state[]=<state>`, and the build's `job_states[]=<state>`: ids and states of the jobs each keeps. */
    const filtered = async (state: string) => {
      const jobs = await ctx().http().get(`${s.url}/jobs`).query({ 'state[]': state }).set(auth(s.token)).expect(200);
      const build = await ctx().http().get(s.url).query({ 'job_states[]': state }).set(auth(s.token)).expect(200);
      const pairs = (items: { id: string; state: string }[]) => items.map((j) => [j.id, j.state]);
      return { jobs: pairs(jobs.body.items), build: pairs((build.body as BuildJson).jobs) };
    };
    return { ...s, job, read, finish, promise, filtered };
  }

  it('changes the timeout of the job the agent runs, and nothing else', async () => {
    const s = await setup(yaml('steps:', '  - { command: slow.sh, timeout_in_minutes: 1 }'));
    const update = (body: Record<string, unknown>) => ctx().http().put(`/v3/jobs/${s.job.id}`).set(agentAuth(s.agent.token)).send(body);
    const timeout = async () => (await ctx().services.db('jobs').where({ id: s.job.id }).first('timeout_in_minutes'))?.timeout_in_minutes;
    await update({ timeout: '20' }).expect(200, { id: s.job.id });
    expect((await s.read()).jobs[0]).toMatchObject({ state: 'running' });
    expect(await timeout()).toBe(20);
    await update({ timeout_in_minutes: ' 45 ' }).expect(200);
    expect(await timeout()).toBe(45);
    for (const body of [{ timeout: 'soon' }, { timeout: '0' }, { timeout: '1.5' }, { label: 'x' }, { timeout: '5', label: 'x' }]) {
      const res = await update(body);
      expect([JSON.stringify(body), res.status]).toEqual([JSON.stringify(body), 422]);
    }
    const other = await givenAgent(ctx(), s.reg, 'other');
    await ctx().http().put(`/v3/jobs/${s.job.id}`).set(agentAuth(other.token)).send({ timeout: '5' }).expect(404);
    await s.finish(s.job.id, 0);
    expect((await update({ timeout: '5' }).expect(422)).body.message).toContain('finished');
  });

  it('extends a timeout by up to an hour, sets one where there was none, and keeps under the pipeline maximum', async () => {
    const s = await setup(yaml('steps:', '  - { command: slow.sh, timeout_in_minutes: 30 }', '  - command: untimed.sh'));
    const update = (jobId: string, minutes: number) =>
      ctx()
        .http()
        .put(`/v3/jobs/${jobId}`)
        .set(agentAuth(s.agent.token))
        .send({ timeout: String(minutes) });
    const timeout = async (jobId: string) => (await ctx().services.db('jobs').where({ id: jobId }).first('timeout_in_minutes'))?.timeout_in_minutes;
    // The docs: reduce it, or extend it by up to an hour.
    const over = await update(s.job.id, 91).expect(422);
    expect(over.body.errors).toEqual([{ field: 'timeout', code: "can extend the job's timeout by up to an hour: it is 30 minutes, so at most 90" }]);
    expect(await timeout(s.job.id)).toBe(30);
    await update(s.job.id, 90).expect(200);
    await update(s.job.id, 150).expect(200);
    await update(s.job.id, 5).expect(200);
    expect(await timeout(s.job.id)).toBe(5);
    await s.finish(s.job.id, 0);
    // A job without a timeout takes one of any length, under the pipeline's maximum, which caps it.
    const untimed = await takeNextJob(ctx(), s.agent);
    expect(await timeout(untimed.id)).toBeNull();
    await ctx().http().patch(`/v2/organizations/${s.org.slug}/pipelines/${s.slug}`).set(auth(s.token)).send({ maximum_command_step_timeout: 120 }).expect(200);
    await update(untimed.id, 500).expect(200);
    expect(await timeout(untimed.id)).toBe(120);
  });

  it('makes the build failing at once, cancels fast-fail jobs, and keeps the promise when the job exits 0', async () => {
    const s = await setup(yaml('steps:', '  - command: tests.sh', '  - { command: visual-diff.sh, cancel_on_build_failing: true }', '  - command: lint.sh'));
    await s.promise({ exit_status: 1, reason: 'test_failure (2 failed after retries)' }).expect(204);
    let b = await s.read();
    expect([b.state, b.failing_at === null, b.jobs.map((j) => j.state)]).toEqual(['failing', false, ['running', 'canceled', 'scheduled']]);
    expect(b.jobs[0]).toMatchObject({ promised_exit_status: 1, promised_exit_status_at: expect.stringMatching(/Z$/) });
    expect(b.jobs[2]).not.toHaveProperty('promised_exit_status');
    // The Jobs API's failed filter finds the running job that promised (the docs' Jobs API), and its
    // running filter does not; the build's job_states[] is documented by state alone.
    expect(await s.filtered('failed')).toEqual({ jobs: [[s.job.id, 'running']], build: [] });
    expect(await s.filtered('running')).toEqual({ jobs: [], build: [[s.job.id, 'running']] });
    // The same promise again is a duplicate; another status a conflict.
    await s.promise({ exit_status: 1 }).expect(204);
    expect((await s.promise({ exit_status: 2 }).expect(409)).body.message).toContain('exit status 1');
    await s.promise({ exit_status: 0 }).expect(422);
    // The job exits 0, which would break the promise: it fails with the promised status.
    await s.finish(s.job.id, 0);
    b = await s.read();
    expect([b.jobs[0]!.state, b.jobs[0]!.exit_status]).toEqual(['failed', 1]);
  });

  it('keeps the promise over a retried status, spares the promising job its own fast-fail, and a retry starts with no promise', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - command: tests.sh',
        '    parallelism: 2',
        '    cancel_on_build_failing: true',
        '    retry: { automatic: [{ exit_status: 2, limit: 1 }] }',
      ),
    );
    await s.promise({ exit_status: 1 }).expect(204);
    let b = await s.read();
    // The promising job runs on; its sibling of the same fast-fail step is canceled.
    expect([b.state, b.jobs.map((j) => j.state)]).toEqual(['failing', ['running', 'canceled']]);
    // Exit status 2 would be retried: that breaks the promise, so the job fails with 1, not retried.
    await s.finish(s.job.id, 2);
    b = await s.read();
    expect(b.jobs.map((j) => [j.state, j.exit_status, j.retried])).toEqual([
      ['failed', 1, false],
      ['canceled', null, false],
    ]);
    const retried = await ctx().http().put(`${s.url}/jobs/${s.job.id}/retry`).set(auth(s.token)).expect(200);
    expect(retried.body).not.toHaveProperty('promised_exit_status');
  });

  it('does not make the build failing for a promised status its step soft-fails, and lets the real result stand', async () => {
    const s = await setup(yaml('steps:', '  - { command: tests.sh, soft_fail: [{ exit_status: 42 }] }', '  - command: lint.sh'));
    await s.promise({ exit_status: 42 }).expect(204);
    let b = await s.read();
    expect([b.state, b.failing_at]).toEqual(['running', null]);
    // A promise its step soft-fails is no hard failure: the job is running to every filter.
    expect(await s.filtered('failed')).toEqual({ jobs: [], build: [] });
    expect(await s.filtered('running')).toEqual({ jobs: [[s.job.id, 'running']], build: [[s.job.id, 'running']] });
    await s.finish(s.job.id, 0);
    b = await s.read();
    expect([b.jobs[0]!.state, b.jobs[0]!.exit_status, b.jobs[0]!.promised_exit_status]).toEqual(['passed', 0, 42]);
  });
});
