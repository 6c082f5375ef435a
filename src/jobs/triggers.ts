/**
 * Trigger steps. When the build's state machine makes a trigger job runnable, the server runs
 * it itself (no agent): it creates a build of the target pipeline of the same organization, in
 * the state machine's transaction, with the step's `build` attributes and the real API's
 * defaults (commit `HEAD`, the target pipeline's default branch, the triggering build's
 * message), the triggering build's creator and `source: trigger_job`. An async trigger passes
 * once the build exists; a synchronous one stays running until that build ends (see
 * `finishTrigger` in ./repository). A target that is missing or archived, a branch the target's
 * branch filter excludes, or a build already `MAX_TRIGGER_DEPTH` triggers deep fails the job,
 * with the reason as its log.
 */
import type { Knex } from 'knex';
import type { Job } from '../builds/repository';
import { BuildRepository } from '../builds/repository';
import type { StepSignature } from '../builds/jobs';
import { insertBuild } from '../builds/service';
import { matchesBranchFilter } from '../pipelines/branch-filter';
import { PipelineRepository } from '../pipelines/repository';
import { UserRepository } from '../user/repository';

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
  organizationId: string;
  message: string | null;
  creatorId: string | null;
  triggerDepth: number;
}

/** The outcome: the build created (and whether the job waits for it), or why the job failed. */
export type TriggerOutcome = { build: { id: string; number: number; pipelineSlug: string } } | { failure: string };

export type TriggerLauncher = (trx: Knex.Transaction, job: Job, parent: TriggeringBuild) => Promise<TriggerOutcome>;

/** Creates triggered builds, signing their steps with `sign`. */
export function triggerLauncher(sign: (fields: Record<string, unknown>) => StepSignature): TriggerLauncher {
  return async (trx, job, parent) => {
    const step = job.step;
    if (step.type !== 'trigger') return { failure: 'This job is not a trigger step.' };
    if (parent.triggerDepth + 1 > MAX_TRIGGER_DEPTH) {
      return {
        failure: `Builds can't be triggered more than ${MAX_TRIGGER_DEPTH} levels deep: this build is already ${parent.triggerDepth} triggers deep (a pipeline triggering itself?).`,
      };
    }
    const pipeline = await new PipelineRepository(trx).findBySlug(parent.organizationId, step.trigger_project_slug);
    if (!pipeline) return { failure: `The pipeline "${step.trigger_project_slug}" to trigger does not exist in this organization.` };
    if (pipeline.archivedAt) return { failure: `The pipeline "${pipeline.slug}" to trigger is archived.` };
    const branch = step.trigger_branch || pipeline.defaultBranch || 'main';
    if (pipeline.branchConfiguration && !matchesBranchFilter(pipeline.branchConfiguration, branch)) {
      return { failure: `Branch "${branch}" does not match the branch filter "${pipeline.branchConfiguration}" of the pipeline "${pipeline.slug}".` };
    }
    const creator = parent.creatorId ? await new UserRepository(trx).findById(parent.creatorId, trx) : null;
    const { build } = await insertBuild(
      new BuildRepository(trx),
      pipeline,
      creator,
      {
        commit: step.trigger_commit || 'HEAD',
        branch,
        message: step.trigger_message ?? parent.message,
        author: null,
        env: step.trigger_env,
        metaData: step.trigger_meta_data ?? {},
        cleanCheckout: false,
        pullRequest: null,
        rebuiltFrom: null,
        source: 'trigger_job',
        triggeredFromJobId: job.id,
        triggeredFrom: { build_id: parent.id, build_number: parent.number, build_pipeline_slug: parent.pipelineSlug },
        triggerDepth: parent.triggerDepth + 1,
      },
      sign,
    );
    return { build: { id: build.id, number: build.number, pipelineSlug: pipeline.slug } };
  };
}

/** A triggered build's end as its synchronous trigger job's: passed (or not run) passes it, anything else fails it. */
export function triggerJobStateFor(buildState: string): 'passed' | 'failed' {
  return buildState === 'passed' || buildState === 'not_run' ? 'passed' : 'failed';
}
