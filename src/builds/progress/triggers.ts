/**
 * Launching a trigger step, inside the state machine's transaction: the step's rules
 * (src/builds/jobs/triggers.ts) decide, the target pipeline and the creator are read and the build is
 * created (./creation.ts) through the repositories bound to that transaction.
 */
import type { Job } from '../jobs/model';
import { triggeredBuildFields, triggerTarget, triggerToRun, type TriggeringBuild, type TriggerOutcome } from '../jobs/triggers';
import { ruleDecision } from '../../rules/policy';
import { clusterQueuesOf, conditionFactsOf, planBuild, writeBuild } from './creation';
import type { ProgressRepositories, StepSigner } from './repositories';

/** Creates the build the trigger job's step asks for, its steps signed with `sign`; or says why it can't. */
export async function launchTriggeredBuild(r: ProgressRepositories, sign: StepSigner, job: Job, parent: TriggeringBuild): Promise<TriggerOutcome> {
  const run = triggerToRun(job, parent);
  if ('failure' in run) return run;
  const target = triggerTarget(run.step, await r.pipelines.findBySlug(parent.organizationId, run.step.trigger_project_slug));
  if ('failure' in target) return target;
  // Another cluster's pipeline (or one a rule's conditions guard) needs a rule that allows it.
  const fields = triggeredBuildFields(run.step, job, parent, target.branch);
  const type = 'pipeline.trigger_build.pipeline';
  const refusal = ruleDecision(
    type,
    { id: parent.pipelineId, slug: parent.pipelineSlug, clusterId: parent.clusterId },
    target.pipeline,
    await r.rules.between(type, parent.pipelineId, target.pipeline.id),
    {
      source: { branch: parent.branch, commit: parent.commit, message: parent.message, source: parent.source },
      targetTrigger: { branch: fields.branch, commit: fields.commit, message: fields.message },
    },
  );
  if (refusal) return { failure: refusal };
  const creator = parent.creatorId ? await r.users.findById(parent.creatorId) : null;
  const queues = await clusterQueuesOf(r, target.pipeline.clusterId);
  const facts = await conditionFactsOf(r, target.pipeline.organizationId, creator?.id ?? null, (target.pipeline.template ?? target.pipeline).steps);
  const { build, triggers } = await writeBuild(r, planBuild(target.pipeline, creator, fields, sign, queues, facts));
  return { build: { id: build.id, number: build.number, pipelineSlug: target.pipeline.slug }, skippedTriggers: triggers };
}
