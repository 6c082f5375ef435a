/**
 * The transition tables of src/builds/states.ts, against the stores: for every state reachable
 * from the states jobs and builds are created in, and every event of the table, a real job or
 * build is driven into that state through the repositories' own compare-and-set writes (the
 * shortest path of the table's events), the event is applied with the repository write the
 * code performs for it, and the write must succeed exactly when the table has a row from that
 * state for that event, landing on the row's `to` (a retry: the state kept, the job marked
 * retried). Plus pure checks: every state of the contract's enums is classified, and reachable
 * or declared unreachable; the finish and machine events the code derives from the table.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { JobRepository } from '../../src/builds/jobs/repository';
import type { Job } from '../../src/builds/jobs/model';
import { advance } from '../../src/builds/jobs/state';
import { BuildRepository } from '../../src/builds/repository';
import type { BuildState, JobState } from '../../src/builds/model';
import {
  ACTIVE_JOB_STATES,
  BLOCKED_ONLY_BUILD_STATES,
  AUTO_RETRYABLE_JOB_STATES,
  BULK_RETRYABLE_JOB_STATES,
  CANCELABLE_BUILD_STATES,
  CANCELED_BUILD_STATES,
  CONCLUDED_BUILD_STATES,
  CONCLUDED_JOB_STATES,
  ENDED_BUILD_STATES,
  FAILING_JOB_STATES,
  FINISHED_BUILD_STATES,
  HELD_JOB_STATES,
  LIVE_JOB_STATES,
  NOT_YET_RUNNABLE_JOB_STATES,
  REPRIORITIZABLE_JOB_STATES,
  RETRYABLE_JOB_STATES,
  RUNNING_ON_AGENT_JOB_STATES,
  SETTLED_BUILD_STATES,
  STOPPING_JOB_STATES,
  UNFINISHED_JOB_STATES,
  UNSUCCESSFUL_BUILD_STATES,
  UNSUCCESSFUL_JOB_STATES,
  BUILD_STATES,
  BUILD_TRANSITIONS,
  buildTransition,
  finishEvent,
  INITIAL_BUILD_STATES,
  INITIAL_JOB_STATES,
  JOB_STATES,
  JOB_TRANSITIONS,
  jobTransition,
  machineBuildEvent,
  machineJobEvent,
  retryFrom,
  TERMINAL_JOB_STATES,
  UNREACHABLE_BUILD_STATES,
  UNREACHABLE_JOB_STATES,
  type BuildEvent,
  type JobEvent,
  type TransitionRow,
} from '../../src/builds/states';
import { describeEachDatabase } from '../support/context';
import { givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

type Row<S extends string, E extends string> = TransitionRow<S, E>;

/** Shortest paths of events from the initial states to every state they reach (rows that keep the state aside). */
function paths<S extends string, E extends string>(
  initial: readonly S[],
  table: readonly Row<S, E>[],
  skip: readonly E[] = [],
): Map<S, { start: S; events: E[] }> {
  const found = new Map<S, { start: S; events: E[] }>(initial.map((s) => [s, { start: s, events: [] }]));
  const queue = [...initial];
  while (queue.length) {
    const s = queue.shift()!;
    for (const row of table) {
      if (row.to === null || skip.includes(row.event) || !row.from.includes(s) || found.has(row.to)) continue;
      found.set(row.to, { start: found.get(s)!.start, events: [...found.get(s)!.events, row.event] });
      queue.push(row.to);
    }
  }
  return found;
}

/*
 * Trigger jobs have no agent: a job is driven to `running` by its agent, so the finishes (which
 * the agent holding the job performs) apply. start_trigger is still applied from every state.
 */
const JOB_PATHS = paths(INITIAL_JOB_STATES, JOB_TRANSITIONS, ['start_trigger']);
const BUILD_PATHS = paths(INITIAL_BUILD_STATES, BUILD_TRANSITIONS);
const REACHABLE_JOB_STATES = JOB_STATES.filter((s) => JOB_PATHS.has(s));
const REACHABLE_BUILD_STATES = BUILD_STATES.filter((s) => BUILD_PATHS.has(s));
const JOB_EVENTS = [...new Set(JOB_TRANSITIONS.map((r) => r.event))];
const BUILD_EVENTS = [...new Set(BUILD_TRANSITIONS.map((r) => r.event))];

