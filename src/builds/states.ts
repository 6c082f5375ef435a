/**
 * One home for every build and job state: what each state is (one declared classification per
 * machine, every state of the contract's enums named once), and the transitions the code
 * performs (one declarative table per machine: the event, the states it moves from, the state it
 * lands on, and what guards it beyond the state). Every named group of states the service uses
 * is derived here from one or the other, and every compare-and-set write
 * (`UPDATE ... WHERE state IN (...)`) takes its `from` states from the table by event
 * (`jobTransition`, `buildTransition`). Pure: no database. The types are the contract's
 * (src/builds/model.ts); test/builds/state-table.test.ts walks the tables on both stores.
 */
import { keysOf } from '../db/row-types';
import type { BuildState, JobState } from './model';

/*
 * Jobs.
 */

/**
 * What a job's state says of it:
 * - `upcoming`: it will be scheduled once what it waits for is done (a wait, a limit);
 * - `gate`: a block step's own, before it is passed;
 * - `queued`: it waits for an agent to take it;
 * - `assigned`: an agent took it and has not accepted it;
 * - `on_agent`: the agent accepted or runs it;
 * - `stopping`: its agent is stopping it (a cancel, a timeout);
 * - `passed`, `failed` (fails its build unless soft-failed), `stopped` (ended without a result:
 *   canceled, or a step that could not run), `not_run` (never ran: skipped, or held back by a
 *   failure before it): finished, nothing more happens to it but a retry.
 */
export type JobPhase = 'upcoming' | 'gate' | 'queued' | 'assigned' | 'on_agent' | 'stopping' | 'passed' | 'failed' | 'stopped' | 'not_run';

/** Every job state of the contract, classified (a state missing here fails `npm run typecheck`). */
export const JOB_STATE_PHASES: Readonly<Record<JobState, JobPhase>> = {
  pending: 'upcoming',
  waiting: 'upcoming',
  limiting: 'upcoming',
  limited: 'upcoming',
  blocked: 'gate',
  unblocked: 'gate',
  scheduled: 'queued',
  assigned: 'assigned',
  accepted: 'on_agent',
  running: 'on_agent',
  canceling: 'stopping',
  timing_out: 'stopping',
  passed: 'passed',
  failed: 'failed',
  timed_out: 'failed',
  expired: 'failed',
  canceled: 'stopped',
  broken: 'stopped',
  skipped: 'not_run',
  waiting_failed: 'not_run',
  blocked_failed: 'not_run',
  unblocked_failed: 'not_run',
};

export const JOB_STATES: JobState[] = keysOf(JOB_STATE_PHASES);

function jobStatesIn(...phases: JobPhase[]): JobState[] {
  return JOB_STATES.filter((s) => phases.includes(JOB_STATE_PHASES[s]));
}

const FINISHED_JOB_PHASES: JobPhase[] = ['passed', 'failed', 'stopped', 'not_run'];

/** Job states a job is created in: planned from the steps (or uploaded), and a retry's copy. */
export const INITIAL_JOB_STATES: readonly JobState[] = ['scheduled', 'limited', 'waiting', 'blocked', 'broken'];

/**
 * Job states the service never sets (the contract's, for the real service's pending jobs, its
 * concurrency check before `limited`, and its unblock of a failed block step): classified, never
 * reached.
 */
export const UNREACHABLE_JOB_STATES: readonly JobState[] = ['pending', 'limiting', 'unblocked_failed'];

/** Who performs an event. */
export type Actor = 'agent' | 'sweeper' | 'user' | 'machine' | 'trigger' | 'cancel' | 'concurrency';

/** One row of a transition table: `event` moves a row in one of `from` to `to`, when `guard` holds. */
export interface TransitionRow<S extends string, E extends string> {
  event: E;
  from: readonly S[];
  /** Null: the state stays (a retry marks the job retried and schedules a copy of it). */
  to: S | null;
  by: Actor;
  guard?: string;
}

