/**
 * Prometheus metrics (prom-client) at `GET /metrics`: requests by operation id and status with
 * their latency, requests in flight (an upload's backlog among them), the database pool and
 * query timing, and what the installation holds at scrape time (jobs by state and queue, agents
 * by connection state, the notification outbox and deliveries still to send), read with a few
 * grouped counts on indexed columns. Off unless METRICS_ENABLED; METRICS_TOKEN, when set, is the
 * Bearer token a scraper must send. Labels never carry a path, a slug, a token or any other value
 * a client chose: only operation ids, methods, statuses, states and the names of queues an
 * operator made in a cluster (a queue only a pipeline names is counted as `other`).
 */
import crypto from 'node:crypto';
import type { NextFunction, Request, Response } from 'express';
import type { Knex } from 'knex';
import { localsOf } from '../http/middleware/locals';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { queueRuleOf } from '../builds/jobs/cluster-queue';
import { ACTIVE_JOB_STATES } from '../builds/states';

export interface MetricsSettings {
  enabled: boolean;
  token: string | undefined;
}

/** The queue label of a job whose queue none of its organization's clusters has. */
export const OTHER_QUEUE = 'other';

/** The job states counted by queue: waiting for an agent, and on one (the ones that keep a build going). */
const QUEUED_JOB_STATES = ACTIVE_JOB_STATES;

const TRANSACTION_CONTROL = /^\s*(begin|commit|rollback|savepoint|release|start transaction|set transaction)\b/i;

/** What a request that names no operation of the spec is labelled (the docs page, the badges...). */
const NO_OPERATION = 'none';

interface Pool {
  numUsed(): number;
  numFree(): number;
  numPendingAcquires(): number;
  numPendingCreates(): number;
}

/** A job's queue, as its agent query rules name it (`queue=deploy`); none named: `default`, as agents are. */
export function queueOf(agentQueryRulesJson: string): string {
  try {
    const rules: unknown = JSON.parse(agentQueryRulesJson);
    if (Array.isArray(rules)) return queueRuleOf(rules.filter((r): r is string => typeof r === 'string')) ?? 'default';
  } catch {
    // Stored by us as JSON; an unreadable value is counted, not dropped.
  }
  return 'default';
}

/**
 * What a scrape counts, from the areas' repositories (the jobs', clusters', agents' and
 * notifications'), handed in by the composition root (src/services.ts).
 */
export interface ScrapeCounts {
  /** Command jobs in `states`, counted by state, agent query rules and organization. */
  jobsByStateAndRules(states: readonly string[]): Promise<{ state: string; rules: string; org: string; n: number }[]>;
  /** Every cluster queue's key, with its cluster's organization. */
  queueKeys(): Promise<{ org: string; key: string }[]>;
  /** Agents counted by connection state. */
  agentsByConnectionState(): Promise<{ state: string; n: number }[]>;
  /** Outbox events not yet fanned out, and deliveries still to send. */
  pendingNotifications(): Promise<{ events: number; deliveries: number }>;
}

