/**
 * Rows of `jobs` and job objects: a row (as either driver returns it, or as Postgres's `json_agg`
 * gives it inside a build's row) into a Job, a job read with its build's columns into a
 * JobContext, and a planned job into the row that stores it.
 */
import type { JobType, PlannedJob, StepSignature } from './plan';
import type { Author, JobRetryType, NewBuild, PullRequest, TriggeredFrom, WebhookEvent } from '../model';
import { BUILD_SOURCE_VALUES } from '../rows';
import { parseJson, toBool, toDate, toDateOrNull } from '../../db/values';
import type { BuildsRow, ClustersRow, JobsRow, OrganizationsRow, PipelinesRow, UsersRow } from '../../db/tables';
import type { Step } from '../../pipelines/configuration';
import { userFromRow } from '../../user/rows';
import type { User } from '../../core/identity';
import { dispatchKey } from './dispatch-key';
import type { Job, JobContext } from './model';
import { type JsonRow, type Nullable, type Prefixed, jsonColumn, oneOf, oneOfOrNull } from '../../db/row-types';
import { isCountArray } from '../../core/guards';
import { everyValue } from '../../core/enum-values';
import { JOB_STATES } from '../states';

/** Every job type (a step's type). */
export const JOB_TYPE_VALUES = everyValue<JobType>()(['script', 'waiter', 'manual', 'trigger']);

/** Every way a job is retried. */
export const JOB_RETRY_TYPE_VALUES = everyValue<JobRetryType>()(['manual', 'automatic']);

/** The columns a new job's row always has (toJobRow); the others take their defaults. */
type WrittenJobColumns =
  | 'id'
  | 'build_id'
  | 'position'
  | 'type'
  | 'state'
  | 'name'
  | 'step_key'
  | 'step_id'
  | 'step_signature'
  | 'step'
  | 'command'
  | 'agent_query_rules'
  | 'env'
  | 'artifact_paths'
  | 'timeout_in_minutes'
  | 'parallel_group_index'
  | 'parallel_group_total'
  | 'broken_reason'
  | 'priority'
  | 'cluster_id'
  | 'cluster_queue_id'
  | 'created_at';

/**
 * A job's row as jobFromRow reads it: from either driver, from Postgres's `json_agg` (timestamps
 * as text), or as toJobRow wrote it (the columns left out read as their defaults).
 */
export type JobRowIn = Pick<JobsRow | JsonRow<JobsRow>, WrittenJobColumns> & Partial<JobsRow | JsonRow<JobsRow>>;

/** A job read with its build's context (JobRepository's `withContext`). */
export type JobContextRow = JobsRow & {
  ctx_org_id: BuildsRow['organization_id'];
  ctx_org_slug: OrganizationsRow['slug'];
  ctx_pipeline_slug: PipelinesRow['slug'];
  ctx_build_number: BuildsRow['number'];
  ctx_pipeline_name: PipelinesRow['name'];
} & Prefixed<Pick<PipelinesRow, 'repository' | 'clone_mirror_url' | 'provider_id' | 'default_branch'>, 'ctx_'> &
  Prefixed<
    Pick<
      BuildsRow,
      | 'pull_request'
      | 'author'
      | 'clean_checkout'
      | 'branch'
      | 'commit'
      | 'message'
      | 'tag'
      | 'source'
      | 'triggered_from'
      | 'rebuilt_from_id'
      | 'rebuilt_from_number'
      | 'webhook_event'
    >,
    'ctx_'
  > &
  Nullable<Prefixed<Pick<UsersRow, 'name' | 'email'>, 'ctx_creator_'>> & {
    ctx_cluster_name: ClustersRow['name'] | null;
    /** The build's latest unblock before the job (`jobs.unblocked_by` of that block step). */
    ctx_unblocked_by: JobsRow['unblocked_by'];
    /** The teams' slugs, each behind whose they are (`c`, `p`, `u`), joined by ":" (null: none). */
    ctx_teams: string | null;
  };

