/**
 * Notifications: the outbox's two passes, and the history of what was sent.
 *
 * Fan-out: events the database recorded (./repository.ts, written by triggers in the
 * transaction of each change) are read in order; each becomes one delivery per target that
 * hears of it (a notification service in scope and asking for it, a pipeline's `notify` entry,
 * a commit status), written in one transaction with the event's claim, so an event is fanned
 * out exactly once whatever number of processes run this.
 *
 * Delivery: due deliveries, first in line for their target and build, are leased (a
 * conditional UPDATE: one process wins), sent through a provider, and the attempt recorded.
 * A failure is retried with exponential back-off up to `maxAttempts`, then the delivery is
 * `failed`; a process that dies mid-delivery leaves a lease that expires, and the delivery is
 * attempted again: at least once, never lost.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Job } from '../builds/jobs/model';
import type { Build } from '../builds/model';
import type { Pipeline } from '../pipelines/repository';
import { NotFoundError } from '../core/errors';
import type { AttemptResult, EventName, EventPayload, HttpSend, NotificationEvent } from './events';
import { renderEvent, type PayloadSources, type RenderedEvent } from './payload';
import { stepMomentOf, type StepMoment } from './step-moments';
import { namesCreatorTeams } from './conditions';
import type { Attempt, Delivery, NewDelivery, OutboxRepository, Transition } from './repository';
import { backoffMs, eventOf, inScope, type EventPlace } from './rules';
import { clock } from '../core/clock';
import { serializeOrganization } from '../organizations/serialize';

export interface NotificationSettings {
  /** How often the worker looks for events and due deliveries when idle. */
  intervalMs: number;
  /** Events fanned out per pass. */
  batchSize: number;
  /** Deliveries in flight at once in one process. */
  concurrency: number;
  /** How long a lease holds a delivery: longer than the outbound timeout. */
  leaseMs: number;
  /** Attempts before a delivery is given up (`failed`). */
  maxAttempts: number;
  retryBaseMs: number;
  retryCapMs: number;
  /** How long fanned-out events and finished deliveries are kept. */
  retentionMs: number;
}

/** The deliveries one target may have in flight in one process: half the slots (at least one). */
export function perTargetLimit(concurrency: number): number {
  return Math.max(1, Math.floor(concurrency / 2));
}

/**
 * The deliveries one organization's targets may have in flight in one process: three quarters of
 * the slots (at least one), so that two slow receivers of one organization (each within its
 * target's half) never hold every slot: another organization always has one.
 */
export function perOrganizationLimit(concurrency: number): number {
  // Never below one target's share plus one: an organization's second receiver always has a slot.
  return Math.min(concurrency, Math.max(perTargetLimit(concurrency) + 1, Math.floor((concurrency * 3) / 4)));
}

export const DEFAULT_NOTIFICATION_SETTINGS: NotificationSettings = {
  intervalMs: 500,
  batchSize: 200,
  concurrency: 16,
  leaseMs: 60_000,
  maxAttempts: 10,
  retryBaseMs: 2_000,
  retryCapMs: 3_600_000,
  retentionMs: 7 * 24 * 3600_000,
};

/** A notification service as the delivery side reads it (the notification-services area's). */
export interface ActiveService {
  id: string;
  organizationId: string;
  provider: string;
  scope: string;
  scopeUuids: string[];
  branchConfiguration: string | null;
  buildStates: Record<string, boolean>;
  settings: Record<string, unknown>;
  /** Who created the service: a webhook's `sender`, as the docs define it (null when the operator did). */
  creator: { id: string; name: string } | null;
}

export interface ServiceDirectory {
  activeFor(organizationId: string): Promise<ActiveService[]>;
  findForDelivery(organizationId: string, id: string): Promise<ActiveService | null>;
}

/** A planned delivery, before it is given an id and a place in line. */
export interface PlannedDelivery {
  targetKind: NewDelivery['targetKind'];
  serviceId: string | null;
  target: Record<string, unknown> | null;
  targetKey: string;
  payload: unknown;
}

/**
 * A provider: which deliveries an event makes for it (`plan`, at fan-out) and how one is sent
 * (`send`). Providers are registered by the composition root.
 */
