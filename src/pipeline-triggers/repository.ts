/**
 * Pipeline triggers and their deliveries: rows in, domain objects out. Trigger reads join the
 * pipeline's slug and the users who created and last updated them. Both lists are newest first
 * and read by cursor (created or received time, then id).
 */
import type { Knex } from 'knex';
import { parseJson, toBool, toDate } from '../db/values';
import { userFromRow } from '../user/rows';
import type { User } from '../core/identity';

export type TriggerType = 'webhook' | 'github' | 'linear';

export interface PipelineTrigger {
  id: string;
  organizationId: string;
  pipelineId: string;
  pipelineSlug: string;
  type: TriggerType;
  label: string;
  enabled: boolean;
  message: string | null;
  commit: string | null;
  branch: string | null;
  environment: Record<string, string>;
  verificationStrategy: 'hmac' | null;
  verificationSecretSealed: string | null;
  verificationSecretHint: string | null;
  tokenHint: string;
  createdBy: User | null;
  updatedBy: User | null;
  createdAt: Date;
  updatedAt: Date;
}

export type NewPipelineTrigger = Omit<PipelineTrigger, 'pipelineSlug' | 'createdBy' | 'updatedBy'> & { tokenHash: string; createdById: string };

export type TriggerChanges = Partial<
  Pick<
    PipelineTrigger,
    'label' | 'enabled' | 'message' | 'commit' | 'branch' | 'environment' | 'verificationStrategy' | 'verificationSecretSealed' | 'verificationSecretHint'
  >
> & { updatedById: string; updatedAt: Date };

export interface TriggerDelivery {
  id: string;
  triggerId: string;
  receivedAt: Date;
  contentType: string | null;
  externalId: string | null;
  status: 'build_created' | 'not_run' | 'failed' | null;
  reason: string | null;
  builds: { id: string; number: number }[];
  headers: { name: string; value: string | null; redacted: boolean }[];
  payload: Record<string, unknown>;
}

export interface Cursor {
  at: Date;
  id: string;
}

/** How many deliveries of a trigger are kept. */
export const RETAINED_DELIVERIES = 100;

const SELECT = [
  't.*',
  'p.slug as pipeline_slug',
  'cu.id as creator_id',
  'cu.name as creator_name',
  'cu.email as creator_email',
  'cu.created_at as creator_created_at',
  'uu.id as updater_id',
  'uu.name as updater_name',
  'uu.email as updater_email',
  'uu.created_at as updater_created_at',
];

function userOf(r: Record<string, unknown>, prefix: 'creator' | 'updater'): User | null {
  return r[`${prefix}_id`]
    ? userFromRow({
        id: r[`${prefix}_id`] as string,
        name: r[`${prefix}_name`] as string,
        email: r[`${prefix}_email`] as string,
        created_at: r[`${prefix}_created_at`],
      })
    : null;
}

