/**
 * The rules of what is told to whom, with no I/O: which webhook event a recorded transition is,
 * and whether a notification service hears of an event (its events, its scope, its branch
 * filter). The delivery service (./service.ts) applies them when it fans an event out.
 */
import { matchesBranchFilter } from '../pipelines/branch-filter';
import type { EventName } from './events';
import type { Transition } from './repository';

const FINISHED_BUILD = ['passed', 'failed', 'canceled', 'not_run', 'blocked'];
const FINISHED_JOB = ['passed', 'failed', 'canceled', 'timed_out', 'expired'];

/**
 * The event a transition is, or null when it is none the documentation names. Builds: a build
 * that waits on a block step is `passed` with `blocked` set, and is finished (build.finished),
 * as the real service tells it; unblocked it runs again (build.running). Jobs: command jobs are
 * scheduled, started and finished; a block step's job is activated when it is unblocked.
 * Agents: each connection state the documentation names.
 */
export function eventOf(t: Transition): EventName | null {
  // An event that is no state change was recorded by name (a job's promised exit status).
  if (t.event !== null) return t.event;
  if (t.kind === 'build') {
    if (t.fromState === t.toState) return null;
    if (t.toState === 'scheduled') return 'build.scheduled';
    if (t.toState === 'running') return 'build.running';
    if (t.toState === 'failing') return 'build.failing';
    if (t.toState === 'skipped') return 'build.skipped';
    if (FINISHED_BUILD.includes(t.toState)) return 'build.finished';
    return null;
  }
  if (t.kind === 'job') {
    if (t.subjectType === 'manual') return t.toState === 'unblocked' ? 'job.activated' : null;
    // The docs' job events: a trigger step's job tells its end (its `async` says how it waited).
    if (t.subjectType === 'trigger') return FINISHED_JOB.includes(t.toState) ? 'job.finished' : null;
    if (t.subjectType !== 'script') return null;
    if (t.toState === 'scheduled') return 'job.scheduled';
    if (t.toState === 'running') return 'job.started';
    if (FINISHED_JOB.includes(t.toState)) return 'job.finished';
    return null;
  }
  const agentEvents: Record<string, EventName> = {
    connected: 'agent.connected',
    lost: 'agent.lost',
    disconnected: 'agent.disconnected',
    stopping: 'agent.stopping',
    stopped: 'agent.stopped',
  };
  return agentEvents[t.toState] ?? null;
}

/** Where an event happened, as a service's scope and branch filter read it. */
export interface EventPlace {
  pipelineId: string | null;
  /** The pipeline's cluster, and the teams that reach the pipeline. */
  clusterId: string | null;
  teamIds: string[];
  branch: string | null;
}

/** What of a notification service decides whether it hears of an event. */
export interface ServiceFilter {
  scope: string;
  scopeUuids: string[];
  branchConfiguration: string | null;
}

/**
 * A service hears of events in its scope: `all`, or the pipelines (`some_projects`), teams
 * (`some_teams`) or clusters (`some_clusters`) it names
 * (agent events, which belong to no pipeline, only reach `all` and the agent's cluster); and
 * of builds and jobs only on branches its `branch_configuration` matches.
 */
export function inScope(s: ServiceFilter, place: EventPlace): boolean {
  const ids = new Set(s.scopeUuids);
  const scoped =
    s.scope === 'all' ||
    (s.scope === 'some_projects' && place.pipelineId !== null && ids.has(place.pipelineId)) ||
    (s.scope === 'some_teams' && place.teamIds.some((t) => ids.has(t))) ||
    (s.scope === 'some_clusters' && place.clusterId !== null && ids.has(place.clusterId));
  if (!scoped) return false;
  if (place.branch === null || !s.branchConfiguration) return true;
  return matchesBranchFilter(s.branchConfiguration, place.branch);
}

/** Back-off before attempt `n + 1` after `n` failed ones: doubling from `baseMs`, capped at `capMs`, with up to 10% jitter. */
export function backoffMs(n: number, baseMs: number, capMs: number, random: () => number = Math.random): number {
  const d = Math.min(capMs, baseMs * 2 ** Math.max(0, n - 1));
  return Math.round(d * (1 + 0.1 * random()));
}
