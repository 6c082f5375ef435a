/**
 * Ending builds that have not finished: a cancel (the API's, or a deleted branch's) and the
 * older builds of a branch a new build supersedes (`skip_queued_branch_builds`,
 * `cancel_running_branch_builds`). Each runs on repositories bound to the caller's transaction
 * (./service.ts opens it; a build create or a trigger step's runs these in its own).
 */
import { buildTransition, STOPPING_JOB_STATES, type BuildEvent } from '../states';
import type { ProgressRepositories } from './repositories';

/**
 * Older builds of the branch that `event` moves (`skip`: `skip_queued_branch_builds`;
 * `supersede`: `cancel_running_branch_builds`; `cancel_branch`: a deleted branch) move with their
 * unfinished jobs: skipped ones are skipped, canceled ones canceled (see cancelJobs). Returns the ids of those that moved.
 */
export async function supersede(
  r: ProgressRepositories,
  pipelineId: string,
  branch: string,
  belowNumber: number,
  event: Extract<BuildEvent, 'skip' | 'supersede' | 'cancel_branch'>,
  at: Date,
): Promise<string[]> {
  const t = buildTransition(event);
  const ids = await r.builds.branchBuildsBelow(pipelineId, branch, belowNumber, t.from);
  if (!ids.length) return [];
  await r.builds.end(ids, event, at);
  if (event === 'skip') {
    await r.jobs.updateOfBuilds(ids, 'skip', { finished_at: at });
  } else {
    const busy = await cancelJobs(r, ids, at);
    if (busy.length) await r.builds.stillCanceling(busy);
  }
  return ids;
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
  await r.agents.dropAssignedJobsOf(buildIds);
  await r.jobs.updateOfBuilds(buildIds, 'cancel', { finished_at: at });
  await r.jobs.updateOfBuilds(buildIds, 'stop');
  return r.jobs.buildsWithJobsIn(buildIds, STOPPING_JOB_STATES);
}
