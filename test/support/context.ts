/**
 * A real app over a real store for each suite: SQLite in memory, or a Postgres schema of its
 * own (so suites can run in parallel and leave nothing behind). Responses are validated
 * against the spec, so every HTTP test is also a contract test. Factories build the data each
 * test needs; nothing is shared between tests.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import request from 'supertest';
import type { Express } from 'express';
import { createApp } from '../../src/app';
import { createKnex, migrateLatest, type DatabaseKind, type DatabaseOptions } from '../../src/db/knex';
import { createLogger, type Logger } from '../../src/http/middleware/logger';
import type { TrustProxy } from '../../src/config';
import type { RateLimitSettings } from '../../src/http/middleware/rate-limit';
import type { SweepSettings } from '../../src/builds/jobs/sweeper';
import type { OutboundSettings } from '../../src/security/outbound';
import type { MetricsSettings } from '../../src/metrics/registry';
import type { NotificationSettings } from '../../src/notifications/service';
import type { CommitStatusSettings } from '../../src/notifications/commit-status';
import { createServices, type Services } from '../../src/services';
import { TestControls } from '../../src/test-controls/service';
import { SCOPES, type Organization, type Role, type User } from '../../src/core/identity';
import { clock } from '../../src/core/clock';
import { createPostgresStore, sqliteTemplate, type PostgresStore } from './templates';
import type { S3StoreSettings } from '../../src/artifacts/s3-storage';
import { startChangeFeed, type StartedFeed } from '../../src/live/feeds';
import type { RedisSettings } from '../../src/db/redis';

export const databases: DatabaseKind[] = (process.env.TEST_DATABASES ?? 'sqlite').split(',').map((s) => s.trim()) as DatabaseKind[];

export const PUBLIC_URL = 'http://windsock.test';

/** How long a token `givenToken` makes lives unless told: a year of the service's clock, so a test that moves the clock by hours or days keeps its tokens. */
const TOKEN_LIFETIME_MS = 366 * 86_400_000;

export interface TestContext {
  kind: DatabaseKind;
  app: Express;
  services: Services;
  http: () => ReturnType<typeof request>;
  givenOrg(opts?: { teamsEnabled?: boolean; name?: string }): Promise<Organization>;
  givenUser(org?: Organization, role?: Role): Promise<User>;
  givenToken(user: User, orgs: Organization[], scopes?: readonly string[], expiresAt?: Date): Promise<string>;
  givenTeam(org: Organization, members: User[]): Promise<{ id: string; slug: string; name: string }>;
  /** An organization with an admin user and an all-scopes token, the common starting point. */
  givenAdmin(opts?: { teamsEnabled?: boolean }): Promise<{ org: Organization; user: User; token: string }>;
  /** The Postgres schema of this context, if any. */
  schema?: string;
  /** Postgres: the database this context's schema is in (its own, copied from the run's template, or the test database). */
  postgresStore?: PostgresStore;
  /** The test controls (ContextOptions.testControls), whose snapshot the test takes. */
  testControls?: TestControls;
  /** With `liveFeed`: the change feed that crosses instances (Postgres LISTEN/NOTIFY, or Redis). */
  feed?: StartedFeed;
  close(opts?: { keepSchema?: boolean }): Promise<void>;
}

export interface ContextOptions {
  github?: { apiUrl?: string; token?: string };
  githubEnterprise?: { apiUrl?: string; token?: string };
  /** SQLite: a file instead of :memory: (so two contexts can share it). */
  sqliteFile?: string;
  /** Postgres: use that context's database and schema instead of new ones. */
  sharePostgresSchemaOf?: TestContext;
  /** The `POST /v1/uploads` body limit (default 64 MiB). */
  uploadBodyLimitBytes?: number;
  /** Where the app and the services log (default: silent). */
  logger?: Logger;
  /** Default: budgets too large to reach, so every response still carries the headers. */
  rateLimits?: RateLimitSettings;
  /** Express's `trust proxy` (TRUST_PROXY). */
  trustProxy?: TrustProxy;
  /** The rate limiter's clock. */
  now?: () => number;
  /** The sweeper's settings (it only runs when a test calls it). */
  sweep?: SweepSettings;
  /** The cap on one job's log (default 1,024 MiB). */
  jobLogLimitBytes?: number;
  /** Artifact storage directory and limits (default: a fresh temp directory, the default limits); `s3`: keep content in that bucket. */
  artifacts?: { dir?: string; maxFileBytes?: number; maxJobBytes?: number; origin?: string; s3?: S3StoreSettings };
  /** What `GET /v2/meta` answers as `webhook_ips` (WEBHOOK_IPS). */
  webhookIps?: string[];
  /** CORS_ORIGINS (default none). */
  corsOrigins?: string[];
  /** METRICS_ENABLED / METRICS_TOKEN (default off). */
  metrics?: MetricsSettings;
  /** Outbound requests; default: private destinations allowed (tests' receivers listen on 127.0.0.1), a 5 s deadline, 64 KiB answers. */
  outbound?: OutboundSettings;
  /** The notification worker's settings (it only runs when a test drives it: `services.notificationWorker.settle()`). */
  notifications?: Partial<NotificationSettings>;
  /** Where commit statuses go beyond `github` (GitLab, Bitbucket credentials and API URLs). */
  commitStatuses?: Partial<CommitStatusSettings>;
  /** The URL the API's links and `Link` headers name (default PUBLIC_URL): a live server's own, for clients that follow them. */
  publicUrl?: string;
  /** The /_windsock/ test controls on (WINDSOCK_TEST_CONTROLS=true); the test takes their snapshot. */
  testControls?: boolean;
  /** Rate limit counters (and, with `liveFeed`, the change feed) in this Redis. */
  redis?: RedisSettings;
  /** The change feed a server would have (src/live/feeds.ts): Redis with `redis`, else LISTEN/NOTIFY on Postgres, else in-process. */
  liveFeed?: boolean;
}