export interface Provider {
  /** Deliveries for a service of this provider (none when it does not hear of the event). */
  planForService?(ctx: FanOutContext, service: ActiveService): Promise<PlannedDelivery[]> | PlannedDelivery[];
  /** Deliveries that are not a service's (a pipeline's notify, commit statuses). */
  planOwn?(ctx: FanOutContext): Promise<PlannedDelivery[]> | PlannedDelivery[];
  /**
   * Whether planOwn may plan anything for the event, from what is cheap to read (the pipeline,
   * a job's step): when no service listens and no provider may, the event is not rendered.
   */
  mayPlanOwn?(event: EventName, pipeline: Pipeline | null, job: Job | null): boolean;
  send(d: Delivery, service: ActiveService | null, http: HttpSend): Promise<AttemptResult>;
}

/** What a provider sees of an event at fan-out. */
export interface FanOutContext {
  event: NotificationEvent;
  rendered: RenderedEvent;
  place: EventPlace;
  /** The organization's enabled services (a pipeline's `slack` notify posts through its Slack services). */
  services: ActiveService[];
  /** For a finished or failing build: the state of the branch's previous finished build (a fix, a first failure). */
  previousFinishedState: string | null;
  /**
   * For a build event: the state the build moved to (`blocked` for a passed build waiting on a
   * block step), which `rendered.build` may be past by the time the event is fanned out.
   */
  buildStateAtEvent: string | null;
  /** For a job event: the state the job moved to. */
  jobStateAtEvent: string | null;
  /** For a job event: the moment of the job's step it is (step.failing, step.finished), if any (./step-moments.ts). */
  stepMoment: StepMoment | null;
  /** The slugs of the build creator's teams, read only when an entry's `if` names `build.creator.teams` (./conditions.ts); else []. */
  creatorTeams: readonly string[];
}

export interface DeliveryView {
  delivery: Delivery;
  attempts: Attempt[];
}

export class NotificationService {
  private readonly owner = crypto.randomUUID();
  /**
   * Targets whose last attempts failed in a way a retry may fix (no answer, 5xx, 408, 429), with
   * how many in a row and until when this process leaves them alone; then one delivery probes
   * the target, and an answer it takes opens it again. A dead receiver is tried once per
   * back-off, not once per delivery waiting for it, so its backlog costs no more writes than one
   * delivery's retries, and the API's writes do not queue behind them (SQLite's one writer).
   */
  private readonly resting = new Map<string, { failures: number; until: number }>();

  constructor(
    private readonly db: Knex,
    private readonly outbox: OutboxRepository,
    private readonly sources: PayloadSources & {
      teamIdsOf(pipelineId: string): Promise<string[]>;
      previousFinishedState(b: Build): Promise<string | null>;
      /** The slugs of the teams of the organization the user is a member of. */
      teamSlugsOf(userId: string, organizationId: string): Promise<string[]>;
    },
    private readonly services: ServiceDirectory,
    private readonly providers: Record<string, Provider>,
    private readonly http: HttpSend,
    readonly settings: NotificationSettings = DEFAULT_NOTIFICATION_SETTINGS,
  ) {}

  /** Fans out up to a batch of events; how many were claimed. */
  async fanOut(): Promise<number> {
    const events = await this.outbox.unfanned(this.settings.batchSize);
    const servicesByOrg = new Map<string, Promise<ActiveService[]>>();
    // Planned outside any transaction (rendering reads); then one transaction claims the batch's
    // events in one statement and writes the deliveries of those this process's claim won.
    const planned: { t: Transition; deliveries: (PlannedDelivery & { event: EventName })[] }[] = [];
    const silent: number[] = [];
    for (const t of events) {
      let list = servicesByOrg.get(t.organizationId);
      if (!list) servicesByOrg.set(t.organizationId, (list = this.services.activeFor(t.organizationId)));
      const deliveries = await this.plan(t, await list);
      if (deliveries.length) planned.push({ t, deliveries });
      else silent.push(t.seq);
    }
    const now = clock.now();
    return this.db.transaction(async (trx) => {
      const r = this.outbox.withTransaction(trx);
      const claimed = await r.claimEvents([...silent, ...planned.map((p) => p.t.seq)], now);
      const won = planned.filter((p) => claimed.has(p.t.seq));
      await r.insertDeliveries(won.flatMap(({ t, deliveries }) => deliveries.map((p) => this.newDelivery(t, p, now))));
      return claimed.size;
    });
  }

