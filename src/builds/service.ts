/**
 * The rules of builds as callers ask for them: creating one (permissions, archived pipelines,
 * branch filters, the fields of an API, rebuild or webhook build), listing with filters across
 * the three scopes, get, cancel and rebuild. The writes themselves (numbering, jobs from steps,
 * skipping and canceling older builds of the branch, the state machine) are build
 * progression's (./progress/service.ts). No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components, operations } from '../../generated/api';
import { BadRequestError, ForbiddenError, NotFoundError, UnprocessableError } from '../core/errors';
import { matchesBranchFilter } from '../pipelines/branch-filter';
import type { Pipeline } from '../pipelines/repository';
import type { PipelineService } from '../pipelines/service';
import type { Job } from './jobs/model';
import type { Build, BuildFilter, NewBuildFields, PullRequest } from './model';
import { BULK_RETRYABLE_JOB_STATES, CANCELED_BUILD_STATES, FINISHED_BUILD_STATES, retryFrom } from './states';
import type { BuildProgress } from './progress/service';
import type { ConditionContext } from '../pipelines/filter-condition';
import type { FactsWanted } from '../rules/policy';
import type { BuildAndJobs, BuildRepository } from './repository';
import { withJobsOnly } from './jobs/state';
import type { Principal, Actor, Permissions } from '../core/identity';
import { clock } from '../core/clock';
import { isOneOf } from '../db/row-types';

export type CreateBuildInput = components['schemas']['CreateBuildRequest'];

/**
 * The list operations' filters, as the validator leaves them; `exclude_jobs`: the builds come
 * without jobs, and none are read; `exclude_pipeline`: without their pipeline, and its counts are
 * not read. The three list operations take the same (the spec shares the parameters).
 */
export type ListQuery = Omit<NonNullable<operations['listAllBuilds']['parameters']['query']>, 'page' | 'per_page'>;

export interface BuildWithJobs extends BuildAndJobs {
  pipeline: Pipeline;
  perms: Permissions;
  /** The caller within the build's organization (decides what the response may show). */
  actor: Actor;
}

/** What a webhook delivery decides about a build. */
export type DeliveredBuild = Pick<Build, 'commit' | 'branch' | 'tag' | 'message' | 'author' | 'pullRequest'> & Partial<Pick<Build, 'webhookEvent'>>;

/** The `states` of a bulk retry (`retry_failed_jobs`), as the real API names them: the job states it starts from, and `soft_failed`. */
const BULK_RETRY_STATES: readonly string[] = [...BULK_RETRYABLE_JOB_STATES, 'soft_failed'].sort();

/** Which bulk retry state a finished job is in, if any: `failed` is a hard failure, `soft_failed` one its step lets pass. */
function bulkRetryStateOf(job: Job): string | null {
  if (job.state === 'failed') return job.softFailed ? 'soft_failed' : 'failed';
  return isOneOf(BULK_RETRYABLE_JOB_STATES, job.state) ? job.state : null;
}

export class BuildService {
  /** Every write that moves a build (create, cancel) goes through `progress`, which owns its transaction. */
  constructor(
    private readonly builds: BuildRepository,
    private readonly pipelines: PipelineService,
    private readonly progress: BuildProgress,
  ) {}

  /** What a step's `if` reads of a stored build, for a rule's conditions about it (an artifact search's). */
  storedBuildConditions(build: Build, pipeline: Pipeline, want: FactsWanted): Promise<ConditionContext> {
    return this.progress.storedBuildConditions(build, pipeline, want);
  }

