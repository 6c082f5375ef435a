/**
 * Ending builds that have not finished: a cancel (the API's, or a deleted branch's) and the
 * older builds of a branch a new build supersedes (`skip_queued_branch_builds`,
 * `cancel_running_branch_builds`). Each runs on repositories bound to the caller's transaction
 * (./service.ts opens it; a build create or a trigger step's runs these in its own).
 */
import { HELD_JOB_STATES, jobTransition, STOPPING_JOB_STATES, type BuildEvent } from '../states';
import type { ProgressRepositories } from './repositories';

/** Builds a supersession ended, and the trigger jobs it ended (their builds' machines must run). */
export interface Superseded {
  ended: string[];
  triggers: { jobId: string; buildId: string }[];
}

/**
 * Older builds of the branch that `event` moves (`skip`: `skip_queued_branch_builds`;
 * `supersede`: `cancel_running_branch_builds`; `cancel_branch`: a deleted branch) move with their
 * unfinished jobs: skipped ones are skipped, canceled ones canceled (see cancelJobs). A
 * synchronous trigger job waiting on one that a newer build skipped or canceled ends `skipped`,
 * as the trigger step page says of Cancel Intermediate Builds, at once, even while agents stop
 * the canceled build's jobs (a deleted branch's cancel is a cancel: the build's end decides).
 */
export async function supersede(
  r: ProgressRepositories,
  pipelineId: string,
  branch: string,
  belowNumber: number,
  event: Extract<BuildEvent, 'skip' | 'supersede' | 'cancel_branch'>,
  at: Date,
): Promise<Superseded> {
  const ended = await r.builds.branchBuildsBelow(pipelineId, branch, belowNumber, event);
  if (!ended.length) return { ended, triggers: [] };
  await r.builds.end(ended, event, at);
  if (event === 'skip') {
    // A skip ends accepted jobs too (the skip_queued page: builds still scheduled, whose jobs no agent has started).
    await freeAgentsOf(r, ended, 'skip');
    await r.jobs.updateOfBuilds(ended, 'skip', { finished_at: at });
  } else {
    const busy = await cancelJobs(r, ended, at);
    if (busy.length) await r.builds.stillCanceling(busy);
  }
  const triggers = event === 'cancel_branch' ? [] : await r.jobs.skipTriggers(await r.builds.triggeringJobsOf(ended), at);
  return { ended, triggers };
}

/**
 * Cancels a build that can be (`cancel`, see cancelJobs): `canceled` with `finished_at` at once,
 * or `canceling` while agents stop its jobs. False if the build's state had moved on.
 */
export async function cancelBuild(r: ProgressRepositories, buildId: string, at: Date): Promise<boolean> {
  if (!(await r.builds.startCanceling(buildId))) return false;
  if (!(await cancelJobs(r, [buildId], at)).length) await r.builds.canceled(buildId, at);
  return true;
}

/**
 * Cancels the builds' unfinished jobs: those no agent has accepted end `canceled` at once (an
 * agent assigned one is freed of it); those an agent accepted or runs become `canceling`, for
 * the agent to stop and finish. Returns the builds that still have such jobs (a job already
 * `timing_out` counts: its agent is stopping it).
 */
async function cancelJobs(r: ProgressRepositories, buildIds: string[], at: Date): Promise<string[]> {
  await freeAgentsOf(r, buildIds, 'cancel');
  await r.jobs.updateOfBuilds(buildIds, 'cancel', { finished_at: at });
  await r.jobs.updateOfBuilds(buildIds, 'stop');
  return r.jobs.buildsWithJobsIn(buildIds, STOPPING_JOB_STATES);
}

/** The agents holding a job of the builds that `event` ends at once (held, but not being stopped by its agent) hold it no more. */
async function freeAgentsOf(r: ProgressRepositories, buildIds: string[], event: 'skip' | 'cancel'): Promise<void> {
  await r.agents.dropJobsOf(
    buildIds,
    HELD_JOB_STATES.filter((s) => jobTransition(event).from.includes(s)),
  );
}