  private newDelivery(t: Transition, p: PlannedDelivery & { event: EventName }, now: Date): NewDelivery {
    return {
      id: crypto.randomUUID(),
      eventSeq: t.seq,
      event: p.event,
      organizationId: t.organizationId,
      targetKind: p.targetKind,
      serviceId: p.serviceId,
      target: p.target,
      targetKey: p.targetKey,
      orderKey: t.buildId ?? `${t.kind}:${t.subjectId}`,
      payload: p.payload,
      nextAttemptAt: now,
      createdAt: now,
    };
  }

  /** The deliveries one event makes: none when it is no documented event or nobody hears of it. */
  private async plan(t: Transition, services: ActiveService[]): Promise<(PlannedDelivery & { event: EventName })[]> {
    const name = eventOf(t);
    if (!name || !(services.length || (await this.ownTargetsMayHear(name, t)))) return [];
    const rendered = await renderEvent(this.sources, name, t);
    if (!rendered) return [];
    const place: EventPlace = {
      pipelineId: rendered.pipeline?.id ?? null,
      clusterId: rendered.pipeline?.clusterId ?? rendered.agent?.clusterId ?? rendered.clusterId ?? null,
      teamIds: rendered.pipeline && services.some((s) => s.scope === 'some_teams') ? await this.sources.teamIdsOf(rendered.pipeline.id) : [],
      branch: rendered.build?.branch ?? null,
    };
    const ctx: FanOutContext = {
      event: {
        id: String(t.seq),
        name,
        // The outbox's triggers date events by the database's own (real) time; a frozen or
        // shifted service clock moves them by its current difference, as it does every other date.
        occurredAt: new Date(t.occurredAt.getTime() + clock.now().getTime() - Date.now()),
        organizationId: t.organizationId,
        pipelineId: place.pipelineId,
        buildId: t.buildId,
        payload: rendered.payload,
      },
      rendered,
      place,
      services,
      previousFinishedState:
        rendered.build && (name === 'build.finished' || name === 'build.failing') ? await this.sources.previousFinishedState(rendered.build) : null,
      buildStateAtEvent: t.kind === 'build' ? (t.blocked && t.toState === 'passed' ? 'blocked' : t.toState) : null,
      jobStateAtEvent: t.kind === 'job' ? t.toState : null,
      stepMoment: rendered.job ? stepMomentOf(name, rendered.job, rendered.jobs) : null,
      creatorTeams:
        rendered.build?.creator && namesCreatorTeams(rendered) ? await this.sources.teamSlugsOf(rendered.build.creator.id, rendered.build.organizationId) : [],
    };
    const out: PlannedDelivery[] = [];
    for (const s of services) {
      const provider = this.providers[s.provider];
      if (!provider?.planForService || !inScope(s, place)) continue;
      out.push(...(await provider.planForService(ctx, s)));
    }
    for (const provider of Object.values(this.providers)) if (provider.planOwn) out.push(...(await provider.planOwn(ctx)));
    return out.map((p) => ({ ...p, event: name }));
  }

  /** Whether any provider's own targets (notify, commit statuses) may hear of the event; reads the pipeline and a job, never the whole build. */
  private async ownTargetsMayHear(name: EventName, t: Transition): Promise<boolean> {
    const own = Object.values(this.providers).filter((p) => p.planOwn);
    if (!own.length) return false;
    const [pipeline] = t.pipelineId ? await this.sources.pipelines([t.pipelineId]) : [];
    const [job] = t.kind === 'job' ? await this.sources.jobs([t.subjectId]) : [];
    return own.some((p) => p.mayPlanOwn?.(name, pipeline ?? null, job ?? null) ?? true);
  }

