/**
 * Every setting, read from the environment once at start and validated. A bad value stops the
 * start with a message naming the setting. Nothing else in the code reads process.env.
 */
import crypto from 'node:crypto';
import { isIP } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import type { ClockMode } from './core/clock';
import type { RateLimitSettings } from './http/middleware/rate-limit';
import type { SweepSettings } from './builds/jobs/sweeper';
import type { SchedulerSettings } from './pipeline-schedules/scheduler';
import { DEFAULT_NOTIFICATION_SETTINGS, type NotificationSettings } from './notifications/service';
import type { OutboundSettings } from './security/outbound';
import type { MetricsSettings } from './metrics/registry';
import type { S3StoreSettings } from './artifacts/s3-storage';

export interface Config {
  port: number;
  host: string;
  dataDir: string;
  /** `postgres://...` or a SQLite file path (`sqlite:` prefix optional), or `:memory:`. */
  databaseUrl: string;
  databaseKind: 'sqlite' | 'postgres';
  publicUrl: string;
  /** Undefined: generate once and keep it in the data directory (embedded default). */
  jwtSecret: string | undefined;
  logLevel: string;
  bodyLimitBytes: number;
  /** Largest log of one job: chunks beyond it are refused (the real service's "log size per job", 1,024 MiB). */
  jobLogLimitBytes: number;
  /** Largest body of a test-result upload (`POST /v1/uploads`): 5,000 results take several MB. */
  uploadBodyLimitBytes: number;
  /** Validate responses against the spec too (always on in tests). */
  validateResponses: boolean;
  shutdownTimeoutMs: number;
  /** On SIGTERM, how long to keep serving (readiness 503, `Connection: close`) before the listener closes. */
  shutdownDelayMs: number;
  /** How long a client may take to send the request headers (then 408 and the socket is closed). */
  headersTimeoutMs: number;
  /** How long with nothing in flight a keep-alive connection stays open. */
  keepAliveTimeoutMs: number;
  /** How long a client may take to send the whole request, body included. */
  requestTimeoutMs: number;
  /** How long an authenticated token's row and memberships are reused before being read again. */
  tokenCacheMs: number;
  /** Which proxies in front are trusted to name the client in `X-Forwarded-For` (Express's `trust proxy`). */
  trustProxy: TrustProxy;
  /** Requests per minute per organization, and failed authentications per minute per address (0: off). */
  rateLimits: RateLimitSettings;
  /** REDIS_URL (and REDIS_KEY_PREFIX): rate limit counters and the live pages' change feed in Redis. Undefined: in the database. */
  redis: { url: string; prefix: string } | undefined;
  /** The sweep for lost agents, timed-out and expired jobs. */
  sweep: SweepSettings;
  /** How often each process looks for due pipeline schedules (SCHEDULE_INTERVAL_MS). */
  scheduler: SchedulerSettings;
  /**
   * Artifacts: where their content is kept (ARTIFACTS_DIR, default `<DATA_DIR>/artifacts`), its
   * limits, and the separate origin their content URLs point at (ARTIFACTS_ORIGIN, optional).
   * With ARTIFACTS_STORE=s3://bucket/prefix, content is kept in that bucket instead (`s3`; the
   * directory then only stages uploads made through Windsock).
   */
  artifacts: { dir: string; maxFileBytes: number; maxJobBytes: number; origin?: string; s3?: S3StoreSettings };
  github: { apiUrl: string | undefined; token: string | undefined };
  githubEnterprise: { apiUrl: string | undefined; token: string | undefined };
  /** GitLab's REST API (GITLAB_API_URL, default gitlab.com's) and token, for commit statuses. */
  gitlab: { apiUrl: string; token: string | undefined };
  /** Bitbucket Cloud's REST API and credentials (an access token, or a username with an app password), for commit statuses. */
  bitbucket: { apiUrl: string; token: string | undefined; username: string | undefined; appPassword: string | undefined };
  /** What `GET /v2/meta` answers as `webhook_ips`: where this server's outbound traffic comes from (WEBHOOK_IPS). */
  webhookIps: string[];
  /** The notification worker: attempts, back-off, parallel deliveries, how long history is kept. */
  notifications: NotificationSettings;
  /**
   * Every request Windsock sends out (notification webhooks, Slack, OTLP, commit statuses):
   * whether private and loopback destinations are allowed (OUTBOUND_ALLOW_PRIVATE), the deadline
   * of one request (OUTBOUND_TIMEOUT_MS) and how much of an answer is read (OUTBOUND_MAX_RESPONSE_BYTES).
   */
  outbound: OutboundSettings;
  /** Browser origins allowed to call the API across origins (CORS_ORIGINS, comma-separated); empty: no CORS headers at all. */
  corsOrigins: string[];
  /** `GET /metrics`: off unless METRICS_ENABLED=true; METRICS_TOKEN, when set, is the Bearer token a scraper must send. */
  metrics: MetricsSettings;
  /**
   * WINDSOCK_EPHEMERAL: everything in memory (SQLite `:memory:`, a random secret, artifacts in a
   * temporary directory removed at exit); nothing is read from or written to DATA_DIR.
   */
  ephemeral: boolean;
  /** WINDSOCK_CLOCK: what time the service thinks it is (real, frozen at an instant, or shifted). */
  clock: ClockMode;
  /** WINDSOCK_FIXTURES (--fixtures): a YAML or JSON file loaded at start (src/fixtures/); its path as given, resolved from the working directory. */
  fixturesFile: string | undefined;
  /** WINDSOCK_ADMIN_TOKEN (--admin-token): the installation admin token's secret instead of an issued JWT (checked by src/bootstrap.ts). */
  adminToken: string | undefined;
  /** WINDSOCK_TEST_CONTROLS=true (--test-controls): the reset and clock endpoints under /_windsock/ (src/test-controls/). */
  testControls: boolean;
  /**
   * WINDSOCK_WORKERS (--workers): how many processes serve the port (node:cluster), each a full
   * instance; `auto` is the number of cores. 1 on SQLite (a single writer).
   */
  workers: number;
}