export type RetryEvent = 'retry' | 'retry_passed' | 'retry_bulk' | 'retry_automatic';
export type JobEvent =
  | RetryEvent
  | 'assign'
  | 'release'
  | 'accept'
  | 'start'
  | 'finish_passed'
  | 'finish_failed'
  | 'finish_timed_out'
  | 'finish_canceled'
  | 'abandon'
  | 'time_out'
  | 'expire'
  | 'unblock'
  | 'cancel'
  | 'stop'
  | 'skip'
  | 'schedule'
  | 'limit'
  | 'admit'
  | 'cancel_failing'
  | 'stop_failing'
  | 'force_cancel'
  | 'pass_wait'
  | 'block'
  | 'fail_wait'
  | 'fail_block'
  | 'reopen'
  | 'start_trigger'
  | 'trigger_passed'
  | 'trigger_failed'
  | 'trigger_skipped';

/** Jobs a cancel ends at once: those no agent has accepted. */
const CANCEL_AT_ONCE: JobState[] = jobStatesIn('upcoming', 'gate', 'queued', 'assigned');

/** The transitions of a job, every one the code performs. */
export const JOB_TRANSITIONS: readonly TransitionRow<JobState, JobEvent>[] = [
  // An agent's poll or acquire (src/builds/jobs/agent-work.ts, claim in src/builds/progress/service.ts).
  { event: 'assign', from: ['scheduled'], to: 'assigned', by: 'agent', guard: 'a command job no agent holds; the agent may take a job now' },
  { event: 'release', from: ['assigned'], to: 'scheduled', by: 'agent', guard: 'the agent disconnects before accepting it' },
  { event: 'accept', from: ['assigned'], to: 'accepted', by: 'agent', guard: 'the agent it was assigned to' },
  { event: 'start', from: ['accepted'], to: 'running', by: 'agent', guard: 'the agent holding it' },
  {
    event: 'finish_passed',
    from: ['running', 'timing_out'],
    to: 'passed',
    by: 'agent',
    guard: 'exit status 0 (a job that times out with 0 passes, as documented)',
  },
  { event: 'finish_failed', from: ['running'], to: 'failed', by: 'agent', guard: 'a non-zero exit status (-1: its agent was lost)' },
  {
    event: 'finish_timed_out',
    from: ['running', 'timing_out'],
    to: 'timed_out',
    by: 'agent',
    guard: 'a non-zero exit status, timing out or stopped by the agent for its timeout',
  },
  { event: 'finish_canceled', from: ['canceling'], to: 'canceled', by: 'agent', guard: 'being canceled, whatever the exit status' },
  // The sweeper (src/builds/jobs/sweeper.ts).
  { event: 'abandon', from: ['assigned', 'accepted'], to: 'expired', by: 'sweeper', guard: 'its agent went silent before starting it' },
  { event: 'time_out', from: ['running'], to: 'timing_out', by: 'sweeper', guard: 'running longer than its timeout_in_minutes' },
  { event: 'expire', from: ['scheduled'], to: 'expired', by: 'sweeper', guard: 'no agent holds it, scheduled longer than the expiry' },
  // Users (src/builds/jobs/service.ts, src/builds/service.ts) and automatic retries.
  { event: 'unblock', from: ['blocked'], to: 'unblocked', by: 'user', guard: 'a block step; its build is not canceling or canceled' },
  { event: 'retry', from: ['failed', 'timed_out', 'canceled'], to: null, by: 'user', guard: 'a command job not retried yet, its step allowing manual retries' },
  { event: 'retry_passed', from: ['passed'], to: null, by: 'user', guard: "the step's retry.manual.permit_on_passed" },
  { event: 'retry_bulk', from: ['failed', 'timed_out', 'canceled', 'expired'], to: null, by: 'user', guard: 'retry_failed_jobs: the states asked for' },
  { event: 'retry_automatic', from: ['failed', 'timed_out'], to: null, by: 'agent', guard: "a rule of the step's retry.automatic matches" },
  // A cancel or a skip of the job's build (src/builds/progress/cancellation.ts).
  { event: 'cancel', from: CANCEL_AT_ONCE, to: 'canceled', by: 'cancel', guard: 'its build is canceled' },
  { event: 'stop', from: jobStatesIn('on_agent'), to: 'canceling', by: 'cancel', guard: 'its build is canceled: its agent stops it' },
  { event: 'skip', from: [...CANCEL_AT_ONCE, 'accepted'], to: 'skipped', by: 'cancel', guard: 'its build is skipped by a newer build of the branch' },
  // `buildkite-agent step cancel` (src/builds/jobs/steps.ts): `cancel` and `stop` above for its step's jobs, or with --force this.
  {
    event: 'force_cancel',
    from: jobStatesIn('on_agent', 'stopping'),
    to: 'canceled',
    by: 'agent',
    guard: 'step cancel --force: not waiting for its agent to stop it',
  },
  // The build's state machine (src/builds/jobs/state.ts): a job reopened and moved on in one pass is one move.
  { event: 'schedule', from: ['waiting', 'waiting_failed'], to: 'scheduled', by: 'machine', guard: 'a command or trigger job whose steps before are done' },
  { event: 'limit', from: ['waiting', 'waiting_failed'], to: 'limited', by: 'machine', guard: 'as schedule, for a command job of a concurrency group' },
  { event: 'pass_wait', from: ['waiting', 'waiting_failed'], to: 'passed', by: 'machine', guard: 'a wait step whose steps before are done' },
  { event: 'block', from: ['waiting', 'blocked_failed'], to: 'blocked', by: 'machine', guard: 'a block step the build reached' },
  { event: 'fail_wait', from: ['waiting'], to: 'waiting_failed', by: 'machine', guard: 'behind a wait whose steps before failed' },
  { event: 'fail_block', from: ['waiting', 'blocked'], to: 'blocked_failed', by: 'machine', guard: 'a block step behind a failure' },
  { event: 'reopen', from: ['waiting_failed', 'blocked_failed'], to: 'waiting', by: 'machine', guard: 'the failure before it was retried' },
  {
    event: 'cancel_failing',
    // waiting_failed: reopened (its failure retried) and canceled in one pass.
    from: ['waiting', 'waiting_failed', 'limited', 'scheduled', 'assigned'],
    to: 'canceled',
    by: 'machine',
    guard: 'a command job whose step has cancel_on_build_failing, its build failing; no agent had accepted it',
  },
  { event: 'stop_failing', from: ['accepted', 'running'], to: 'canceling', by: 'machine', guard: 'as cancel_failing, on an agent: its agent stops it' },
  // Trigger steps, which the server runs itself (src/builds/progress/machine.ts).
  { event: 'start_trigger', from: ['scheduled'], to: 'running', by: 'trigger', guard: 'a trigger job' },
  { event: 'trigger_passed', from: ['running'], to: 'passed', by: 'trigger', guard: 'async: its build was created; else its build passed' },
  { event: 'trigger_failed', from: ['running'], to: 'failed', by: 'trigger', guard: 'its build could not be created, or did not pass' },
  {
    event: 'trigger_skipped',
    from: ['running'],
    to: 'skipped',
    by: 'trigger',
    guard: 'its build was skipped or canceled by a newer build of its branch (the trigger step page: the step is marked skipped)',
  },
  // Concurrency groups (src/builds/jobs/concurrency.ts, admitted by src/builds/progress/service.ts).
  {
    event: 'admit',
    from: ['limited'],
    to: 'scheduled',
    by: 'concurrency',
    guard: 'its concurrency group has room for it (its limit, and with the ordered method the jobs ahead of it)',
  },
];