function fromRow(r: Record<string, unknown>): PipelineTrigger {
  return {
    id: r.id as string,
    organizationId: r.organization_id as string,
    pipelineId: r.pipeline_id as string,
    pipelineSlug: r.pipeline_slug as string,
    type: r.type as TriggerType,
    label: r.label as string,
    enabled: toBool(r.enabled),
    message: (r.message as string | null) ?? null,
    commit: (r.commit as string | null) ?? null,
    branch: (r.branch as string | null) ?? null,
    environment: parseJson<Record<string, string>>(r.environment, {}),
    verificationStrategy: (r.verification_strategy as 'hmac' | null) ?? null,
    verificationSecretSealed: (r.verification_secret_sealed as string | null) ?? null,
    verificationSecretHint: (r.verification_secret_hint as string | null) ?? null,
    tokenHint: r.token_hint as string,
    createdBy: userOf(r, 'creator'),
    updatedBy: userOf(r, 'updater'),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function deliveryFromRow(r: Record<string, unknown>): TriggerDelivery {
  return {
    id: r.id as string,
    triggerId: r.trigger_id as string,
    receivedAt: toDate(r.received_at),
    contentType: (r.content_type as string | null) ?? null,
    externalId: (r.external_id as string | null) ?? null,
    status: (r.status as TriggerDelivery['status']) ?? null,
    reason: (r.reason as string | null) ?? null,
    builds: parseJson<TriggerDelivery['builds']>(r.builds, []),
    headers: parseJson<TriggerDelivery['headers']>(r.headers, []),
    payload: parseJson<Record<string, unknown>>(r.payload, {}),
  };
}

function changeColumns(c: TriggerChanges): Record<string, unknown> {
  const cols: Record<string, unknown> = { updated_by_id: c.updatedById, updated_at: c.updatedAt };
  if (c.label !== undefined) cols.label = c.label;
  if (c.enabled !== undefined) cols.enabled = c.enabled;
  if (c.message !== undefined) cols.message = c.message;
  if (c.commit !== undefined) cols.commit = c.commit;
  if (c.branch !== undefined) cols.branch = c.branch;
  if (c.environment !== undefined) cols.environment = JSON.stringify(c.environment);
  if (c.verificationStrategy !== undefined) cols.verification_strategy = c.verificationStrategy;
  if (c.verificationSecretSealed !== undefined) cols.verification_secret_sealed = c.verificationSecretSealed;
  if (c.verificationSecretHint !== undefined) cols.verification_secret_hint = c.verificationSecretHint;
  return cols;
}

/** Newest first, after (older than) or before (newer than) a cursor; `more`: whether another page follows in that direction. */
async function pageBy<T>(
  q: Knex.QueryBuilder,
  atCol: string,
  idCol: string,
  opts: { after?: Cursor; before?: Cursor; limit: number },
  map: (r: Record<string, unknown>) => T,
): Promise<{ items: T[]; more: boolean }> {
  const { after, before } = opts;
  if (after) q.where((w) => w.where(atCol, '<', after.at).orWhere((x) => x.where(atCol, '=', after.at).andWhere(idCol, '<', after.id)));
  if (before) q.where((w) => w.where(atCol, '>', before.at).orWhere((x) => x.where(atCol, '=', before.at).andWhere(idCol, '>', before.id)));
  const order = before ? 'asc' : 'desc';
  const rows = (await q
    .orderBy([
      { column: atCol, order },
      { column: idCol, order },
    ])
    .limit(opts.limit + 1)) as Record<string, unknown>[];
  const more = rows.length > opts.limit;
  const items = rows.slice(0, opts.limit).map(map);
  return { items: before ? items.reverse() : items, more };
}

export class PipelineTriggerRepository {
  constructor(private readonly db: Knex) {}

  withTransaction(trx: Knex.Transaction): PipelineTriggerRepository {
    return new PipelineTriggerRepository(trx);
  }

  private base() {
    return this.db('pipeline_triggers as t')
      .join('pipelines as p', 'p.id', 't.pipeline_id')
      .leftJoin('users as cu', 'cu.id', 't.created_by_id')
      .leftJoin('users as uu', 'uu.id', 't.updated_by_id');
  }

  async insert(t: NewPipelineTrigger): Promise<void> {
    await this.db('pipeline_triggers').insert({
      id: t.id,
      organization_id: t.organizationId,
      pipeline_id: t.pipelineId,
      type: t.type,
      label: t.label,
      enabled: t.enabled,
      message: t.message,
      commit: t.commit,
      branch: t.branch,
      environment: JSON.stringify(t.environment),
      verification_strategy: t.verificationStrategy,
      verification_secret_sealed: t.verificationSecretSealed,
      verification_secret_hint: t.verificationSecretHint,
      token_hash: t.tokenHash,
      token_hint: t.tokenHint,
      created_by_id: t.createdById,
      updated_by_id: t.createdById,
      created_at: t.createdAt,
      updated_at: t.updatedAt,
    });
  }

  async findInPipeline(pipelineId: string, id: string): Promise<PipelineTrigger | null> {
    const row = await this.base().where({ 't.pipeline_id': pipelineId, 't.id': id }).first(SELECT);
    return row ? fromRow(row) : null;
  }

  async findByTokenHash(tokenHash: string): Promise<PipelineTrigger | null> {
    const row = await this.base().where({ 't.token_hash': tokenHash }).first(SELECT);
    return row ? fromRow(row) : null;
  }

  page(pipelineId: string, opts: { after?: Cursor; before?: Cursor; limit: number }) {
    return pageBy(this.base().where('t.pipeline_id', pipelineId).select(SELECT), 't.created_at', 't.id', opts, fromRow);
  }

  async update(id: string, changes: TriggerChanges): Promise<void> {
    await this.db('pipeline_triggers').where({ id }).update(changeColumns(changes));
  }

  async delete(pipelineId: string, id: string): Promise<boolean> {
    return (await this.db('pipeline_triggers').where({ pipeline_id: pipelineId, id }).delete()) > 0;
  }

  /** Records a delivery and drops the trigger's deliveries beyond the latest RETAINED_DELIVERIES. */
  async insertDelivery(d: TriggerDelivery): Promise<void> {
    await this.db('pipeline_trigger_deliveries').insert({
      id: d.id,
      trigger_id: d.triggerId,
      received_at: d.receivedAt,
      content_type: d.contentType,
      external_id: d.externalId,
      status: d.status,
      reason: d.reason,
      builds: JSON.stringify(d.builds),
      headers: JSON.stringify(d.headers),
      payload: JSON.stringify(d.payload),
    });
    const kept = this.db('pipeline_trigger_deliveries')
      .where({ trigger_id: d.triggerId })
      .orderBy([
        { column: 'received_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(RETAINED_DELIVERIES)
      .select('id');
    await this.db('pipeline_trigger_deliveries').where({ trigger_id: d.triggerId }).whereNotIn('id', kept).delete();
  }

  async findDelivery(triggerId: string, id: string): Promise<TriggerDelivery | null> {
    const row = await this.db('pipeline_trigger_deliveries').where({ trigger_id: triggerId, id }).first();
    return row ? deliveryFromRow(row) : null;
  }

  deliveries(triggerId: string, opts: { after?: Cursor; before?: Cursor; limit: number }) {
    return pageBy(this.db('pipeline_trigger_deliveries').where('trigger_id', triggerId).select('*'), 'received_at', 'id', opts, deliveryFromRow);
  }
}