export class ConfigError extends Error {}

/** `false`: the socket's address is the client's; a hop count; or the proxies' addresses, subnets and Express's names. */
export type TrustProxy = false | number | string[];

const PROXY_NAMES = ['loopback', 'linklocal', 'uniquelocal'];

/**
 * TRUST_PROXY: unset, `false` or `0` (the default: X-Forwarded-For is ignored); a number of hops
 * (`1`: one proxy in front, whatever its address); or a comma-separated list of addresses, CIDR
 * subnets and `loopback`/`linklocal`/`uniquelocal`. `true` (trust every hop) is refused: any
 * client could then name itself in X-Forwarded-For and spend another address's budget.
 */
function trustProxy(env: Env): TrustProxy {
  const raw = (env.TRUST_PROXY ?? '').trim();
  if (raw === '' || raw === 'false' || raw === '0') return false;
  if (/^\d+$/.test(raw)) {
    if (Number(raw) > 100) throw new ConfigError(`TRUST_PROXY must be a hop count from 0 to 100, got "${raw}"`);
    return Number(raw);
  }
  if (raw === 'true')
    throw new ConfigError("TRUST_PROXY=true would trust any client's X-Forwarded-For: give the number of proxies in front, or their addresses or subnets");
  const items = raw.split(',').map((item) => item.trim());
  for (const item of items) {
    if (PROXY_NAMES.includes(item)) continue;
    const [address, bits, extra] = item.split('/');
    const family = isIP(address ?? '');
    const max = family === 4 ? 32 : 128;
    if (!family || extra !== undefined || (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > max))) {
      throw new ConfigError(
        `TRUST_PROXY must be a hop count or a comma-separated list of IP addresses, CIDR subnets, loopback, linklocal or uniquelocal; "${item}" is none of these`,
      );
    }
  }
  return items;
}

/** WEBHOOK_IPS: a comma-separated list of IP addresses and CIDR subnets; unset, none. */
function webhookIps(env: Env): string[] {
  const raw = (env.WEBHOOK_IPS ?? '').trim();
  if (!raw) return [];
  const items = raw.split(',').map((item) => item.trim());
  for (const item of items) {
    const [address, bits, extra] = item.split('/');
    const family = isIP(address ?? '');
    const max = family === 4 ? 32 : 128;
    if (!family || extra !== undefined || (bits !== undefined && (!/^\d+$/.test(bits) || Number(bits) > max))) {
      throw new ConfigError(`WEBHOOK_IPS must be a comma-separated list of IP addresses and CIDR subnets; "${item}" is neither`);
    }
  }
  if (items.length > 100) throw new ConfigError('WEBHOOK_IPS may list at most 100 addresses and subnets');
  return items;
}