/*
 * Builds.
 */

/**
 * What a build's state says of it: `upcoming` (nothing ran yet), `running` (failing included),
 * `stopping` (agents are stopping its canceled jobs), and the finished ones: `passed`, `blocked`
 * (passed up to a block step), `failed`, `canceled`, `not_run` (skipped by a newer build, or
 * nothing to run).
 */
export type BuildPhase = 'upcoming' | 'running' | 'stopping' | 'passed' | 'blocked' | 'failed' | 'canceled' | 'not_run';

/** Every build state of the contract, classified, in the order lists show them (a state missing here fails `npm run typecheck`). */
export const BUILD_STATE_PHASES: Readonly<Record<BuildState, BuildPhase>> = {
  running: 'running',
  scheduled: 'upcoming',
  passed: 'passed',
  failing: 'running',
  failed: 'failed',
  blocked: 'blocked',
  canceling: 'stopping',
  canceled: 'canceled',
  skipped: 'not_run',
  not_run: 'not_run',
  creating: 'upcoming',
};

export const BUILD_STATES: BuildState[] = keysOf(BUILD_STATE_PHASES);

function buildStatesIn(...phases: BuildPhase[]): BuildState[] {
  return BUILD_STATES.filter((s) => phases.includes(BUILD_STATE_PHASES[s]));
}

