/**
 * The outbox is written by the database in the transaction of each change: a build's, a job's
 * and an agent's state moves are recorded in order whatever path made them, and a change rolled
 * back records nothing. The events they map to are the documented ones.
 */
import { auth, type TestContext, describeEachDatabase } from '../support/context';
import { agentAuth, givenBuildAndAgent, runNextJob } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { eventOf } from '../../src/notifications/rules';
import type { Transition } from '../../src/notifications/repository';

describeEachDatabase('outbox', (get) => {
  let ctx: TestContext;
  beforeAll(() => {
    ctx = get();
  });

  const eventsOf = async (buildId: string) =>
    (await ctx.services.db('outbox_events').where({ build_id: buildId }).orderBy('seq')).map((r) => ({
      kind: r.kind,
      from: r.from_state,
      to: r.to_state,
      type: r.subject_type,
    }));

  it('records a build and its jobs as they are created and move, in order', async () => {
    const { org, token } = await ctx.givenAdmin();
    const p = await givenPipeline(ctx, org, token, 'steps:\n  - command: one\n  - wait\n  - command: two\n');
    const b = await givenBuild(ctx, org, p, token);
    expect(await eventsOf(b.id)).toEqual([
      { kind: 'build', from: null, to: 'scheduled', type: null },
      { kind: 'job', from: null, to: 'scheduled', type: 'script' },
    ]);
    await ctx.http().put(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds/${b.number}/cancel`).set(auth(token)).expect(200);
    expect((await eventsOf(b.id)).slice(2)).toEqual([
      { kind: 'build', from: 'scheduled', to: 'canceling', type: null },
      { kind: 'job', from: 'scheduled', to: 'canceled', type: 'script' },
      { kind: 'job', from: 'waiting', to: 'canceled', type: 'waiter' },
      { kind: 'job', from: 'waiting', to: 'canceled', type: 'script' },
      { kind: 'build', from: 'canceling', to: 'canceled', type: null },
    ]);
    const seqs = (await ctx.services.db('outbox_events').where({ build_id: b.id }).orderBy('seq')).map((r) => Number(r.seq));
    expect([...seqs].sort((x, y) => x - y)).toEqual(seqs);
  });

  it('records nothing for a change that is rolled back', async () => {
    const { org, token } = await ctx.givenAdmin();
    const p = await givenPipeline(ctx, org, token, 'steps:\n  - command: one\n');
    const b = await givenBuild(ctx, org, p, token);
    const before = await ctx.services.db('outbox_events').count({ n: '*' }).first();
    await expect(
      ctx.services.db.transaction(async (trx) => {
        await trx('builds').where({ id: b.id }).update({ state: 'running' });
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(Number((await ctx.services.db('outbox_events').count({ n: '*' }).first())!.n)).toBe(Number(before!.n));
  });

  it("records a job's run and an agent's connection states", async () => {
    const { org, build, agent } = await givenBuildAndAgent(ctx, 'steps:\n  - command: one\n');
    await runNextJob(ctx, agent, 0);
    await ctx.http().post('/v3/disconnect').set(agentAuth(agent.token)).expect(200);
    expect(await eventsOf(build.id)).toEqual([
      { kind: 'build', from: null, to: 'scheduled', type: null },
      { kind: 'job', from: null, to: 'scheduled', type: 'script' },
      { kind: 'job', from: 'accepted', to: 'running', type: 'script' },
      { kind: 'build', from: 'scheduled', to: 'running', type: null },
      { kind: 'job', from: 'running', to: 'passed', type: 'script' },
      { kind: 'build', from: 'running', to: 'passed', type: null },
    ]);
    const agentEvents = await ctx.services.db('outbox_events').where({ kind: 'agent', organization_id: org.id }).orderBy('seq');
    expect(agentEvents.map((r) => [r.subject_id, r.from_state, r.to_state])).toEqual([
      [agent.id, 'never_connected', 'connected'],
      [agent.id, 'connected', 'disconnected'],
    ]);
  });
});

describe('the events transitions are', () => {
  const t = (kind: Transition['kind'], from: string | null, to: string, subjectType: string | null = null, blocked = false): Transition => ({
    seq: 1,
    kind,
    subjectId: 'x',
    subjectType,
    organizationId: 'o',
    pipelineId: null,
    buildId: null,
    fromState: from,
    toState: to,
    blocked,
    occurredAt: new Date(),
    event: null,
    detail: null,
  });
  it.each([
    [t('build', null, 'scheduled'), 'build.scheduled'],
    [t('build', 'scheduled', 'running'), 'build.running'],
    [t('build', 'running', 'failing'), 'build.failing'],
    [t('build', 'failing', 'failed'), 'build.finished'],
    [t('build', 'running', 'passed'), 'build.finished'],
    [t('build', 'running', 'passed', null, true), 'build.finished'],
    [t('build', 'passed', 'running'), 'build.running'],
    [t('build', 'running', 'canceling'), null],
    [t('build', 'canceling', 'canceled'), 'build.finished'],
    [t('build', null, 'skipped'), 'build.skipped'],
    [t('build', 'running', 'running', null, true), null],
    [t('job', null, 'scheduled', 'script'), 'job.scheduled'],
    [t('job', 'waiting', 'scheduled', 'script'), 'job.scheduled'],
    [t('job', 'accepted', 'running', 'script'), 'job.started'],
    [t('job', 'running', 'passed', 'script'), 'job.finished'],
    [t('job', 'running', 'timed_out', 'script'), 'job.finished'],
    [t('job', 'scheduled', 'expired', 'script'), 'job.finished'],
    [t('job', 'blocked', 'unblocked', 'manual'), 'job.activated'],
    [{ ...t('job', 'running', 'running', 'script'), event: 'job.promised_exit_status' as const, detail: { reason: null } }, 'job.promised_exit_status'],
    [t('job', null, 'scheduled', 'waiter'), null],
    [t('job', null, 'scheduled', 'trigger'), null],
    [t('agent', 'never_connected', 'connected'), 'agent.connected'],
    [t('agent', 'connected', 'lost'), 'agent.lost'],
    [t('agent', 'connected', 'disconnected'), 'agent.disconnected'],
    [t('agent', 'connected', 'stopping'), 'agent.stopping'],
    [t('agent', 'stopping', 'stopped'), 'agent.stopped'],
  ])('%o is %s', (transition, event) => {
    expect(eventOf(transition)).toBe(event);
  });
});
