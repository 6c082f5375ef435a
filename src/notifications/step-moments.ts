/**
 * When a step's own notifications go out. The docs (Triggering notifications) send step-level
 * notifications at `step.failing` and `step.finished`: once per step, not once per job of a
 * parallel or matrix step. Both are read off the step's jobs when one of its job events is fanned
 * out, as of that event, so that however late the fan-out runs each step moment is told once:
 *
 * - **finished**: the event is a job's end, every job of the step (its latest attempts) has
 *   ended, and none ended after this one (ties by id). A retry reopens the step: its end is told again.
 * - **failing**: the step's first hard failure (a job failed and did not soft-fail, or a running
 *   job promised a hard failure: the docs' "Promise job failure"), while the step is not finished
 *   at that moment. A step whose only failure is its last job's end is finished, not failing.
 * - A job retried by the time its event is fanned out tells nothing: its retry will.
 *
 * The moment also gives the `step.*` variables of a step-level `if` (the docs' conditionals:
 * "available for conditional notifications only"). Pure: no I/O.
 */
import type { Job } from '../builds/jobs/model';
import { promisedHardFailure } from '../builds/jobs/retry';
import { FAILING_JOB_STATES, TERMINAL_JOB_STATES } from '../builds/states';
import { stepOutcome, type StepOutcome } from '../builds/jobs/step-state';
import type { EventName } from './events';

export interface StepMoment {
  state: 'failing' | 'finished';
  outcome: StepOutcome;
  id: string;
  key: string | null;
  label: string | null;
  /** The docs' step types: a command step's jobs are `script` jobs. */
  type: 'command';
  /** The step's jobs, their latest attempts, as read at fan-out. */
  jobs: readonly Job[];
}

/** A time and a tie-breaker, to order two jobs' moments. */
type Mark = [number, string];
const before = (a: Mark, b: Mark) => a[0] < b[0] || (a[0] === b[0] && a[1] < b[1]);

/** When the job became a hard failure of its step: its promise, or its end; null if it is none. */
function failedAt(j: Job): Mark | null {
  if (j.promisedExitStatusAt !== null && promisedHardFailure(j.step, j.automaticRetries, j.promisedExitStatus)) return [j.promisedExitStatusAt.getTime(), j.id];
  if (j.finishedAt !== null && FAILING_JOB_STATES.includes(j.state) && !j.softFailed) return [j.finishedAt.getTime(), j.id];
  return null;
}

/**
 * The step moment a job event is, if any: `name` is the event, `subject` its job and `jobs` the
 * build's jobs as read at fan-out.
 */
export function stepMomentOf(name: EventName, subject: Job, jobs: readonly Job[]): StepMoment | null {
  if (subject.type !== 'script' || (name !== 'job.finished' && name !== 'job.promised_exit_status')) return null;
  // A job retried since (automatically, or by someone) is its retry's to tell.
  if (subject.retried) return null;
  const step = jobs.filter((j) => j.stepId === subject.stepId && !j.retried);
  const view = { id: subject.stepId, key: subject.stepKey, label: subject.name, type: 'command' as const, jobs: step };
  // The moment of this event: the subject's end, or its promise.
  const at: Mark | null =
    name === 'job.finished'
      ? subject.finishedAt && [subject.finishedAt.getTime(), subject.id]
      : subject.promisedExitStatusAt && [subject.promisedExitStatusAt.getTime(), subject.id];
  if (!at) return null;
  const endedBy = (j: Job, m: Mark) => TERMINAL_JOB_STATES.includes(j.state) && j.finishedAt !== null && !before(m, [j.finishedAt.getTime(), j.id]);
  if (name === 'job.finished' && step.every((j) => endedBy(j, at))) return { ...view, state: 'finished', outcome: stepOutcome(step) };
  // Failing: this event is the step's first hard failure.
  const own = failedAt(subject);
  if (!own || own[0] !== at[0]) return null;
  const first = step.every((j) => j.id === subject.id || !failedAt(j) || before(own, failedAt(j)!));
  return first ? { ...view, state: 'failing', outcome: 'hard_failed' } : null;
}
