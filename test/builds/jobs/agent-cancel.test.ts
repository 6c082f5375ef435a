/**
 * `buildkite-agent step cancel` (POST /v3/steps/{step}/cancel) and `buildkite-agent build cancel`
 * (POST /v3/builds/{id}/cancel), as the agent's own API client sends them (api/steps.go,
 * api/builds.go): a step's unfinished jobs canceled, gracefully or forced; a build of the agent's
 * organization canceled as the REST API cancels one. On each store.
 */
import { auth, describeEachDatabase } from '../../support/context';
import { agentAuth, givenAgent, givenBuildAndAgent, takeNextJob } from '../../support/agents';
import { yaml } from '../../support/configuration';
import type { BuildJson } from '../../support/types';

describeEachDatabase('the agent API: step cancel and build cancel', (ctx) => {
  async function setup(configuration: string) {
    const s = await givenBuildAndAgent(ctx(), configuration);
    const read = async () => (await ctx().http().get(s.url).set(auth(s.token)).expect(200)).body as BuildJson;
    const states = async () =>
      Object.fromEntries((await read()).jobs.filter((j) => j.type === 'script').map((j) => [`${j.command}#${j.parallel_group_index ?? 0}`, j.state]));
    return { ...s, read, states };
  }

  it('cancels a step’s unfinished jobs: those no agent runs at once, running ones by their agents; what depends on it stops', async () => {
    const s = await setup(
      yaml('steps:', '  - command: controller', '  - { command: shard, key: shards, parallelism: 3 }', '  - { command: report, depends_on: shards }'),
    );
    const controller = await takeNextJob(ctx(), s.agent);
    const other = await givenAgent(ctx(), s.reg, 'other');
    const shard = await takeNextJob(ctx(), other);
    expect([controller.command, shard.command]).toEqual(['controller', 'shard']);
    const res = await ctx().http().post('/v3/steps/shards/cancel').set(agentAuth(s.agent.token)).send({ build_id: s.build.id }).expect(200);
    const stepId = (await s.read()).jobs[1]!.step!.id;
    expect(res.body).toEqual({ uuid: stepId });
    expect(await s.states()).toEqual({
      'controller#0': 'running',
      'shard#0': 'canceling',
      'shard#1': 'canceled',
      'shard#2': 'canceled',
      'report#0': 'waiting_failed',
    });
    // The agent running a shard stops it and finishes it: canceled.
    await ctx().http().put(`/v3/jobs/${shard.id}/finish`).set(agentAuth(other.token)).send({ exit_status: -1, signal_reason: 'cancel' }).expect(200);
    expect((await s.states())['shard#0']).toBe('canceled');
    // Sent again (nothing left to cancel), the same answer.
    await ctx().http().post('/v3/steps/shards/cancel').set(agentAuth(s.agent.token)).send({}).expect(200, { uuid: stepId });
    await ctx().http().post('/v3/steps/nowhere/cancel').set(agentAuth(s.agent.token)).send({}).expect(404);
  });

  it("fails the build and stops every later wait, continue_on_failure or not: the docs' wait step page on a canceled job", async () => {
    const s = await setup(
      yaml('steps:', '  - { command: slow, key: slow }', '  - command: quick', '  - { wait: ~, continue_on_failure: true }', '  - command: after'),
    );
    const slow = await takeNextJob(ctx(), s.agent);
    const other = await givenAgent(ctx(), s.reg, 'other');
    const quick = await takeNextJob(ctx(), other);
    await ctx().http().post('/v3/steps/slow/cancel').set(agentAuth(s.agent.token)).send({ build_id: s.build.id }).expect(200);
    await ctx().http().put(`/v3/jobs/${slow.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: -1, signal_reason: 'cancel' }).expect(200);
    // Canceled is an errored outcome, not a pass: the build is failing while the other job runs.
    expect((await s.read()).state).toBe('failing');
    await ctx().http().put(`/v3/jobs/${quick.id}/finish`).set(agentAuth(other.token)).send({ exit_status: 0 }).expect(200);
    const b = await s.read();
    expect(b.jobs.map((j) => [j.type, j.command ?? null, j.state])).toEqual([
      ['script', 'slow', 'canceled'],
      ['script', 'quick', 'passed'],
      ['waiter', null, 'waiting_failed'],
      ['script', 'after', 'waiting_failed'],
    ]);
    expect(b.state).toBe('failed');
  });

  it('with --force, cancels the jobs agents run at once and frees their agents', async () => {
    const s = await setup(yaml('steps:', '  - command: controller', '  - { command: hung, key: hung }', '  - command: next'));
    await takeNextJob(ctx(), s.agent);
    const other = await givenAgent(ctx(), s.reg, 'other');
    const hung = await takeNextJob(ctx(), other);
    expect(hung.command).toBe('hung');
    await ctx().http().post('/v3/steps/hung/cancel').set(agentAuth(s.agent.token)).send({ force: true, force_grace_period: 30 }).expect(200);
    expect(await s.states()).toMatchObject({ 'hung#0': 'canceled' });
    // The agent that ran it holds nothing: it is offered the next job.
    expect((await ctx().http().get('/v3/ping').set(agentAuth(other.token)).expect(200)).body.job).toMatchObject({ command: 'next' });
  });

  it('cancels the build of the job the agent runs, and no other', async () => {
    const s = await setup(yaml('steps:', '  - command: a', '  - command: b'));
    const elsewhere = await setup('steps:\n  - command: x\n');
    // An agent running no job cancels nothing.
    await ctx().http().post(`/v3/builds/${s.build.id}/cancel`).set(agentAuth(s.agent.token)).expect(404);
    const running = await takeNextJob(ctx(), s.agent);
    // Another build, another organization's, or none: as good as missing.
    await ctx().http().post(`/v3/builds/${elsewhere.build.id}/cancel`).set(agentAuth(s.agent.token)).expect(404);
    await ctx().http().post('/v3/builds/0b8c7c57-0000-4000-8000-000000000000/cancel').set(agentAuth(s.agent.token)).expect(404);
    await ctx().http().post(`/v3/builds/${s.build.id}/cancel`).set(agentAuth(s.agent.token)).expect(200, { uuid: s.build.id });
    let b = await s.read();
    expect([b.state, b.jobs.map((j) => j.state)]).toEqual(['canceling', ['canceling', 'canceled']]);
    const again = await ctx().http().post(`/v3/builds/${s.build.id}/cancel`).set(agentAuth(s.agent.token)).expect(422);
    expect(again.body.message).toContain('because it is canceling');
    await ctx().http().put(`/v3/jobs/${running.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: -1, signal_reason: 'cancel' }).expect(200);
    b = await s.read();
    expect(b.state).toBe('canceled');
  });
});
