/**
 * A Postgres notification channel: one dedicated connection per process (outside the Knex pool,
 * which would hand a LISTENing connection to queries) that LISTENs on the channel and sends with
 * `pg_notify`. When the connection drops (a restart, a failover, `pg_terminate_backend`) it is
 * opened again with back-off (100 ms doubling to 5 s) and LISTENs again; what was sent meanwhile is
 * lost to this process, which is why the change feed's readers re-read on their own heartbeat.
 *
 * This is the database the operator configured (DATABASE_URL), an infrastructure connection like
 * the pool's, not a user-supplied URL: it is not the guarded outbound transport's concern
 * (docs/outbound.md).
 */
import type pg from 'pg';

export interface ChannelOptions {
  /** The database (DATABASE_URL). */
  url: string;
  /** The channel's name: an identifier (letters, digits, underscores). */
  channel: string;
  /** A dropped connection, a failed reconnect: reported, never thrown. */
  report: (err: unknown, what: string) => void;
  minBackoffMs?: number;
  maxBackoffMs?: number;
}

const IDENTIFIER = /^[a-z_][a-z0-9_]{0,62}$/;

export class PostgresChannel {
  private client: pg.Client | null = null;
  private onMessage: (payload: string) => void = () => undefined;
  private closed = false;
  private backoffMs: number;
  private retry: NodeJS.Timeout | undefined;
  private readyWaiters: (() => void)[] = [];
  private pid: number | null = null;
  private sending: Promise<void> = Promise.resolve();
  /** How many times the channel was LISTENed on (1 after the first connect; more after reconnects). */
  listens = 0;

  constructor(private readonly o: ChannelOptions) {
    if (!IDENTIFIER.test(o.channel)) throw new Error(`not a channel name: ${o.channel}`);
    this.backoffMs = o.minBackoffMs ?? 100;
  }

  /** Connects and LISTENs; resolves once listening (the first time), retrying with back-off until then or close. */
  start(onMessage: (payload: string) => void): Promise<void> {
    this.onMessage = onMessage;
    const ready = this.ready();
    void this.connect();
    return ready;
  }

  /** Resolves when the channel is (next) listening; at once when it is. */
  ready(): Promise<void> {
    if (this.client && !this.closed) return Promise.resolve();
    return new Promise((resolve) => this.readyWaiters.push(resolve));
  }

  /** The backend process of the listening connection (tests terminate it), or null while reconnecting. */
  get backendPid(): number | null {
    return this.client ? this.pid : null;
  }

  /** Sends `payload` on the channel (every listener of the database hears it, this one too). Rejects while reconnecting. */
  async send(payload: string): Promise<void> {
    const client = this.client;
    if (!client) throw new Error('the notification channel is reconnecting');
    // One query at a time on the connection, in the order sent.
    const sent = this.sending.then(() => client.query('select pg_notify($1, $2)', [this.o.channel, payload]));
    this.sending = sent.then(
      () => undefined,
      () => undefined,
    );
    await sent;
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.retry);
    const client = this.client;
    this.client = null;
    for (const w of this.readyWaiters.splice(0)) w();
    if (client) await client.end().catch(() => undefined);
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    // node-postgres loads with the first connection: a SQLite start never loads it.
    const { default: postgres } = await import('pg');
    if (this.closed) return;
    const client = new postgres.Client({ connectionString: this.o.url, application_name: 'windsock-changes' });
    let dropped = false;
    const drop = (err: unknown) => {
      if (dropped) return;
      dropped = true;
      if (this.client === client) this.client = null;
      client.removeAllListeners('notification');
      void client.end().catch(() => undefined);
      if (this.closed) return;
      this.o.report(err, 'change channel dropped: reconnecting');
      this.schedule();
    };
    client.on('error', drop);
    client.on('end', () => drop(new Error('connection ended')));
    client.on('notification', (n) => {
      if (n.channel === this.o.channel && n.payload !== undefined) this.onMessage(n.payload);
    });
    try {
      await client.connect();
      // An identifier checked above: LISTEN takes no parameter.
      await client.query(`listen ${this.o.channel}`);
      const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
      this.pid = rows[0]?.pid ?? null;
    } catch (err) {
      drop(err);
      return;
    }
    if (this.closed || dropped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.client = client;
    this.listens++;
    this.backoffMs = this.o.minBackoffMs ?? 100;
    for (const w of this.readyWaiters.splice(0)) w();
  }

  private schedule(): void {
    clearTimeout(this.retry);
    const wait = this.backoffMs;
    this.backoffMs = Math.min(this.backoffMs * 2, this.o.maxBackoffMs ?? 5_000);
    this.retry = setTimeout(() => void this.connect(), wait);
    this.retry.unref();
  }
}