  /** A build the caller asks for: `source` is `api`, or `ui` from the web pages (the docs' build sources). */
  async create(actor: Actor, pipelineSlug: string, input: CreateBuildInput, source: 'api' | 'ui' = 'api'): Promise<BuildWithJobs> {
    const { pipeline, perms } = await this.pipelines.get(actor, pipelineSlug);
    if (!perms.build) throw new ForbiddenError();
    if (pipeline.archivedAt) throw new UnprocessableError('This pipeline is archived: unarchive it before creating builds.');
    // branch_configuration.md: "Builds created for pull requests ignore any pipeline-level branch filters."
    const filtered = !input.ignore_pipeline_branch_filters && input.pull_request_id === undefined;
    if (filtered && pipeline.branchConfiguration && !matchesBranchFilter(pipeline.branchConfiguration, input.branch)) {
      throw new UnprocessableError(
        `Branch "${input.branch}" does not match the pipeline's branch filter "${pipeline.branchConfiguration}". Use ignore_pipeline_branch_filters to build it anyway.`,
      );
    }
    const pullRequest: PullRequest | null =
      input.pull_request_id !== undefined
        ? {
            id: String(input.pull_request_id),
            base: input.pull_request_base_branch ?? null,
            repository: input.pull_request_repository ?? null,
            ...(input.pull_request_labels ? { labels: input.pull_request_labels } : {}),
          }
        : null;
    // The docs: `author` defaults to the user making the API request.
    const user = actor.principal.user;
    const author = input.author && (input.author.name || input.author.email || input.author.username) ? input.author : { name: user.name, email: user.email };
    return this.createFrom(actor, pipeline, perms, {
      commit: input.commit,
      branch: input.branch,
      message: input.message ?? null,
      author,
      env: input.env ?? {},
      metaData: input.meta_data ?? {},
      cleanCheckout: input.clean_checkout ?? false,
      pullRequest,
      rebuiltFrom: null,
      source,
    });
  }

  /** A rebuild, its `source` as `create`'s. */
  async rebuild(actor: Actor, pipelineSlug: string, number: number, source: 'api' | 'ui' = 'api'): Promise<BuildWithJobs> {
    const { pipeline, perms } = await this.pipelines.get(actor, pipelineSlug);
    const original = await this.builds.findByNumber(pipeline.id, number);
    if (!original) throw new NotFoundError('build');
    if (!perms.build) throw new ForbiddenError();
    if (pipeline.archivedAt) throw new UnprocessableError('This pipeline is archived: unarchive it before rebuilding.');
    if (!pipeline.allowRebuilds) throw new UnprocessableError('Rebuilds are turned off for this pipeline (allow_rebuilds is false).');
    return this.createFrom(actor, pipeline, perms, {
      commit: original.commit,
      branch: original.branch,
      // builds.md, Rebuild: "Anything captured on the original build ... is replayed on the new build."
      tag: original.tag,
      message: original.message,
      author: original.author,
      env: original.env,
      metaData: original.metaData,
      cleanCheckout: original.cleanCheckout,
      pullRequest: original.pullRequest,
      rebuiltFrom: { id: original.id, number: original.number },
      source,
    });
  }

  /** A build from a provider webhook delivery: no creator, `source: "webhook"`, the same create path as API builds. */
  async createFromDelivery(pipeline: Pipeline, b: DeliveredBuild): Promise<Build> {
    return (await this.progress.createBuild(pipeline, null, { ...b, env: {}, metaData: {}, cleanCheckout: false, rebuiltFrom: null, source: 'webhook' })).build;
  }

  /** A build from a pipeline trigger's incoming call: no creator, `source: "webhook"`, the same create path as API builds. */
  async createFromPipelineTrigger(pipeline: Pipeline, b: Pick<Build, 'commit' | 'branch' | 'message' | 'env' | 'metaData'>): Promise<Build> {
    return (
      await this.progress.createBuild(pipeline, null, { ...b, author: null, pullRequest: null, cleanCheckout: false, rebuiltFrom: null, source: 'webhook' })
    ).build;
  }

  /** A build by id, for callers that already hold a credential for it (an agent running one of its jobs). */
  /** The state of the branch's latest finished build before this one (notifications: `build_fixed`). */
  previousFinishedState(b: Pick<Build, 'pipelineId' | 'branch' | 'number'>): Promise<string | null> {
    return this.builds.previousFinishedState(b.pipelineId, b.branch, b.number);
  }

  findById(id: string): Promise<Build | null> {
    return this.builds.findById(id);
  }

  /** A build and every one of its jobs (retried ones too) by id, for callers that already hold a credential for it. */
  async findWithJobsById(id: string): Promise<{ build: Build; jobs: Job[] } | null> {
    const build = await this.builds.findById(id);
    return build ? this.builds.findWithJobs(build.pipelineId, build.number, true) : null;
  }

