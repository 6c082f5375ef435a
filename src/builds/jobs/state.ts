/**
 * The build's state machine, as one pure function of its jobs: after any job event, `advance`
 * says which jobs move (waiting jobs behind a passed wait become scheduled, a wait whose steps
 * before failed stops the rest, a block step that is reached becomes blocked) and what the
 * build's state and timestamps become. Recomputing from the jobs, rather than patching on each
 * event, makes it idempotent: applying it twice changes nothing.
 */
import type { Build, BuildState, JobState, JobStateCounts } from '../model';
import type { Job } from './model';
import type { BlockedState, StepDependency } from '../../pipelines/configuration';
import { concurrencyOf } from './concurrency';
import { promisedHardFailure } from './retry';
import {
  ACTIVE_JOB_STATES,
  FAILING_JOB_STATES,
  JOB_STATE_PHASES,
  jobTransition,
  machineJobEvent,
  RUNNING_ON_AGENT_JOB_STATES,
  SETTLED_BUILD_STATES,
  TERMINAL_JOB_STATES,
  type JobEvent,
  type RetryEvent,
} from '../states';

export interface JobMove {
  id: string;
  /** The row of the transition table (src/builds/states.ts) the move is, by the state it lands on. */
  event: Exclude<JobEvent, RetryEvent>;
  from: JobState;
  to: JobState;
  fields: Record<string, unknown>;
}

export interface BuildMove {
  state: BuildState;
  blocked: boolean;
  startedAt: Date | null;
  failingAt: Date | null;
  finishedAt: Date | null;
}

/**
 * A hard failure fails the build; a soft-failed job does not; a job still on its agent that
 * promised a hard failure (`job promise-failure`) does already, as the docs say. So does a job
 * canceled in a build that is not (`step cancel`, `cancel_on_build_failing`): the docs' step
 * outcome calls a cancelation `errored`, and a canceled build's jobs never reach this.
 */
export function failsBuild(j: Pick<Job, 'state' | 'softFailed' | 'step' | 'automaticRetries' | 'promisedExitStatus'>): boolean {
  if (j.state === 'canceled') return true;
  if (RUNNING_ON_AGENT_JOB_STATES.includes(j.state) && promisedHardFailure(j.step, j.automaticRetries, j.promisedExitStatus)) return true;
  return FAILING_JOB_STATES.includes(j.state) && !j.softFailed;
}

/**
 * Whether a job is one of `states`, as the real API's job state filters match (`job_states[]` of a
 * build, `state[]` of a build's jobs): by its state. The docs' "a finished waiter job always
 * matches passed rather than failed" is the real API deriving passed and failed from a finished
 * job's exit status, which a waiter lacks; a waiter here that finished is `passed`, and one that
 * ended `waiting_failed`, `broken` or `canceled` (never "finished" there) matches only that state.
 *
 * With `promisedAsFailed` (the Jobs API's `state[]`, as its page documents), a running command job
 * that promised a hard failure (`job promise-failure`) matches `failed` and not `running`, so the
 * two filters stay apart; its `state` still reads `running`. The build's `job_states[]` is
 * documented without it and matches by state alone.
 */
export function jobInStates(
  j: Pick<Job, 'type' | 'state' | 'step' | 'automaticRetries' | 'promisedExitStatus'>,
  states: ReadonlySet<JobState>,
  opts: { promisedAsFailed?: boolean } = {},
): boolean {
  if (opts.promisedAsFailed && j.type === 'script' && j.state === 'running' && promisedHardFailure(j.step, j.automaticRetries, j.promisedExitStatus)) {
    return states.has('failed');
  }
  return states.has(j.state);
}

/** How many of `jobs` are in each state (a build's `job_state_counts.states`). */
export function countJobStates(jobs: readonly Pick<Job, 'state'>[]): JobStateCounts {
  const states: JobStateCounts = {};
  for (const j of jobs) states[j.state] = (states[j.state] ?? 0) + 1;
  return states;
}

/**
 * A build's jobs narrowed to those `keep` accepts (`job_states[]`, `include_paused=false`), with
 * `jobStateCounts` still counting them all, as the real API's `job_state_counts` does.
 */
export function withJobsOnly<T extends { jobs: Job[]; jobStateCounts?: JobStateCounts }>(item: T, keep: (j: Job) => boolean): T {
  return { ...item, jobStateCounts: item.jobStateCounts ?? countJobStates(item.jobs), jobs: item.jobs.filter(keep) };
}

