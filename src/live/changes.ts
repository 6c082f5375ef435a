/**
 * The change feed: what tells a live page (src/web/live.ts) that a build, one of its jobs or one
 * of their logs changed, in this process or in another instance on the same database. A change
 * names what changed, never its new state: a listener reads the state from the database (state
 * through the database, not process memory), so a lost or late change costs freshness, never
 * truth.
 *
 * Publishers (build progression after its transactions commit, the agent's log appends) call
 * `publish`, which never throws and never waits: delivery is asynchronous. Log changes are
 * coalesced per job (at most one per `LOG_COALESCE_MS` per process, the latest size), so a
 * chatty agent does not flood the channel or the pages.
 *
 * Implementations: `LocalChangeFeed` (one process: SQLite, or a test), and the cross-instance
 * ones in ./feeds.ts (Postgres LISTEN/NOTIFY over src/db/listen.ts, Redis pub/sub), both built on
 * `RelayedChangeFeed` below: a change is delivered to this process's listeners at once and
 * sent to the other instances, which deliver it to theirs.
 */
import crypto from 'node:crypto';
import { isRecord, numberField, stringField } from '../core/guards';

export type Change =
  | { kind: 'build'; organizationId: string; pipelineId: string; buildId: string }
  | { kind: 'job'; organizationId: string; buildId: string; jobId: string }
  | { kind: 'log'; organizationId: string; buildId: string; jobId: string; size: number };

export interface ChangeFeed {
  /** After the change is committed; never throws, never blocks the caller. */
  publish(change: Change): void;
  /** Changes of one build (its own, its jobs', their logs'); answers the unsubscribe. */
  subscribe(buildId: string, listener: (change: Change) => void): () => void;
  close(): Promise<void>;
}

/** At most one log change per job per this many ms per process. */
export const LOG_COALESCE_MS = 250;

/** Something went wrong where nobody waits for the answer (a listener threw, a send failed). */
export type FeedErrorReporter = (err: unknown, what: string) => void;

/**
 * Log changes of one job within `windowMs` of the last one sent become one, sent at the end of
 * the window with the latest size; the first of a quiet job goes at once.
 */
export class LogCoalescer {
  private readonly windows = new Map<string, { timer: NodeJS.Timeout; pending: Extract<Change, { kind: 'log' }> | null }>();

  constructor(
    private readonly send: (change: Change) => void,
    private readonly windowMs = LOG_COALESCE_MS,
  ) {}

  offer(change: Extract<Change, { kind: 'log' }>): void {
    const open = this.windows.get(change.jobId);
    if (open) {
      if (!open.pending || change.size >= open.pending.size) open.pending = change;
      return;
    }
    this.send(change);
    this.open(change.jobId);
  }

  private open(jobId: string): void {
    const timer = setTimeout(() => {
      const w = this.windows.get(jobId);
      this.windows.delete(jobId);
      if (w?.pending) {
        this.send(w.pending);
        this.open(jobId);
      }
    }, this.windowMs);
    timer.unref();
    this.windows.set(jobId, { timer, pending: null });
  }

  /** Sends what is waiting now (on close: a page still open in this process sees the last size). */
  flush(): void {
    for (const [jobId, w] of this.windows) {
      clearTimeout(w.timer);
      this.windows.delete(jobId);
      if (w.pending) this.send(w.pending);
    }
  }
}

/** This process's listeners, by build. */
class Listeners {
  private readonly byBuild = new Map<string, Set<(change: Change) => void>>();

  constructor(private readonly report: FeedErrorReporter) {}

  add(buildId: string, listener: (change: Change) => void): () => void {
    let set = this.byBuild.get(buildId);
    if (!set) {
      set = new Set();
      this.byBuild.set(buildId, set);
    }
    // Its own wrapper: the same function subscribed twice is two subscriptions.
    const entry = (change: Change) => listener(change);
    set.add(entry);
    return () => {
      const current = this.byBuild.get(buildId);
      if (!current) return;
      current.delete(entry);
      if (!current.size) this.byBuild.delete(buildId);
    };
  }

  /** Calls the build's listeners, later (never inside the publisher's call); a listener that throws is reported and the others still hear. */
  deliver(change: Change): void {
    if (!this.byBuild.has(change.buildId)) return;
    setImmediate(() => {
      for (const listener of [...(this.byBuild.get(change.buildId) ?? [])]) {
        try {
          listener(change);
        } catch (err) {
          this.report(err, 'change listener');
        }
      }
    });
  }

  get size(): number {
    let n = 0;
    for (const set of this.byBuild.values()) n += set.size;
    return n;
  }

  clear(): void {
    this.byBuild.clear();
  }
}

