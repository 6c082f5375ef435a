/**
 * Rows of `jobs` and job objects: a row (as either driver returns it, or as Postgres's `json_agg`
 * gives it inside a build's row) into a Job, a job read with its build's columns into a
 * JobContext, and a planned job into the row that stores it.
 */
import type { JobType, PlannedJob, StepSignature } from './plan';
import type { JobState, NewBuild, PullRequest } from '../model';
import { parseJson, toBool, toDate, toDateOrNull } from '../../db/values';
import type { Step } from '../../pipelines/configuration';
import { userFromRow } from '../../user/rows';
import type { User } from '../../core/identity';
import { dispatchKey } from './dispatch-key';
import type { Job, JobContext } from './model';

export function jobFromRow(r: Record<string, unknown>): Job {
  return {
    id: r.id as string,
    buildId: r.build_id as string,
    position: Number(r.position),
    type: r.type as JobType,
    state: r.state as JobState,
    name: (r.name as string | null) ?? null,
    stepKey: (r.step_key as string | null) ?? null,
    stepId: r.step_id as string,
    signature: parseJson<StepSignature | null>(r.step_signature, null),
    step: parseJson<Step>(r.step, { type: 'waiter', continue_on_failure: false }),
    command: (r.command as string | null) ?? null,
    agentQueryRules: parseJson(r.agent_query_rules, []),
    env: parseJson(r.env, {}),
    artifactPaths: (r.artifact_paths as string | null) ?? null,
    timeoutInMinutes: (r.timeout_in_minutes as number | null) ?? null,
    parallelGroupIndex: (r.parallel_group_index as number | null) ?? null,
    parallelGroupTotal: (r.parallel_group_total as number | null) ?? null,
    softFailed: toBool(r.soft_failed),
    exitStatus: (r.exit_status as number | null) ?? null,
    brokenReason: (r.broken_reason as string | null) ?? null,
    priority: Number(r.priority ?? 0),
    clusterId: (r.cluster_id as string | null) ?? null,
    clusterQueueId: (r.cluster_queue_id as string | null) ?? null,
    retried: toBool(r.retried),
    retriedInJobId: (r.retried_in_job_id as string | null) ?? null,
    retriesCount: (r.retries_count as number | null) ?? null,
    retryType: (r.retry_type as string | null) ?? null,
    retrySource: parseJson(r.retry_source, null),
    agentId: (r.agent_id as string | null) ?? null,
    unblockedBy: userSnapshotFromColumn(r.unblocked_by),
    retriedBy: userSnapshotFromColumn(r.retried_by),
    unblockedAt: toDateOrNull(r.unblocked_at),
    triggeredBuild: parseJson(r.triggered_build, null),
    signal: (r.signal as string | null) ?? null,
    signalReason: (r.signal_reason as string | null) ?? null,
    expiredAt: toDateOrNull(r.expired_at),
    createdAt: toDate(r.created_at),
    scheduledAt: toDateOrNull(r.scheduled_at),
    runnableAt: toDateOrNull(r.runnable_at),
    startedAt: toDateOrNull(r.started_at),
    finishedAt: toDateOrNull(r.finished_at),
  };
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
    ...jobTimes(build, j),
  };
}

/** A new job's timestamps: what runs at once is scheduled and runnable now; a filtered-out step is over. */
function jobTimes(build: Pick<NewBuild, 'createdAt'>, j: PlannedJob) {
  return {
    created_at: build.createdAt,
    scheduled_at: j.state === 'scheduled' ? build.createdAt : null,
    runnable_at: j.state === 'scheduled' ? build.createdAt : null,
    finished_at: j.state === 'broken' ? build.createdAt : null,
  };
}

export function contextFromRow(r: Record<string, unknown>): JobContext {
  return {
    job: jobFromRow(r),
    organizationId: r.ctx_org_id as string,
    orgSlug: r.ctx_org_slug as string,
    pipelineSlug: r.ctx_pipeline_slug as string,
    repository: r.ctx_repository as string,
    providerId: r.ctx_provider_id as string,
    build: {
      id: r.build_id as string,
      number: Number(r.ctx_build_number),
      branch: r.ctx_branch as string,
      commit: r.ctx_commit as string,
      message: (r.ctx_message as string | null) ?? null,
      tag: (r.ctx_tag as string | null) ?? null,
      pullRequest: parseJson<PullRequest | null>(r.ctx_pull_request, null),
      creator: r.ctx_creator_name ? { name: r.ctx_creator_name as string, email: r.ctx_creator_email as string } : null,
    },
  };
}