/** The steps `roots` (by id), with every step they uploaded (`pipeline upload`), and every step those uploaded, and so on. */
export function uploadFamily(jobs: readonly Pick<Job, 'stepId' | 'uploadedByStepId'>[], roots: Iterable<string>): Set<string> {
  const family = new Set(roots);
  for (let grew = true; grew;) {
    grew = false;
    for (const j of jobs) {
      if (j.uploadedByStepId !== null && family.has(j.uploadedByStepId) && !family.has(j.stepId)) {
        family.add(j.stepId);
        grew = true;
      }
    }
  }
  return family;
}

/** The jobs a key names, and the steps among theirs that were uploaded by the steps it names. */
interface Named {
  jobs: Job[];
  uploaded: ReadonlySet<string>;
}

/**
 * The jobs each key names: a step's, and a group's (its jobs but its waits),
 * with every job the steps of those jobs uploaded, and so on (the docs: "if step B depends on
 * step A, and step A uploads step C, then step B will also depend on step C").
 */
function jobsByKey(jobs: readonly Job[]): Map<string, Named> {
  const direct = new Map<string, Job[]>();
  const add = (key: string, j: Job) => direct.set(key, [...(direct.get(key) ?? []), j]);
  for (const j of jobs) {
    if (j.stepKey !== null) add(j.stepKey, j);
    if (j.type !== 'waiter' && j.step.group_key !== undefined && j.step.group_key !== j.stepKey) add(j.step.group_key, j);
  }
  const uploads = jobs.some((j) => j.uploadedByStepId !== null);
  const byKey = new Map<string, Named>();
  for (const [key, named] of direct) {
    if (!uploads) {
      byKey.set(key, { jobs: named, uploaded: new Set() });
      continue;
    }
    const own = new Set(named.map((j) => j.stepId));
    const family = uploadFamily(jobs, own);
    byKey.set(key, { jobs: jobs.filter((j) => family.has(j.stepId)), uploaded: new Set([...family].filter((id) => !own.has(id))) });
  }
  return byKey;
}

/** Job states in which a job with `depends_on` still waits on them (or was stopped by them, and may be reopened). */
const DEPENDENT_STATES: readonly JobState[] = ['waiting', 'blocked', 'waiting_failed', 'blocked_failed'];

/** A job's `depends_on`, when its step has one. */
function explicitDependencies(j: Job): { steps: StepDependency[]; allowFailure: boolean } | null {
  const steps = j.step.depends_on;
  if (!steps) return null;
  return { steps, allowFailure: j.step.allow_dependency_failure === true };
}

/**
 * Whether a job with `depends_on` may run, as the docs' "Depends on" table says: each step it
 * names (a step's key, or a group's: all its jobs but its waits) has passed, soft-failed, was
 * unblocked, or did not run because its branch filter excluded it ("skipped"). A failure (or a
 * job held back by one) stops it unless allowed; a canceled job stops it even then; a key that
 * no job of the build has stops it too, and fails the build ("the build will fail without
 * running the step that is waiting for the dependency").
 */
function dependenciesVerdict(
  j: Job,
  dependencies: { steps: StepDependency[]; allowFailure: boolean },
  byKey: ReadonlyMap<string, Named>,
  states: ReadonlyMap<string, JobState>,
): 'ready' | 'wait' | 'failed' | 'missing' {
  let verdict: 'ready' | 'wait' = 'ready';
  for (const d of dependencies.steps) {
    const entry = byKey.get(d.step);
    // A step the named one uploaded waits for that one only, not for the other steps it uploaded.
    const named = (entry?.jobs ?? []).filter((t) => t.id !== j.id && !(entry?.uploaded.has(j.stepId) && entry.uploaded.has(t.stepId)));
    if (named.length === 0) return 'missing';
    for (const t of named) {
      const state = states.get(t.id)!;
      const phase = JOB_STATE_PHASES[state];
      if (state === 'canceled') return 'failed';
      if (phase === 'passed' || state === 'unblocked' || state === 'broken' || state === 'skipped') continue;
      if (phase === 'failed' || phase === 'not_run') {
        if (t.softFailed || d.allow_failure || dependencies.allowFailure) continue;
        return 'failed';
      }
      verdict = 'wait';
    }
  }
  return verdict;
}