  /**
   * The `ping` a new webhook service is sent (other providers' receivers take no ping): the
   * service (its id, provider and URL, never its token) and its organization.
   */
  async ping(service: ActiveService): Promise<void> {
    if (service.provider !== 'webhook') return;
    const org = await this.sources.organization(service.organizationId);
    const payload: EventPayload = {
      event: 'ping',
      service: { id: service.id, provider: service.provider, settings: { url: service.settings.url } },
      // The ping events page: 'The Organization this notification belongs to', its REST representation.
      organization: org ? { ...serializeOrganization(org, this.sources.publicUrl) } : undefined,
      sender: service.creator,
    };
    const now = clock.now();
    await this.outbox.insertDeliveries([
      {
        id: crypto.randomUUID(),
        eventSeq: 0,
        event: 'ping',
        organizationId: service.organizationId,
        targetKind: 'service',
        serviceId: service.id,
        target: null,
        targetKey: `service:${service.id}`,
        orderKey: `ping:${crypto.randomUUID()}`,
        payload,
        nextAttemptAt: now,
        createdAt: now,
      },
    ]);
  }

  /**
   * Leases up to `limit` due deliveries (not those already in flight here, whose targets are
   * `inFlightTargets` and organizations `inFlightOrganizations`). One target holds at most half
   * the slots (`perTargetLimit`), one organization three quarters (`perOrganizationLimit`): a
   * slow receiver with a backlog, or an organization with several, never starves the others. The
   * caller sends each with `attempt`, whose time the transport's deadline bounds.
   */
  async leaseDue(limit: number, inFlight: string[], inFlightTargets: string[] = [], inFlightOrganizations: string[] = []): Promise<Delivery[]> {
    if (limit <= 0) return [];
    const perTarget = perTargetLimit(this.settings.concurrency);
    const perOrganization = perOrganizationLimit(this.settings.concurrency);
    const held = new Map<string, number>();
    for (const t of inFlightTargets) held.set(t, (held.get(t) ?? 0) + 1);
    const heldByOrganization = new Map<string, number>();
    for (const o of inFlightOrganizations) heldByOrganization.set(o, (heldByOrganization.get(o) ?? 0) + 1);
    const fullOrganizations = [...heldByOrganization].filter(([, n]) => n >= perOrganization).map(([o]) => o);
    const now = clock.now();
    // A target that failed last time takes one delivery at a time (a probe) once its rest is over.
    const cap = (target: string) => (this.resting.has(target) ? 1 : perTarget);
    const closed = [...held].filter(([t, n]) => n >= cap(t)).map(([t]) => t);
    for (const [target, r] of this.resting) {
      if (r.until > now.getTime()) closed.push(target);
      else if (r.until + this.settings.retryCapMs < now.getTime()) this.resting.delete(target); // long quiet: forgotten
    }
    const candidates = await this.outbox.due(now, limit, inFlight, closed, fullOrganizations);
    const leased: Delivery[] = [];
    for (const d of candidates) {
      if (leased.length >= limit) break;
      if ((held.get(d.targetKey) ?? 0) >= cap(d.targetKey)) continue;
      if ((heldByOrganization.get(d.organizationId) ?? 0) >= perOrganization) continue;
      if (await this.outbox.lease(d.id, this.owner, now, new Date(now.getTime() + this.settings.leaseMs))) {
        leased.push(d);
        held.set(d.targetKey, (held.get(d.targetKey) ?? 0) + 1);
        heldByOrganization.set(d.organizationId, (heldByOrganization.get(d.organizationId) ?? 0) + 1);
      }
    }
    return leased;
  }

