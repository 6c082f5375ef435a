/**
 * Rows of `builds` and build objects: a row (as either driver returns it, with the creator's
 * columns joined) into a Build, and a new build into the row that stores it.
 */
import { parseJson, toBool, toDate, toDateOrNull } from '../db/values';
import { userFromRow } from '../user/rows';
import type { BuildsRow, UsersRow } from '../db/tables';
import type { NotifyEntry } from '../pipelines/configuration';
import type { Author, Build, BuildSource, NewBuild, PullRequest, TriggeredFrom, WebhookEvent } from './model';
import { type Nullable, type Prefixed, type StoredRow, oneOf } from '../db/row-types';
import { everyValue } from '../core/enum-values';
import { BUILD_STATES } from './states';

/** Every build source, checked against the spec's list. */
export const BUILD_SOURCE_VALUES = everyValue<BuildSource>()(['api', 'webhook', 'ui', 'trigger_job', 'schedule', 'pipeline_upload']);

/** The creator's columns a build is read with (`u.name as creator_name`...): null without a creator. */
export type BuildCreatorColumns = Nullable<Prefixed<Pick<UsersRow, 'name' | 'email' | 'created_at'>, 'creator_'>>;

/** The columns of a build's row buildFromRow reads (a new build's row has no others). */
type ReadBuildColumns = Exclude<keyof BuildsRow, 'org_number' | 'triggered_from_job_id' | 'trigger_depth'>;

/** A build's row as buildFromRow reads it: from either driver with its creator's columns (or as Postgres's JSON of such a row), or as toBuildRow wrote it. */
export type BuildRowIn = StoredRow<Pick<BuildsRow, ReadBuildColumns> & Partial<BuildCreatorColumns>>;

export function buildFromRow(r: BuildRowIn): Build {
  return {
    id: r.id,
    pipelineId: r.pipeline_id,
    organizationId: r.organization_id,
    number: Number(r.number),
    state: oneOf(BUILD_STATES, r.state, 'builds.state'),
    blocked: toBool(r.blocked),
    message: r.message ?? null,
    commit: r.commit,
    branch: r.branch,
    tag: r.tag ?? null,
    env: parseJson(r.env, {}),
    metaData: parseJson(r.meta_data, {}),
    source: oneOf(BUILD_SOURCE_VALUES, r.source, 'builds.source'),
    author: parseJson<Author | null>(r.author, null),
    creator:
      r.creator_id && r.creator_name != null && r.creator_email != null
        ? userFromRow({ id: r.creator_id, name: r.creator_name, email: r.creator_email, created_at: r.creator_created_at })
        : null,
    pullRequest: parseJson<PullRequest | null>(r.pull_request, null),
    webhookEvent: parseJson<WebhookEvent | null>(r.webhook_event, null),
    cleanCheckout: toBool(r.clean_checkout),
    rebuiltFrom: r.rebuilt_from_id ? { id: r.rebuilt_from_id, number: Number(r.rebuilt_from_number) } : null,
    triggeredFrom: parseJson<TriggeredFrom | null>(r.triggered_from, null),
    cancelReason: r.cancel_reason ?? null,
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
    webhook_event: build.webhookEvent ? JSON.stringify(build.webhookEvent) : null,
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
