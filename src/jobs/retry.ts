/**
 * Automatic retries: whether a failed job's step asks for it to run again, and the one place a
 * job failure goes through to get that (the agent's finish today; any other way a job can fail,
 * such as a lost agent with exit status -1, calls `retryOrAdvance` too).
 */
import crypto from 'node:crypto';
import type { Job } from '../builds/repository';
import type { AutomaticRetry, Step } from '../pipelines/configuration';
import type { JobRepository } from './repository';

/** Job states an automatic retry starts from. */
const FAILED_STATES = ['failed', 'timed_out'];

function matches(rule: AutomaticRetry, exitStatus: number, signalReason: string | null): boolean {
  const status = rule.exit_status;
  const statusMatches = status === '*' || status === exitStatus || (Array.isArray(status) && status.includes(exitStatus));
  if (!statusMatches) return false;
  const wanted = rule.signal_reason;
  if (wanted === undefined || wanted === '*') return true;
  return wanted === 'none' ? !signalReason : wanted === signalReason;
}

/**
 * The rule that retries this failure, if any: the first rule matching the exit status (and
 * signal reason) decides, and it retries while the job has been retried fewer times than its
 * `limit` (`retries_count` counts every retry of the step's job, manual ones included).
 */
export function automaticRetryRule(step: Step, retriesCount: number, exitStatus: number, signalReason: string | null): AutomaticRetry | null {
  if (step.type !== 'script' || exitStatus === 0 || !step.retry) return null;
  const rule = step.retry.automatic.find((r) => matches(r, exitStatus, signalReason));
  return rule && retriesCount < rule.limit ? rule : null;
}

/**
 * After a job ended in failure: a new scheduled job in its place when a rule says so
 * (`retry_type: automatic`; the build's state machine runs in the same transaction), else the
 * build's state machine alone. Returns the new job's id, or null.
 */
export async function retryOrAdvance(
  jobs: JobRepository,
  job: Pick<Job, 'id' | 'buildId' | 'step' | 'retriesCount'>,
  exitStatus: number,
  signalReason: string | null,
): Promise<string | null> {
  if (automaticRetryRule(job.step, job.retriesCount ?? 0, exitStatus, signalReason)) {
    const newId = crypto.randomUUID();
    if (await jobs.retry(job.buildId, job.id, newId, FAILED_STATES, 'automatic')) return newId;
  }
  await jobs.advance(job.buildId);
  return null;
}