/** Build states a build is created in: scheduled, or not_run when every step was filtered out. */
export const INITIAL_BUILD_STATES: readonly BuildState[] = ['scheduled', 'not_run'];

/** Build states the service never sets (`blocked` is a flag on a passed build here; no build is `creating`). */
export const UNREACHABLE_BUILD_STATES: readonly BuildState[] = ['creating', 'blocked'];

export type BuildEvent = 'cancel' | 'end_cancel' | 'cancel_branch' | 'supersede' | 'skip' | 'still_canceling' | 'reopen' | MachineBuildEvent;
export type MachineBuildEvent = 'wait' | 'run' | 'fail_fast' | 'pass' | 'fail';

/** Build states the state machine no longer moves: a cancel or a skip decided them. */
export const SETTLED_BUILD_STATES: readonly BuildState[] = buildStatesIn('canceled', 'not_run');

/** What the state machine recomputes a build from: every state but the settled ones and `canceling` (which only ends). */
const MACHINE_BUILD_STATES: BuildState[] = BUILD_STATES.filter((s) => !SETTLED_BUILD_STATES.includes(s) && s !== 'canceling');

/** The state machine's targets, by event. */
const MACHINE_BUILD_TARGETS: Record<MachineBuildEvent, BuildState> = {
  wait: 'scheduled',
  run: 'running',
  fail_fast: 'failing',
  pass: 'passed',
  fail: 'failed',
};

const CANCELABLE: BuildState[] = buildStatesIn('upcoming', 'running').filter((s) => s !== 'creating');
/** States a build a block step holds shows (its `blocked_state`) that an event may only move while it is blocked. */
export const BLOCKED_ONLY_BUILD_STATES: readonly BuildState[] = ['passed', 'failed'];

/** The transitions of a build, every one the code performs. */
export const BUILD_TRANSITIONS: readonly TransitionRow<BuildState, BuildEvent>[] = [
  { event: 'cancel', from: CANCELABLE, to: 'canceling', by: 'user', guard: 'the API, the web page, or a forced stop of the agent running one of its jobs' },
  { event: 'end_cancel', from: ['canceling'], to: 'canceled', by: 'cancel', guard: 'no agent is still stopping one of its jobs' },
  { event: 'cancel_branch', from: CANCELABLE, to: 'canceled', by: 'cancel', guard: 'its branch was deleted' },
  {
    event: 'supersede',
    from: ['running', 'failing', ...BLOCKED_ONLY_BUILD_STATES],
    to: 'canceled',
    by: 'cancel',
    guard:
      "a newer build of the branch is created or first starts, the pipeline's cancel_running_branch_builds; a passed or failed one only while blocked (the docs: started, failing and blocked builds)",
  },
  { event: 'skip', from: ['scheduled'], to: 'skipped', by: 'cancel', guard: "a newer build of the branch, the pipeline's skip_queued_branch_builds" },
  { event: 'still_canceling', from: ['canceled'], to: 'canceling', by: 'cancel', guard: 'canceled with jobs an agent is still stopping' },
  { event: 'reopen', from: ['canceled'], to: 'running', by: 'user', guard: 'a job of it was retried' },
  ...keysOf(MACHINE_BUILD_TARGETS).map((event) => ({
    event,
    from: MACHINE_BUILD_STATES.filter((s) => s !== MACHINE_BUILD_TARGETS[event]),
    to: MACHINE_BUILD_TARGETS[event],
    by: 'machine' as const,
    guard: 'the state machine (src/builds/jobs/state.ts) decides it from the jobs',
  })),
];

/*
 * Transitions by event: what a compare-and-set write needs.
 */

export interface Transition<S extends string> {
  from: readonly S[];
  to: S | null;
}

/** The job transition `event`; with `only`, narrowed to that state (no `from` at all when the table has no such row). */
export function jobTransition(event: Exclude<JobEvent, RetryEvent>, only?: JobState): { from: readonly JobState[]; to: JobState } {
  return withTarget(rowOf(JOB_TRANSITIONS, event, only), event);
}

