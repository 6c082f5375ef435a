/**
 * Launching a trigger step, inside the state machine's transaction: the step's rules
 * (src/builds/jobs/triggers.ts) decide, the target pipeline and the creator are read and the build is
 * created (./creation.ts) through the repositories bound to that transaction.
 */
import type { Job } from '../jobs/model';
import { triggeredBuildFields, triggerTarget, triggerToRun, type TriggeringBuild, type TriggerOutcome } from '../jobs/triggers';
import { clusterQueuesOf, planBuild, writeBuild } from './creation';
import type { ProgressRepositories, StepSigner } from './repositories';

/** Creates the build the trigger job's step asks for, its steps signed with `sign`; or says why it can't. */
export async function launchTriggeredBuild(r: ProgressRepositories, sign: StepSigner, job: Job, parent: TriggeringBuild): Promise<TriggerOutcome> {
  const run = triggerToRun(job, parent);
  if ('failure' in run) return run;
  const target = triggerTarget(run.step, await r.pipelines.findBySlug(parent.organizationId, run.step.trigger_project_slug));
  if ('failure' in target) return target;
  const creator = parent.creatorId ? await r.users.findById(parent.creatorId) : null;
  const queues = await clusterQueuesOf(r, target.pipeline.clusterId);
  const { build } = await writeBuild(r, planBuild(target.pipeline, creator, triggeredBuildFields(run.step, job, parent, target.branch), sign, queues));
  return { build: { id: build.id, number: build.number, pipelineSlug: target.pipeline.slug } };
}