export function jobFromRow(r: JobRowIn): Job {
  return {
    id: r.id,
    buildId: r.build_id,
    position: Number(r.position),
    type: oneOf(JOB_TYPE_VALUES, r.type, 'jobs.type'),
    state: oneOf(JOB_STATES, r.state, 'jobs.state'),
    name: r.name ?? null,
    stepKey: r.step_key ?? null,
    stepId: r.step_id,
    groupId: r.group_id ?? null,
    signature: parseJson<StepSignature | null>(r.step_signature, null),
    step: stepFromColumn(r.step),
    command: r.command ?? null,
    agentQueryRules: parseJson(r.agent_query_rules, []),
    env: parseJson(r.env, {}),
    artifactPaths: r.artifact_paths ?? null,
    timeoutInMinutes: r.timeout_in_minutes ?? null,
    parallelGroupIndex: r.parallel_group_index ?? null,
    parallelGroupTotal: r.parallel_group_total ?? null,
    softFailed: toBool(r.soft_failed),
    exitStatus: r.exit_status ?? null,
    brokenReason: r.broken_reason ?? null,
    priority: Number(r.priority ?? 0),
    clusterId: r.cluster_id ?? null,
    clusterQueueId: r.cluster_queue_id ?? null,
    retried: toBool(r.retried),
    retriedInJobId: r.retried_in_job_id ?? null,
    retriesCount: r.retries_count ?? null,
    automaticRetries: automaticRetriesColumn(r.automatic_retries),
    retryType: oneOfOrNull(JOB_RETRY_TYPE_VALUES, r.retry_type, 'jobs.retry_type'),
    retrySource: parseJson(r.retry_source, null),
    agentId: r.agent_id ?? null,
    uploadedByStepId: r.uploaded_by_step_id ?? null,
    promisedExitStatus: r.promised_exit_status ?? null,
    promisedExitStatusAt: toDateOrNull(r.promised_exit_status_at),
    unblockedBy: userSnapshotFromColumn(r.unblocked_by),
    retriedBy: userSnapshotFromColumn(r.retried_by),
    unblockedAt: toDateOrNull(r.unblocked_at),
    triggeredBuild: parseJson(r.triggered_build, null),
    signal: r.signal ?? null,
    signalReason: r.signal_reason ?? null,
    expiredAt: toDateOrNull(r.expired_at),
    createdAt: toDate(r.created_at),
    scheduledAt: toDateOrNull(r.scheduled_at),
    runnableAt: toDateOrNull(r.runnable_at),
    startedAt: toDateOrNull(r.started_at),
    finishedAt: toDateOrNull(r.finished_at),
  };
}

/** A job's stored step (`jobs.step`); an unreadable one reads as a plain wait step. */
export function stepFromColumn(value: unknown): Step {
  return parseJson<Step>(value, { type: 'waiter', continue_on_failure: false });
}

/** A user kept on a job as a JSON snapshot (`unblocked_by`, `retried_by`), or null. */
function userSnapshotFromColumn(value: unknown): User | null {
  return value ? userFromRow(parseJson(value, { id: '', name: '', email: '', created_at: null })) : null;
}

/** The JSON snapshot of a user a job keeps (`unblocked_by`, `retried_by`): who it was at the time. */
export function userSnapshotColumn(user: User): string {
  return JSON.stringify({ id: user.id, name: user.name, email: user.email, created_at: user.createdAt.toISOString() });
}

/** A planned job's row in `build`; its times are the build's creation (or, for an upload, the upload's). */
export function toJobRow(build: Pick<NewBuild, 'id' | 'pipelineId' | 'organizationId' | 'createdAt'>, j: PlannedJob) {
  const agentQueryRules = JSON.stringify(j.agentQueryRules);
  return {
    id: j.id,
    build_id: build.id,
    pipeline_id: build.pipelineId,
    // What dispatch looks jobs up by (src/db/migrations/20261125110000_job_dispatch.ts).
    organization_id: build.organizationId,
    dispatch_key: dispatchKey(agentQueryRules, j.clusterId ?? null),
    cluster_id: j.clusterId ?? null,
    cluster_queue_id: j.clusterQueueId ?? null,
    position: j.position,
    type: j.type,
    state: j.state,
    name: j.name,
    step_key: j.stepKey,
    step_id: j.stepId,
    group_id: j.groupId,
    step_signature: j.signature ? JSON.stringify(j.signature) : null,
    step: JSON.stringify(j.step),
    command: j.command,
    agent_query_rules: agentQueryRules,
    env: JSON.stringify(j.env),
    artifact_paths: j.artifactPaths,
    timeout_in_minutes: j.timeoutInMinutes,
    parallel_group_index: j.parallelGroupIndex,
    parallel_group_total: j.parallelGroupTotal,
    broken_reason: j.brokenReason,
    priority: j.priority,
    concurrency_group: j.concurrency?.group ?? null,
    concurrency_limit: j.concurrency?.limit ?? null,
    concurrency_method: j.concurrency?.method ?? null,
    ...jobTimes(build, j),
  };
}