  /**
   * The build of a job (retried jobs included) and all its jobs, as the caller may read it, for
   * the organization-scoped job paths (`/v2/organizations/{org}/jobs/{job_id}/...`): a job of
   * another organization or of a pipeline the caller may not read is as good as missing.
   */
  async getByJobId(actor: Actor, jobId: string): Promise<BuildWithJobs> {
    const build = await this.builds.findByJobId(jobId);
    if (!build || build.organizationId !== actor.organization.id) throw new NotFoundError('job');
    const readable = (await this.pipelines.readableByIds(new Map([[actor.organization.id, actor]]), [build.pipelineId])).get(build.pipelineId);
    const found = readable ? await this.builds.findWithJobs(build.pipelineId, build.number, true) : null;
    if (!readable || !found) throw new NotFoundError('job');
    return { ...found, pipeline: readable.pipeline, perms: readable.perms, actor };
  }

  /** Whether the pipeline has a build of `commit` (on `branch`, when given). */
  async hasBuildOf(pipelineId: string, commit: string, branch?: string): Promise<boolean> {
    const found = await this.builds.list({ scope: { pipelineId }, commits: [commit], branches: branch === undefined ? undefined : [branch] }, 0, 1);
    return found.length > 0;
  }

  /** Cancels the scheduled and running builds of a branch (it was deleted); returns how many. */
  cancelBranchBuilds(pipelineId: string, branch: string): Promise<number> {
    return this.progress.cancelBranch(pipelineId, branch, clock.now());
  }

  private async createFrom(actor: Actor, pipeline: Pipeline, perms: Permissions, b: NewBuildFields): Promise<BuildWithJobs> {
    const { build, jobs } = await this.progress.createBuild(pipeline, actor.principal.user, b);
    return { build, jobs, pipeline, perms, actor };
  }

  async get(
    actor: Actor,
    pipelineSlug: string,
    number: number,
    includeRetried: boolean,
    exclude: { jobs?: boolean; pipeline?: boolean } = {},
  ): Promise<BuildWithJobs> {
    const read = this.builds.byNumberAlong(actor.organization.id, pipelineSlug, number, includeRetried, !exclude.jobs);
    const { pipeline, perms, along: found } = await this.pipelines.getAlong(actor, pipelineSlug, { counts: !exclude.pipeline }, read);
    if (!found) throw new NotFoundError('build');
    return { ...found, pipeline, perms, actor };
  }

  async cancel(actor: Actor, pipelineSlug: string, number: number): Promise<BuildWithJobs> {
    const { pipeline, perms } = await this.pipelines.get(actor, pipelineSlug);
    const build = await this.builds.findByNumber(pipeline.id, number);
    if (!build) throw new NotFoundError('build');
    if (!perms.build) throw new ForbiddenError();
    // Canceled, the build's state machine runs: a build a synchronous trigger step is waiting on ends that step (failed).
    await this.progress.cancelOrRefuse(build, clock.now());
    return this.get(actor, pipelineSlug, number, false);
  }

  /**
   * Retries, in one go, the command jobs of the build that ended in one of `states` (all five
   * when none are named) and were not retried yet, leaving alone steps that forbid manual
   * retries. Answers the build and how many jobs were queued again.
   */
  async retryFailed(actor: Actor, pipelineSlug: string, number: number, states: string | undefined): Promise<{ item: BuildWithJobs; retried: number }> {
    const named = (states ?? '')
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
    const invalid = named.filter((s) => !isOneOf(BULK_RETRY_STATES, s));
    if (invalid.length) throw new BadRequestError(`Invalid states: ${invalid.join(', ')}. Valid states are ${BULK_RETRY_STATES.join(', ')}.`);
    const wanted = new Set(named.length ? named : BULK_RETRY_STATES);
    const item = await this.get(actor, pipelineSlug, number, false);
    if (!item.perms.build) throw new ForbiddenError();
    if (CANCELED_BUILD_STATES.includes(item.build.state)) throw new UnprocessableError('Jobs from canceled builds cannot be retried');
    const retries = item.jobs
      .filter((j) => {
        const state = bulkRetryStateOf(j);
        const manual = j.step.type === 'script' ? j.step.retry?.manual : undefined;
        return j.type === 'script' && !j.retried && state !== null && wanted.has(state) && manual?.allowed !== false;
      })
      .map((j) => ({ jobId: j.id, newId: crypto.randomUUID(), fromStates: retryFrom('retry_bulk', j.state) }));
    const retried = retries.length ? await this.progress.retryJobs(item.build.id, retries, actor.principal.user) : 0;
    return { item: retried ? await this.get(actor, pipelineSlug, number, false) : item, retried };
  }