/** Redis for the tests that use it: 127.0.0.1:6379 unless REDIS_URL says otherwise. */
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

export async function createTestContext(kind: DatabaseKind, opts: ContextOptions = {}): Promise<TestContext> {
  const logger = opts.logger ?? createLogger('silent');
  let schema: string | undefined;
  let store: PostgresStore | undefined;
  let pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  if (kind === 'postgres' && opts.sharePostgresSchemaOf) {
    store = opts.sharePostgresSchemaOf.postgresStore;
  } else if (kind === 'postgres') {
    // A new database (or schema), migrated by copying the run's template (test/support/templates.ts).
    store = await createPostgresStore(pgUrl);
  }
  if (store) ({ url: pgUrl, schema } = store);
  // In memory: a copy of the run's migrated database. A file (shared between contexts) is migrated below.
  const sqliteImage = kind === 'sqlite' && !opts.sqliteFile ? await sqliteTemplate() : undefined;
  const database: DatabaseOptions = kind === 'sqlite' ? { kind, url: opts.sqliteFile ?? ':memory:', sqliteImage } : { kind, url: pgUrl, schema };
  const ownArtifactsDir = opts.artifacts?.dir === undefined;
  const artifactsDir = opts.artifacts?.dir ?? fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-test-artifacts-'));
  const feed = opts.liveFeed
    ? startChangeFeed({
        database: { kind, url: kind === 'postgres' ? pgUrl : ':memory:' },
        redis: opts.redis,
        report: (err, what) => logger.warn({ err }, what),
      })
    : undefined;
  const services = createServices({
    changes: feed?.feed,
    redis: opts.redis,
    database,
    knex: createKnex({ ...database, logger }),
    secret: 'test-secret-test-secret-test-secret-0123456789',
    publicUrl: opts.publicUrl ?? PUBLIC_URL,
    github: { apiUrl: opts.github?.apiUrl, token: opts.github?.token },
    githubEnterprise: { apiUrl: opts.githubEnterprise?.apiUrl, token: opts.githubEnterprise?.token },
    logger,
    rateLimits: opts.rateLimits ?? { perOrganization: 1_000_000_000, perUser: 1_000_000_000, failedAuthPerAddress: 1_000_000_000 },
    now: opts.now,
    sweep: opts.sweep,
    jobLogLimitBytes: opts.jobLogLimitBytes,
    // Artifact content in a directory of this context's own, removed on close.
    artifacts: { dir: artifactsDir, ...opts.artifacts },
    outbound: opts.outbound ?? { allowPrivate: true, timeoutMs: 5_000, maxResponseBytes: 65_536 },
    notifications: opts.notifications,
    commitStatuses: opts.commitStatuses,
  });
  // Nothing to do on a copy of the template; a shared SQLite file is migrated by its first context.
  await migrateLatest(services.db);
  const testControls = opts.testControls ? new TestControls(services.db, services.tokens) : undefined;
  const app = createApp({
    ...services,
    logger,
    publicUrl: opts.publicUrl ?? PUBLIC_URL,
    bodyLimitBytes: 1024 * 1024,
    uploadBodyLimitBytes: opts.uploadBodyLimitBytes ?? 64 * 1024 * 1024,
    validateResponses: true,
    trustProxy: opts.trustProxy,
    webhookIps: opts.webhookIps,
    corsOrigins: opts.corsOrigins,
    metrics: opts.metrics,
    testControls,
  });

  // One server per context, listening before the context is handed out and until it closes.
  // SuperTest leaves a server alone only if it already has an address: given the app, or a server
  // whose listen has not completed yet (a host makes it asynchronous), it listens and closes the
  // server around every request. That bind and close cost 1.9 ms of CPU per request here, a quarter
  // of a warm run of the cross-tenant sweep. Each request still comes on a connection of its own
  // (SuperTest does not keep connections alive).
  const server = http.createServer(app);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject).listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  server.unref();

  let n = 0;
  const unique = () => `${Date.now().toString(36)}${(n++).toString(36)}${crypto.randomBytes(2).toString('hex')}`;

  const ctx: TestContext = {
    kind,
    app,
    services,
    schema,
    postgresStore: store,
    testControls,
    feed,
    http: () => request(server),
    givenOrg: async (o = {}) => {
      const id = unique();
      return services.orgs.create({ slug: `org-${id}`, name: o.name ?? `Org ${id}`, teamsEnabled: o.teamsEnabled });
    },
    givenUser: async (org, role = 'member') => {
      const id = unique();
      const user = await services.users.create({ name: `User ${id}`, email: `user-${id}@example.com` });
      if (org) await services.orgs.addMember(org.id, user.id, role);
      return user;
    },
    givenToken: async (user, orgs, scopes = SCOPES, expiresAt = new Date(clock.nowMs() + TOKEN_LIFETIME_MS)) => {
      const { jwt } = await services.tokens.create({ userId: user.id, organizationIds: orgs.map((o) => o.id), scopes: [...scopes], expiresAt });
      return jwt;
    },
    givenTeam: async (org, members) => {
      const id = unique();
      const team = await services.orgs.createTeam({ organizationId: org.id, slug: `team-${id}`, name: `Team ${id}` });
      for (const m of members) await services.orgs.addTeamMember(team.id, m.id);
      return team;
    },
    givenAdmin: async (o = {}) => {
      const org = await ctx.givenOrg(o);
      const user = await ctx.givenUser(org, 'admin');
      return { org, user, token: await ctx.givenToken(user, [org]) };
    },
    close: async (o = {}) => {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections(); // a stream still open (an event stream, a stalled upload) would hold close() up
      await closed;
      await services.changes.close();
      await services.rateLimiter.close();
      await services.db.destroy();
      if (ownArtifactsDir) fs.rmSync(artifactsDir, { recursive: true, force: true });
      if (store && !o.keepSchema) await store.drop();
    },
  };
  return ctx;
}

