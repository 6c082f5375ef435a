/**
 * What a step makes of a failed job's exit status: an automatic retry (whether the step asks for
 * the job to run again), a soft failure, and whether a promised failure counts as a hard one.
 * Pure: every way a job can fail (the agent's finish, a lost agent's job with exit status -1)
 * gets its retry in the transaction that ends it (`finish` and `endSilentAgentJob` of the build
 * progression service, src/builds/progress/service.ts), from the states of `retry_automatic` in
 * src/builds/states.ts.
 */
import type { AutomaticRetry, Step } from '../../pipelines/configuration';

/** A signal's name as the docs compare them: either case, `SIG` optional (`SIGKILL` is `kill`). */
const signalName = (s: string) => s.toLowerCase().replace(/^sig/, '');

function matches(rule: AutomaticRetry, exitStatus: number, signalReason: string | null, signal: string | null): boolean {
  const status = rule.exit_status;
  const statusMatches = status === '*' || status === exitStatus || (Array.isArray(status) && status.includes(exitStatus));
  if (!statusMatches) return false;
  const wantedSignal = rule.signal;
  if (wantedSignal !== undefined && wantedSignal !== '*') {
    if (wantedSignal === 'none' ? !!signal : !signal || signalName(wantedSignal) !== signalName(signal)) return false;
  }
  const wanted = rule.signal_reason;
  if (wanted === undefined || wanted === '*') return true;
  return wanted === 'none' ? !signalReason : wanted === signalReason;
}

/** Whether the step's `soft_fail` covers this exit status. */
export function softFails(step: Step, exitStatus: number): boolean {
  if (step.type !== 'script' || exitStatus === 0) return false;
  const rule = step.soft_fail;
  if (typeof rule === 'boolean') return rule;
  return rule.some((r) => r.exit_status === '*' || r.exit_status === exitStatus);
}

/**
 * Whether a job's promised exit status (`buildkite-agent job promise-failure`) is a hard failure:
 * documented, one its step soft-fails or would retry automatically is not.
 */
export function promisedHardFailure(step: Step, retriesCount: number, promised: number | null): boolean {
  return promised !== null && !softFails(step, promised) && automaticRetryRule(step, retriesCount, promised, null) === null;
}

/**
 * The exit status a job ends with: the one reported, unless the job promised a hard failure
 * that the result would break (a pass, a soft failure, a failure its step retries), which the
 * promise then replaces, as the docs' "Promise job failure" says.
 */
export function effectiveExitStatus(
  job: { step: Step; retriesCount: number | null; promisedExitStatus: number | null },
  reported: number,
  signalReason: string | null,
): number {
  const { step, promisedExitStatus: promised } = job;
  const retries = job.retriesCount ?? 0;
  if (promised === null || !promisedHardFailure(step, retries, promised)) return reported;
  const breaks = reported === 0 || softFails(step, reported) || automaticRetryRule(step, retries, reported, signalReason) !== null;
  return breaks ? promised : reported;
}

/**
 * The rule that retries this failure, if any: the first rule matching the exit status (and
 * signal reason) decides, and it retries while the job has been retried fewer times than its
 * `limit` (`retries_count` counts every retry of the step's job, manual ones included).
 */
export function automaticRetryRule(
  step: Step,
  retriesCount: number,
  exitStatus: number,
  signalReason: string | null,
  signal: string | null = null,
): AutomaticRetry | null {
  if (step.type !== 'script' || exitStatus === 0 || !step.retry) return null;
  const rule = step.retry.automatic.find((r) => matches(r, exitStatus, signalReason, signal));
  return rule && retriesCount < rule.limit ? rule : null;
}