function enumOf(name: string): string[] {
  const bundle = YAML.parse(fs.readFileSync(path.join(__dirname, '../../generated/openapi.yaml'), 'utf8')) as {
    components: { schemas: Record<string, { enum: string[] }> };
  };
  return bundle.components.schemas[name]!.enum;
}

describe('the state tables (pure)', () => {
  it("classify every state of the contract's enums, once", () => {
    expect([...JOB_STATES].sort()).toEqual([...enumOf('JobState')].sort());
    expect([...BUILD_STATES].sort()).toEqual([...enumOf('BuildState')].sort());
  });

  it('reach every state from the initial ones but those declared unreachable', () => {
    expect(REACHABLE_JOB_STATES.length).toBeGreaterThan(0);
    for (const s of JOB_STATES) expect([s, JOB_PATHS.has(s) || UNREACHABLE_JOB_STATES.includes(s)]).toEqual([s, true]);
    for (const s of UNREACHABLE_JOB_STATES) expect([s, JOB_PATHS.has(s)]).toEqual([s, false]);
    for (const s of BUILD_STATES) expect([s, BUILD_PATHS.has(s) || UNREACHABLE_BUILD_STATES.includes(s)]).toEqual([s, true]);
    for (const s of UNREACHABLE_BUILD_STATES) expect([s, BUILD_PATHS.has(s)]).toEqual([s, false]);
    // No row starts from or lands on a state nothing reaches but the ones the contract lists for the real service.
    for (const row of JOB_TRANSITIONS) expect(row.to === null || !UNREACHABLE_JOB_STATES.includes(row.to)).toBe(true);
  });

  it('name each event once, with known states', () => {
    for (const table of [JOB_TRANSITIONS, BUILD_TRANSITIONS] as Row<string, string>[][]) {
      const events = table.map((r) => r.event);
      expect(new Set(events).size).toBe(events.length);
      for (const row of table) expect(row.from.length).toBeGreaterThan(0);
    }
    for (const row of JOB_TRANSITIONS) for (const s of [...row.from, ...(row.to ? [row.to] : [])]) expect(JOB_STATES).toContain(s);
    for (const row of BUILD_TRANSITIONS) for (const s of [...row.from, ...(row.to ? [row.to] : [])]) expect(BUILD_STATES).toContain(s);
  });

  it('leave a finished job only by a retry, or by the state machine reopening what a retried failure held back', () => {
    for (const row of JOB_TRANSITIONS.filter((r) => r.from.some((s) => TERMINAL_JOB_STATES.includes(s)))) {
      expect([row.event, row.to === null || row.by === 'machine']).toEqual([row.event, true]);
    }
  });

  it('finish a job as the agent reports it, from the states the table allows', () => {
    expect(finishEvent('running', 0, null)).toBe('finish_passed');
    expect(finishEvent('running', 1, null)).toBe('finish_failed');
    expect(finishEvent('running', -1, null)).toBe('finish_failed');
    // command_step.md: "A job that times out with an exit status of 0 is marked as passed."
    expect(finishEvent('running', 0, 'timeout')).toBe('finish_passed');
    expect(finishEvent('running', 137, 'timeout')).toBe('finish_timed_out');
    expect(finishEvent('running', 1, 'cancel')).toBe('finish_failed');
    expect(finishEvent('canceling', 0, null)).toBe('finish_canceled');
    expect(finishEvent('canceling', 1, 'timeout')).toBe('finish_canceled');
    expect(finishEvent('timing_out', 0, null)).toBe('finish_passed');
    expect(finishEvent('timing_out', 1, null)).toBe('finish_timed_out');
    for (const s of JOB_STATES.filter((s) => !['running', 'canceling', 'timing_out'].includes(s))) expect([s, finishEvent(s, 0, null)]).toEqual([s, null]);
  });

  it("name the state machine's moves by where they land", () => {
    for (const row of JOB_TRANSITIONS.filter((r) => r.by === 'machine')) expect(machineJobEvent(row.to!)).toBe(row.event);
    for (const row of BUILD_TRANSITIONS.filter((r) => r.by === 'machine')) expect(machineBuildEvent(row.to!)).toBe(row.event);
    expect(machineBuildEvent('canceled')).toBe('end_cancel');
    expect(() => machineJobEvent('running')).toThrow();
  });

  it("match the state machine: it makes only the table's moves, and all of its machine rows", () => {
    // Builds of a few jobs in the states each type of job can be in, decided by src/builds/jobs/state.ts.
    const STATES_OF: Record<string, JobState[]> = {
      script: [
        'waiting',
        'waiting_failed',
        'scheduled',
        'limited',
        'assigned',
        'accepted',
        'running',
        'canceling',
        'timing_out',
        'passed',
        'failed',
        'timed_out',
        'expired',
        'canceled',
        'broken',
        'skipped',
      ],
      waiter: ['waiting', 'waiting_failed', 'passed', 'canceled', 'skipped'],
      manual: ['waiting', 'blocked', 'blocked_failed', 'unblocked', 'canceled', 'skipped', 'broken'],
    };
    let seed = 29;
    const next = (n: number) => {
      seed = (seed * 1103515245 + 12345) % 2 ** 31;
      return Math.floor(seed / 65_536) % n;
    };
    const pick = <T>(xs: readonly T[]): T => xs[next(xs.length)]!;
    const made = new Set<string>();
    // Rows the random builds below reach too rarely, written out: cancel_on_build_failing in a
    // failing build, from each state it cancels or stops a job in (one still waiting behind a
    // wait step; one reopened, its failure retried, and canceled in the same pass).
    const job = (position: number, type: string, state: JobState, step: object = { type }) =>
      ({ id: `f${position}`, position, type, state, step, softFailed: false, startedAt: null, promisedExitStatus: null }) as unknown as Job;
    const wait = { type: 'waiter', continue_on_failure: false };
    const fastFail = { type: 'script', cancel_on_build_failing: true };
    const written = [
      [job(0, 'script', 'failed'), job(1, 'script', 'running'), job(2, 'waiter', 'waiting', wait), job(3, 'script', 'waiting', fastFail)],
      [
        job(0, 'script', 'failed'),
        ...(['limited', 'scheduled', 'assigned', 'accepted', 'running'] as const).map((st, i) => job(i + 1, 'script', st, fastFail)),
      ],
      [job(0, 'script', 'running'), job(1, 'waiter', 'waiting_failed', wait), job(2, 'script', 'waiting_failed', fastFail), job(3, 'script', 'failed')],
    ];
    for (const jobs of written) {
      for (const m of advance({ state: 'failing', blocked: false, startedAt: new Date(0), failingAt: new Date(0), finishedAt: null }, jobs, new Date(1000))
        .jobs) {
        expect([m.event, jobTransition(m.event, m.from)]).toEqual([m.event, { from: [m.from], to: m.to }]);
        made.add(`${m.from} > ${m.to}`);
      }
    }
    for (let i = 0; i < 5000; i++) {
      const jobs = Array.from({ length: 1 + next(5) }, (_, position) => {
        const type = pick(['script', 'waiter', 'manual', 'trigger'] as const);
        // A command job of a concurrency group is limited where another would be scheduled.
        const step =
          type === 'waiter'
            ? { type, continue_on_failure: next(3) === 0 }
            : type === 'script' && next(3) === 0
              ? { type, concurrency: 1, concurrency_group: 'deploy', ...(next(2) ? { cancel_on_build_failing: true } : {}) }
              : type === 'script' && next(3) === 0
                ? { type, cancel_on_build_failing: true }
                : { type };
        const state = pick(STATES_OF[type === 'trigger' ? 'script' : type]!);
        return {
          id: `j${position}`,
          position,
          type,
          state,
          step,
          softFailed: next(4) === 0,
          startedAt: next(2) ? new Date(0) : null,
          promisedExitStatus: null,
        } as unknown as Job;
      });
      const state = pick(REACHABLE_BUILD_STATES);
      const build = { state, blocked: false, startedAt: next(2) ? new Date(0) : null, failingAt: null, finishedAt: null };
      const result = advance(build, jobs, new Date(1000));
      for (const m of result.jobs) {
        expect([m.event, jobTransition(m.event, m.from)]).toEqual([m.event, { from: [m.from], to: m.to }]);
        made.add(`${m.from} > ${m.to}`);
      }
      if (result.build && result.build.state !== state) {
        made.add(`build ${state} > ${result.build.state}`);
        expect([state, buildTransition(machineBuildEvent(result.build.state)).from]).toEqual([state, expect.arrayContaining([state])]);
      }
    }
    for (const row of JOB_TRANSITIONS.filter((r) => r.by === 'machine')) for (const from of row.from) expect(made).toContain(`${from} > ${row.to}`);
    for (const row of BUILD_TRANSITIONS.filter((r) => r.by === 'machine'))
      for (const from of row.from.filter((s) => REACHABLE_BUILD_STATES.includes(s))) expect(made).toContain(`build ${from} > ${row.to}`);
  });

  it('derive the named groups of states the code used to list by hand', () => {
    const same = (derived: readonly string[], listed: string[]) => expect([...derived].sort()).toEqual(listed.sort());
    same(TERMINAL_JOB_STATES, [
      'passed',
      'failed',
      'canceled',
      'timed_out',
      'skipped',
      'broken',
      'expired',
      'waiting_failed',
      'blocked_failed',
      'unblocked_failed',
    ]);
    same(ACTIVE_JOB_STATES, ['scheduled', 'assigned', 'accepted', 'running', 'canceling', 'timing_out']);
    same(HELD_JOB_STATES, ['assigned', 'accepted', 'running', 'canceling', 'timing_out']);
    same(UNFINISHED_JOB_STATES, ['pending', 'waiting', 'blocked', 'unblocked', 'limiting', 'limited', 'scheduled', 'assigned', 'accepted']);
    same(jobTransition('stop').from, ['accepted', 'running']);
    same(jobTransition('cancel').from, ['pending', 'waiting', 'blocked', 'unblocked', 'limiting', 'limited', 'scheduled', 'assigned']);
    same(NOT_YET_RUNNABLE_JOB_STATES, ['pending', 'waiting', 'blocked', 'unblocked', 'limiting', 'limited']);
    same(RUNNING_ON_AGENT_JOB_STATES, ['accepted', 'running', 'canceling', 'timing_out']);
    same(LIVE_JOB_STATES, ['scheduled', 'assigned', 'accepted', 'running', 'canceling', 'timing_out', 'waiting', 'limited', 'limiting', 'pending']);
    same(REPRIORITIZABLE_JOB_STATES, ['pending', 'waiting', 'blocked', 'unblocked', 'limiting', 'limited', 'scheduled', 'assigned', 'accepted', 'running']);
    same(RETRYABLE_JOB_STATES, ['failed', 'timed_out', 'canceled']);
    same(AUTO_RETRYABLE_JOB_STATES, ['failed', 'timed_out']);
    same(BULK_RETRYABLE_JOB_STATES, ['canceled', 'expired', 'failed', 'timed_out']);
    same(FAILING_JOB_STATES, ['failed', 'timed_out', 'expired']);
    same(UNSUCCESSFUL_JOB_STATES, ['failed', 'timed_out', 'canceled', 'expired', 'broken']);
    same(CONCLUDED_JOB_STATES, ['passed', 'failed', 'timed_out', 'canceled', 'broken', 'expired']);
    same(STOPPING_JOB_STATES, ['canceling', 'timing_out']);
    same(CANCELABLE_BUILD_STATES, ['scheduled', 'running', 'failing']);
    same(CANCELED_BUILD_STATES, ['canceling', 'canceled']);
    same(FINISHED_BUILD_STATES, ['passed', 'failed', 'blocked', 'canceled']);
    same(CONCLUDED_BUILD_STATES, ['passed', 'failed', 'canceled']);
    same(ENDED_BUILD_STATES, ['passed', 'failed', 'canceled', 'skipped', 'not_run']);
    same(SETTLED_BUILD_STATES, ['canceled', 'skipped', 'not_run']);
    same(UNSUCCESSFUL_BUILD_STATES, ['failed', 'canceled']);
  });

  it('narrow a transition to the state a caller read', () => {
    expect(jobTransition('finish_timed_out', 'timing_out')).toEqual({ from: ['timing_out'], to: 'timed_out' });
    expect(jobTransition('finish_timed_out', 'canceling')).toEqual({ from: [], to: 'timed_out' });
    expect(retryFrom('retry_bulk', 'expired')).toEqual(['expired']);
    expect(retryFrom('retry', 'expired')).toEqual([]);
  });
});