/**
 * A new job's timestamps: what runs at once is scheduled and runnable now (a job of a concurrency
 * group scheduled, and runnable once its group admits it); a filtered-out step is over.
 */
function jobTimes(build: Pick<NewBuild, 'createdAt'>, j: PlannedJob) {
  return {
    created_at: build.createdAt,
    // Its place in dispatch after its priority (src/db/migrations/20261129100000_job_dispatch_at.ts); an upload gives its uploader's.
    dispatch_at: build.createdAt,
    scheduled_at: j.state === 'scheduled' || j.state === 'limited' ? build.createdAt : null,
    runnable_at: j.state === 'scheduled' ? build.createdAt : null,
    finished_at: j.state === 'broken' ? build.createdAt : null,
  };
}

export function contextFromRow(r: JobContextRow): JobContext {
  const teams = teamsOf(r.ctx_teams);
  const unblocker = userSnapshotFromColumn(r.ctx_unblocked_by);
  return {
    job: jobFromRow(r),
    organizationId: r.ctx_org_id,
    orgSlug: r.ctx_org_slug,
    pipelineId: r.pipeline_id,
    pipelineSlug: r.ctx_pipeline_slug,
    pipelineName: r.ctx_pipeline_name,
    pipelineDefaultBranch: r.ctx_default_branch ?? null,
    repository: r.ctx_repository,
    cloneMirrorUrl: r.ctx_clone_mirror_url ?? null,
    providerId: r.ctx_provider_id,
    pipelineTeams: teams.p,
    clusterName: r.ctx_cluster_name ?? null,
    unblocker: unblocker && { id: unblocker.id, name: unblocker.name, email: unblocker.email, teams: teams.u },
    build: {
      id: r.build_id,
      number: Number(r.ctx_build_number),
      branch: r.ctx_branch,
      commit: r.ctx_commit,
      message: r.ctx_message ?? null,
      tag: r.ctx_tag ?? null,
      pullRequest: parseJson<PullRequest | null>(r.ctx_pull_request, null),
      author: parseJson<Author | null>(r.ctx_author, null),
      cleanCheckout: toBool(r.ctx_clean_checkout),
      creator: r.ctx_creator_name ? { name: r.ctx_creator_name, email: r.ctx_creator_email ?? '' } : null,
      creatorTeams: teams.c,
      webhookEvent: parseJson<WebhookEvent | null>(r.ctx_webhook_event, null),
      source: oneOf(BUILD_SOURCE_VALUES, r.ctx_source, 'builds.source'),
      triggeredFrom: parseJson<TriggeredFrom | null>(r.ctx_triggered_from, null),
      rebuiltFrom: r.ctx_rebuilt_from_id ? { id: r.ctx_rebuilt_from_id, number: Number(r.ctx_rebuilt_from_number) } : null,
    },
  };
}

/**
 * The context's teams (`ctx_teams`: `cplatform:pdeploy:uplatform`) by whose they are: the
 * creator's (`c`), the pipeline's (`p`) and the unblocker's (`u`), each list in slug order. A
 * slug is lower-case letters, digits and dashes: neither the letter nor ":" is ambiguous.
 */
function teamsOf(value: string | null | undefined): Record<'c' | 'p' | 'u', string[]> {
  const teams: Record<'c' | 'p' | 'u', string[]> = { c: [], p: [], u: [] };
  for (const entry of value ? value.split(':') : []) {
    const whose = entry[0];
    if (whose === 'c' || whose === 'p' || whose === 'u') teams[whose].push(entry.slice(1));
  }
  return teams;
}

/** `jobs.automatic_retries`: each automatic retry rule's count of retries of the job's line, by the rule's index. */
export function automaticRetriesColumn(value: unknown): number[] {
  return jsonColumn(value, [], isCountArray, 'jobs.automatic_retries');
}
