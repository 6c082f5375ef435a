/**
 * A job that ended without its build's state machine after it (an agent's finish is one
 * transaction with the machine now, but a process of an earlier version killed between the two,
 * issue 31, or a job ended outside the build's lock) leaves the build unfinished with nothing left
 * to move it (the jobs after a wait never scheduled, or the build never concluded). The sweep of
 * any process moves such a build on (BuildProgress.advanceStalled) once STALLED_AFTER_MS passed
 * since its last job's end, once however many sweep at once; builds whose jobs still move on
 * their own are left alone.
 */
import { clock } from '../../src/core/clock';
import { finishEvent, jobTransition } from '../../src/builds/states';
import { STALLED_AFTER_MS } from '../../src/builds/jobs/sweeper';
import { JobRepository } from '../../src/builds/jobs/repository';
import { AgentRepository } from '../../src/agents/repository';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { givenAgent, givenRegistrationToken, runNextJob, takeNextJob, type TestAgent } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

describeEachDatabase('builds whose state machine did not run after their last job', (ctx: () => TestContext) => {
  let org: { slug: string };
  let token: string;
  let agent: TestAgent;

  beforeAll(async () => {
    ({ org, token } = await ctx().givenAdmin());
    agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'stalled');
  });
  afterAll(() => clock.set({ kind: 'real' }));

  /** The build's own machine may still be about to run: the sweep leaves it alone until STALLED_AFTER_MS have passed. */
  const quietPasses = async () => {
    expect((await ctx().services.sweeper.sweep()).stalledBuilds).toBe(0);
    clock.advance(STALLED_AFTER_MS + 1);
  };

  /** The agent's job passes as the agent API ends it, through the repositories alone: no build state machine after it. */
  const endWithoutAdvance = async (jobId: string) => {
    const transition = jobTransition(finishEvent('running', 0, null)!, 'running');
    const end = {
      state: transition.to,
      exit_status: 0,
      signal: null,
      signal_reason: null,
      soft_failed: false,
      finished_at: clock.now(),
      chunks_failed_count: null,
    };
    expect(await new JobRepository(ctx().services.db).end(jobId, agent.id, transition, end)).toBe(true);
    await new AgentRepository(ctx().services.db).jobFinished(agent.id, end.finished_at);
  };

  const read = async (slug: string, number: number) =>
    (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}/builds/${number}`).set(auth(token)).expect(200)).body as {
      id: string;
      state: string;
      jobs: { id: string; state: string; command: string }[];
    };

  const outbox = (subjectId: string, toState: string) => ctx().services.db('outbox_events').where({ subject_id: subjectId, to_state: toState }).select('seq');

  it('after a wait: two sweeps at once schedule the next step once; the build then passes as usual', async () => {
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: one\n  - wait\n  - command: two\n');
    const b = await givenBuild(ctx(), org, p, token);
    const job = await takeNextJob(ctx(), agent);
    await endWithoutAdvance(job.id);
    expect((await read(p.slug, b.number)).jobs.map((j) => j.state)).toEqual(['passed', 'waiting', 'waiting']);
    await quietPasses();

    const [first, second] = await Promise.all([ctx().services.sweeper.sweep(), ctx().services.sweeper.sweep()]);
    expect(first.stalledBuilds + second.stalledBuilds).toBeGreaterThanOrEqual(1);
    const moved = await read(p.slug, b.number);
    const two = moved.jobs.find((j) => j.command === 'two')!;
    expect([moved.state, two.state]).toEqual(['running', 'scheduled']);
    expect(await outbox(two.id, 'scheduled')).toHaveLength(1);
    // Nothing stalled now: the next sweep leaves every build alone.
    expect((await ctx().services.sweeper.sweep()).stalledBuilds).toBe(0);

    await runNextJob(ctx(), agent, 0);
    expect((await read(p.slug, b.number)).state).toBe('passed');
    clock.advance(STALLED_AFTER_MS + 1);
    expect((await ctx().services.sweeper.sweep()).stalledBuilds).toBe(0);
  });

  it('its last job: the sweep concludes the build, with one build.finished event', async () => {
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: only\n');
    const b = await givenBuild(ctx(), org, p, token);
    const job = await takeNextJob(ctx(), agent);
    await endWithoutAdvance(job.id);
    expect((await read(p.slug, b.number)).state).toBe('running');
    await quietPasses();

    const [first, second] = await Promise.all([ctx().services.sweeper.sweep(), ctx().services.sweeper.sweep()]);
    expect(first.stalledBuilds + second.stalledBuilds).toBeGreaterThanOrEqual(1);
    expect((await read(p.slug, b.number)).state).toBe('passed');
    expect(await outbox(b.id, 'passed')).toHaveLength(1);
    expect((await ctx().services.sweeper.sweep()).stalledBuilds).toBe(0);
  });

  it('leaves alone builds whose jobs wait for an agent, run, or wait for a person', async () => {
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - block: ok?\n  - command: later\n');
    const blocked = await givenBuild(ctx(), org, p, token);
    const q = await givenPipeline(ctx(), org, token, 'steps:\n  - command: queued\n');
    const queued = await givenBuild(ctx(), org, q, token);
    const before = [await read(p.slug, blocked.number), await read(q.slug, queued.number)];
    expect((await ctx().services.sweeper.sweep()).stalledBuilds).toBe(0);
    expect([await read(p.slug, blocked.number), await read(q.slug, queued.number)]).toEqual(before);
  });
});
