/**
 * Trigger steps: what they decide. When the build's state machine makes a trigger job runnable,
 * the server runs it itself (no agent): it creates a build of the target pipeline of the same
 * organization, in the state machine's transaction (src/builds/progress/triggers.ts), with the
 * step's `build` attributes and the real API's defaults (commit `HEAD`, the target pipeline's
 * default branch, the triggering build's message), the triggering build's creator and
 * `source: trigger_job`. An async trigger passes once the build exists; a synchronous one stays
 * running until that build ends (see `finishTrigger` in src/builds/progress/machine.ts). A
 * target that is missing or archived, one in another cluster that no rule allows (src/rules/policy.ts), a branch the target's branch filter excludes, or a build
 * already `MAX_TRIGGER_DEPTH` triggers deep fails the job, with the reason as its log.
 * Pure: no database.
 */
import type { BuildState, NewBuildFields } from '../model';
import { matchesBranchFilter } from '../../pipelines/branch-filter';
import type { Step, TriggerStep } from '../../pipelines/configuration';
import type { Pipeline } from '../../pipelines/repository';
import type { Job } from './model';
import type { User } from '../../core/identity';

/**
 * How many triggers deep a build may be: a build created by a trigger step of a build created
 * by a trigger step ... at most this many times. A pipeline that triggers itself (directly or
 * through others) thus stops after this many builds, its deepest trigger job failing.
 */
export const MAX_TRIGGER_DEPTH = 10;

/** What a trigger needs of the build it runs in. */
export interface TriggeringBuild {
  id: string;
  number: number;
  pipelineSlug: string;
  pipelineId: string;
  /** The cluster of the build's pipeline (null: none): a target in another needs a rule. */
  clusterId: string | null;
  organizationId: string;
  message: string | null;
  branch: string;
  commit: string;
  source: string;
  creatorId: string | null;
  /** The user who last unblocked one of the build's steps: its author for a trigger when it has no creator. */
  unblocker: Pick<User, 'id' | 'name'> | null;
  triggerDepth: number;
}

/** The outcome: the build created (and whether the job waits for it), or why the job failed. */
/**
 * The build a trigger job made, and the trigger jobs of older builds of its branch that it
 * superseded (they ended `skipped`: their builds must go on); or why none was made.
 */
export type TriggerOutcome =
  { build: { id: string; number: number; pipelineSlug: string }; skippedTriggers: { jobId: string; buildId: string }[] } | { failure: string };

/** The job's trigger step, or why it can't run whatever its target (not a trigger, too deep). */
export function triggerToRun(job: Job, parent: TriggeringBuild): { step: TriggerStep } | { failure: string } {
  const step = job.step;
  if (step.type !== 'trigger') return { failure: 'This job is not a trigger step.' };
  if (parent.triggerDepth + 1 > MAX_TRIGGER_DEPTH) {
    return {
      failure: `Builds can't be triggered more than ${MAX_TRIGGER_DEPTH} levels deep: this build is already ${parent.triggerDepth} triggers deep (a pipeline triggering itself?).`,
    };
  }
  return { step };
}

/** The step's target pipeline (`pipeline`, null if none has its slug) and the branch to build in it, or why it can't be built. */
export function triggerTarget(step: TriggerStep, pipeline: Pipeline | null): { pipeline: Pipeline; branch: string } | { failure: string } {
  if (!pipeline) return { failure: `The pipeline "${step.trigger_project_slug}" to trigger does not exist in this organization.` };
  if (pipeline.archivedAt) return { failure: `The pipeline "${pipeline.slug}" to trigger is archived.` };
  const branch = step.trigger_branch || pipeline.defaultBranch || 'main';
  if (pipeline.branchConfiguration && !matchesBranchFilter(pipeline.branchConfiguration, branch)) {
    return { failure: `Branch "${branch}" does not match the branch filter "${pipeline.branchConfiguration}" of the pipeline "${pipeline.slug}".` };
  }
  return { pipeline, branch };
}

/** The triggered build: the step's `build` attributes, the defaults, and where it came from. */
export function triggeredBuildFields(step: TriggerStep, job: Job, parent: TriggeringBuild, branch: string): NewBuildFields {
  return {
    commit: step.trigger_commit || 'HEAD',
    branch,
    // trigger_step.md, `message`: "Default: the label of the trigger step" (without one, the triggering build's).
    message: step.trigger_message ?? step.name ?? parent.message,
    author: null,
    // A parallel trigger step's build knows its place, as a parallel job does (the docs' "triggering parallel builds").
    env:
      job.parallelGroupTotal !== null
        ? { ...step.trigger_env, BUILDKITE_PARALLEL_JOB: String(job.parallelGroupIndex), BUILDKITE_PARALLEL_JOB_COUNT: String(job.parallelGroupTotal) }
        : step.trigger_env,
    metaData: step.trigger_meta_data ?? {},
    cleanCheckout: false,
    pullRequest: null,
    rebuiltFrom: null,
    source: 'trigger_job',
    triggeredFromJobId: job.id,
    triggeredFrom: { build_id: parent.id, build_number: parent.number, build_pipeline_slug: parent.pipelineSlug },
    triggerDepth: parent.triggerDepth + 1,
  };
}

/** Whether a failed trigger job soft-fails (its step's `soft_fail`): the triggering build does not fail for it. */
export function triggerSoftFails(step: Step): boolean {
  return step.type === 'trigger' && step.soft_fail === true;
}

/** A triggered build's end as its synchronous trigger job's: passed (or not run) passes it, anything else fails it. */
export function triggerJobStateFor(buildState: BuildState): 'passed' | 'failed' {
  return buildState === 'passed' || buildState === 'not_run' ? 'passed' : 'failed';
}
