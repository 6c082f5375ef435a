/**
 * Pipeline triggers and their deliveries: rows in, domain objects out. Trigger reads join the
 * pipeline's slug and the users who created and last updated them. Both lists are newest first
 * and read by cursor (created or received time, then id).
 */
import { keysetQuery, keysetRows, type KeysetPage } from '../db/keyset';
import type { Knex } from 'knex';
import { toBool, toDate } from '../db/values';
import type { PipelineTriggerDeliveriesRow, PipelineTriggersRow, PipelinesRow, UsersRow } from '../db/tables';
import { joinedUser } from '../user/rows';
import type { User } from '../core/identity';
import { type Nullable, type Prefixed, jsonColumn, keysOf, oneOf, oneOfOrNull } from '../db/row-types';
import { isRecord } from '../core/guards';

export type TriggerType = 'webhook' | 'github' | 'linear';
const TRIGGER_TYPES = keysOf<TriggerType>({ webhook: true, github: true, linear: true });

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

type JoinedUser<P extends string> = Nullable<Prefixed<Pick<UsersRow, 'id' | 'name' | 'email' | 'created_at'>, P>>;
/** A trigger as `base()` selects it (`SELECT`): with its pipeline's slug, its creator and its last updater. */
type TriggerJoinRow = PipelineTriggersRow & Prefixed<Pick<PipelinesRow, 'slug'>, 'pipeline_'> & JoinedUser<'creator_'> & JoinedUser<'updater_'>;

const DELIVERY_STATUSES = keysOf<NonNullable<TriggerDelivery['status']>>({ build_created: true, not_run: true, failed: true });

function isStringRecord(v: unknown): v is Record<string, string> {
  return isRecord(v) && Object.values(v).every((x) => typeof x === 'string');
}

function isDeliveryBuilds(v: unknown): v is TriggerDelivery['builds'] {
  return Array.isArray(v) && v.every((b) => isRecord(b) && typeof b.id === 'string' && typeof b.number === 'number');
}

function isDeliveryHeaders(v: unknown): v is TriggerDelivery['headers'] {
  return (
    Array.isArray(v) &&
    v.every((h) => isRecord(h) && typeof h.name === 'string' && (typeof h.value === 'string' || h.value === null) && typeof h.redacted === 'boolean')
  );
}

function fromRow(r: TriggerJoinRow): PipelineTrigger {
  return {
    id: r.id,
    organizationId: r.organization_id,
    pipelineId: r.pipeline_id,
    pipelineSlug: r.pipeline_slug,
    type: oneOf(TRIGGER_TYPES, r.type, 'pipeline_triggers.type'),
    label: r.label,
    enabled: toBool(r.enabled),
    message: r.message ?? null,
    commit: r.commit ?? null,
    branch: r.branch ?? null,
    environment: jsonColumn(r.environment, {}, isStringRecord, 'pipeline_triggers.environment'),
    verificationStrategy: oneOfOrNull(['hmac'], r.verification_strategy, 'pipeline_triggers.verification_strategy'),
    verificationSecretSealed: r.verification_secret_sealed ?? null,
    verificationSecretHint: r.verification_secret_hint ?? null,
    tokenHint: r.token_hint,
    createdBy: joinedUser(r.creator_id, r.creator_name, r.creator_email, r.creator_created_at),
    updatedBy: joinedUser(r.updater_id, r.updater_name, r.updater_email, r.updater_created_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function deliveryFromRow(r: PipelineTriggerDeliveriesRow): TriggerDelivery {
  return {
    id: r.id,
    triggerId: r.trigger_id,
    receivedAt: toDate(r.received_at),
    contentType: r.content_type ?? null,
    externalId: r.external_id ?? null,
    status: oneOfOrNull(DELIVERY_STATUSES, r.status, 'pipeline_trigger_deliveries.status'),
    reason: r.reason ?? null,
    builds: jsonColumn(r.builds, [], isDeliveryBuilds, 'pipeline_trigger_deliveries.builds'),
    headers: jsonColumn(r.headers, [], isDeliveryHeaders, 'pipeline_trigger_deliveries.headers'),
    payload: jsonColumn(r.payload, {}, isRecord, 'pipeline_trigger_deliveries.payload'),
  };
}

function changeColumns(c: TriggerChanges): Partial<PipelineTriggersRow> {
  const cols: Partial<PipelineTriggersRow> = { updated_by_id: c.updatedById, updated_at: c.updatedAt };
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
    const row = await this.base().where({ 't.pipeline_id': pipelineId, 't.id': id }).first<TriggerJoinRow | undefined>(SELECT);
    return row ? fromRow(row) : null;
  }

  async findByTokenHash(tokenHash: string): Promise<PipelineTrigger | null> {
    const row = await this.base().where({ 't.token_hash': tokenHash }).first<TriggerJoinRow | undefined>(SELECT);
    return row ? fromRow(row) : null;
  }

  async page(pipelineId: string, opts: KeysetPage) {
    const rows = await keysetQuery(this.base().where('t.pipeline_id', pipelineId).select<TriggerJoinRow[]>(SELECT), { at: 't.created_at', id: 't.id' }, opts);
    return keysetRows(rows, opts, fromRow);
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

  async deliveries(triggerId: string, opts: KeysetPage) {
    const rows = await keysetQuery(this.db('pipeline_trigger_deliveries').where('trigger_id', triggerId), { at: 'received_at', id: 'id' }, opts);
    return keysetRows(rows, opts, deliveryFromRow);
  }
}