/**
 * CORS_ORIGINS: comma-separated origins (`scheme://host[:port]`, as a browser sends `Origin`);
 * unset, none. `*` is refused: an API taking bearer tokens names the pages it trusts.
 */
function corsOrigins(env: Env): string[] {
  const raw = (env.CORS_ORIGINS ?? '').trim();
  if (!raw) return [];
  const items = raw
    .split(',')
    .map((item) => item.trim())
    .filter((item) => item !== '');
  for (const item of items) {
    let parsed: URL | undefined;
    try {
      parsed = new URL(item);
    } catch {
      parsed = undefined;
    }
    if (!parsed || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.origin !== item) {
      throw new ConfigError(
        `CORS_ORIGINS must be a comma-separated list of origins like https://app.example.com (scheme, host and port only); "${item}" is not one`,
      );
    }
  }
  if (items.length > 100) throw new ConfigError('CORS_ORIGINS may list at most 100 origins');
  return items;
}

/** METRICS_ENABLED and METRICS_TOKEN (at least 16 characters: it guards the installation's figures). */
function metricsSettings(env: Env): MetricsSettings {
  const token = credential(env, 'METRICS_TOKEN');
  if (token !== undefined && token.length < 16) throw new ConfigError('METRICS_TOKEN must be at least 16 characters long');
  return { enabled: bool(env, 'METRICS_ENABLED', false), token };
}

/** A credential sent in an HTTP header: unset, or printable with no whitespace (a pasted newline would break the header). */
function credential(env: Env, name: string): string | undefined {
  const raw = env[name];
  if (raw === undefined || raw === '') return undefined;
  if (!/^[\x21-\x7e]+$/.test(raw)) throw new ConfigError(`${name} must be printable ASCII with no spaces or line breaks`);
  return raw;
}

/** BITBUCKET_TOKEN, or BITBUCKET_USERNAME with BITBUCKET_APP_PASSWORD: one way, given whole. */
function bitbucket(env: Env): Config['bitbucket'] {
  const token = credential(env, 'BITBUCKET_TOKEN');
  const username = credential(env, 'BITBUCKET_USERNAME');
  const appPassword = credential(env, 'BITBUCKET_APP_PASSWORD');
  if ((username === undefined) !== (appPassword === undefined)) {
    throw new ConfigError('BITBUCKET_USERNAME and BITBUCKET_APP_PASSWORD must be set together');
  }
  if (token !== undefined && username !== undefined) {
    throw new ConfigError('Set BITBUCKET_TOKEN or BITBUCKET_USERNAME with BITBUCKET_APP_PASSWORD, not both');
  }
  return { apiUrl: url(env, 'BITBUCKET_API_URL', 'https://api.bitbucket.org/2.0')!, token, username, appPassword };
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

type Env = Record<string, string | undefined>;

function int(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}"`);
  }
  return Number(raw);
}

function url(env: Env, name: string, fallback: string | undefined): string | undefined {
  const raw = env[name] || fallback;
  if (raw === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') {
    throw new ConfigError(`${name} must be an absolute http(s) URL, got "${raw}"`);
  }
  return raw.replace(/\/+$/, '');
}

/** REDIS_URL: redis:// or rediss:// (TLS); its password is never echoed in an error. */
function redis(env: Env): Config['redis'] {
  const raw = env.REDIS_URL;
  if (!raw) return undefined;
  let parsed: URL | undefined;
  try {
    parsed = new URL(raw);
  } catch {
    parsed = undefined;
  }
  if (!parsed || (parsed.protocol !== 'redis:' && parsed.protocol !== 'rediss:') || !parsed.hostname) {
    throw new ConfigError('REDIS_URL must be redis://[user:password@]host[:port][/db] or rediss://...');
  }
  const prefix = env.REDIS_KEY_PREFIX ?? 'windsock:';
  if (!/^[A-Za-z0-9:_.-]{0,64}$/.test(prefix)) throw new ConfigError(`REDIS_KEY_PREFIX must be up to 64 letters, digits or ":_.-", got "${prefix}"`);
  return { url: raw, prefix };
}

