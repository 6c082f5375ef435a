/**
 * Redis, when the operator sets REDIS_URL: the rate limits' shared counters and the change
 * feed's pub/sub. ioredis is the client: maintained, typed, it reconnects by itself and
 * re-subscribes a subscriber's channels after a reconnect, which the change feed relies on.
 *
 * Like the database, Redis is infrastructure the operator configured, not a URL a user gave:
 * its connections are not the guarded outbound transport's concern (docs/outbound.md), and lint
 * allows ioredis in this file only.
 */
import type Redis from 'ioredis';

export type RedisClient = Redis;

export interface RedisSettings {
  /** `redis://[user:password@]host:port[/db]` or `rediss://` (TLS). */
  url: string;
  /** Prepended to every key and channel, so several deployments (or test runs) can share one Redis. */
  prefix: string;
}

/**
 * A client that fails fast while Redis is unreachable (no offline queue, one retry), so a
 * request never waits on it: the rate limiter lets such a request through, as it does when the
 * database is unreachable. It connects on its first command and reconnects with back-off.
 */
/**
 * Ends a connection: QUIT when it is up (what was sent is answered first); otherwise at once. A
 * client that never reached Redis queues QUIT behind the commands waiting for it, so quitting
 * would wait for a server that may never come, and hold shutdown up.
 */
export async function closeRedis(client: RedisClient): Promise<void> {
  if (client.status === 'ready') await client.quit().catch(() => client.disconnect());
  else client.disconnect();
}

/**
 * ioredis itself, loaded by the first client: a start without REDIS_URL (and every CLI command)
 * does not pay its load (about 45 ms). `typeof import` types the CommonJS require as the import would.
 */
function ioredis(): typeof Redis {
  const { default: client }: typeof import('ioredis') = require('ioredis');
  return client;
}

export function connectRedis(url: string, name: string): RedisClient {
  const Redis = ioredis();
  return quiet(
    new Redis(url, {
      connectionName: name,
      lazyConnect: true,
      enableOfflineQueue: false,
      maxRetriesPerRequest: 1,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5_000),
    }),
  );
}

/**
 * A connection's errors surface on the commands that fail (the rate limiter lets the request
 * through, the feed reports a lost send); the client's own 'error' events would otherwise be
 * printed as unhandled on every reconnect attempt.
 */
function quiet(client: RedisClient): RedisClient {
  client.on('error', () => undefined);
  return client;
}

/** Redis could not answer (unreachable, or reconnecting): the caller carries on without it. */
export class RedisUnavailableError extends Error {
  constructor(cause: unknown) {
    super('Redis is unavailable', { cause });
    this.name = 'RedisUnavailableError';
  }
}

/** Opens the client's connection now (a client is lazy) and waits for it; rejects when Redis cannot be reached. */
export async function redisReady(client: RedisClient): Promise<void> {
  if (client.status === 'ready') return;
  if (client.status === 'wait') return client.connect();
  await new Promise<void>((resolve, reject) => {
    const ok = () => {
      client.off('error', fail);
      resolve();
    };
    const fail = (err: unknown) => {
      client.off('ready', ok);
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    client.once('ready', ok);
    client.once('error', fail);
  });
}

/**
 * Fixed one-minute windows counted in Redis: `INCRBY` and `PEXPIRE` in one `MULTI`, so a counter
 * never outlives its window (plus a minute's grace for clocks a little apart).
 */
export class RedisCounters {
  /** The first count's connect, which counts made meanwhile wait for (a second `connect()` throws). */
  private connecting: Promise<void> | undefined;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
  ) {}

  /** Adds `n` to the bucket's counter of the window starting at `windowStart` (seconds) and returns its new value. */
  async add(bucket: string, windowStart: number, n: number, windowEndMs: number, nowMs: number): Promise<number> {
    const key = `${this.prefix}rate:${bucket}:${windowStart}`;
    let result: [error: Error | null, value: unknown][] | null;
    try {
      // Lazy until the first count (a CLI command that counts nothing opens no connection).
      if (this.client.status === 'wait') {
        this.connecting ??= this.client.connect().finally(() => {
          this.connecting = undefined;
        });
      }
      if (this.connecting) await this.connecting;
      result = await this.client
        .multi()
        .incrby(key, n)
        .pexpire(key, Math.max(1, windowEndMs - nowMs) + 60_000)
        .exec();
    } catch (err) {
      throw new RedisUnavailableError(err);
    }
    const [incr] = result ?? [];
    if (!incr || incr[0]) throw new RedisUnavailableError(incr?.[0] ?? new Error('the transaction was discarded'));
    return Number(incr[1]);
  }

  async close(): Promise<void> {
    await closeRedis(this.client);
  }
}

/**
 * A client for SUBSCRIBE: it queues the subscription until connected, and ioredis subscribes
 * again after every reconnect (`autoResubscribe`).
 */
export function connectRedisSubscriber(url: string, name: string): RedisClient {
  const Redis = ioredis();
  return quiet(
    new Redis(url, {
      connectionName: name,
      lazyConnect: true,
      autoResubscribe: true,
      maxRetriesPerRequest: null,
      connectTimeout: 2_000,
      retryStrategy: (times) => Math.min(100 * 2 ** Math.min(times, 6), 5_000),
    }),
  );
}