/**
 * The state a blocked build shows, from the `blocked_state` of the block and input steps blocking
 * it (the docs' default `passed`): `failed` if one says so, else `running` if one does.
 */
function blockedStateOf(jobs: readonly Job[]): BlockedState {
  const states = new Set(jobs.filter((j) => j.state === 'blocked').map((j) => (j.step.type === 'manual' ? (j.step.blocked_state ?? 'passed') : 'passed')));
  return states.has('failed') ? 'failed' : states.has('running') ? 'running' : 'passed';
}

/** What the steps so far of one scope (the build's top level, or one group) say to the step after them. */
interface Scope {
  /** 'open': jobs may run; 'closed': behind something unfinished or a block step; 'failed': behind a wait that failed. */
  gate: 'open' | 'closed' | 'failed';
  allBeforeDone: boolean;
  failedBefore: boolean;
  /** A job before was canceled: no wait passes it, `continue_on_failure` or not (the docs' wait step page). */
  canceledBefore: boolean;
}

function openScope(gate: Scope['gate']): Scope {
  return { gate, allBeforeDone: true, failedBefore: false, canceledBefore: false };
}

/** A command or trigger job in `state`, as the steps after it in `scope` see it. */
function countBefore(scope: Scope, j: Job, state: JobState): void {
  if (!TERMINAL_JOB_STATES.includes(state)) scope.allBeforeDone = false;
  if (failsBuild({ ...j, state })) scope.failedBefore = true;
  if (state === 'canceled') scope.canceledBefore = true;
}