function bool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['1', 'true', 'yes', 'on'].includes(raw.toLowerCase())) return true;
  if (['0', 'false', 'no', 'off'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

const OFFSET_UNITS_MS: Record<string, number> = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/**
 * WINDSOCK_CLOCK: `real` (the default); an ISO-8601 instant with its zone (`2026-01-01T09:00:00Z`,
 * or a date alone, midnight UTC): frozen there; or an offset from real time, `+90s`, `-2h`, `+3d`
 * (units s, m, h, d).
 */
export function parseClockMode(raw: string | undefined, name = 'WINDSOCK_CLOCK'): ClockMode {
  const value = (raw ?? '').trim();
  if (value === '' || value === 'real') return { kind: 'real' };
  const offset = /^([+-]?)(\d{1,9})([smhd])$/.exec(value);
  if (offset) return { kind: 'offset', ms: (offset[1] === '-' ? -1 : 1) * Number(offset[2]) * OFFSET_UNITS_MS[offset[3]!]! };
  const instant = /^\d{4}-\d{2}-\d{2}(T\d{2}:\d{2}(:\d{2}(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2}))?$/i.exec(value);
  const at = instant ? new Date(value) : null;
  // Date rolls a day that does not exist (February 30) over into the next month: refuse it instead.
  const [y = NaN, m = NaN, d = NaN] = value.slice(0, 10).split('-').map(Number);
  if (!at || Number.isNaN(at.getTime()) || new Date(Date.UTC(y, m - 1, d)).getUTCDate() !== d) {
    const hint = /^\d{4}-\d{2}-\d{2}T[\d:.]+$/.test(value) ? ' (an instant needs its time zone: Z or +hh:mm)' : '';
    throw new ConfigError(
      `${name} must be "real", an ISO-8601 instant such as 2026-01-01T09:00:00Z, or an offset such as +90s, -2h, +3d (units s, m, h, d); got "${value}"${hint}`,
    );
  }
  return { kind: 'frozen', at };
}

export function loadConfig(env: Env = process.env): Config {
  const port = int(env, 'PORT', 8080, 0, 65535);
  const host = env.HOST || '127.0.0.1';
  const ephemeral = bool(env, 'WINDSOCK_EPHEMERAL', false);
  if (ephemeral && (env.DATABASE_URL || env.DATA_DIR)) {
    throw new ConfigError(
      `WINDSOCK_EPHEMERAL keeps everything in memory: unset ${env.DATABASE_URL ? 'DATABASE_URL' : 'DATA_DIR'}, or do not ask for an ephemeral start`,
    );
  }
  // Ephemeral: a directory of its own under the system's temp directory, for what must be a file
  // (artifacts); made only when first needed and removed at exit. ./data is never touched.
  const dataDir = ephemeral ? path.join(os.tmpdir(), `windsock-ephemeral-${crypto.randomUUID()}`) : path.resolve(env.DATA_DIR || './data');

  const rawDb = ephemeral ? ':memory:' : env.DATABASE_URL || path.join(dataDir, 'windsock.sqlite3');
  let databaseKind: Config['databaseKind'];
  let databaseUrl: string;
  if (/^postgres(ql)?:\/\//.test(rawDb)) {
    databaseKind = 'postgres';
    databaseUrl = rawDb;
  } else if (/^[a-z][a-z0-9+.-]*:\/\//i.test(rawDb)) {
    throw new ConfigError(`DATABASE_URL must be postgres://... or a SQLite file path, got a "${rawDb.split(':')[0]}" URL`);
  } else {
    databaseKind = 'sqlite';
    databaseUrl = rawDb.replace(/^sqlite:/, '');
  }

  // Ephemeral: a fresh secret each start (tokens die with the process anyway), never kept on disk.
  const jwtSecret = env.JWT_SECRET || (ephemeral ? crypto.randomBytes(48).toString('base64url') : undefined);
  if (jwtSecret !== undefined && jwtSecret.length < 32) {
    throw new ConfigError('JWT_SECRET must be at least 32 characters long');
  }
  const logLevel = env.LOG_LEVEL || 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }

  const shutdownTimeoutMs = int(env, 'SHUTDOWN_TIMEOUT_MS', 10_000, 0, 600_000);
  const shutdownDelayMs = int(env, 'SHUTDOWN_DELAY_MS', 0, 0, 600_000);
  if (shutdownDelayMs > 0 && shutdownDelayMs >= shutdownTimeoutMs) {
    throw new ConfigError(`SHUTDOWN_DELAY_MS (${shutdownDelayMs}) must be less than SHUTDOWN_TIMEOUT_MS (${shutdownTimeoutMs})`);
  }
  const headersTimeoutMs = int(env, 'HEADERS_TIMEOUT_MS', 20_000, 100, 600_000);
  const requestTimeoutMs = int(env, 'REQUEST_TIMEOUT_MS', 60_000, 100, 3_600_000);
  if (headersTimeoutMs > requestTimeoutMs) throw new ConfigError('HEADERS_TIMEOUT_MS must not be greater than REQUEST_TIMEOUT_MS');

  const publicUrl = url(env, 'PUBLIC_URL', `http://${host === '0.0.0.0' || host === '::' ? 'localhost' : host}:${port}`)!;

  return {
    port,
    host,
    dataDir,
    databaseUrl,
    databaseKind,
    publicUrl,
    jwtSecret,
    logLevel,
    bodyLimitBytes: int(env, 'BODY_LIMIT_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    jobLogLimitBytes: int(env, 'JOB_LOG_LIMIT_BYTES', 1024 * 1024 * 1024, 1024, 64 * 1024 * 1024 * 1024),
    uploadBodyLimitBytes: int(env, 'UPLOAD_BODY_LIMIT_BYTES', 64 * 1024 * 1024, 1024, 1024 * 1024 * 1024),
    validateResponses: bool(env, 'VALIDATE_RESPONSES', false),
    shutdownTimeoutMs,
    shutdownDelayMs,
    headersTimeoutMs,
    requestTimeoutMs,
    keepAliveTimeoutMs: int(env, 'KEEP_ALIVE_TIMEOUT_MS', 5_000, 100, 3_600_000),
    tokenCacheMs: int(env, 'TOKEN_CACHE_MS', 1000, 0, 60_000),
    trustProxy: trustProxy(env),
    rateLimits: {
      perOrganization: int(env, 'RATE_LIMIT_PER_MINUTE', 200, 0, 1_000_000_000),
      // rate_limits.md: "The default per-user limit is 50 requests per minute."
      perUser: int(env, 'RATE_LIMIT_PER_USER_PER_MINUTE', 50, 0, 1_000_000_000),
      failedAuthPerAddress: int(env, 'AUTH_FAILURE_LIMIT_PER_MINUTE', 60, 0, 1_000_000_000),
    },
    redis: redis(env),
    sweep: {
      intervalMs: int(env, 'SWEEP_INTERVAL_MS', 5_000, 100, 600_000),
      agentLostAfterMs: int(env, 'AGENT_LOST_AFTER_SECONDS', 180, 5, 86_400) * 1000,
      // build_timeouts.md: "By default, jobs expire (are canceled) when not picked up for 30 days."
      jobExpiryMs: int(env, 'JOB_EXPIRY_MINUTES', 43_200, 0, 525_600) * 60_000,
    },
    // Under a minute, so a schedule's build comes in its minute.
    scheduler: { intervalMs: int(env, 'SCHEDULE_INTERVAL_MS', 10_000, 100, 59_000) },
    artifacts: {
      dir: path.resolve(env.ARTIFACTS_DIR || path.join(dataDir, 'artifacts')),
      maxFileBytes: int(env, 'ARTIFACT_MAX_FILE_BYTES', 1024 * 1024 * 1024, 1, 5 * 1024 * 1024 * 1024),
      maxJobBytes: int(env, 'ARTIFACT_MAX_JOB_BYTES', 10 * 1024 * 1024 * 1024, 1, 1024 * 1024 * 1024 * 1024),
      ...artifactsOrigin(env, publicUrl),
      ...artifactsStore(env),
    },
    github: { apiUrl: url(env, 'GITHUB_API_URL', undefined), token: env.GITHUB_TOKEN || undefined },
    githubEnterprise: {
      apiUrl: url(env, 'GITHUB_ENTERPRISE_API_URL', undefined),
      token: env.GITHUB_ENTERPRISE_TOKEN || undefined,
    },
    gitlab: { apiUrl: url(env, 'GITLAB_API_URL', 'https://gitlab.com/api/v4')!, token: credential(env, 'GITLAB_TOKEN') },
    bitbucket: bitbucket(env),
    webhookIps: webhookIps(env),
    outbound: {
      allowPrivate: bool(env, 'OUTBOUND_ALLOW_PRIVATE', false),
      timeoutMs: int(env, 'OUTBOUND_TIMEOUT_MS', 10_000, 100, 600_000),
      maxResponseBytes: int(env, 'OUTBOUND_MAX_RESPONSE_BYTES', 65_536, 1024, 64 * 1024 * 1024),
    },
    notifications: notificationSettings(env),
    corsOrigins: corsOrigins(env),
    metrics: metricsSettings(env),
    ephemeral,
    clock: parseClockMode(env.WINDSOCK_CLOCK),
    fixturesFile: env.WINDSOCK_FIXTURES ? path.resolve(env.WINDSOCK_FIXTURES) : undefined,
    adminToken: credential(env, 'WINDSOCK_ADMIN_TOKEN'),
    testControls: bool(env, 'WINDSOCK_TEST_CONTROLS', false),
    workers: workers(env, databaseKind),
  };
}

/** The most worker processes WINDSOCK_WORKERS may ask for. */
export const MAX_WORKERS = 256;

/**
 * WINDSOCK_WORKERS: a whole number from 1 to MAX_WORKERS, or `auto` (the cores this process may
 * use). SQLite has one writer at a time: more than one process is refused, and `auto` is 1.
 * The test controls keep the clock in the process that set it, so they need a single process too.
 */
function workers(env: Env, databaseKind: Config['databaseKind']): number {
  const raw = (env.WINDSOCK_WORKERS ?? '').trim();
  if (raw === 'auto') return databaseKind === 'sqlite' || bool(env, 'WINDSOCK_TEST_CONTROLS', false) ? 1 : Math.min(MAX_WORKERS, os.availableParallelism());
  if (raw === '') return 1;
  if (!/^\d+$/.test(raw) || Number(raw) < 1 || Number(raw) > MAX_WORKERS) {
    throw new ConfigError(`WINDSOCK_WORKERS must be auto or a whole number from 1 to ${MAX_WORKERS}, got "${raw}"`);
  }
  const n = Number(raw);
  if (n > 1 && databaseKind === 'sqlite') {
    throw new ConfigError(
      `WINDSOCK_WORKERS=${n} needs Postgres: SQLite is single-writer, so it is served by one process; set DATABASE_URL to a postgres:// database for several workers, or use 1 (or auto)`,
    );
  }
  if (n > 1 && bool(env, 'WINDSOCK_TEST_CONTROLS', false)) {
    throw new ConfigError(`WINDSOCK_WORKERS=${n} cannot be used with WINDSOCK_TEST_CONTROLS: the test clock lives in one process; use 1 worker`);
  }
  return n;
}

/**
 * ARTIFACTS_ORIGIN: an origin alone (`https://artifacts.example.com`, no path, query or
 * credentials) other than PUBLIC_URL's, where the proxy sends `/artifact-content/` to this
 * service: content URLs then point there, away from the web pages' cookies.
 */
function artifactsOrigin(env: Env, publicUrl: string): { origin?: string } {
  const raw = env.ARTIFACTS_ORIGIN;
  if (raw === undefined || raw === '') return {};
  const problem = `ARTIFACTS_ORIGIN must be an origin alone, such as https://artifacts.example.com (http or https, no path, query or credentials), got "${raw}"`;
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(problem);
  }
  if ((parsed.protocol !== 'http:' && parsed.protocol !== 'https:') || parsed.username || parsed.password || parsed.search || parsed.hash) {
    throw new ConfigError(problem);
  }
  if (parsed.pathname !== '/' || /[?#]$/.test(raw)) throw new ConfigError(problem);
  if (parsed.origin === new URL(publicUrl).origin) {
    throw new ConfigError(
      `ARTIFACTS_ORIGIN must be another origin than PUBLIC_URL's (${parsed.origin}): content served from the web pages' own origin could reach their cookies`,
    );
  }
  return { origin: parsed.origin };
}

/**
 * ARTIFACTS_STORE: unset or `disk` (content under ARTIFACTS_DIR), or `s3://bucket/prefix` (an
 * S3-compatible bucket) with the ARTIFACTS_S3_* settings; the access key and secret are required
 * (the SDK's default chain would fetch credentials over its own connections).
 */
function artifactsStore(env: Env): { s3?: S3StoreSettings } {
  const raw = env.ARTIFACTS_STORE;
  const s3Settings = Object.keys(env).filter((k) => k.startsWith('ARTIFACTS_S3_') && env[k]);
  if (raw === undefined || raw === '' || raw === 'disk') {
    if (s3Settings.length) throw new ConfigError(`${s3Settings.join(', ')} only apply with ARTIFACTS_STORE=s3://bucket/prefix`);
    return {};
  }
  const m = /^s3:\/\/([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])(?:\/(.*))?$/.exec(raw);
  if (!m)
    throw new ConfigError(
      `ARTIFACTS_STORE must be disk or s3://bucket/prefix (a bucket name of 3 to 63 lower-case letters, digits, dots and hyphens), got "${raw}"`,
    );
  const prefix = (m[2] ?? '').replace(/\/+$/, '');
  if (prefix !== '' && prefix.split('/').some((s) => s === '' || s === '.' || s === '..')) {
    throw new ConfigError(`ARTIFACTS_STORE's prefix must be segments separated by single slashes, without . or .., got "${raw}"`);
  }
  const accessKeyId = credential(env, 'ARTIFACTS_S3_ACCESS_KEY_ID');
  const secretAccessKey = credential(env, 'ARTIFACTS_S3_SECRET_ACCESS_KEY');
  if (accessKeyId === undefined || secretAccessKey === undefined) {
    throw new ConfigError('ARTIFACTS_STORE=s3://... needs ARTIFACTS_S3_ACCESS_KEY_ID and ARTIFACTS_S3_SECRET_ACCESS_KEY');
  }
  const region = env.ARTIFACTS_S3_REGION || 'us-east-1';
  // One DNS label (the S3 host's name holds it): no hyphen at either end.
  if (!/^[a-z0-9](?:[a-z0-9-]{0,38}[a-z0-9])?$/.test(region))
    throw new ConfigError(`ARTIFACTS_S3_REGION must be a region name such as eu-west-1, got "${region}"`);
  const endpoint = url(env, 'ARTIFACTS_S3_ENDPOINT', undefined);
  return {
    s3: {
      bucket: m[1]!,
      prefix: prefix ? `${prefix}/` : '',
      ...(endpoint ? { endpoint } : {}),
      region,
      accessKeyId,
      secretAccessKey,
      forcePathStyle: bool(env, 'ARTIFACTS_S3_FORCE_PATH_STYLE', endpoint !== undefined),
    },
  };
}

function notificationSettings(env: Env): NotificationSettings {
  const d = DEFAULT_NOTIFICATION_SETTINGS;
  const retryBaseMs = int(env, 'NOTIFICATION_RETRY_BASE_MS', d.retryBaseMs, 10, 3_600_000);
  const retryCapMs = int(env, 'NOTIFICATION_RETRY_CAP_MS', d.retryCapMs, 10, 86_400_000);
  if (retryBaseMs > retryCapMs) throw new ConfigError('NOTIFICATION_RETRY_BASE_MS must not be greater than NOTIFICATION_RETRY_CAP_MS');
  return {
    ...d,
    maxAttempts: int(env, 'NOTIFICATION_MAX_ATTEMPTS', d.maxAttempts, 1, 100),
    retryBaseMs,
    retryCapMs,
    concurrency: int(env, 'NOTIFICATION_CONCURRENCY', d.concurrency, 1, 1000),
    retentionMs: int(env, 'NOTIFICATION_RETENTION_HOURS', d.retentionMs / 3_600_000, 1, 24 * 365) * 3_600_000,
  };
}
