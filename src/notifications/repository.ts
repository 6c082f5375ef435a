/**
 * The outbox and its deliveries: rows in, domain objects out. `outbox_events` is written by
 * database triggers (src/db/migrations/20261126090000_outbox.ts); this repository reads them in
 * order, claims each for fan-out with a conditional UPDATE (of several processes exactly one
 * sees the change, and its deliveries are written in the same transaction), and keeps the
 * deliveries: leased by one process at a time, attempted, recorded.
 */
import type { Knex } from 'knex';
import { isPostgres } from '../db/knex';
import type { NotificationDeliveriesRow, OutboxEventsRow } from '../db/tables';
import { parseJson, toBool, toDate, toDateOrNull } from '../db/values';
import { jsonColumn, oneOf } from '../db/row-types';
import { isRecord } from '../core/guards';
import { everyValue } from '../core/enum-values';
import { EVENT_NAMES, type EventName } from './events';

export interface Transition {
  seq: number;
  /** `token`: a cluster agent token (its refused registrations). */
  kind: 'build' | 'job' | 'agent' | 'token';
  subjectId: string;
  /** A job's type (script, manual, trigger, waiter). */
  subjectType: string | null;
  organizationId: string;
  pipelineId: string | null;
  buildId: string | null;
  fromState: string | null;
  toState: string;
  blocked: boolean;
  occurredAt: Date;
  /**
   * An event that is no state change, by name (written by its code path, not a trigger:
   * `job.promised_exit_status`); null for a transition, whose event rules.ts derives.
   */
  event: EventName | null;
  /** What such an event's body adds that no row keeps (the promise's `reason`). */
  detail: Record<string, unknown> | null;
}

export type DeliveryState = 'pending' | 'delivered' | 'failed';
export type TargetKind = 'service' | 'notify' | 'commit_status';

export interface NewDelivery {
  id: string;
  eventSeq: number;
  event: string;
  organizationId: string;
  targetKind: TargetKind;
  serviceId: string | null;
  /** What the target is, when it is not a service: never a secret. */
  target: Record<string, unknown> | null;
  targetKey: string;
  orderKey: string;
  /** The body to send (JSON). */
  payload: unknown;
  nextAttemptAt: Date;
  createdAt: Date;
  redeliveryOf?: string | null;
}

export interface Delivery extends NewDelivery {
  state: DeliveryState;
  attempts: number;
  lastStatus: number | null;
  finishedAt: Date | null;
  redeliveryOf: string | null;
}

export interface Attempt {
  number: number;
  startedAt: Date;
  durationMs: number;
  status: number | null;
  ok: boolean;
  excerpt: string;
}

const TRANSITION_KINDS = everyValue<Transition['kind']>()(['build', 'job', 'agent', 'token']);
const DELIVERY_STATES = everyValue<DeliveryState>()(['pending', 'delivered', 'failed']);
const TARGET_KINDS = everyValue<TargetKind>()(['service', 'notify', 'commit_status']);

const isTarget = (v: unknown): v is Record<string, unknown> | null => v === null || isRecord(v);

function transitionFromRow(r: OutboxEventsRow): Transition {
  return {
    seq: Number(r.seq),
    kind: oneOf(TRANSITION_KINDS, r.kind, 'outbox_events.kind'),
    subjectId: r.subject_id,
    subjectType: r.subject_type ?? null,
    organizationId: r.organization_id,
    pipelineId: r.pipeline_id ?? null,
    buildId: r.build_id ?? null,
    fromState: r.from_state ?? null,
    toState: r.to_state,
    blocked: toBool(r.blocked),
    occurredAt: toDate(r.occurred_at),
    event: r.event === null || r.event === undefined ? null : oneOf(EVENT_NAMES, r.event, 'outbox_events.event'),
    detail: jsonColumn(r.detail, null, (v): v is Record<string, unknown> | null => v === null || isRecord(v), 'outbox_events.detail'),
  };
}

function deliveryFromRow(r: NotificationDeliveriesRow): Delivery {
  return {
    id: r.id,
    eventSeq: Number(r.event_seq),
    event: r.event,
    organizationId: r.organization_id,
    targetKind: oneOf(TARGET_KINDS, r.target_kind, 'notification_deliveries.target_kind'),
    serviceId: r.service_id ?? null,
    target: jsonColumn(r.target, null, isTarget, 'notification_deliveries.target'),
    targetKey: r.target_key,
    orderKey: r.order_key,
    payload: parseJson<unknown>(r.payload, null),
    state: oneOf(DELIVERY_STATES, r.state, 'notification_deliveries.state'),
    attempts: Number(r.attempts),
    nextAttemptAt: toDate(r.next_attempt_at),
    lastStatus: r.last_status === null || r.last_status === undefined ? null : Number(r.last_status),
    redeliveryOf: r.redelivery_of ?? null,
    createdAt: toDate(r.created_at),
    finishedAt: toDateOrNull(r.finished_at),
  };
}