  /** Builds of one pipeline, one organization, or every organization the principal reaches. */
  async list(
    scope: { actor: Actor; pipelineSlug?: string } | { principal: Principal },
    query: ListQuery,
    offset: number,
    limit: number,
  ): Promise<BuildWithJobs[]> {
    const actors = 'actor' in scope ? [scope.actor] : [...scope.principal.organizationsBySlug.values()].map((r) => ({ principal: scope.principal, ...r }));
    const actorByOrg = new Map(actors.map((a) => [a.organization.id, a]));
    const pipelinesById = new Map<string, { pipeline: Pipeline; perms: Permissions }>();
    let scopeFilter: BuildFilter['scope'];
    if ('actor' in scope && scope.pipelineSlug) {
      const found = await this.pipelines.get(scope.actor, scope.pipelineSlug, { counts: !query.exclude_pipeline });
      scopeFilter = { pipelineId: found.pipeline.id };
      pipelinesById.set(found.pipeline.id, found);
    } else {
      scopeFilter = {
        organizations: actors.map((a) => ({ id: a.organization.id, restrictedToUserId: this.pipelines.isRestricted(a) ? a.principal.user.id : undefined })),
      };
    }
    const builds = await this.builds.listWithJobs(
      { scope: scopeFilter, ...this.filterFrom(query) },
      offset,
      limit,
      query.include_retried_jobs ?? false,
      !query.exclude_jobs,
    );
    const pipelines = pipelinesById.size
      ? pipelinesById
      : await this.pipelines.readableByIds(actorByOrg, [...new Set(builds.map((b) => b.build.pipelineId))], { counts: !query.exclude_pipeline });
    // The list query already kept to what the caller may read; a pipeline missing here was
    // deleted between the two reads, and its builds went with it.
    const shown = query.include_paused === false ? await this.withoutPausedJobs(builds) : builds;
    return shown.flatMap((found) => {
      const entry = pipelines.get(found.build.pipelineId);
      return entry ? [{ ...found, ...entry, actor: actorByOrg.get(found.build.organizationId)! }] : [];
    });
  }

  /** `include_paused=false`: each build without its jobs on paused cluster queues (`job_state_counts` still counts them). */
  private async withoutPausedJobs(builds: BuildAndJobs[]): Promise<BuildAndJobs[]> {
    const queueIds = [...new Set(builds.flatMap((b) => b.jobs.flatMap((j) => (j.clusterQueueId ? [j.clusterQueueId] : []))))];
    const paused = await this.builds.pausedQueues(queueIds);
    if (!paused.size) return builds;
    return builds.map((b) => withJobsOnly(b, (j) => !(j.clusterQueueId && paused.has(j.clusterQueueId))));
  }

  private filterFrom(q: ListQuery): Omit<BuildFilter, 'scope'> {
    const list = <T extends string>(v: T | T[] | undefined): T[] | undefined => (v === undefined ? undefined : Array.isArray(v) ? v : [v]);
    const time = (name: string, v: string | undefined) => {
      if (v === undefined) return undefined;
      const d = new Date(v);
      if (Number.isNaN(d.getTime())) throw new BadRequestError(`Invalid parameter ${name}: must be an ISO 8601 time`);
      return d;
    };
    const states = list(q.state)?.flatMap((s) => (s === 'finished' ? FINISHED_BUILD_STATES : [s]));
    return {
      branches: list(q.branch),
      commits: list(q.commit),
      states,
      createdFrom: time('created_from', q.created_from),
      createdTo: time('created_to', q.created_to),
      finishedFrom: time('finished_from', q.finished_from),
      creatorId: q.creator,
      metaData: q.meta_data,
      withoutPaused: q.include_paused === false,
    };
  }
}