/** Two contexts on one store, as two server processes behind a load balancer would be. */
export interface TwoContexts {
  one: TestContext;
  two: TestContext;
  /** Closes both, `two` first (keeping the store they share), then removes the store. */
  close(): Promise<void>;
}

/** Two contexts with these settings over one store: a SQLite file in a temp directory, or `one`'s Postgres schema. */
export async function createTwoContexts(kind: DatabaseKind, opts: ContextOptions = {}): Promise<TwoContexts> {
  const dir = kind === 'sqlite' ? fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-two-')) : undefined;
  const sqliteFile = dir ? path.join(dir, 'shared.sqlite3') : undefined;
  const removeDir = () => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  };
  const one = await createTestContext(kind, { ...opts, sqliteFile });
  let two: TestContext;
  try {
    two = await createTestContext(kind, { ...opts, sqliteFile, sharePostgresSchemaOf: one });
  } catch (err) {
    await one.close();
    removeDir();
    throw err;
  }
  return {
    one,
    two,
    close: async () => {
      await two.close({ keepSchema: true });
      await one.close();
      removeDir();
    },
  };
}

/**
 * `describe.each(databases)` with a fresh context per suite, closed after it; `fn` also gets the
 * store's kind. The settings go last, or between the name and `fn` (so a suite's body keeps the
 * indentation of a `describe`). Settings null: the suite makes its own stores (two contexts on
 * one file, a context per test with its own settings, a child process), and `get` has none.
 */
export function describeEachDatabase(name: string, fn: SuiteBody, opts?: ContextOptions | null): void;
export function describeEachDatabase(name: string, opts: ContextOptions | null, fn: SuiteBody): void;
export function describeEachDatabase(name: string, a: SuiteBody | ContextOptions | null, b?: SuiteBody | ContextOptions | null): void {
  const [fn, opts] = typeof a === 'function' ? [a, b === undefined ? {} : (b as ContextOptions | null)] : [b as SuiteBody, a];
  describe.each(databases)(`${name} [%s]`, (kind) => {
    let ctx: TestContext | undefined;
    if (opts) {
      beforeAll(async () => {
        ctx = await createTestContext(kind, opts);
      });
    }
    fn(() => {
      if (!opts) throw new Error(`${name}: this suite makes its own contexts`);
      return ctx!;
    }, kind);
    // Declared after the suite's own hooks, so it runs after them: what they stop still has its context.
    if (opts) {
      afterAll(async () => {
        await ctx?.close();
      });
    }
  });
}

type SuiteBody = (get: () => TestContext, kind: DatabaseKind) => void;

export const auth = (token: string) => ({ Authorization: `Bearer ${token}` });
