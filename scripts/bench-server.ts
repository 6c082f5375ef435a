/**
 * The process under load in the builds benchmark, forked by scripts/bench-builds.ts so that
 * autocannon never shares an event loop with what it measures.
 *
 *   node dist/scripts/bench-server.js service    the real service (startServer), then on request:
 *                                                 set up an organization, token and template
 *                                                 pipeline/build, bulk seed, verify numbering
 *   node dist/scripts/bench-server.js baseline   a plain node:http server answering fixed bodies:
 *                                                 BENCH_BASELINE_BODIES, a JSON file of path (with
 *                                                 its query) to body text; the bytes as they are
 *   node dist/scripts/bench-server.js express    bare Express 5 serving the same bodies:
 *                                                 express.json(), then res.json() of each body
 *                                                 parsed once at start (serialized per request)
 *
 * It talks to the parent over the IPC channel: it sends { type: 'listening', url } once, then
 * answers each request message { id, type, ... } with { id, ok, result | error }.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import inspector from 'node:inspector';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { loadConfig } from '../src/config';
import { startServer, type RunningServer } from '../src/server';
import { sha256Hex } from '../src/security/keys';
import { seed, type SeedResult } from './bench-seed';
import { SCOPES } from '../src/core/identity';

export interface SetupRequest {
  type: 'setup';
  pipelines: number;
  buildsPerPipeline: number;
  sqliteAnalyze: boolean;
}

export interface SetupResult {
  token: string;
  orgSlug: string;
  organizationId: string;
  pipelines: { id: string; slug: string }[];
  /** A real GET build response body, for the node:http baseline. */
  sampleBuildBody: string;
  samplePath: string;
  /** A real page 1 of the organization's builds (30 with their jobs), for the baselines. */
  sampleListBody: string;
  sampleListPath: string;
  seed: SeedResult;
}

export interface VerifyRequest {
  type: 'verify';
  /** Build numbers above this are the ones the create scenarios made. */
  seededBuildsPerPipeline: number;
  organizationId: string;
  pipelineIds: string[];
}

export interface VerifyResult {
  /** Pipelines whose numbers are not exactly 1..builds_counter, one per line. */
  problems: string[];
  /** Builds created beyond the seed, per pipeline id (only those with any). */
  created: Record<string, number>;
  duplicates: number;
  gaps: number;
}

/** Per SQL text since the last reset: how often and how long (Knex 'query' to 'query-response'). */
export type SqlStats = { sql: string; n: number; ms: number }[];

/** BENCH_CPU_PROF: start the CPU profiler, or stop it and write the profile of the span to `file`. */
export type ProfileRequest = { type: 'profile'; action: 'start' } | { type: 'profile'; action: 'stop'; file: string };

export type Message = SetupRequest | VerifyRequest | ProfileRequest | { type: 'sqlstats'; reset: boolean } | { type: 'close' };
export type Request = Message & { id: number };

const send = (message: unknown) => process.send?.(message);
const log = (message: string) => send({ type: 'log', message });

