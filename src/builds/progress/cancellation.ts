/**
 * Ending builds that have not finished: a cancel (the API's, or a deleted branch's) and the
 * older builds of a branch a new build supersedes (`skip_queued_branch_builds`,
 * `cancel_running_branch_builds`). Each runs on repositories bound to the caller's transaction
 * (./service.ts opens it; a build create or a trigger step's runs these in its own).
 */
import { ON_AGENT_JOB_STATES, UNFINISHED_JOB_STATES } from '../jobs/model';
import type { BuildState } from '../model';
import type { ProgressRepositories } from './repositories';

/**
 * Older builds of the branch in `fromStates` move to `toState` with their unfinished jobs
 * (`skip_queued_branch_builds`, `cancel_running_branch_builds`). Returns how many moved.
 */
export async function supersede(
  r: ProgressRepositories,
  pipelineId: string,
  branch: string,
  belowNumber: number,
  fromStates: BuildState[],
  toState: BuildState,
  jobState: string,
  at: Date,
): Promise<number> {
  const ids = await r.builds.branchBuildsBelow(pipelineId, branch, belowNumber, fromStates);
  if (!ids.length) return 0;
  await r.builds.end(ids, toState, at);
  if (toState === 'canceled') {
    const busy = await cancelJobs(r, ids, at);
    if (busy.length) await r.builds.stillCanceling(busy);
  } else {
    await r.jobs.updateOfBuilds(ids, UNFINISHED_JOB_STATES, { state: jobState, finished_at: at });
  }
  return ids.length;
}

/**
 * Cancels a build in one of `fromStates` (see cancelJobs): `canceled` with `finished_at` at
 * once, or `canceling` while agents stop its jobs. False if the build's state had moved on.
 */
export async function cancelBuild(r: ProgressRepositories, buildId: string, fromStates: BuildState[], at: Date): Promise<boolean> {
  if (!(await r.builds.startCanceling(buildId, fromStates))) return false;
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
  const stopNow = UNFINISHED_JOB_STATES.filter((s) => !ON_AGENT_JOB_STATES.includes(s));
  await r.jobs.updateOfBuilds(buildIds, stopNow, { state: 'canceled', finished_at: at });
  await r.jobs.updateOfBuilds(buildIds, ON_AGENT_JOB_STATES, { state: 'canceling' });
  return r.jobs.buildsWithJobsIn(buildIds, ['canceling', 'timing_out']);
}
