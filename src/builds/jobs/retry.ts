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

/** `exit_status: "*"` as the docs' retry page defines it: any exit status from 1 to 255, so not -1 (a lost agent), which a rule names to retry it. */
const anyFailure = (exitStatus: number) => exitStatus >= 1 && exitStatus <= 255;

function matches(rule: AutomaticRetry, exitStatus: number, signalReason: string | null, signal: string | null): boolean {
  const status = rule.exit_status;
  const statusMatches = (status === '*' && anyFailure(exitStatus)) || status === exitStatus || (Array.isArray(status) && status.includes(exitStatus));
  if (!statusMatches) return false;
  const signalMatches = (wanted: string) => (wanted === 'none' ? !signal : !!signal && signalName(wanted) === signalName(signal));
  const reasonMatches = (wanted: string) => (wanted === 'none' ? !signalReason : wanted === signalReason);
  return anyOf(rule.signal, signalMatches) && anyOf(rule.signal_reason, reasonMatches);
}

/** Whether a rule's `signal` or `signal_reason` (not given or `*`: any; one value, or a list of values) accepts what `matches` says. */
function anyOf(wanted: string | string[] | undefined, matches: (one: string) => boolean): boolean {
  if (wanted === undefined) return true;
  const values = Array.isArray(wanted) ? wanted : [wanted];
  return values.some((one) => one === '*' || matches(one));
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
export function promisedHardFailure(step: Step, automaticRetries: readonly number[], promised: number | null): boolean {
  return promised !== null && !softFails(step, promised) && automaticRetryRule(step, automaticRetries, promised, null) === null;
}

/**
 * The exit status a job ends with: the one reported, unless the job promised a hard failure
 * that the result would break (a pass, a soft failure, a failure its step retries), which the
 * promise then replaces, as the docs' "Promise job failure" says.
 */
export function effectiveExitStatus(
  job: { step: Step; automaticRetries: readonly number[]; promisedExitStatus: number | null },
  reported: number,
  signalReason: string | null,
): number {
  const { step, promisedExitStatus: promised, automaticRetries: retries } = job;
  if (promised === null || !promisedHardFailure(step, retries, promised)) return reported;
  const breaks = reported === 0 || softFails(step, reported) || automaticRetryRule(step, retries, reported, signalReason) !== null;
  return breaks ? promised : reported;
}

/**
 * The index in `retry.automatic` of the rule that retries this failure, if any: the first rule
 * matching the exit status, signal and signal reason decides, and it retries while it has retried
 * the job's line fewer times than its `limit` (`automaticRetries`: each rule's own count, as the
 * docs' retry page says; a manual retry counts for no rule).
 */
export function automaticRetryRule(
  step: Step,
  automaticRetries: readonly number[],
  exitStatus: number,
  signalReason: string | null,
  signal: string | null = null,
): number | null {
  if (step.type !== 'script' || exitStatus === 0 || !step.retry) return null;
  const index = step.retry.automatic.findIndex((r) => matches(r, exitStatus, signalReason, signal));
  if (index < 0) return null;
  return (automaticRetries[index] ?? 0) < step.retry.automatic[index]!.limit ? index : null;
}

/** A job line's counts of automatic retries by rule (`jobs.automatic_retries`), with rule `index` counted once more. */
export function countedRetry(automaticRetries: readonly number[], index: number): number[] {
  const counts = Array.from({ length: Math.max(automaticRetries.length, index + 1) }, (_, i) => automaticRetries[i] ?? 0);
  counts[index]! += 1;
  return counts;
}
