/**
 * Creating a build: the rules that make a new build of a pipeline (its jobs planned from the
 * steps, its first state, which older builds of the branch it supersedes), then writing it and
 * superseding them through repositories bound to one transaction (or, when nothing is
 * superseded, the build's own create statement alone). Used by ./service.ts for builds the API
 * and webhooks create and by ./triggers.ts for builds trigger steps create, inside the state
 * machine's transaction.
 */
import crypto from 'node:crypto';
import { UnprocessableError } from '../../core/errors';
import { clock } from '../../core/clock';
import type { User } from '../../core/identity';
import type { Job } from '../jobs/model';
import { matchesBranchFilter } from '../../pipelines/branch-filter';
import type { Pipeline } from '../../pipelines/repository';
import type { Step } from '../../pipelines/configuration';
import { MAX_JOBS_PER_BUILD, planJobs, stepConditionContext, storedStepConditionContext, type PlannedJob } from '../jobs/plan';
import type { Build, NewBuild, NewBuildFields } from '../model';
import { placeInCluster, type ClusterQueues } from '../jobs/cluster-queue';
import { supersede, type Superseded } from './cancellation';
import type { ProgressRepositories, StepSigner } from './repositories';
import type { OrganizationRepository } from '../../organizations/repository';
import type { ConditionContext } from '../../pipelines/filter-condition';
import type { FactsWanted } from '../../rules/policy';

/** Older builds of the branch a new build moves on, by the build event (src/builds/states.ts) that moves them. */
interface Supersession {
  event: 'skip' | 'supersede';
}

/** A build about to be written: the build, its creator, its jobs, and what it supersedes. */
export interface PlannedBuild {
  build: NewBuild;
  creator: User | null;
  jobs: PlannedJob[];
  supersedes: Supersession[];
}

/**
 * Plans the pipeline's steps into jobs and decides the build's first state and which older
 * builds of the branch it skips or cancels, as the pipeline says. Throws when the steps make
 * more jobs than a build may have.
 */
export function planBuild(
  pipeline: Pipeline,
  creator: User | null,
  b: NewBuildFields,
  sign: StepSigner,
  queues: ClusterQueues | null,
  facts: ConditionFacts,
): PlannedBuild {
  const now = clock.now();
  const id = crypto.randomUUID();
  // A pipeline using a template builds from the template's steps and env, not its own.
  const source = pipeline.template ?? pipeline;
  const conditions = stepConditionContext({
    build: { ...b, id, number: null, tag: b.tag ?? null, triggeredFrom: b.triggeredFrom ?? null, webhookEvent: b.webhookEvent ?? null, creator },
    pipeline,
    organization: facts.organization,
    creatorTeams: facts.creatorTeams,
    env: { ...source.env, ...b.env },
  });
  const planned = planJobs(source.steps, {
    branch: b.branch,
    pipelineEnv: source.env,
    buildEnv: b.env,
    repositoryUrl: pipeline.repository,
    stepTimeouts: { defaultMinutes: pipeline.defaultTimeoutInMinutes, maximumMinutes: pipeline.maximumTimeoutInMinutes },
    sign,
    conditions,
  });
  const jobs = placeInCluster(planned, queues);
  if (jobs.length > MAX_JOBS_PER_BUILD) {
    throw new UnprocessableError(
      `A build can't have more than ${MAX_JOBS_PER_BUILD} jobs: the pipeline's steps make ${jobs.length} (parallelism and matrix steps count each job).`,
    );
  }
  const runnable = jobs.filter((j) => j.state !== 'broken');
  // Every step filtered out: nothing will run, the build is over before it starts.
  const notRun = runnable.length === 0;
  const supersedes: Supersession[] = [];
  if (pipeline.skipQueuedBranchBuilds && matchesBranchFilter(pipeline.skipQueuedBranchBuildsFilter, b.branch)) supersedes.push({ event: 'skip' });
  if (cancelsRunningBuildsOf(pipeline, b.branch)) supersedes.push({ event: 'supersede' });
  const build: NewBuild = {
    id,
    pipelineId: pipeline.id,
    organizationId: pipeline.organizationId,
    state: notRun ? 'not_run' : 'scheduled',
    blocked: jobs.some((j) => j.state === 'blocked'),
    tag: null,
    triggeredFrom: null,
    webhookEvent: null,
    creatorId: creator?.id ?? null,
    cancelReason: null,
    // Copied, so later edits of the pipeline's configuration do not change what this build notifies.
    notify: source.notify,
    createdAt: now,
    scheduledAt: now,
    startedAt: null,
    failingAt: null,
    finishedAt: notRun ? now : null,
    ...b,
  };
  return { build, creator, jobs, supersedes };
}

