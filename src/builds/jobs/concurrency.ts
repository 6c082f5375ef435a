/**
 * Concurrency groups, as the docs' "Controlling concurrency" describes them: a command step's
 * `concurrency_group` (organization-wide, by name) with its limit (`concurrency`) and method
 * (`concurrency_method`). A job of a group that could run starts `limited` (or the machine moves
 * it there instead of `scheduled`) and is admitted (`limited` -> `scheduled`, where agents get
 * it) when its group has room. The group works like a queue of its unfinished jobs, oldest first
 * (a job is as old as its build, or the upload or retry that made it: its `created_at`):
 * - jobs scheduled, on an agent or being stopped hold a slot;
 * - a limited job may go when the slots held are fewer than its own limit (each job keeps the
 *   limit its step had when it was made, as documented) and, with the default `ordered` method,
 *   when the slots held plus the jobs queued ahead of it are: a job that stays keeps its place,
 *   and the jobs behind it are looked at, as the docs' "Changing concurrency limits" says;
 * - a `waiting` job of the group is queued too (the docs' concurrency gates rely on it: a
 *   build's closing gate step keeps the next build's opening one out), except behind a block
 *   step not yet unblocked (the docs say a block step keeps its jobs out of the group until it
 *   is passed), and except for the jobs of its own build;
 * - only builds not finished have jobs in the queue (one left waiting in a failed build holds
 *   nothing back).
 * Pure: the queue is read, and the admissions written, by the job repository under the group's
 * lock (src/builds/progress/service.ts).
 */
import type { ConcurrencyMethod, Step } from '../../pipelines/configuration';
import { ACTIVE_JOB_STATES } from '../states';
import type { JobState } from '../model';

/** A job's group, as its step had it when the job was made. */
export interface JobConcurrency {
  group: string;
  limit: number;
  method: ConcurrencyMethod;
}

/** The group a job of `step` joins, or null. */
export function concurrencyOf(step: Step): JobConcurrency | null {
  if (step.type !== 'script' || step.concurrency_group === undefined || step.concurrency === null) return null;
  return { group: step.concurrency_group, limit: step.concurrency, method: step.concurrency_method ?? 'ordered' };
}

/** One unfinished job of a group, in the group's order. */
export interface QueuedJob {
  id: string;
  buildId: string;
  state: JobState;
  limit: number;
  method: ConcurrencyMethod;
  /** A `waiting` job behind a block step of its build that is not passed yet: not in the queue. */
  behindBlock: boolean;
}

/** Job states a group's queue is read in: those holding a slot, and those that will want one. */
export const QUEUED_CONCURRENCY_STATES: readonly JobState[] = [...ACTIVE_JOB_STATES, 'limited', 'waiting'];

/**
 * The limited jobs of a group (given in its order) that may go now. A waiting job of the same
 * build is not ahead of a job: a build's own steps are ordered by its waits and dependencies,
 * and one waiting for a later step of its own group would never let that step go.
 */
export function admissions(queue: readonly QueuedJob[]): string[] {
  let holding = queue.filter((j) => ACTIVE_JOB_STATES.includes(j.state)).length;
  let aheadLimited = 0;
  const aheadWaiting = new Map<string, number>();
  let aheadWaitingTotal = 0;
  const admitted: string[] = [];
  for (const j of queue) {
    if (j.state === 'limited') {
      const ahead = aheadLimited + aheadWaitingTotal - (aheadWaiting.get(j.buildId) ?? 0);
      const room = j.method === 'eager' ? holding < j.limit : holding + ahead < j.limit;
      if (room) {
        admitted.push(j.id);
        holding++;
      } else {
        aheadLimited++;
      }
    } else if (j.state === 'waiting' && !j.behindBlock) {
      aheadWaiting.set(j.buildId, (aheadWaiting.get(j.buildId) ?? 0) + 1);
      aheadWaitingTotal++;
    }
  }
  return admitted;
}
