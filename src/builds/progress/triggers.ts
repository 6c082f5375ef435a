/**
 * Launching a trigger step, inside the state machine's transaction: the step's rules
 * (src/builds/jobs/triggers.ts) decide, the target pipeline and the creator are read and the build is
 * created (./creation.ts) through the repositories bound to that transaction.
 */
import type { Job } from '../jobs/model';
import { triggeredBuildFields, triggerTarget, triggerToRun, type TriggeringBuild, type TriggerOutcome } from '../jobs/triggers';
import { factsWanted, ruleDecision, type FactsWanted } from '../../rules/policy';
import type { ConditionContext } from '../../pipelines/filter-condition';
import { clusterQueuesOf, conditionFactsOf, planBuild, storedBuildConditions, writeBuild } from './creation';
import type { ProgressRepositories, StepSigner } from './repositories';
import type { User } from '../../core/identity';
import type { Pipeline } from '../../pipelines/repository';
import { BUILD_LEVELS, memberPermissions } from '../../pipelines/permissions';

/** Creates the build the trigger job's step asks for, its steps signed with `sign`; or says why it can't. */
export async function launchTriggeredBuild(r: ProgressRepositories, sign: StepSigner, job: Job, parent: TriggeringBuild): Promise<TriggerOutcome> {
  const run = triggerToRun(job, parent);
  if ('failure' in run) return run;
  const target = triggerTarget(run.step, await r.pipelines.findBySlug(parent.organizationId, run.step.trigger_project_slug));
  if ('failure' in target) return target;
  // Another cluster's pipeline (or one a rule's conditions guard) needs a rule that allows it.
  const fields = triggeredBuildFields(run.step, job, parent, target.branch);
  const type = 'pipeline.trigger_build.pipeline';
  const rules = await r.rules.between(type, parent.pipelineId, target.pipeline.id);
  // The rest of the triggering build's variables (`source.build.creator.teams`...), read only where a rule names one.
  const want = factsWanted(type, rules, 'source');
  const refusal = ruleDecision(type, { id: parent.pipelineId, slug: parent.pipelineSlug, clusterId: parent.clusterId }, target.pipeline, rules, {
    source: {
      branch: parent.branch,
      commit: parent.commit,
      message: parent.message,
      source: parent.source,
      facts: want && (await triggeringBuildConditions(r, parent, want)),
    },
    targetTrigger: { branch: fields.branch, commit: fields.commit, message: fields.message },
  });
  if (refusal) return { failure: refusal };
  const creator = parent.creatorId ? await r.users.findById(parent.creatorId) : null;
  const denied = await authorMayNotBuild(r, parent, creator ?? parent.unblocker, target.pipeline);
  if (denied) return { failure: denied };
  const queues = await clusterQueuesOf(r, target.pipeline.clusterId);
  const facts = await conditionFactsOf(r, target.pipeline.organizationId, creator?.id ?? null, (target.pipeline.template ?? target.pipeline).steps);
  const { build, triggers } = await writeBuild(r, planBuild(target.pipeline, creator, fields, sign, queues, facts));
  return { build: { id: build.id, number: build.number, pipelineSlug: target.pipeline.slug }, skippedTriggers: triggers };
}

/** What a step's `if` reads of the triggering build (./creation.ts, storedBuildConditions); null if it or its pipeline is gone. */
async function triggeringBuildConditions(r: ProgressRepositories, parent: TriggeringBuild, want: FactsWanted): Promise<ConditionContext | null> {
  const build = await r.builds.findById(parent.id);
  const pipeline = build && (await r.pipelines.findById(build.pipelineId));
  return build && pipeline ? storedBuildConditions(r.organizations, build, pipeline, want) : null;
}

/**
 * Why the build's author may not trigger the pipeline, or null (trigger_step.md, "Permissions").
 * The author is the triggering build's creator, else the last user who unblocked one of its
 * steps: a member of the organization with Build access to the target (where teams decide it).
 * A build with neither (a webhook's, say) may trigger a pipeline that shares a team with Build
 * access with its own.
 */
async function authorMayNotBuild(
  r: ProgressRepositories,
  parent: TriggeringBuild,
  author: Pick<User, 'id' | 'name'> | null,
  target: Pick<Pipeline, 'id' | 'slug'>,
): Promise<string | null> {
  const organization = await r.organizations.findById(parent.organizationId);
  if (!organization) return 'The organization of this build is gone.';
  if (!author) {
    if (!organization.teamsEnabled || (await r.pipelines.shareTeamWith(parent.pipelineId, target.id, BUILD_LEVELS))) return null;
    return `This build has no creator and no unblocker, and the pipeline "${target.slug}" shares no team with Build access with this build's pipeline "${parent.pipelineSlug}".`;
  }
  const role = (await r.organizations.membershipsOf(author.id)).get(parent.organizationId) ?? null;
  if (role === null) return `${author.name}, the author of this build, is no longer a member of the organization.`;
  if ((await memberPermissions(r.pipelines, organization, role, author.id, target.id)).build) return null;
  return `${author.name}, the author of this build, doesn't have Build access to the pipeline "${target.slug}".`;
}