async function api(running: RunningServer, token: string, method: string, path: string, body?: unknown): Promise<{ status: number; text: string }> {
  // A GET is retried: after a long synchronous seed a kept-alive socket may be closed under us.
  for (let attempt = 1; ; attempt++) {
    try {
      const res = await fetch(`${running.url}${path}`, {
        method,
        headers: { Authorization: `Bearer ${token}`, Connection: 'close', ...(body ? { 'Content-Type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      return { status: res.status, text: await res.text() };
    } catch (err) {
      if (method !== 'GET' || attempt >= 3) throw new Error(`${method} ${path}: ${(err as Error).message} (${String((err as { cause?: unknown }).cause)})`);
    }
  }
}

async function setup(running: RunningServer, req: SetupRequest, config: ReturnType<typeof loadConfig>): Promise<SetupResult> {
  const s = running.services;
  const org = await s.orgs.create({ slug: 'bench', name: 'Bench' });
  const user = await s.users.create({ name: 'Bench Admin', email: 'bench-admin@example.com' });
  await s.orgs.addMember(org.id, user.id, 'admin');
  const { jwt } = await s.tokens.create({ userId: user.id, organizationIds: [org.id], scopes: [...SCOPES], expiresAt: new Date(Date.now() + 24 * 3600_000) });

  const name = (i: number) => `Bench ${String(i + 1).padStart(4, '0')}`;
  const slug = (i: number) => `bench-${String(i + 1).padStart(4, '0')}`;
  const created = await api(running, jwt, 'POST', `/v2/organizations/${org.slug}/pipelines`, {
    name: name(0),
    repository: 'git@github.com:acme/app.git',
    configuration: 'steps:\n  - label: ":test_tube: Test"\n    command: make test\n    agents:\n      queue: default\n',
  });
  if (created.status !== 201) throw new Error(`template pipeline: ${created.status} ${created.text}`);
  const template = JSON.parse(created.text) as { id: string; slug: string };
  if (template.slug !== slug(0)) throw new Error(`unexpected slug ${template.slug}`);
  const build = await api(running, jwt, 'POST', `/v2/organizations/${org.slug}/pipelines/${template.slug}/builds`, {
    commit: 'a'.repeat(40),
    branch: 'main',
    message: 'Template',
  });
  if (build.status !== 201) throw new Error(`template build: ${build.status} ${build.text}`);
  const templateBuild = JSON.parse(build.text) as { id: string };

  const extra = Array.from({ length: req.pipelines - 1 }, (_, k) => {
    const id = crypto.randomUUID();
    return { id, slug: slug(k + 1), name: name(k + 1), webhookTokenHash: sha256Hex(s.pipelines.webhookToken(id)) };
  });
  log(`seeding ${req.pipelines} pipelines x ${req.buildsPerPipeline} builds (+1 job each) on ${config.databaseKind}`);
  const seeded = await seed({
    kind: config.databaseKind,
    url: config.databaseUrl,
    organizationId: org.id,
    templatePipelineId: template.id,
    templateBuildId: templateBuild.id,
    pipelines: req.pipelines,
    buildsPerPipeline: req.buildsPerPipeline,
    extraPipelines: extra,
    sqliteAnalyze: req.sqliteAnalyze,
    log,
  });

  // A real response of the get-a-build route, for the baseline server (and a smoke test of the seed).
  const samplePath = `/v2/organizations/${org.slug}/pipelines/${slug(0)}/builds/${Math.max(1, req.buildsPerPipeline - 10)}`;
  const sample = await api(running, jwt, 'GET', samplePath);
  if (sample.status !== 200) throw new Error(`sample build: ${sample.status} ${sample.text}`);
  const sampleListPath = `/v2/organizations/${org.slug}/builds?page=1`;
  const list = await api(running, jwt, 'GET', sampleListPath);
  if (list.status !== 200) throw new Error(`sample list: ${list.status} ${list.text}`);
  return {
    token: jwt,
    orgSlug: org.slug,
    organizationId: org.id,
    pipelines: [{ id: template.id, slug: template.slug }, ...extra.map((p) => ({ id: p.id, slug: p.slug }))],
    sampleBuildBody: sample.text,
    samplePath,
    sampleListBody: list.text,
    sampleListPath,
    seed: seeded,
  };
}

async function verify(running: RunningServer, req: VerifyRequest): Promise<VerifyResult> {
  const db = running.services.db;
  const rows = (await db('builds')
    .whereIn('pipeline_id', req.pipelineIds)
    .groupBy('pipeline_id')
    .select('pipeline_id')
    .count({ n: '*' })
    .countDistinct({ d: 'number' })
    .min({ lo: 'number' })
    .max({ hi: 'number' })) as unknown as { pipeline_id: string; n: number | string; d: number | string; lo: number | string; hi: number | string }[];
  const counters = new Map(
    ((await db('pipelines').whereIn('id', req.pipelineIds).select('id', 'builds_counter')) as { id: string; builds_counter: number | string }[]).map((r) => [
      r.id,
      Number(r.builds_counter),
    ]),
  );
  const problems: string[] = [];
  const created: Record<string, number> = {};
  let duplicates = 0;
  let gaps = 0;
  for (const r of rows) {
    const n = Number(r.n);
    const d = Number(r.d);
    const lo = Number(r.lo);
    const hi = Number(r.hi);
    const counter = counters.get(r.pipeline_id);
    duplicates += n - d;
    gaps += hi - lo + 1 - d;
    if (n !== d || lo !== 1 || hi !== n || counter !== hi)
      problems.push(`${r.pipeline_id}: ${n} builds, ${d} distinct numbers, ${lo}..${hi}, builds_counter ${counter}`);
    if (n > req.seededBuildsPerPipeline) created[r.pipeline_id] = n - req.seededBuildsPerPipeline;
  }
  // The organization-wide sequence too, where the schema has one.
  if (await db.schema.hasColumn('builds', 'org_number')) {
    const org = (await db('builds')
      .where({ organization_id: req.organizationId })
      .count({ n: '*' })
      .countDistinct({ d: 'org_number' })
      .min({ lo: 'org_number' })
      .max({ hi: 'org_number' })
      .first()) as {
      n: number | string;
      d: number | string;
      lo: number | string;
      hi: number | string;
    };
    const [n, d, lo, hi] = [Number(org.n), Number(org.d), Number(org.lo), Number(org.hi)];
    duplicates += n - d;
    gaps += hi - lo + 1 - d;
    if (n !== d || lo !== 1 || hi !== n) problems.push(`organization: ${n} builds, ${d} distinct org_number, ${lo}..${hi}`);
  }
  return { problems, created, duplicates, gaps };
}

async function service(): Promise<void> {
  const config = loadConfig({
    PORT: '0',
    HOST: '127.0.0.1',
    LOG_LEVEL: process.env.BENCH_LOG_LEVEL ?? 'silent',
    DATA_DIR: process.env.BENCH_DATA_DIR,
    DATABASE_URL: process.env.BENCH_DATABASE_URL,
    JWT_SECRET: process.env.BENCH_JWT_SECRET,
    VALIDATE_RESPONSES: 'false',
    // Limits on, so their per-request cost is measured, with a budget the load never reaches
    // (BENCH_RATE_LIMIT=0 turns them off, to compare).
    RATE_LIMIT_PER_MINUTE: process.env.BENCH_RATE_LIMIT ?? '1000000000',
    RATE_LIMIT_PER_USER_PER_MINUTE: process.env.BENCH_RATE_LIMIT ?? '1000000000',
    // The seed spreads builds over the past, so its `scheduled` jobs look days old: the sweeper
    // would expire them (writing, and changing the counts) in the middle of a measurement. It
    // still runs (timeouts, lost agents); only expiry is off.
    JOB_EXPIRY_MINUTES: '0',
  });
  // The first-start bootstrap prints a token for its own organization; not ours, so not shown.
  const running = await startServer(config, fs.createWriteStream('/dev/null'));
  const sqlStats = new Map<string, { n: number; ms: number }>();
  if (process.env.BENCH_SQL_STATS === '1') {
    const started = new Map<string, number>();
    type QueryData = { __knexQueryUid: string; sql: string };
    running.services.db.on('query', (q: QueryData) => started.set(q.__knexQueryUid, performance.now()));
    const done = (q: QueryData) => {
      const t = started.get(q.__knexQueryUid);
      if (t === undefined) return;
      started.delete(q.__knexQueryUid);
      const entry = sqlStats.get(q.sql) ?? { n: 0, ms: 0 };
      entry.n += 1;
      entry.ms += performance.now() - t;
      sqlStats.set(q.sql, entry);
    };
    running.services.db.on('query-response', (_r: unknown, q: QueryData) => done(q));
    running.services.db.on('query-error', (_e: unknown, q: QueryData) => done(q));
  }
  let profiler: inspector.Session | undefined;
  const post = (method: string, params?: object) =>
    new Promise<unknown>((resolve, reject) => profiler!.post(method, params ?? {}, (err, result) => (err ? reject(err) : resolve(result))));
  process.on('message', (msg: Request) => {
    const handle = async () => {
      switch (msg.type) {
        case 'profile':
          // Only the measured span is profiled (not the start-up, the seed or the warm-up).
          if (msg.action === 'start') {
            profiler = new inspector.Session();
            profiler.connect();
            await post('Profiler.enable');
            await post('Profiler.start');
          } else if (profiler) {
            const { profile } = (await post('Profiler.stop')) as { profile: unknown }; // cast: the inspector protocol's Profiler.stop result
            fs.writeFileSync(msg.file, JSON.stringify(profile));
            profiler.disconnect();
            profiler = undefined;
          }
          return null;
        case 'setup':
          return setup(running, msg, config);
        case 'verify':
          return verify(running, msg);
        case 'sqlstats': {
          const stats: SqlStats = [...sqlStats].map(([sql, v]) => ({ sql, ...v }));
          if (msg.reset) sqlStats.clear();
          return stats;
        }
        case 'close':
          await running.close();
          setImmediate(() => process.exit(0));
          return null;
      }
    };
    handle().then(
      (result) => send({ id: msg.id, ok: true, result }),
      (err: Error) => send({ id: msg.id, ok: false, error: err.stack ?? String(err) }),
    );
  });
  send({ type: 'listening', url: running.url, database: config.databaseKind });
}

/** BENCH_BASELINE_BODIES: path (with its query) to body text. */
function baselineBodies(): Map<string, string> {
  return new Map(Object.entries(JSON.parse(fs.readFileSync(process.env.BENCH_BASELINE_BODIES!, 'utf8')) as Record<string, string>));
}

/** Listens on a free port of 127.0.0.1, closes on the parent's `close`, and says where. */
async function listenForParent(server: http.Server): Promise<void> {
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  process.on('message', (msg: Request) => {
    if (msg.type !== 'close') return;
    server.close(() => process.exit(0));
    server.closeAllConnections();
  });
  send({ type: 'listening', url: `http://127.0.0.1:${port}` });
}

/** node:http: each path's body as fixed bytes (404 for any other path). */
async function baseline(): Promise<void> {
  const bodies = new Map([...baselineBodies()].map(([p, text]) => [p, Buffer.from(text)]));
  const server = http.createServer((req, res) => {
    const body = bodies.get(req.url ?? '');
    if (!body) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': body.length });
    res.end(body);
  });
  await listenForParent(server);
}

/**
 * Bare Express 5: express.json() and a route per path answering res.json() of its body, parsed
 * once here and serialized on every request. ETag and X-Powered-By are off, as in the service
 * (src/app.ts), so the comparison is the framework's routing, parsing and serializing alone.
 */
async function expressBaseline(): Promise<void> {
  const objects = new Map([...baselineBodies()].map(([p, text]) => [p, JSON.parse(text) as unknown]));
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.use(express.json());
  for (const p of new Set([...objects.keys()].map((key) => key.split('?')[0]!))) {
    app.get(p, (req, res) => {
      const object = objects.get(req.originalUrl);
      if (object === undefined) res.status(404).json({ message: 'Not Found' });
      else res.json(object);
    });
  }
  await listenForParent(http.createServer(app));
}

const MODES: Record<string, () => Promise<void>> = { service, baseline, express: expressBaseline };

const mode = process.argv[2] ?? '';
(MODES[mode]?.() ?? Promise.reject(new Error(`usage: bench-server.js service|baseline|express, got ${mode}`))).catch((err: Error) => {
  send({ type: 'fatal', error: err.stack ?? String(err) });
  console.error(err);
  process.exit(1);
});