describeEachDatabase('the state tables on the store', (ctx) => {
  let org: { slug: string };
  let token: string;
  let registration: string;
  /** A pipeline per initial state, whose builds have a job in it (the last job in that state) and start as the build state says. */
  const pipelines = new Map<string, string>();
  const CONFIGURATIONS: Record<string, string> = {
    scheduled: 'steps:\n  - command: a\n',
    waiting: 'steps:\n  - wait\n  - command: b\n',
    blocked: 'steps:\n  - block: Go\n',
    // Two jobs of a group with room for one: the second stays limited.
    limited: 'steps:\n  - command: a\n    parallelism: 2\n    concurrency: 1\n    concurrency_group: state-table\n',
    broken: 'steps:\n  - command: a\n    branches: nope\n',
  };

  beforeAll(async () => {
    const admin = await ctx().givenAdmin();
    org = admin.org;
    token = admin.token;
    registration = await givenRegistrationToken(ctx(), org.slug, token);
    for (const [state, configuration] of Object.entries(CONFIGURATIONS)) pipelines.set(state, (await givenPipeline(ctx(), org, token, configuration)).slug);
  });

  const jobs = () => new JobRepository(ctx().services.db);
  const builds = () => new BuildRepository(ctx().services.db);
  const now = () => new Date();
  let agents = 0;

  /** A fresh build of the pipeline of `initial` (a job state), its job in that state, and an agent of its own. */
  async function givenJob(initial: JobState): Promise<{ buildId: string; jobId: string; agentId: string }> {
    const build = await givenBuild(ctx(), org, pipelines.get(initial)!, token);
    const job = build.jobs.filter((j) => j.state === initial).pop();
    if (!job) throw new Error(`no ${initial} job in ${JSON.stringify(build.jobs.map((j) => j.state))}`);
    const agent = await givenAgent(ctx(), registration, `agent-${agents++}`);
    return { buildId: build.id, jobId: job.id, agentId: agent.id };
  }

  async function jobRow(jobId: string): Promise<{ state: JobState; retried: boolean }> {
    const row = (await ctx().services.db('jobs').where({ id: jobId }).first('state', 'retried')) as { state: JobState; retried: unknown };
    return { state: row.state, retried: row.retried === true || row.retried === 1 };
  }

  /** The repository write the code performs for each job event: true when it changed the job (null: a write over the whole build, judged by the job). */
  async function applyJob(event: JobEvent, j: { buildId: string; jobId: string; agentId: string }): Promise<boolean | null> {
    const r = jobs();
    const at = now();
    const end = (state: JobState) => ({ state, exit_status: state === 'passed' ? 0 : 1, signal_reason: null, soft_failed: false, finished_at: at });
    switch (event) {
      case 'assign':
        return r.assign(j.jobId, j.agentId);
      case 'release':
        return r.unassign(j.agentId);
      case 'accept':
      case 'start':
        return r.move(j.jobId, j.agentId, event, event === 'start' ? { started_at: at } : {});
      case 'finish_passed':
      case 'finish_failed':
      case 'finish_timed_out':
      case 'finish_canceled': {
        const t = jobTransition(event);
        return r.end(j.jobId, j.agentId, t, end(t.to));
      }
      case 'abandon':
        return r.end(j.jobId, j.agentId, jobTransition('abandon'), { state: 'expired', expired_at: at, finished_at: at });
      case 'time_out':
        return r.timeOut(j.jobId);
      case 'expire':
        return (await r.expire(j.buildId, [j.jobId], at)) > 0;
      case 'unblock': {
        const user = await ctx().givenUser();
        return r.unblock(j.jobId, user, at);
      }
      case 'retry':
      case 'retry_passed':
      case 'retry_bulk':
      case 'retry_automatic':
        return r.markRetried(j.jobId, crypto.randomUUID(), retryFrom(event), null);
      case 'cancel':
      case 'skip':
        await r.updateOfBuilds([j.buildId], event, { finished_at: at });
        return null;
      case 'stop':
        await r.updateOfBuilds([j.buildId], event);
        return null;
      case 'force_cancel':
        return (await r.updateOfJobs(j.buildId, [j.jobId], event, { finished_at: at })) > 0;
      case 'admit':
        return (await r.admit([j.jobId], at)).length > 0;
      case 'schedule':
      case 'limit':
      case 'cancel_failing':
      case 'stop_failing':
      case 'pass_wait':
      case 'block':
      case 'fail_wait':
      case 'fail_block':
      case 'reopen': {
        const from = (await jobRow(j.jobId)).state;
        return r.apply({ id: j.jobId, event, from, to: jobTransition(event).to, fields: {} });
      }
      case 'start_trigger':
        return r.startTrigger(j.jobId, at);
      case 'trigger_passed':
      case 'trigger_failed':
      case 'trigger_skipped':
        return r.endTrigger(j.jobId, event, at);
    }
  }

  const jobRowOf = (event: JobEvent) => JOB_TRANSITIONS.find((r) => r.event === event)!;

  /** A job driven from its initial state to `state` by the table's path, every step of which must succeed. */
  async function jobIn(state: JobState) {
    const { start, events } = JOB_PATHS.get(state)!;
    const j = await givenJob(start);
    for (const e of events) {
      const ok = await applyJob(e, j);
      expect([e, ok ?? true, (await jobRow(j.jobId)).state]).toEqual([e, true, jobRowOf(e).to]);
    }
    return j;
  }

  async function expectJobEvent(j: { buildId: string; jobId: string; agentId: string }, state: JobState, event: JobEvent) {
    const row = jobRowOf(event);
    const moves = row.from.includes(state);
    const ok = await applyJob(event, j);
    const after = await jobRow(j.jobId);
    // A write over the whole build (null) is judged by the job alone.
    const expected = !moves ? { state, retried: false } : row.to === null ? { state, retried: true } : { state: row.to, retried: false };
    expect({ state, event, ok: ok ?? moves, after }).toEqual({ state, event, ok: moves, after: expected });
  }

  for (const state of REACHABLE_JOB_STATES) {
    it(`moves a job that is ${state} by exactly the events the table has from there`, async () => {
      // One job for the events that must not move it (each leaves it as it was) ...
      const still = await jobIn(state);
      for (const event of JOB_EVENTS.filter((e) => !jobRowOf(e).from.includes(state))) await expectJobEvent(still, state, event);
      // ... and a job of its own for each event that moves it.
      for (const event of JOB_EVENTS.filter((e) => jobRowOf(e).from.includes(state))) await expectJobEvent(await jobIn(state), state, event);
    }, 120_000);
  }

  /** The repository write the code performs for each build event: true when it changed the build. */
  async function applyBuild(event: BuildEvent, buildId: string): Promise<boolean> {
    const r = builds();
    const at = now();
    switch (event) {
      case 'cancel':
        return r.startCanceling(buildId);
      case 'end_cancel':
        return r.canceled(buildId, at);
      case 'cancel_branch':
      case 'supersede':
      case 'skip':
        return (await r.end([buildId], event, at)) > 0;
      case 'still_canceling':
        return (await r.stillCanceling([buildId])) > 0;
      case 'reopen':
        return r.reopenCanceled(buildId);
      case 'wait':
      case 'run':
      case 'fail_fast':
      case 'pass':
      case 'fail': {
        const t = buildTransition(event);
        const fields = { state: t.to, blocked: false, startedAt: t.to === 'scheduled' ? null : at, failingAt: null, finishedAt: null };
        return r.saveProgress(buildId, fields, t.from);
      }
    }
  }

  const buildRowOf = (event: BuildEvent) => BUILD_TRANSITIONS.find((r) => r.event === event)!;
  const buildState = async (id: string) => ((await ctx().services.db('builds').where({ id }).first('state')) as { state: BuildState }).state;

  async function buildIn(state: BuildState): Promise<string> {
    const { start, events } = BUILD_PATHS.get(state)!;
    const build = await givenBuild(ctx(), org, pipelines.get(start === 'not_run' ? 'broken' : 'scheduled')!, token);
    expect(build.state).toBe(start);
    for (const e of events) {
      const ok = await applyBuild(e, build.id);
      expect([e, ok, await buildState(build.id)]).toEqual([e, true, buildRowOf(e).to]);
    }
    return build.id;
  }

  async function expectBuildEvent(buildId: string, state: BuildState, event: BuildEvent) {
    const row = buildRowOf(event);
    const moves = row.from.includes(state);
    if (moves && BLOCKED_ONLY_BUILD_STATES.includes(state) && ['skip', 'supersede', 'cancel_branch'].includes(event)) {
      // Guarded: a newer build of the branch moves a passed or failed build only while a block step holds it.
      expect({ state, event, ok: await applyBuild(event, buildId), now: await buildState(buildId) }).toEqual({ state, event, ok: false, now: state });
      await ctx().services.db('builds').where({ id: buildId }).update({ blocked: true });
    }
    const ok = await applyBuild(event, buildId);
    expect({ state, event, ok, now: await buildState(buildId) }).toEqual({ state, event, ok: moves, now: moves ? row.to : state });
  }

  for (const state of REACHABLE_BUILD_STATES) {
    it(`moves a build that is ${state} by exactly the events the table has from there`, async () => {
      const still = await buildIn(state);
      for (const event of BUILD_EVENTS.filter((e) => !buildRowOf(e).from.includes(state))) await expectBuildEvent(still, state, event);
      for (const event of BUILD_EVENTS.filter((e) => buildRowOf(e).from.includes(state))) await expectBuildEvent(await buildIn(state), state, event);
    }, 120_000);
  }
});