export function advance(
  build: Pick<Build, 'state' | 'blocked' | 'startedAt' | 'failingAt' | 'finishedAt'>,
  jobs: Job[],
  now: Date,
): { jobs: JobMove[]; build: BuildMove | null } {
  // A canceling build waits for the jobs its agents are stopping, then is canceled.
  if (build.state === 'canceling') {
    if (jobs.some((j) => ACTIVE_JOB_STATES.includes(j.state))) return { jobs: [], build: null };
    return { jobs: [], build: { state: 'canceled', blocked: false, startedAt: build.startedAt, failingAt: build.failingAt, finishedAt: now } };
  }
  if (SETTLED_BUILD_STATES.includes(build.state)) return { jobs: [], build: null };
  const states = new Map(jobs.map((j) => [j.id, j.state]));
  // One move per job, from its stored state: a job reopened and then moved on in the same pass
  // (waiting_failed -> waiting -> scheduled) is one guarded UPDATE.
  const byId = new Map<string, JobMove>();
  /** How many moves changed a job's state: a pass that adds none is the last. */
  let moved = 0;
  const move = (j: Job, to: JobState, fields: Record<string, unknown> = {}) => {
    if (states.get(j.id) !== to) moved++;
    const m = byId.get(j.id);
    if (m) Object.assign(m, { event: machineJobEvent(to), to, fields: { ...m.fields, ...fields } });
    else byId.set(j.id, { id: j.id, event: machineJobEvent(to), from: j.state, to, fields });
    states.set(j.id, to);
  };
  /**
   * A wait or a block step that failed because of a job before it, and the jobs it held back,
   * open again when that failure is gone (the failed job was retried): the build goes on, as it
   * does on the real service, instead of passing with its later steps never run.
   */
  const reopen = (j: Job) => {
    const s = states.get(j.id);
    if (s === 'waiting_failed' || s === 'blocked_failed') move(j, 'waiting', { finished_at: null });
  };
  const byKey = jobsByKey(jobs);
  const ordered = [...jobs].sort((a, b) => a.position - b.position);
  let missingDependency = false;
  /**
   * One pass over the jobs in their order. A job with `depends_on` may name a later one, which
   * this pass moves after it: passes run until one moves nothing (at most one per job).
   */
  const pass = () => {
    const top = openScope('open');
    /** Each group's own scope (by `group_id`), entered behind the barriers written before it. */
    const groups = new Map<string, Scope>();
    missingDependency = false;
    for (const j of ordered) {
      let scope = top;
      if (j.groupId !== null) {
        scope = groups.get(j.groupId) ?? openScope(top.gate);
        groups.set(j.groupId, scope);
      }
      visit(j, scope);
      // A group's steps count for the steps written after the group too: a wait there waits for
      // all of them, a block step among them not yet unblocked included.
      if (scope !== top) {
        const state = states.get(j.id)!;
        if (j.type === 'manual') {
          const input = j.step.type === 'manual' && j.step.input === true;
          if (!input && state !== 'unblocked' && !TERMINAL_JOB_STATES.includes(state)) top.allBeforeDone = false;
        } else if (j.type !== 'waiter') countBefore(top, j, state);
      }
    }
  };
  /** One job in its scope: what it moves to, and what it tells the scope's steps after it. */
  const visit = (j: Job, scope: Scope) => {
    const state = () => states.get(j.id)!;
    // A wait step whose condition was false is no barrier.
    if (j.type === 'waiter' && state() === 'broken') return;
    if (j.type === 'waiter') {
      // A wait with `depends_on` also waits for those steps once it is reached; one of them
      // failing fails it, as a failure before it does (unless allowed).
      const waitsOn = explicitDependencies(j);
      const reached = scope.gate === 'open' && scope.allBeforeDone;
      const verdict = reached && waitsOn && DEPENDENT_STATES.includes(state()) ? dependenciesVerdict(j, waitsOn, byKey, states) : 'ready';
      if (verdict === 'missing') missingDependency = true;
      const dependencyFailed = verdict === 'failed' || verdict === 'missing';
      if (scope.gate === 'open') {
        if (!scope.allBeforeDone || verdict === 'wait') {
          reopen(j);
          scope.gate = 'closed';
        } else if (dependencyFailed || scope.canceledBefore || (scope.failedBefore && !(j.step.type === 'waiter' && j.step.continue_on_failure))) {
          if (state() === 'waiting') move(j, 'waiting_failed', { finished_at: now });
          scope.gate = 'failed';
        } else {
          reopen(j);
          if (state() === 'waiting') move(j, 'passed', { finished_at: now });
        }
      } else if (scope.gate === 'failed') {
        if (state() === 'waiting') move(j, 'waiting_failed', { finished_at: now });
      } else reopen(j);
      return;
    }
    const dependencies = explicitDependencies(j);
    // An input step depends on none of the steps around it, and none depends on it, unless
    // named in a `depends_on` (documented): it blocks at once, or once those steps are done.
    const input = j.step.type === 'manual' && j.step.input === true;
    if (input && !dependencies) {
      if (state() === 'waiting') move(j, 'blocked');
      return;
    }
    if (j.type === 'manual' && dependencies) {
      // A block step with `depends_on` blocks once those steps are done, whatever is before it;
      // the steps after it still wait for it to be unblocked.
      const verdict = DEPENDENT_STATES.includes(state()) ? dependenciesVerdict(j, dependencies, byKey, states) : null;
      if (verdict === 'missing') missingDependency = true;
      if (verdict === 'failed' || verdict === 'missing') {
        if (state() === 'waiting' || state() === 'blocked') move(j, 'blocked_failed', { finished_at: now });
      } else if (verdict !== null) {
        reopen(j);
        if (verdict === 'ready' && state() === 'waiting') move(j, 'blocked');
      }
      const through = state() === 'unblocked' || state() === 'broken' || JOB_STATE_PHASES[state()] === 'passed';
      if (scope.gate === 'open' && !through && !input) scope.gate = state() === 'blocked_failed' ? 'failed' : 'closed';
      return;
    }
    if (j.type === 'manual') {
      if (scope.gate === 'failed' || (scope.gate === 'open' && scope.allBeforeDone && scope.failedBefore)) {
        if (state() === 'waiting' || state() === 'blocked') move(j, 'blocked_failed', { finished_at: now });
        scope.gate = 'failed';
      } else {
        reopen(j);
        if (scope.gate === 'open') {
          if (!scope.allBeforeDone) scope.gate = 'closed';
          else if (state() === 'waiting') {
            move(j, 'blocked');
            scope.gate = 'closed';
          } else if (state() === 'blocked') scope.gate = 'closed';
        }
      }
      return;
    }
    // A step with `depends_on` waits for the steps it names, not for the gate (wait and block steps).
    const verdict = !dependencies
      ? scope.gate === 'failed'
        ? 'failed'
        : scope.gate === 'open'
          ? 'ready'
          : 'wait'
      : DEPENDENT_STATES.includes(state())
        ? dependenciesVerdict(j, dependencies, byKey, states)
        : null;
    if (verdict === 'missing') missingDependency = true;
    if (verdict === 'failed' || verdict === 'missing') {
      if (state() === 'waiting') move(j, 'waiting_failed', { finished_at: now });
    } else if (verdict !== null) {
      reopen(j);
      // A job of a concurrency group waits for the group's room (./concurrency.ts).
      if (verdict === 'ready' && state() === 'waiting') {
        // Scheduled now, runnable once its group admits it (concurrency_wait_time_ms is the difference).
        if (concurrencyOf(j.step)) move(j, 'limited', { scheduled_at: now });
        else move(j, 'scheduled', { scheduled_at: now, runnable_at: now });
      }
    }
    countBefore(scope, j, state());
  };
  for (let n = 0; n <= ordered.length; n++) {
    const before = moved;
    pass();
    if (moved === before) break;
  }
  // Documented (cancel_on_build_failing): once the build is failing, such a step's jobs are
  // canceled, those on an agent stopped by it; the build fails once they have ended.
  if (missingDependency || jobs.some((j) => failsBuild({ ...j, state: states.get(j.id)! }))) {
    for (const j of ordered) {
      if (j.step.type !== 'script' || !j.step.cancel_on_build_failing) continue;
      // A job that promised the failure runs on (documented): its siblings are canceled, not it.
      if (promisedHardFailure(j.step, j.automaticRetries, j.promisedExitStatus)) continue;
      const state = states.get(j.id)!;
      // One held back by a failure (waiting_failed) has ended already: it stays so.
      if (state !== 'waiting_failed' && jobTransition('cancel_failing').from.includes(state)) move(j, 'canceled', { finished_at: now });
      else if (jobTransition('stop_failing').from.includes(state)) move(j, 'canceling');
    }
  }

  const current = jobs.map((j) => ({ ...j, state: states.get(j.id)! }));
  // A limited job keeps its build going as a scheduled one does: its group admits it.
  const active = current.some((j) => ACTIVE_JOB_STATES.includes(j.state) || j.state === 'limited');
  const blocked = current.some((j) => j.type === 'manual' && j.state === 'blocked');
  // Steps whose dependencies can never be done (one behind a wait that waits for them): nothing
  // is running and no block step waits for someone, yet they wait. The build fails, as for a
  // dependency no step has, rather than stay scheduled or running for ever.
  const stuck = !active && !blocked && current.some((j) => j.state === 'waiting' && explicitDependencies(j) !== null);
  const failed = current.some(failsBuild) || missingDependency || stuck;
  const started = current.map((j) => j.startedAt).filter((d): d is Date => d !== null);
  const startedAt = build.startedAt ?? (started.length ? new Date(Math.min(...started.map((d) => d.getTime()))) : null);
  let next: BuildMove;
  // What the block steps holding it say it shows meanwhile (their `blocked_state`): passed by default.
  const held = blocked && !failed ? blockedStateOf(current) : 'passed';
  if (!active && held === 'running') {
    next = { state: 'running', blocked, startedAt, failingAt: build.failingAt, finishedAt: null };
  } else if (!active && (startedAt || blocked || failed || current.every((j) => TERMINAL_JOB_STATES.includes(j.state)))) {
    // Nothing can move without someone: the build is over (or waits, finished, on a block step).
    next = { state: failed || held === 'failed' ? 'failed' : 'passed', blocked, startedAt, failingAt: build.failingAt, finishedAt: build.finishedAt ?? now };
  } else {
    const state: BuildState = failed ? 'failing' : startedAt ? 'running' : 'scheduled';
    // The docs: once set, failing_at is not cleared, even if a later retry passes.
    next = { state, blocked, startedAt, failingAt: failed ? (build.failingAt ?? now) : build.failingAt, finishedAt: null };
  }
  // A build that only reaches a block step before any job ran stays as created.
  if (!startedAt && !failed && blocked && !current.some((j) => j.type !== 'manual' && TERMINAL_JOB_STATES.includes(j.state) && j.state !== 'broken')) {
    next = { state: build.state, blocked, startedAt: null, failingAt: null, finishedAt: null };
  }
  const same =
    next.state === build.state &&
    next.blocked === build.blocked &&
    next.startedAt?.getTime() === build.startedAt?.getTime() &&
    next.failingAt?.getTime() === build.failingAt?.getTime() &&
    next.finishedAt?.getTime() === build.finishedAt?.getTime();
  return { jobs: [...byId.values()].filter((m) => m.to !== m.from), build: same ? null : next };
}