/** The job states a retry event starts from (the job keeps its state: it is marked retried). */
export function retryFrom(event: RetryEvent, only?: JobState): readonly JobState[] {
  return rowOf(JOB_TRANSITIONS, event, only).from;
}

/** The build transition `event`. */
export function buildTransition(event: BuildEvent): { from: readonly BuildState[]; to: BuildState } {
  return withTarget(rowOf(BUILD_TRANSITIONS, event), event);
}

/** A transition that lands on a state (every one but a retry, which keeps the job's state). */
function withTarget<S extends string>(t: Transition<S>, event: string): { from: readonly S[]; to: S } {
  if (t.to === null) throw new Error(`The transition ${event} lands on no state`);
  return { from: t.from, to: t.to };
}

function isRetryEvent(event: JobEvent): event is RetryEvent {
  return event === 'retry' || event === 'retry_passed' || event === 'retry_bulk' || event === 'retry_automatic';
}

function rowOf<S extends string, E extends string>(table: readonly TransitionRow<S, E>[], event: E, only?: S): Transition<S> {
  const row = table.find((r) => r.event === event);
  if (!row) throw new Error(`No transition ${event}`);
  return { from: only === undefined ? row.from : row.from.filter((s) => s === only), to: row.to };
}

/** The state machine's event for a job move it decided, by the state the job lands on. */
export function machineJobEvent(to: JobState): Exclude<JobEvent, RetryEvent> {
  const row = JOB_TRANSITIONS.find((r) => r.by === 'machine' && r.to === to);
  if (!row || isRetryEvent(row.event)) throw new Error(`The state machine has no move to ${to}`);
  return row.event;
}

/** The state machine's event for a build state it decided (canceling builds end canceled). */
export function machineBuildEvent(to: BuildState): BuildEvent {
  if (to === 'canceled') return 'end_cancel';
  const event = keysOf(MACHINE_BUILD_TARGETS).find((e) => MACHINE_BUILD_TARGETS[e] === to);
  if (!event) throw new Error(`The state machine never sets ${to}`);
  return event;
}

/** How a job an agent finishes ends, by event: each names one end state. */
const FINISH_EVENTS = ['finish_passed', 'finish_failed', 'finish_timed_out', 'finish_canceled'] as const;
export type FinishEvent = (typeof FINISH_EVENTS)[number];

/**
 * What a finish makes of a job in `from`: the one finish the table allows from there (a job being
 * canceled ends `canceled`, whatever the exit status); otherwise the outcome decides: exit status 0
 * passes, a job that times out with 0 too (command_step.md: "A job that times out with an exit
 * status of 0 is marked as passed"); any other status ends a job timing out, or one the agent
 * stopped for its own timeout (`signal_reason: timeout`), `timed_out`, and fails the rest. Null:
 * the job can't be finished from `from`.
 */
export function finishEvent(from: JobState, exitStatus: number, signalReason: string | null): FinishEvent | null {
  const allowed = FINISH_EVENTS.filter((e) => jobTransition(e).from.includes(from));
  if (allowed.length <= 1) return allowed[0] ?? null;
  const timedOut = from === 'timing_out' || signalReason === 'timeout';
  const outcome: JobState = exitStatus === 0 ? 'passed' : timedOut ? 'timed_out' : 'failed';
  return allowed.find((e) => jobTransition(e).to === outcome) ?? null;
}

/*
 * The named groups of states.
 */

/** Job states from which nothing more happens (but a retry). */
export const TERMINAL_JOB_STATES: readonly JobState[] = jobStatesIn(...FINISHED_JOB_PHASES);
/**
 * Job states that keep a build going: waiting for an agent, or on one. Also what the metrics
 * count by queue, and the jobs that hold a concurrency group's slot.
 */
export const ACTIVE_JOB_STATES: readonly JobState[] = jobStatesIn('queued', 'assigned', 'on_agent', 'stopping');
/** Job states in which a job belongs to its agent. */
export const HELD_JOB_STATES: readonly JobState[] = jobStatesIn('assigned', 'on_agent', 'stopping');
/** Job states in which an agent is stopping the job (a cancel, a timeout): its build is not done until they end. */
export const STOPPING_JOB_STATES: readonly JobState[] = jobStatesIn('stopping');
/** Job states in which the agent runs (or stops) the job's command: logs, annotations, meta-data. */
export const RUNNING_ON_AGENT_JOB_STATES: readonly JobState[] = jobStatesIn('on_agent', 'stopping');
/** Job states that are not final: what a cancel or a skip of the build moves along. */
export const UNFINISHED_JOB_STATES: readonly JobState[] = jobTransition('skip').from;
/**
 * The states of a pending step's job, which `pipeline upload --replace` removes (the docs: "removes
 * all pending steps ... jobs that are already running ... and jobs that have already completed are
 * not affected"): waiting on steps before it, on a concurrency limit, on a block, or on an agent.
 */