  /** One attempt at a leased delivery, recorded with its outcome and what comes next. */
  async attempt(d: Delivery): Promise<AttemptResult> {
    const started = clock.now();
    const t0 = process.hrtime.bigint();
    let result: AttemptResult;
    try {
      const service = d.serviceId ? await this.services.findForDelivery(d.organizationId, d.serviceId) : null;
      const provider = this.providers[d.targetKind === 'service' ? (service?.provider ?? '') : String(d.target?.provider ?? '')];
      if (d.targetKind === 'service' && !service) result = { ok: false, status: null, excerpt: 'the notification service was deleted', final: true };
      else if (!provider) result = { ok: false, status: null, excerpt: 'no provider delivers this target', final: true };
      else result = await provider.send(d, service, this.http);
    } catch (err) {
      // A client's refusal that no retry changes is thrown marked `final` (./http.ts).
      const final = typeof err === 'object' && err !== null && 'final' in err && err.final === true;
      result = { ok: false, status: null, excerpt: err instanceof Error ? err.message : String(err), ...(final ? { final } : {}) };
    }
    const durationMs = Number((process.hrtime.bigint() - t0) / 1_000_000n);
    const number = d.attempts + 1;
    const now = clock.now();
    this.rest(d.targetKey, result, now);
    const giveUp = !result.ok && (result.final === true || number >= this.settings.maxAttempts);
    const next = result.ok
      ? { state: 'delivered' as const, nextAttemptAt: now, finishedAt: now }
      : giveUp
        ? { state: 'failed' as const, nextAttemptAt: now, finishedAt: now }
        : {
            state: 'pending' as const,
            nextAttemptAt: new Date(now.getTime() + backoffMs(number, this.settings.retryBaseMs, this.settings.retryCapMs)),
            finishedAt: null,
          };
    await this.db.transaction((trx) =>
      this.outbox
        .withTransaction(trx)
        .recordAttempt(
          d.id,
          this.owner,
          { number, startedAt: started, durationMs, status: result.status, ok: result.ok, excerpt: result.excerpt.slice(0, 1000) },
          next,
        ),
    );
    return result;
  }

  /** Puts a target to rest after an attempt a retry may fix, and wakes it on an answer it took. */
  private rest(target: string, result: AttemptResult, now: Date): void {
    if (result.ok || result.final) {
      this.resting.delete(target);
      return;
    }
    const failures = (this.resting.get(target)?.failures ?? 0) + 1;
    this.resting.set(target, { failures, until: now.getTime() + backoffMs(failures, this.settings.retryBaseMs, this.settings.retryCapMs) });
  }

  /** A service's recent deliveries with their attempts, newest first. */
  async history(serviceId: string, offset: number, limit: number): Promise<DeliveryView[]> {
    const ds = await this.outbox.ofService(serviceId, offset, limit);
    const attempts = await this.outbox.attemptsOf(ds.map((d) => d.id));
    return ds.map((d) => ({ delivery: d, attempts: attempts.get(d.id) ?? [] }));
  }

  async delivery(organizationId: string, serviceId: string, id: string): Promise<DeliveryView> {
    const d = await this.outbox.find(organizationId, id);
    if (!d || d.serviceId !== serviceId) throw new NotFoundError('delivery');
    return { delivery: d, attempts: (await this.outbox.attemptsOf([d.id])).get(d.id) ?? [] };
  }

  /** Sends a delivery's payload again, as a new delivery of the same event to the same target. */
  async redeliver(organizationId: string, serviceId: string, id: string): Promise<DeliveryView> {
    const { delivery: d } = await this.delivery(organizationId, serviceId, id);
    const now = clock.now();
    const copy: NewDelivery = {
      ...d,
      id: crypto.randomUUID(),
      // Its own place in line: a redelivery waits for nothing and holds nothing up.
      orderKey: `redelivery:${crypto.randomUUID()}`,
      nextAttemptAt: now,
      createdAt: now,
      redeliveryOf: d.id,
    };
    await this.outbox.insertDeliveries([copy]);
    return this.delivery(organizationId, serviceId, copy.id);
  }

  /** Whether a pending delivery is due within `ms` (tests settle on it). */
  pendingDueWithin(ms: number): Promise<boolean> {
    return this.outbox.hasPendingBefore(new Date(clock.now().getTime() + ms));
  }

  /** Forgets fanned-out events and finished deliveries older than the retention. */
  prune(): Promise<{ events: number; deliveries: number }> {
    return this.outbox.prune(new Date(clock.now().getTime() - this.settings.retentionMs));
  }

  /** An organization's deliveries in event order (tests, the CLI). */
  ofOrganization(organizationId: string, limit = 1000): Promise<Delivery[]> {
    return this.outbox.ofOrganization(organizationId, limit);
  }
}