const ignore: FeedErrorReporter = () => undefined;

/** One process: changes go to this process's listeners only (SQLite, where one process owns the database; tests). */
export class LocalChangeFeed implements ChangeFeed {
  private readonly listeners: Listeners;
  private readonly logs: LogCoalescer;
  private closed = false;

  constructor(report: FeedErrorReporter = ignore, coalesceMs = LOG_COALESCE_MS) {
    this.listeners = new Listeners(report);
    this.logs = new LogCoalescer((c) => this.listeners.deliver(c), coalesceMs);
  }

  publish(change: Change): void {
    if (this.closed) return;
    if (change.kind === 'log') this.logs.offer(change);
    else this.listeners.deliver(change);
  }

  subscribe(buildId: string, listener: (change: Change) => void): () => void {
    return this.listeners.add(buildId, listener);
  }

  /** Open subscriptions (tests, metrics). */
  get subscriptions(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.logs.flush();
    this.listeners.clear();
  }
}

/** How a relayed feed reaches the other instances: send a message, hear theirs. */
export interface Relay {
  /** Sends one message to every instance (this one may hear it back); rejects when it could not. */
  send(message: string): Promise<void>;
  /** Starts hearing messages; `onMessage` is called for each (its own too, where the transport echoes them). */
  start(onMessage: (message: string) => void): Promise<void>;
  close(): Promise<void>;
}

/** The largest message a relay sends (Postgres NOTIFY's payload limit is 8000 bytes). */
export const MAX_MESSAGE_BYTES = 8000;

/**
 * Across instances: a change is delivered here at once and sent through the relay as JSON
 * `{"o": <this instance>, "c": <change>}`; a message from another instance is delivered here, and
 * this instance's own echo is dropped. A change that cannot be sent (the relay is down) is lost to
 * the other instances, reported, never thrown: their pages re-read on their next heartbeat.
 */
export class RelayedChangeFeed implements ChangeFeed {
  readonly instanceId = crypto.randomUUID();
  private readonly listeners: Listeners;
  private readonly logs: LogCoalescer;
  private closed = false;

  constructor(
    private readonly relay: Relay,
    private readonly report: FeedErrorReporter = ignore,
    coalesceMs = LOG_COALESCE_MS,
  ) {
    this.listeners = new Listeners(report);
    this.logs = new LogCoalescer((c) => this.emit(c), coalesceMs);
  }

  /** Starts hearing the other instances. */
  start(): Promise<void> {
    return this.relay.start((message) => this.receive(message));
  }

  publish(change: Change): void {
    if (this.closed) return;
    if (change.kind === 'log') this.logs.offer(change);
    else this.emit(change);
  }

  subscribe(buildId: string, listener: (change: Change) => void): () => void {
    return this.listeners.add(buildId, listener);
  }

  get subscriptions(): number {
    return this.listeners.size;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.logs.flush();
    this.closed = true;
    this.listeners.clear();
    await this.relay.close();
  }

  private emit(change: Change): void {
    this.listeners.deliver(change);
    const message = JSON.stringify({ o: this.instanceId, c: change });
    if (Buffer.byteLength(message) > MAX_MESSAGE_BYTES) return this.report(new Error('change too large to relay'), 'change feed');
    this.relay.send(message).catch((err: unknown) => this.report(err, 'change feed send'));
  }

  private receive(message: string): void {
    if (this.closed) return;
    let parsed: unknown;
    try {
      parsed = JSON.parse(message);
    } catch {
      return this.report(new Error('a change message that is not JSON'), 'change feed receive');
    }
    if (!isRecord(parsed) || parsed.o === this.instanceId) return;
    const change = changeOf(parsed.c);
    if (change) this.listeners.deliver(change);
    else this.report(new Error('a change message of unknown shape'), 'change feed receive');
  }
}

/** A change read from another instance's message; null when it is not one. */
export function changeOf(value: unknown): Change | null {
  const kind = stringField(value, 'kind');
  const organizationId = stringField(value, 'organizationId');
  const buildId = stringField(value, 'buildId');
  if (organizationId === undefined || buildId === undefined) return null;
  if (kind === 'build') {
    const pipelineId = stringField(value, 'pipelineId');
    return pipelineId === undefined ? null : { kind, organizationId, pipelineId, buildId };
  }
  const jobId = stringField(value, 'jobId');
  if (jobId === undefined) return null;
  if (kind === 'job') return { kind, organizationId, buildId, jobId };
  const size = numberField(value, 'size');
  return kind === 'log' && size !== undefined && Number.isFinite(size) ? { kind, organizationId, buildId, jobId, size } : null;
}