export class OutboxRepository {
  constructor(private readonly db: Knex | Knex.Transaction) {}

  withTransaction(trx: Knex.Transaction): OutboxRepository {
    return new OutboxRepository(trx);
  }

  /** The oldest events not yet fanned out, in order. */
  async unfanned(limit: number): Promise<Transition[]> {
    const rows = await this.db('outbox_events').whereNull('fanned_out_at').orderBy('seq').limit(limit);
    return rows.map(transitionFromRow);
  }

  /**
   * Marks those of `seqs` not yet fanned out as fanned out, and answers the ones this call
   * claimed. Postgres: rows another process's transaction holds are skipped (`SKIP LOCKED`), so
   * two processes fanning out one batch never wait on each other nor deadlock, and each event
   * goes to one of them. SQLite has one writer: the transaction that runs this holds it.
   */
  async claimEvents(seqs: number[], at: Date): Promise<Set<number>> {
    if (!seqs.length) return new Set();
    if (isPostgres(this.db)) {
      const res = await this.db.raw<{ rows: Pick<OutboxEventsRow, 'seq'>[] }>(
        `update outbox_events set fanned_out_at = ? where seq in (
           select seq from outbox_events where seq = any(?) and fanned_out_at is null for update skip locked
         ) returning seq`,
        [at, seqs],
      );
      return new Set(res.rows.map((r) => Number(r.seq)));
    }
    const open = (await this.db('outbox_events').whereIn('seq', seqs).whereNull('fanned_out_at').select('seq')).map((r) => Number(r.seq));
    if (open.length) await this.db('outbox_events').whereIn('seq', open).update({ fanned_out_at: at });
    return new Set(open);
  }

  async insertDeliveries(ds: NewDelivery[]): Promise<void> {
    // In chunks: SQLite takes a bounded number of bound values per statement.
    for (let i = 0; i < ds.length; i += 100) await this.insertChunk(ds.slice(i, i + 100));
  }

  private async insertChunk(ds: NewDelivery[]): Promise<void> {
    await this.db('notification_deliveries').insert(
      ds.map((d) => ({
        id: d.id,
        event_seq: d.eventSeq,
        event: d.event,
        organization_id: d.organizationId,
        target_kind: d.targetKind,
        service_id: d.serviceId,
        target: d.target === null ? null : JSON.stringify(d.target),
        target_key: d.targetKey,
        order_key: d.orderKey,
        payload: JSON.stringify(d.payload),
        state: 'pending',
        attempts: 0,
        next_attempt_at: d.nextAttemptAt,
        redelivery_of: d.redeliveryOf ?? null,
        created_at: d.createdAt,
      })),
    );
  }

  /**
   * Deliveries due by `now` that nobody holds a lease on and that are first in line: no earlier
   * delivery of the same target and order key (a build, an agent) is still pending; none of
   * the `excludingTargets` (those holding their share of the slots).
   */
  async due(now: Date, limit: number, excluding: string[], excludingTargets: string[] = [], excludingOrganizations: string[] = []): Promise<Delivery[]> {
    const q = this.db('notification_deliveries as d')
      .where('d.state', 'pending')
      .where('d.next_attempt_at', '<=', now)
      .where((w) => w.whereNull('d.lease_until').orWhere('d.lease_until', '<', now))
      .whereNotExists((s) =>
        s
          .from('notification_deliveries as e')
          .whereRaw('e.target_key = d.target_key')
          .whereRaw('e.order_key = d.order_key')
          .where('e.state', 'pending')
          .whereRaw('e.event_seq < d.event_seq'),
      )
      .orderBy('d.next_attempt_at')
      .limit(limit)
      .select<NotificationDeliveriesRow[]>('d.*');
    if (excluding.length) q.whereNotIn('d.id', excluding);
    if (excludingTargets.length) q.whereNotIn('d.target_key', excludingTargets);
    if (excludingOrganizations.length) q.whereNotIn('d.organization_id', excludingOrganizations);
    return (await q).map(deliveryFromRow);
  }

