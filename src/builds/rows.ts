/**
 * Rows of `builds` and build objects: a row (as either driver returns it, with the creator's
 * columns joined) into a Build, and a new build into the row that stores it.
 */
import { parseJson, toBool, toDate, toDateOrNull } from '../db/values';
import { userFromRow } from '../user/rows';
import type { NotifyEntry } from '../pipelines/configuration';
import type { Author, Build, BuildState, NewBuild, PullRequest, TriggeredFrom } from './model';

export function buildFromRow(r: Record<string, unknown>): Build {
  return {
    id: r.id as string,
    pipelineId: r.pipeline_id as string,
    organizationId: r.organization_id as string,
    number: Number(r.number),
    state: r.state as BuildState,
    blocked: toBool(r.blocked),
    message: (r.message as string | null) ?? null,
    commit: r.commit as string,
    branch: r.branch as string,
    tag: (r.tag as string | null) ?? null,
    env: parseJson(r.env, {}),
    metaData: parseJson(r.meta_data, {}),
    source: r.source as string,
    author: parseJson<Author | null>(r.author, null),
    creator: r.creator_id
      ? userFromRow({ id: r.creator_id as string, name: r.creator_name as string, email: r.creator_email as string, created_at: r.creator_created_at })
      : null,
    pullRequest: parseJson<PullRequest | null>(r.pull_request, null),
    cleanCheckout: toBool(r.clean_checkout),
    rebuiltFrom: r.rebuilt_from_id ? { id: r.rebuilt_from_id as string, number: Number(r.rebuilt_from_number) } : null,
    triggeredFrom: parseJson<TriggeredFrom | null>(r.triggered_from, null),
    cancelReason: (r.cancel_reason as string | null) ?? null,
    notify: parseJson<NotifyEntry[]>(r.notify, []),
    createdAt: toDate(r.created_at),
    scheduledAt: toDateOrNull(r.scheduled_at),
    startedAt: toDateOrNull(r.started_at),
    failingAt: toDateOrNull(r.failing_at),
    finishedAt: toDateOrNull(r.finished_at),
  };
}

/** A new build's row. */
export function toBuildRow(build: NewBuild) {
  return {
    id: build.id,
    pipeline_id: build.pipelineId,
    organization_id: build.organizationId,
    state: build.state,
    blocked: build.blocked,
    message: build.message,
    commit: build.commit,
    branch: build.branch,
    tag: build.tag,
    env: JSON.stringify(build.env),
    meta_data: JSON.stringify(build.metaData),
    source: build.source,
    author: build.author ? JSON.stringify(build.author) : null,
    creator_id: build.creatorId,
    pull_request: build.pullRequest ? JSON.stringify(build.pullRequest) : null,
    clean_checkout: build.cleanCheckout,
    rebuilt_from_id: build.rebuiltFrom?.id ?? null,
    rebuilt_from_number: build.rebuiltFrom?.number ?? null,
    triggered_from: build.triggeredFrom ? JSON.stringify(build.triggeredFrom) : null,
    cancel_reason: build.cancelReason,
    notify: build.notify.length > 0 ? JSON.stringify(build.notify) : null,
    created_at: build.createdAt,
    scheduled_at: build.scheduledAt,
    started_at: build.startedAt,
    failing_at: build.failingAt,
    finished_at: build.finishedAt,
    ...(build.triggeredFromJobId ? { triggered_from_job_id: build.triggeredFromJobId, trigger_depth: build.triggerDepth ?? 0 } : {}),
  };
}