export const REPLACEABLE_JOB_STATES: readonly JobState[] = [...jobStatesIn('upcoming', 'queued'), 'blocked'];
/** Job states of a job that will be scheduled once what it waits for is done: an acquire waits (423). */
export const NOT_YET_RUNNABLE_JOB_STATES: readonly JobState[] = jobStatesIn('upcoming', 'gate');
/** Job states the web pages show as still going (a block step's own aside): spinner, live log. */
export const LIVE_JOB_STATES: readonly JobState[] = jobStatesIn('upcoming', 'queued', 'assigned', 'on_agent', 'stopping');
/** Job states a job can be reprioritized in: until it finishes (or its agent is stopping it). */
export const REPRIORITIZABLE_JOB_STATES: readonly JobState[] = [...UNFINISHED_JOB_STATES, 'running'];
/** Job states a manual retry starts from (`passed` too when the step permits it: `retry_passed`). */
export const RETRYABLE_JOB_STATES: readonly JobState[] = retryFrom('retry');
/** Job states an automatic retry starts from. */
export const AUTO_RETRYABLE_JOB_STATES: readonly JobState[] = retryFrom('retry_automatic');
/** Job states a bulk retry (`retry_failed_jobs`) starts from. */
export const BULK_RETRYABLE_JOB_STATES: readonly JobState[] = retryFrom('retry_bulk');
/** Job states that fail their build (unless soft-failed). */
export const FAILING_JOB_STATES: readonly JobState[] = jobStatesIn('failed');
/** Job states of a job that ran, or was to run, and did not pass: failed, or stopped. */
export const UNSUCCESSFUL_JOB_STATES: readonly JobState[] = jobStatesIn('failed', 'stopped');
/** Job states of a job that ended with a result: passed, failed or stopped (not the ones that never ran). */
export const CONCLUDED_JOB_STATES: readonly JobState[] = jobStatesIn('passed', 'failed', 'stopped');

/** Build states a build can be canceled from. */
export const CANCELABLE_BUILD_STATES: readonly BuildState[] = buildTransition('cancel').from;
/** Build states of a build canceled, or being canceled: its jobs are not retried or unblocked. */
export const CANCELED_BUILD_STATES: readonly BuildState[] = buildStatesIn('stopping', 'canceled');
/** Build states the `finished` filter names. */
export const FINISHED_BUILD_STATES: readonly BuildState[] = buildStatesIn('passed', 'blocked', 'failed', 'canceled');
/** Build states of a finished build with a result (passed, failed, canceled): a fixed build is one that passed after one that failed. */
export const CONCLUDED_BUILD_STATES: readonly BuildState[] = buildStatesIn('passed', 'failed', 'canceled');
/** Build states after which a synchronous trigger job waiting on the build ends. */
export const ENDED_BUILD_STATES: readonly BuildState[] = buildStatesIn('passed', 'failed', 'canceled', 'not_run');
/** Build states the state machine may still move: not finished. */
export const UNFINISHED_BUILD_STATES: readonly BuildState[] = buildStatesIn('upcoming', 'running', 'stopping');
/**
 * Job states that move on without the build's state machine: an agent's (queued, assigned, on
 * it, stopping), a person's (a block step), or a concurrency group's (`limited`: the sweeper
 * admits them too). A build with none of these left is moved on only by
 * its machine: if it is unfinished, the machine did not run after its last job ended.
 */
export const SELF_MOVING_JOB_STATES: readonly JobState[] = [...jobStatesIn('queued', 'assigned', 'on_agent', 'stopping', 'gate'), 'limited'];
/** Build states of a build that did not succeed. */
export const UNSUCCESSFUL_BUILD_STATES: readonly BuildState[] = buildStatesIn('failed', 'canceled');