  /** Takes the delivery for `owner` until `until`; false when another process holds it or it is no longer pending. */
  async lease(id: string, owner: string, now: Date, until: Date): Promise<boolean> {
    const n = await this.db('notification_deliveries')
      .where({ id, state: 'pending' })
      .where((w) => w.whereNull('lease_until').orWhere('lease_until', '<', now))
      .update({ lease_until: until, lease_owner: owner });
    return n > 0;
  }

  /** Records an attempt and what it leaves the delivery as; only while `owner` holds the lease. */
  async recordAttempt(
    id: string,
    owner: string,
    attempt: Attempt,
    next: { state: DeliveryState; nextAttemptAt: Date; finishedAt: Date | null },
  ): Promise<boolean> {
    const n = await this.db('notification_deliveries').where({ id, lease_owner: owner, state: 'pending' }).update({
      attempts: attempt.number,
      last_status: attempt.status,
      state: next.state,
      next_attempt_at: next.nextAttemptAt,
      finished_at: next.finishedAt,
      lease_until: null,
      lease_owner: null,
    });
    if (!n) return false;
    await this.db('notification_attempts').insert({
      delivery_id: id,
      number: attempt.number,
      started_at: attempt.startedAt,
      duration_ms: attempt.durationMs,
      status: attempt.status,
      ok: attempt.ok,
      excerpt: attempt.excerpt,
    });
    return true;
  }

  async find(organizationId: string, id: string): Promise<Delivery | null> {
    const r = await this.db('notification_deliveries').where({ organization_id: organizationId, id }).first();
    return r ? deliveryFromRow(r) : null;
  }

  /** A service's deliveries, newest first, `offset`/`limit` paged. */
  async ofService(serviceId: string, offset: number, limit: number): Promise<Delivery[]> {
    const rows = await this.db('notification_deliveries')
      .where({ service_id: serviceId })
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'event_seq', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit);
    return rows.map(deliveryFromRow);
  }

  /** An organization's deliveries in event order (tests, the CLI). */
  async ofOrganization(organizationId: string, limit: number): Promise<Delivery[]> {
    const rows = await this.db('notification_deliveries').where({ organization_id: organizationId }).orderBy('event_seq').orderBy('created_at').limit(limit);
    return rows.map(deliveryFromRow);
  }

  async attemptsOf(deliveryIds: string[]): Promise<Map<string, Attempt[]>> {
    const out = new Map<string, Attempt[]>(deliveryIds.map((id) => [id, []]));
    if (!deliveryIds.length) return out;
    const rows = await this.db('notification_attempts').whereIn('delivery_id', deliveryIds).orderBy(['delivery_id', 'number']);
    for (const r of rows) {
      out.get(r.delivery_id)!.push({
        number: Number(r.number),
        startedAt: toDate(r.started_at),
        durationMs: Number(r.duration_ms),
        status: r.status === null || r.status === undefined ? null : Number(r.status),
        ok: toBool(r.ok),
        excerpt: r.excerpt,
      });
    }
    return out;
  }

  async hasPendingBefore(at: Date): Promise<boolean> {
    return !!(await this.db('notification_deliveries').where({ state: 'pending' }).where('next_attempt_at', '<=', at).first('id'));
  }

  /** Forgets what is done and old: fanned-out events and finished deliveries (with their attempts) before `before`. */
  async prune(before: Date): Promise<{ events: number; deliveries: number }> {
    const events = await this.db('outbox_events').whereNotNull('fanned_out_at').where('fanned_out_at', '<', before).delete();
    const deliveries = await this.db('notification_deliveries').whereNot('state', 'pending').where('finished_at', '<', before).delete();
    return { events, deliveries };
  }

  /** Events not yet fanned out and deliveries still to send (the metrics' scrape). */
  async pendingCounts(): Promise<{ events: number; deliveries: number }> {
    const [events] = await this.db('outbox_events').whereNull('fanned_out_at').count({ n: '*' });
    const [deliveries] = await this.db('notification_deliveries').where({ state: 'pending' }).count({ n: '*' });
    return { events: Number(events?.n ?? 0), deliveries: Number(deliveries?.n ?? 0) };
  }

  /** Forgets every event (the fixture loader's: what the triggers queued while a file loaded happened before anyone could listen). */
  async clearEvents(): Promise<void> {
    await this.db('outbox_events').delete();
  }
}
