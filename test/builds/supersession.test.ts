/**
 * Older builds of a branch that a newer build skips or cancels, as the docs' "Skip queued
 * builds" and "Cancel running builds" pages describe them, with agents holding their jobs.
 */
import { yaml } from '../support/configuration';
import { auth, describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, givenAgentPipeline, runNextJob, takeNextJob } from '../support/agents';
import { givenBuild } from '../support/given';
import type { BuildJson } from '../support/types';

describeEachDatabase('builds superseded by a newer build of their branch', (ctx) => {
  async function setup(configuration: string, settings: Record<string, unknown>) {
    const s = await givenAgentPipeline(ctx(), configuration);
    await ctx().http().patch(`/v2/organizations/${s.org.slug}/pipelines/${s.slug}`).set(auth(s.token)).send(settings).expect(200);
    const read = async (n: number) =>
      (await ctx().http().get(`/v2/organizations/${s.org.slug}/pipelines/${s.slug}/builds/${n}`).set(auth(s.token)).expect(200)).body as BuildJson;
    return { ...s, read, create: () => givenBuild(ctx(), s.org, s.slug, s.token) };
  }

  it('frees the agents that held the skipped build’s assigned and accepted jobs, so they take the newer build’s', async () => {
    const s = await setup(yaml('steps:', '  - command: one', '  - command: two'), { skip_queued_branch_builds: true });
    const first = await s.create();
    const [assignee, acceptor] = [await givenAgent(ctx(), s.reg, 'assignee'), await givenAgent(ctx(), s.reg, 'acceptor')];
    const assigned = (await ctx().http().get('/v3/ping').set(agentAuth(assignee.token)).expect(200)).body.job;
    const accepted = (await ctx().http().get('/v3/ping').set(agentAuth(acceptor.token)).expect(200)).body.job;
    await ctx().http().put(`/v3/jobs/${accepted.id}/accept`).set(agentAuth(acceptor.token)).expect(200);
    expect([assigned.command, accepted.command].sort()).toEqual(['one', 'two']);
    await s.create();
    expect((await s.read(first.number)).jobs.map((j) => j.state)).toEqual(['skipped', 'skipped']);
    // Both agents are offered the newer build's jobs.
    const next = await Promise.all([assignee, acceptor].map((a) => ctx().http().get('/v3/ping').set(agentAuth(a.token)).expect(200)));
    expect(next.map((r) => r.body.job?.command).sort()).toEqual(['one', 'two']);
  });

  it('cancels an older build waiting on a block step, as it cancels a running one (the docs: started, failing and blocked builds)', async () => {
    const s = await setup(yaml('steps:', '  - command: build', '  - block: Deploy?', '  - command: deploy'), { cancel_running_branch_builds: true });
    const first = await s.create();
    const agent = await givenAgent(ctx(), s.reg, 'runner');
    await runNextJob(ctx(), agent, 0);
    expect(await s.read(first.number)).toMatchObject({ state: 'passed', blocked: true });
    await s.create();
    const canceled = await s.read(first.number);
    expect(canceled).toMatchObject({ state: 'canceled', blocked: false });
    expect(canceled.jobs.map((j) => j.state)).toEqual(['passed', 'canceled', 'canceled']);
  });

  // The canceling page's "Using Cancel Intermediate Builds and re-running earlier builds".
  describe('an older build that runs again (a retried job) while a newer one is there', () => {
    async function failedThenNewer() {
      const s = await setup(yaml('steps:', '  - command: build'), { cancel_running_branch_builds: true });
      const first = await s.create();
      const agent = await givenAgent(ctx(), s.reg, 'runner');
      const failed = await runNextJob(ctx(), agent, 1);
      const second = await s.create();
      const retry = () =>
        ctx().http().put(`/v2/organizations/${s.org.slug}/pipelines/${s.slug}/builds/${first.number}/jobs/${failed.id}/retry`).set(auth(s.token)).expect(200);
      return { ...s, first, second, agent, retry };
    }

    it('is canceled when the newer build starts after it started again', async () => {
      const s = await failedThenNewer();
      await s.retry();
      expect(await s.read(s.first.number)).toMatchObject({ state: 'running' });
      const started = await takeNextJob(ctx(), s.agent);
      expect((await s.read(s.second.number)).jobs.map((j) => j.id)).toEqual([started.id]);
      expect(await s.read(s.second.number)).toMatchObject({ state: 'running' });
      const canceled = await s.read(s.first.number);
      expect(canceled.state).toBe('canceled');
      expect(canceled.jobs.map((j) => j.state)).toEqual(['canceled']); // the retry (the failed job it replaced is a retried job)
    });

    it('goes on when it started again after the newer build started', async () => {
      const s = await failedThenNewer();
      await takeNextJob(ctx(), s.agent);
      expect(await s.read(s.second.number)).toMatchObject({ state: 'running' });
      await s.retry();
      expect(await s.read(s.first.number)).toMatchObject({ state: 'running' });
      expect(await s.read(s.second.number)).toMatchObject({ state: 'running' });
    });
  });

  it('leaves an older build that passed alone', async () => {
    const s = await setup(yaml('steps:', '  - command: build'), { cancel_running_branch_builds: true });
    const first = await s.create();
    const agent = await givenAgent(ctx(), s.reg, 'runner');
    await runNextJob(ctx(), agent, 0);
    await s.create();
    expect(await s.read(first.number)).toMatchObject({ state: 'passed', blocked: false });
  });
});
