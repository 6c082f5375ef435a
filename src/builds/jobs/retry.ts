/**
 * Automatic retries: whether a failed job's step asks for it to run again. Pure: every way a job
 * can fail (the agent's finish, a lost agent's job with exit status -1) applies it through
 * `retryOrAdvance` of the build progression service (src/builds/progress/service.ts), from the
 * states of `retry_automatic` in src/builds/states.ts.
 */
import type { AutomaticRetry, Step } from '../../pipelines/configuration';

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
