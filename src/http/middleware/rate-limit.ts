/**
 * Rate limits, as the real API has them: a budget of requests per minute per organization,
 * shared by every token of that organization, and one per user, which every request of the
 * user's tokens counts against too; announced on every authenticated response with
 * `RateLimit-*` and `RateLimit-User-*` headers and enforced with a 429. And a budget of failed
 * authentications per client address, so tokens cannot be guessed at speed.
 *
 * Counters live in the database (`rate_limits`, one row per bucket and fixed one-minute window),
 * so several server processes on one Postgres share each budget. Writing the counter on every
 * request made it the most expensive part of a cached read: a write transaction per request cost
 * SQLite 40% of its get-a-build rate, and Postgres a round trip and a WAL record each. So a
 * process counts in memory while the bucket is in its first half, writing what it counted every
 * `FLUSH_MS` (one upsert per bucket, adding the count), and counts exactly (an upsert per request
 * returning the shared count) in the second half. Two processes can therefore never let more
 * than the budget through together (each alone stays within its half before it checks); with
 * more processes the overshoot is at most half a budget per process beyond the second, and
 * smaller as the flushes keep each one's view fresh.
 *
 * With REDIS_URL the counters live in Redis instead (`RedisCounters`, src/db/redis.ts): the same
 * fixed one-minute windows, budgets and headers, every request counted exactly (one `MULTI` of
 * `INCRBY` and `PEXPIRE`, a fraction of a database write), so no process ever overshoots.
 */
import type { NextFunction, Request, Response } from 'express';
import type { Knex } from 'knex';
import { isUnavailableError } from '../../db/knex';
import { RedisUnavailableError } from '../../db/redis';
import { RateLimitedError, SignatureError, UnauthorizedError, WebhookTokenError } from '../../core/errors';
import { principalOf } from './auth';
import { localsOf } from './locals';

export interface RateLimitSettings {
  /** Requests per minute per organization, on its paths; 0: no limit. */
  perOrganization: number;
  /** Requests per minute per user, every request of their tokens; 0: no limit. */
  perUser: number;
  /** Failed authentications per minute per client address; 0: no limit. */
  failedAuthPerAddress: number;
}

export const WINDOW_SECONDS = 60;

export interface Hit {
  count: number;
  /** Seconds until the window ends (at least 1). */
  resetSeconds: number;
  /** When the window ends (ms since the epoch). */
  resetAtMs: number;
}

/**
 * The fixed window of `windowSeconds` (aligned to the clock) that `nowMs` falls in: its start
 * (seconds since the epoch), the seconds until it resets (at least 1) and when it does (ms).
 */
export function windowAt(nowMs: number, windowSeconds = WINDOW_SECONDS): { windowStart: number; resetSeconds: number; resetAtMs: number } {
  const windowStart = Math.floor(nowMs / 1000 / windowSeconds) * windowSeconds;
  return {
    windowStart,
    resetSeconds: Math.max(1, Math.ceil(windowStart + windowSeconds - nowMs / 1000)),
    resetAtMs: (windowStart + windowSeconds) * 1000,
  };
}

/** How often counts made in memory are written to the shared counters (ms). */
export const FLUSH_MS = 100;

/** Counters shared by every process, counted exactly (Redis): adds `n` and answers the new count. */
export interface SharedCounters {
  add(bucket: string, windowStart: number, n: number, windowEndMs: number, nowMs: number): Promise<number>;
  close(): Promise<void>;
}

interface LocalCount {
  window: number;
  /** The shared count as last read. */
  known: number;
  /** Counted here and being written (not in `known` yet). */
  inFlight: number;
  /** Counted here and not written yet. */
  pending: number;
}

export class RateLimiter {
  /** Addresses over their failed-authentication budget, until the end of their window (ms). */
  private readonly blocked = new Map<string, number>();
  private readonly counts = new Map<string, LocalCount>();
  private flushTimer: NodeJS.Timeout | undefined;
  private purgedWindow = 0;

  /** `shared`: exact counters in Redis in place of the database's (see above). */
  constructor(
    private readonly db: Knex,
    readonly settings: RateLimitSettings,
    private readonly now: () => number = Date.now,
    private readonly shared?: SharedCounters,
  ) {}

  /** Closes the Redis connection, if any (the database's pool is the server's to close). */
  async close(): Promise<void> {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    await this.shared?.close();
  }

