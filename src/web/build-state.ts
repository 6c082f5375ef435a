/**
 * The build page's state as its script (src/web/assets/build.js) reads it: the build's and each
 * job's state, times, badge and agent. One shape for both ways the page hears of changes, so they
 * cannot drift apart: the live stream (src/web/live.ts) sends each piece as a `build` or `job`
 * event, and the fallback poll (`/state`, src/web/pages/builds.ts) answers all of them at once.
 */
import type { Agent } from '../agents/repository';
import type { AgentService } from '../agents/service';
import type { Build } from '../builds/model';
import type { Job } from '../builds/jobs/model';
import { buildBadge, stateBadge } from './ui';

export interface BuildStateEvent {
  id: string;
  state: string;
  blocked: boolean;
  started_at: string | null;
  finished_at: string | null;
  badge: string;
}

export interface JobStateEvent {
  id: string;
  state: string;
  started_at: string | null;
  finished_at: string | null;
  exit_status: number | null;
  agent_name: string | null;
  badge: string;
}

/** The poll's answer: the build, every job, and their number (a change in it makes the page read its list again). */
export interface BuildStateJson {
  build: BuildStateEvent;
  jobs: JobStateEvent[];
  count: number;
}

const iso = (d: Date | null) => (d ? d.toISOString() : null);

export function buildStateEvent(b: Build): BuildStateEvent {
  return {
    id: b.id,
    state: b.state,
    blocked: b.blocked,
    started_at: iso(b.startedAt),
    finished_at: iso(b.finishedAt),
    badge: buildBadge(b).value,
  };
}

/** `agents`: the jobs' agents by id (`agentsOfJobs`); a job whose agent is gone shows none. */
export function jobStateEvent(j: Job, agents: ReadonlyMap<string, Agent>): JobStateEvent {
  return {
    id: j.id,
    state: j.state,
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
    exit_status: j.exitStatus,
    agent_name: j.agentId ? (agents.get(j.agentId)?.name ?? null) : null,
    badge: stateBadge(j.state).value,
  };
}

export function buildStateJson(b: Build, jobs: readonly Job[], agents: ReadonlyMap<string, Agent>): BuildStateJson {
  return { build: buildStateEvent(b), jobs: jobs.map((j) => jobStateEvent(j, agents)), count: jobs.length };
}

/** The agents that took these jobs, by id, in one read (none when no job has one). */
export async function agentsOfJobs(agents: Pick<AgentService, 'byIds'>, jobs: readonly Job[]): Promise<Map<string, Agent>> {
  const ids = [...new Set(jobs.flatMap((j) => (j.agentId ? [j.agentId] : [])))];
  const found = ids.length ? await agents.byIds(ids) : [];
  return new Map(found.map((a) => [a.id, a]));
}