/**
 * Whether the pipeline's Cancel Intermediate Builds applies to the branch
 * (`cancel_running_branch_builds` and its filter): a new build of it cancels the older running
 * ones when it is created and again when it starts (./machine.ts).
 */
export function cancelsRunningBuildsOf(pipeline: Pick<Pipeline, 'cancelRunningBranchBuilds' | 'cancelRunningBranchBuildsFilter'>, branch: string): boolean {
  return pipeline.cancelRunningBranchBuilds && matchesBranchFilter(pipeline.cancelRunningBranchBuildsFilter, branch);
}

/** What a step's `if` reads that neither the pipeline nor the build carries. */
export interface ConditionFacts {
  organization: { id: string; slug: string };
  /** The slugs of the creator's teams in the organization (`build.creator.teams`). */
  creatorTeams: string[];
}

const conditionsOf = (steps: readonly Step[]) => steps.flatMap((s) => (s.if === undefined ? [] : [s.if]));

/** The slugs of the creator's teams, read only when a step's `if` may name them (`build.creator.teams`). */
export async function creatorTeamsOf(
  r: Pick<ProgressRepositories, 'organizations'>,
  organizationId: string,
  creatorId: string | null,
  steps: readonly Step[],
): Promise<string[]> {
  if (creatorId === null || !conditionsOf(steps).some((c) => c.includes('teams'))) return [];
  return r.organizations.teamSlugsOf(creatorId, organizationId);
}

/**
 * The facts for planning `steps` into a build of the organization, read only when a step has an
 * `if` (the teams only when one may name them): most builds cost no read more.
 */
export async function conditionFactsOf(
  r: Pick<ProgressRepositories, 'organizations'>,
  organizationId: string,
  creatorId: string | null,
  steps: readonly Step[],
): Promise<ConditionFacts> {
  if (!conditionsOf(steps).length) return { organization: { id: organizationId, slug: '' }, creatorTeams: [] };
  const org = await r.organizations.findById(organizationId);
  return { organization: { id: organizationId, slug: org?.slug ?? '' }, creatorTeams: await creatorTeamsOf(r, organizationId, creatorId, steps) };
}

/**
 * What a step's `if` reads of a stored build (stepConditionContext, its env the pipeline's, or
 * its template's, and the build's, as planBuild gives its steps): for a rule's `source.build.*`
 * and `target.build.*` (src/rules/policy.ts; factsWanted says which reads to take). `pipeline`
 * is the build's. The organization is read only for `env` (its slug is
 * `BUILDKITE_ORGANIZATION_SLUG`), the creator's teams only for `creatorTeams`: otherwise they
 * read "" and [].
 */
export async function storedBuildConditions(
  organizations: Pick<OrganizationRepository, 'findById' | 'teamSlugsOf'>,
  build: Build,
  pipeline: Pipeline,
  want: FactsWanted,
): Promise<ConditionContext> {
  const slug = want.env ? ((await organizations.findById(build.organizationId))?.slug ?? '') : '';
  const creatorTeams = want.creatorTeams && build.creator ? await organizations.teamSlugsOf(build.creator.id, build.organizationId) : [];
  return storedStepConditionContext(build, pipeline, { id: build.organizationId, slug }, creatorTeams);
}

/**
 * Writes the planned build (its number from the pipeline's counter) and then supersedes older
 * builds of the branch, below that number (`ended`, and the trigger jobs that waited on them: `triggers`). `r` is bound to one transaction whenever the plan
 * supersedes anything, so the two are one.
 */
export async function writeBuild(r: ProgressRepositories, p: PlannedBuild): Promise<{ build: Build; jobs: Job[] } & Superseded> {
  const written = await r.builds.insert(p.build, p.creator, p.jobs);
  const superseded: Superseded = { ended: [], triggers: [] };
  for (const s of p.supersedes) {
    const moved = await supersede(r, p.build.pipelineId, p.build.branch, written.build.number, s.event, p.build.createdAt);
    superseded.ended.push(...moved.ended);
    superseded.triggers.push(...moved.triggers);
  }
  return { ...written, ...superseded };
}

/** The queues of the cluster a pipeline is in, for its new jobs; null when it is in none (or the cluster is gone). */
export async function clusterQueuesOf(r: Pick<ProgressRepositories, 'clusters'>, clusterId: string | null): Promise<ClusterQueues | null> {
  if (!clusterId) return null;
  const cluster = await r.clusters.findClusterById(clusterId);
  if (!cluster) return null;
  const queues = await r.clusters.queueIds(clusterId);
  return { clusterId, defaultQueueId: cluster.defaultQueueId, byKey: new Map(queues.map((q) => [q.key, q.id])) };
}