  /** Counts one request against `bucket` (whose budget is `limit`) in the current window and returns the count. */
  async hit(bucket: string, limit: number): Promise<Hit> {
    const nowMs = this.now();
    const { windowStart, resetSeconds, resetAtMs } = windowAt(nowMs);
    if (windowStart !== this.purgedWindow) this.purge(windowStart);
    if (this.shared) return { count: await this.shared.add(bucket, windowStart, 1, resetAtMs, nowMs), resetSeconds, resetAtMs };
    let local = this.counts.get(bucket);
    if (!local) {
      local = { window: windowStart, known: 0, inFlight: 0, pending: 0 };
      this.counts.set(bucket, local);
    }
    if (local.known + local.inFlight + local.pending + 1 <= limit / 2) {
      local.pending += 1;
      this.flushTimer ??= setTimeout(() => void this.flush(), FLUSH_MS).unref();
      return { count: local.known + local.inFlight + local.pending, resetSeconds, resetAtMs };
    }
    const n = local.pending + 1;
    local.pending = 0;
    let count: number;
    try {
      count = await this.write(local, bucket, n);
    } catch (err) {
      local.pending += n - 1;
      throw err;
    }
    return { count, resetSeconds, resetAtMs };
  }

  /**
   * Adds `n` counted here to the shared counter; returns the count, which includes them. On
   * Postgres another write of this process (a flush) may still be on its way on another
   * connection and land after this one, so the shared count returned can miss it: the count is
   * at least what this process had already seen or sent, plus `n` (a flush landing second made
   * `RateLimit-Remaining` one too high, seen under load in test/reliability/rate-limits.test.ts).
   */
  private async write(local: LocalCount, bucket: string, n: number): Promise<number> {
    const before = local.known + local.inFlight;
    local.inFlight += n;
    try {
      const count = Math.max(await this.add(bucket, local.window, n), before + n);
      local.known = Math.max(local.known, count);
      return count;
    } finally {
      local.inFlight -= n;
    }
  }

  /** Adds `n` to the shared counter and returns its new value. */
  private async add(bucket: string, windowStart: number, n: number): Promise<number> {
    // pg answers a raw query with its result ({ rows }), better-sqlite3 with the rows.
    const result = await this.db.raw<{ rows: { count: number }[] } | { count: number }[]>(
      'insert into rate_limits (bucket, window_start, count) values (?, ?, ?) ' +
        'on conflict (bucket, window_start) do update set count = rate_limits.count + excluded.count returning count',
      [bucket, windowStart, n],
    );
    const row = Array.isArray(result) ? result[0] : result.rows[0];
    return Number(row!.count);
  }

  /** Writes the counts made in memory (best effort: a failed write keeps them for the next flush). */
  private async flush(): Promise<void> {
    this.flushTimer = undefined;
    for (const [bucket, local] of this.counts) {
      if (!local.pending) continue;
      const n = local.pending;
      local.pending = 0;
      try {
        await this.write(local, bucket, n);
      } catch {
        local.pending += n;
      }
    }
  }

  /** Once per window and process: drop the counters of past windows (best effort). */
  private purge(windowStart: number): void {
    this.purgedWindow = windowStart;
    for (const [bucket, local] of this.counts) if (local.window !== windowStart) this.counts.delete(bucket);
    const nowMs = this.now();
    for (const [address, until] of this.blocked) if (until <= nowMs) this.blocked.delete(address);
    // Redis expires its counters itself.
    if (this.shared) return;
    this.db('rate_limits')
      .where('window_start', '<', windowStart)
      .delete()
      .catch(() => {
        this.purgedWindow = 0;
      });
  }

  isBlocked(address: string): number | undefined {
    const until = this.blocked.get(address);
    if (until === undefined) return undefined;
    const left = Math.ceil((until - this.now()) / 1000);
    if (left > 0) return left;
    this.blocked.delete(address);
    return undefined;
  }

  block(address: string, resetSeconds: number): void {
    if (this.blocked.size >= 10_000) this.blocked.delete(this.blocked.keys().next().value!);
    this.blocked.set(address, this.now() + resetSeconds * 1000);
  }
}

const ORG_PATH = /^\/(?:analytics\/)?organizations\/([^/]+)/;

/** The client's address: the socket's, or with TRUST_PROXY the one the trusted proxies forwarded (Express's `req.ip`). */
function addressOf(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}

function authLimited(limiter: RateLimiter, current: number, resetSeconds: number): RateLimitedError {
  return new RateLimitedError(
    'authentication',
    limiter.settings.failedAuthPerAddress,
    current,
    resetSeconds,
    `Too many failed authentication attempts from your address. Please wait ${resetSeconds} seconds before trying again.`,
  );
}

/**
 * After authentication on /v2, the docs' two limits: every request counts against its user
 * (`rest_user`, `RateLimit-User-*` headers) and, on an organization's paths the token reaches,
 * against that organization (`rest`, `RateLimit-*`). Over either budget it is a 429 whose
 * `scope` names the one exceeded; while a budget is used up its headers carry a warning.
 */
