/**
 * Notification services: rows in, domain objects out. Settings that are not secret are stored
 * as JSON; the secret ones as one sealed value the service opens (this repository never sees
 * them in the clear). Lists read oldest first by (created_at, id), the cursor's order.
 */
import { keysetQuery, keysetRows, type KeysetPage } from '../db/keyset';
import type { Knex } from 'knex';
import type { User } from '../core/identity';
import type { NotificationServicesRow, UsersRow } from '../db/tables';
import { toBool, toDate } from '../db/values';
import { userFromRow } from '../user/rows';
import type { components } from '../../generated/api';
import { type Nullable, type Prefixed, jsonColumn, oneOf } from '../db/row-types';
import { isRecord, isStringArray } from '../core/guards';
import { everyValue } from '../core/enum-values';

export type ProviderId = 'webhook' | 'slack' | 'open_telemetry_tracing';
export type ServiceScope = components['schemas']['NotificationServiceScope'];

export interface NotificationServiceRecord {
  id: string;
  organizationId: string;
  provider: ProviderId;
  description: string;
  enabled: boolean;
  scope: ServiceScope;
  scopeUuids: string[];
  branchConfiguration: string;
  buildStates: Record<string, boolean>;
  /** The settings that are not secret. */
  settings: Record<string, unknown>;
  /** The secret settings, sealed (null when there are none). */
  secretsSealed: string | null;
  createdBy: User | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a create or update writes. */
export interface ServiceFields {
  description: string;
  enabled: boolean;
  scope: ServiceScope;
  scopeUuids: string[];
  branchConfiguration: string;
  buildStates: Record<string, boolean>;
  settings: Record<string, unknown>;
  secretsSealed: string | null;
}

/** Where a page starts: after (or before) the service created at `createdAt` with id `id`. */
const SELECT = [
  's.id',
  's.organization_id',
  's.provider',
  's.description',
  's.enabled',
  's.scope',
  's.scope_uuids',
  's.branch_configuration',
  's.build_states',
  's.settings',
  's.secrets_sealed',
  's.created_at',
  's.updated_at',
  'c.id as creator_id',
  'c.name as creator_name',
  'c.email as creator_email',
  'c.created_at as creator_created_at',
];

const PROVIDER_IDS = everyValue<ProviderId>()(['webhook', 'slack', 'open_telemetry_tracing']);
const SERVICE_SCOPES = everyValue<ServiceScope>()(['all', 'some_projects', 'some_teams', 'some_clusters']);

const isBooleanRecord = (v: unknown): v is Record<string, boolean> => isRecord(v) && Object.values(v).every((b) => typeof b === 'boolean');

/** A service with its creator (left join, SELECT). */
type ServiceRow = Omit<NotificationServicesRow, 'created_by_id'> & Nullable<Prefixed<UsersRow, 'creator_'>>;

function fromRow(r: ServiceRow): NotificationServiceRecord {
  return {
    id: r.id,
    organizationId: r.organization_id,
    provider: oneOf(PROVIDER_IDS, r.provider, 'notification_services.provider'),
    description: r.description,
    enabled: toBool(r.enabled),
    scope: oneOf(SERVICE_SCOPES, r.scope, 'notification_services.scope'),
    scopeUuids: jsonColumn(r.scope_uuids, [], isStringArray, 'notification_services.scope_uuids'),
    branchConfiguration: r.branch_configuration,
    buildStates: jsonColumn(r.build_states, {}, isBooleanRecord, 'notification_services.build_states'),
    settings: jsonColumn(r.settings, {}, isRecord, 'notification_services.settings'),
    secretsSealed: r.secrets_sealed ?? null,
    createdBy:
      r.creator_id && r.creator_name !== null && r.creator_email !== null
        ? userFromRow({ id: r.creator_id, name: r.creator_name, email: r.creator_email, created_at: r.creator_created_at })
        : null,
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

function toColumns(f: Partial<ServiceFields>): Record<string, unknown> {
  const c: Record<string, unknown> = {};
  if (f.description !== undefined) c.description = f.description;
  if (f.enabled !== undefined) c.enabled = f.enabled;
  if (f.scope !== undefined) c.scope = f.scope;
  if (f.scopeUuids !== undefined) c.scope_uuids = JSON.stringify(f.scopeUuids);
  if (f.branchConfiguration !== undefined) c.branch_configuration = f.branchConfiguration;
  if (f.buildStates !== undefined) c.build_states = JSON.stringify(f.buildStates);
  if (f.settings !== undefined) c.settings = JSON.stringify(f.settings);
  if (f.secretsSealed !== undefined) c.secrets_sealed = f.secretsSealed;
  return c;
}

export class NotificationServiceRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): NotificationServiceRepository {
    return new NotificationServiceRepository(trx);
  }

  private base(): Knex.QueryBuilder<ServiceRow, ServiceRow[]> {
    return this.db('notification_services as s').leftJoin('users as c', 'c.id', 's.created_by_id').select(SELECT);
  }

  /**
   * Up to `limit` services oldest first: after `after`, or the last `limit` before `before`
   * (still oldest first). `more`: whether another page follows in the direction read.
   */
  async page(organizationId: string, opts: KeysetPage): Promise<{ items: NotificationServiceRecord[]; more: boolean }> {
    const rows = await keysetQuery(this.base().where('s.organization_id', organizationId), { at: 's.created_at', id: 's.id', oldestFirst: true }, opts);
    return keysetRows(rows, opts, fromRow);
  }

  async find(organizationId: string, id: string): Promise<NotificationServiceRecord | null> {
    const row = await this.base().where('s.organization_id', organizationId).where('s.id', id).first();
    return row ? fromRow(row) : null;
  }

  /** The enabled services of an organization, oldest first. */
  async enabled(organizationId: string): Promise<NotificationServiceRecord[]> {
    const rows = await this.base()
      .where('s.organization_id', organizationId)
      .where('s.enabled', true)
      .orderBy([
        { column: 's.created_at', order: 'asc' },
        { column: 's.id', order: 'asc' },
      ]);
    return rows.map(fromRow);
  }

  async insert(s: { id: string; organizationId: string; provider: ProviderId; userId: string | null; at: Date } & ServiceFields): Promise<void> {
    await this.db('notification_services').insert({
      id: s.id,
      organization_id: s.organizationId,
      provider: s.provider,
      created_by_id: s.userId,
      created_at: s.at,
      updated_at: s.at,
      ...toColumns(s),
    });
  }

  async update(organizationId: string, id: string, changes: Partial<ServiceFields>, at: Date): Promise<boolean> {
    const n = await this.db('notification_services')
      .where({ organization_id: organizationId, id })
      .update({ ...toColumns(changes), updated_at: at });
    return n > 0;
  }

  /** Runs `fn` in one transaction. */
  transaction<T>(fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return this.db.transaction(fn);
  }

  /** Every webhook service of every organization (`settings`, `secrets_sealed` as stored), read in `trx`. */
  async allWebhooks(trx: Knex): Promise<Array<{ id: string; settings: Record<string, unknown>; secretsSealed: string | null }>> {
    const rows = await trx('notification_services').where({ provider: 'webhook' }).orderBy('id').select('id', 'settings', 'secrets_sealed');
    return rows.map((r) => ({
      id: r.id,
      settings: jsonColumn(r.settings, {}, isRecord, 'notification_services.settings'),
      secretsSealed: r.secrets_sealed ?? null,
    }));
  }

  /**
   * Replaces a service's settings and sealed secrets if its sealed secrets are still `expected`
   * (another process that resealed it first wins; `updated_at` is kept: nobody edited it).
   */
  async reseal(trx: Knex, id: string, expected: string | null, settings: Record<string, unknown>, secretsSealed: string): Promise<boolean> {
    const q = trx('notification_services').where({ id });
    if (expected === null) q.whereNull('secrets_sealed');
    else q.where({ secrets_sealed: expected });
    return (await q.update({ settings: JSON.stringify(settings), secrets_sealed: secretsSealed })) > 0;
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    return (await this.db('notification_services').where({ organization_id: organizationId, id }).delete()) > 0;
  }
}