export class Metrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'windsock_http_requests_total',
    help: 'HTTP requests answered, by spec operation id, method and status',
    labelNames: ['operation', 'method', 'status'] as const,
    registers: [this.registry],
  });
  private readonly duration = new Histogram({
    name: 'windsock_http_request_duration_seconds',
    help: 'Time from the request reaching Windsock to its response finishing, by spec operation id, method and status',
    labelNames: ['operation', 'method', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });
  private readonly inFlight = new Gauge({
    name: 'windsock_http_requests_in_flight',
    help: 'Requests being processed, by spec operation id (uploadTestResults, uploadArtifactContent: the upload backlog)',
    labelNames: ['operation'] as const,
    registers: [this.registry],
  });
  private readonly queries = new Histogram({
    name: 'windsock_db_query_duration_seconds',
    help: 'Database query time, by outcome (ok or error)',
    labelNames: ['outcome'] as const,
    buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 5],
    registers: [this.registry],
  });
  private readonly pool = new Gauge({
    name: 'windsock_db_pool_connections',
    help: 'Database pool: connections in use and free, and acquires waiting (pending)',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  private readonly jobs = new Gauge({
    name: 'windsock_jobs',
    help: 'Command jobs waiting for or held by an agent, by state and queue (at scrape time)',
    labelNames: ['state', 'queue'] as const,
    registers: [this.registry],
  });
  private readonly agents = new Gauge({
    name: 'windsock_agents',
    help: 'Registered agents by connection state (at scrape time)',
    labelNames: ['state'] as const,
    registers: [this.registry],
  });
  private readonly outbox = new Gauge({
    name: 'windsock_notification_events_pending',
    help: 'Build, job and agent events not yet fanned out to notification targets (at scrape time)',
    registers: [this.registry],
  });
  private readonly deliveries = new Gauge({
    name: 'windsock_notification_deliveries_pending',
    help: 'Notification deliveries still to be sent or retried (at scrape time)',
    registers: [this.registry],
  });
  /** Queries sent and not answered yet, by knex's query uid. */
  readonly started = new Map<string, bigint>();

  constructor(
    private readonly db: Knex,
    private readonly counts: ScrapeCounts,
  ) {
    collectDefaultMetrics({ register: this.registry });
    // Knex tags each query with a uid on both events; transactions' queries bubble up to the
    // instance. Transaction control (BEGIN, COMMIT, SAVEPOINT...) has a 'query' event and no
    // answer event, so it is not timed; whatever else goes unanswered is dropped oldest first.
    db.on('query', (q: { __knexQueryUid?: string; sql?: string }) => {
      if (!q.__knexQueryUid || TRANSACTION_CONTROL.test(q.sql ?? '')) return;
      if (this.started.size >= 10_000) this.started.delete(this.started.keys().next().value!);
      this.started.set(q.__knexQueryUid, process.hrtime.bigint());
    });
    db.on('query-response', (_r: unknown, q: { __knexQueryUid?: string }) => this.queryDone(q.__knexQueryUid, 'ok'));
    db.on('query-error', (_e: unknown, q: { __knexQueryUid?: string }) => this.queryDone(q.__knexQueryUid, 'error'));
  }

  private queryDone(uid: string | undefined, outcome: 'ok' | 'error'): void {
    const start = uid === undefined ? undefined : this.started.get(uid);
    if (start === undefined) return;
    this.started.delete(uid!);
    this.queries.observe({ outcome }, Number(process.hrtime.bigint() - start) / 1e9);
  }

  /** Counts and times every request; mounted after the operation is tagged (http/spec-paths.ts). */
  recordRequests() {
    return (req: Request, res: Response, next: NextFunction) => {
      const start = process.hrtime.bigint();
      const operation = localsOf(res).operationId ?? NO_OPERATION;
      this.inFlight.inc({ operation });
      let done = false;
      const finish = () => {
        if (done) return;
        done = true;
        this.inFlight.dec({ operation });
        // A client that hung up before the answer: counted with the status it would have had.
        const labels = { operation, method: req.method, status: String(res.statusCode) };
        this.requests.inc(labels);
        this.duration.observe(labels, Number(process.hrtime.bigint() - start) / 1e9);
      };
      res.once('finish', finish).once('close', finish);
      next();
    };
  }

  /** The figures read at scrape time. */
  private async refresh(): Promise<void> {
    // cast: Knex types `db.client` as any; its pool is tarn's.
    const pool = (this.db.client as { pool?: Pool }).pool;
    this.pool.set({ state: 'used' }, pool?.numUsed() ?? 0);
    this.pool.set({ state: 'free' }, pool?.numFree() ?? 0);
    this.pool.set({ state: 'pending' }, (pool?.numPendingAcquires() ?? 0) + (pool?.numPendingCreates() ?? 0));

    // By the queue each job's rules name, but only a queue the organization's clusters have (an
    // operator made it): a name only a pipeline chose is `other`, so the label stays bounded.
    const jobRows = await this.counts.jobsByStateAndRules(QUEUED_JOB_STATES);
    const queueRows = await this.counts.queueKeys();
    const known = new Set(queueRows.map((q) => `${q.org}\0${q.key}`));
    this.jobs.reset();
    for (const state of QUEUED_JOB_STATES) this.jobs.set({ state, queue: 'default' }, 0);
    for (const row of jobRows) {
      const queue = queueOf(row.rules);
      this.jobs.inc({ state: row.state, queue: queue === 'default' || known.has(`${row.org}\0${queue}`) ? queue : OTHER_QUEUE }, row.n);
    }

    const agentRows = await this.counts.agentsByConnectionState();
    this.agents.reset();
    this.agents.set({ state: 'connected' }, 0);
    for (const row of agentRows) this.agents.set({ state: row.state }, row.n);

    const pending = await this.counts.pendingNotifications();
    this.outbox.set(pending.events);
    this.deliveries.set(pending.deliveries);
  }

  /** `GET /metrics`: the text exposition format, behind METRICS_TOKEN when one is set. */
  handler(token: string | undefined) {
    const expected = token === undefined ? undefined : digest(token);
    return async (req: Request, res: Response) => {
      if (expected) {
        const match = /^Bearer (\S+)$/.exec(req.get('authorization') ?? '');
        if (!match || !crypto.timingSafeEqual(digest(match[1]!), expected)) {
          res.setHeader('WWW-Authenticate', 'Bearer realm="metrics"');
          res.status(401).json({ message: 'The metrics need the token METRICS_TOKEN names: Authorization: Bearer <token>' });
          return;
        }
      }
      await this.refresh();
      res.setHeader('Cache-Control', 'no-store');
      res.type(this.registry.contentType).send(await this.registry.metrics());
    };
  }
}

const digest = (value: string) => crypto.createHash('sha256').update(value).digest();
