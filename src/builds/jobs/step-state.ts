/**
 * A step's own state and outcome, read off its jobs (their latest attempts: a parallel or matrix
 * step has several), in the words the docs give steps, which are not job states (the glossary's
 * "step", `buildkite-agent step get state|outcome`): `buildkite-agent step get` answers them and
 * a step-level notification's `if` reads them. Pure.
 */
import { JOB_STATE_PHASES, TERMINAL_JOB_STATES } from '../states';
import type { Job } from './model';

/** The glossary's step states. */
export type StepState = 'ignored' | 'waiting_for_dependencies' | 'ready' | 'running' | 'failing' | 'finished' | 'canceled';

/** The documented `step.outcome` values. */
export type StepOutcome = 'neutral' | 'passed' | 'soft_failed' | 'hard_failed' | 'errored';

type StepJob = Pick<Job, 'state' | 'softFailed' | 'type'>;

/** A job that failed the step (its failure is not soft). */
const hardFailure = (j: StepJob) => j.state === 'failed' && !j.softFailed;
/** The docs' errored: "reserved for infrastructure issues, such as timeouts, cancellations or expired jobs". */
const errored = (j: StepJob) => j.state === 'timed_out' || j.state === 'canceled' || j.state === 'expired';

/**
 * How the step's jobs ended, once they all have: a hard failure first, then an infrastructure
 * error, then a soft failure; passed when every job passed; neutral otherwise (a wait step, or
 * jobs that never ran).
 */
export function stepOutcome(jobs: readonly StepJob[]): StepOutcome {
  // The docs' neutral: 'the passing or failure of the step's outcome is not relevant (for example, the outcome of a wait step)'.
  if (jobs.every((j) => j.type === 'waiter' || j.type === 'manual')) return 'neutral';
  if (jobs.some(hardFailure)) return 'hard_failed';
  if (jobs.some(errored)) return 'errored';
  if (jobs.some((j) => j.softFailed)) return 'soft_failed';
  return jobs.length > 0 && jobs.every((j) => j.state === 'passed') ? 'passed' : 'neutral';
}

/** Where the step stands: `jobs` are its jobs' latest attempts. */
export function stepState(jobs: readonly StepJob[]): StepState {
  // An unblocked block step is done with, as a finished job is.
  const done = (j: StepJob) => TERMINAL_JOB_STATES.includes(j.state) || j.state === 'unblocked';
  if (jobs.every(done)) {
    // A step whose condition (or branch filter) left it out is broken without running.
    if (jobs.every((j) => j.state === 'broken')) return 'ignored';
    if (jobs.every((j) => j.state === 'canceled' || JOB_STATE_PHASES[j.state] === 'not_run')) return 'canceled';
    return 'finished';
  }
  const started = jobs.some((j) => done(j) || JOB_STATE_PHASES[j.state] === 'on_agent' || JOB_STATE_PHASES[j.state] === 'stopping');
  if (!started) return jobs.every((j) => JOB_STATE_PHASES[j.state] === 'upcoming') ? 'waiting_for_dependencies' : 'ready';
  return jobs.some(hardFailure) ? 'failing' : 'running';
}