export function rateLimit(limiter: RateLimiter) {
  const { perOrganization, perUser } = limiter.settings;
  return async (req: Request, res: Response, next: NextFunction) => {
    if (perOrganization === 0 && perUser === 0) return next();
    const principal = principalOf(res);
    const org = perOrganization ? organizationIdOf(req, principal) : undefined;
    let orgHit: Hit | undefined;
    let userHit: Hit | undefined;
    try {
      [orgHit, userHit] = await Promise.all([
        org ? limiter.hit(`org:${org}`, perOrganization) : undefined,
        perUser ? limiter.hit(`user:${principal.user.id}`, perUser) : undefined,
      ]);
    } catch (err) {
      // The counters are unreachable (the database is down or write-locked): let the request
      // through unlimited; it answers 503 itself if it needs the database.
      if (isUnavailableError(err) || err instanceof RedisUnavailableError) return next();
      throw err;
    }
    if (orgHit) {
      res.locals.rateLimit = { scope: 'rest', limit: perOrganization, ...orgHit } satisfies RateLimitUsage;
      announce(res, 'RateLimit-', 'rest', perOrganization, orgHit);
    }
    if (userHit) announce(res, 'RateLimit-User-', 'rest_user', perUser, userHit);
    if (userHit && userHit.count > perUser) throw new RateLimitedError('rest_user', perUser, userHit.count, userHit.resetSeconds);
    if (orgHit && orgHit.count > perOrganization) throw new RateLimitedError('rest', perOrganization, orgHit.count, orgHit.resetSeconds);
    next();
  };
}

/** The organization the request's path names, when the token reaches it. */
function organizationIdOf(req: Request, principal: ReturnType<typeof principalOf>): string | undefined {
  const slug = ORG_PATH.exec(req.path)?.[1];
  if (!slug) return undefined;
  try {
    return principal.organizationsBySlug.get(decodeURIComponent(slug))?.organization.id;
  } catch {
    return undefined; // a malformed escape: the route answers it
  }
}

/** What the docs' warning header says while a budget is used up. */
const RATE_LIMIT_WARNING = 'You have exceeded your API rate limit.';

/** One budget's headers (`RateLimit-` or `RateLimit-User-`), with the warning while it is used up. */
function announce(res: Response, prefix: 'RateLimit-' | 'RateLimit-User-', scope: RateLimitUsage['scope'], limit: number, hit: Hit): void {
  res.setHeader(`${prefix}Scope`, scope);
  res.setHeader(`${prefix}Limit`, String(limit));
  res.setHeader(`${prefix}Remaining`, String(Math.max(0, limit - hit.count)));
  res.setHeader(`${prefix}Reset`, String(hit.resetSeconds));
  if (hit.count >= limit) res.setHeader(`${prefix}Warning`, RATE_LIMIT_WARNING);
}

/** What the request was counted as: the same numbers its `RateLimit-*` headers show. */
export interface RateLimitUsage extends Hit {
  scope: 'rest' | 'rest_user';
  limit: number;
}

/**
 * The usage this request was counted as, for `GET .../rate-limit`: undefined when it was not
 * counted (no limit is set, or the counters were unreachable).
 */
export function rateLimitUsageOf(res: Response): RateLimitUsage | undefined {
  return localsOf(res).rateLimit;
}

/** A credential that was refused: a 401 of any scheme, a webhook signature, a webhook token no pipeline has. */
export function isFailedAuthentication(err: unknown): boolean {
  return err instanceof UnauthorizedError || err instanceof SignatureError || err instanceof WebhookTokenError;
}

/**
 * An error handler ahead of the general one: each refused credential (see
 * `isFailedAuthentication`) counts against the client's address, and the ones over the budget
 * become 429s until the address's window ends.
 *
 * Only failures are refused. Every credential is checked first, and a valid one passes whatever
 * its address did: refusing the address before the check let 60 bad tokens a minute lock every
 * user and agent behind the same proxy or NAT out of the API. The budget bounds the work and the
 * noise of bad credentials; what makes guessing hopeless is the credentials themselves (signed
 * JWTs, 24-byte random suite, agent and webhook tokens). Once an address is over its budget its
 * failures are answered from memory, without another write to the shared counter.
 */
export function countFailedAuthentication(limiter: RateLimiter) {
  const limit = limiter.settings.failedAuthPerAddress;
  return async (err: unknown, req: Request, _res: Response, next: NextFunction) => {
    if (limit === 0 || !isFailedAuthentication(err)) return next(err);
    const address = addressOf(req);
    const left = limiter.isBlocked(address);
    if (left !== undefined) return next(authLimited(limiter, limit + 1, left));
    let hit: Hit;
    try {
      hit = await limiter.hit(`auth:${address}`, limit);
    } catch (countErr) {
      // The counters are unreachable: the refusal stands, uncounted.
      if (isUnavailableError(countErr) || countErr instanceof RedisUnavailableError) return next(err);
      throw countErr;
    }
    if (hit.count <= limit) return next(err);
    limiter.block(address, hit.resetSeconds);
    next(authLimited(limiter, hit.count, hit.resetSeconds));
  };
}
