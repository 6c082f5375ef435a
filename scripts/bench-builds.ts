/**
 * Builds benchmark (`npm run bench:builds`): seeds 1,000 pipelines with 1,000,000 builds and
 * their jobs on SQLite and on Postgres, then measures the real service with autocannon (50
 * connections, 127.0.0.1 only, every request authenticated and validated) for: get a build,
 * list page 1, list page 10,000, lists filtered by state and branch, create builds on one
 * pipeline and across many. The same run measures a plain node:http server answering a fixed
 * build body, and prints every figure also as a ratio to it; beside it (issue 31) node:http and
 * bare Express 5 (express.json(), res.json of a parsed object) each serving the same two bodies
 * as the service (a build, the organization's list page 1), with the service's get-a-build and
 * page 1 as ratios to both; and, when `prism` is installed, Prism mocking the get-a-build route
 * from our spec.
 *
 * The service runs in a child process (scripts/bench-server.ts), so the load generator never
 * shares its event loop. Not part of CI or `npm test`; BENCHMARKS.md has the figures.
 *
 * Settings (environment):
 *   BENCH_BUILDS       builds in total (default 1000000), spread over BENCH_PIPELINES (default 1000)
 *   BENCH_STORES       sqlite,postgres (default both; Postgres is skipped with a note when unreachable)
 *   BENCH_PG_URL       Postgres server (default postgres://postgres@127.0.0.1:5432); the database
 *                      windsock_bench_<pid> is created for the run and dropped after it
 *   BENCH_DURATION     seconds per scenario (default 10), BENCH_CONNECTIONS (default 50)
 *   BENCH_SCENARIOS    a comma list of scenario ids to run (default all): get,list1,listdeep,
 *                      filter_pipeline,filter_org,create_one,create_many
 *   BENCH_SQLITE_ANALYZE=1  run ANALYZE after seeding SQLite (the service itself never does)
 *   BENCH_REPORT       also write the report (markdown) to this file
 *   BENCH_NODE_OPTIONS node options for the two servers instead of package.json config.serverNodeOptions
 *   BENCH_KEEP_DATA=1  keep the SQLite database directory / the Postgres database after the run (logged)
 *   BENCH_SQL_STATS=1  count and time every SQL statement per scenario and report the top ones
 *                      per response (adds a little overhead: leave it off for the figures)
 *   BENCH_LOG_LEVEL    the service's LOG_LEVEL (default silent; `info` writes a line per request to this process's stdout)
 *   BENCH_QUIET_MS     how long a measurement waits at most for a quiet machine (default 60000; 0: not at all)
 *   BENCH_CPU_PROF     a directory: profile the service (node:inspector) during each measured run
 *                      only and write <store>-<scenario>.cpuprofile there (open it in Chrome DevTools)
 *   BENCH_PRISM=0      skip the Prism comparison
 *   BENCH_PIN=1        the server on CPU 1, the load generator on CPU 0 (taskset): steadier
 *                      figures between runs on a 2-core machine
 */
import { execSync, fork, spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import type { Message, SetupResult, SqlStats, VerifyResult } from './bench-server';
import { intEnv, serverNodeOptions } from './bench-env';
import { benchStores, CLK_TCK, createPgDatabase, drain, dropPgDatabase, freePort, PG_URL, processTimes, type Store } from './bench-support';

const ROOT = path.resolve(__dirname, '..', '..');
const SERVER_NODE_OPTIONS = serverNodeOptions();

const PIPELINES = intEnv('BENCH_PIPELINES', 1000);
const BUILDS = intEnv('BENCH_BUILDS', 1_000_000);
const PER_PIPELINE = Math.max(1, Math.floor(BUILDS / PIPELINES));
const DURATION = intEnv('BENCH_DURATION', 10);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 50);
const STORES = benchStores();
// One database per run: two runs on one machine (two checkouts) must not drop each other's.
const PG_DB = `windsock_bench_${process.pid}`;
const ONLY = process.env.BENCH_SCENARIOS ? new Set(process.env.BENCH_SCENARIOS.split(',').map((s) => s.trim())) : undefined;
const SQLITE_ANALYZE = process.env.BENCH_SQLITE_ANALYZE === '1';
const SQL_STATS = process.env.BENCH_SQL_STATS === '1';
const KEEP_DATA = process.env.BENCH_KEEP_DATA === '1';
const CPU_PROF = process.env.BENCH_CPU_PROF ? path.resolve(process.env.BENCH_CPU_PROF) : undefined;
const PRISM = process.env.BENCH_PRISM !== '0';
const PIN = process.env.BENCH_PIN === '1';
const QUIET_MS = process.env.BENCH_QUIET_MS === '0' ? 0 : intEnv('BENCH_QUIET_MS', 60_000);
const PER_PAGE = 30;
const DEEP_PAGE = Math.min(10_000, Math.max(1, Math.floor((PIPELINES * PER_PIPELINE) / PER_PAGE)));
const COMMIT = 'b0b5ee5b0b5ee5b0b5ee5b0b5ee5b0b5ee5b0b5';

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  statuses: Record<string, number>;
  cpu?: CpuShare;
}

/** Average cores busy during a measurement: the process under load, Postgres, the load generator, everything else. */
interface CpuShare {
  server: number;
  postgres: number;
  loadgen: number;
  other: number;
}

interface Row {
  id: string;
  label: string;
  m: Measured;
  target?: { min: number; text: string };
  note?: string;
  met?: boolean;
  /** What one request answered before the load. */
  response?: string;
}

const out: string[] = [];
function say(line = ''): void {
  console.log(line);
  out.push(line);
}
const log = (line: string) => console.error(`[bench] ${line}`);

// ---------------------------------------------------------------------------------------------
// Child processes

class Child {
  private seq = 0;
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();
  url = '';
  private exited = false;

  private constructor(readonly proc: ChildProcess) {}

  get pid(): number {
    return this.proc.pid!;
  }

  static async start(mode: 'service' | 'baseline' | 'express', env: Record<string, string>): Promise<Child> {
    // The node options `npm start` serves with (package.json config.serverNodeOptions), for both
    // servers: the service is measured as it runs.
    const execArgv = [...SERVER_NODE_OPTIONS];
    const proc = fork(path.join(__dirname, 'bench-server.js'), [mode], {
      env: { ...process.env, ...env },
      execArgv,
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const child = new Child(proc);
    // Each side its own core, so that the scheduler does not move them onto one (run-to-run
    // spread of up to 60% on the 2-core machine otherwise).
    if (PIN) execSync(`taskset -a -p -c 1 ${proc.pid} && taskset -a -p -c 0 ${process.pid}`, { stdio: 'ignore' });
    return new Promise((resolve, reject) => {
      proc.on('message', (msg: { type?: string; id?: number; ok?: boolean; result?: unknown; error?: string; url?: string; message?: string }) => {
        if (msg.type === 'listening') {
          child.url = msg.url!;
          resolve(child);
        } else if (msg.type === 'log') log(msg.message!);
        else if (msg.type === 'fatal') reject(new Error(msg.error));
        else if (msg.id !== undefined) {
          const p = child.pending.get(msg.id);
          child.pending.delete(msg.id);
          if (msg.ok) p?.resolve(msg.result);
          else p?.reject(new Error(msg.error));
        }
      });
      proc.on('exit', (code) => {
        child.exited = true;
        const err = new Error(`${mode} process exited with ${code}`);
        for (const p of child.pending.values()) p.reject(err);
        child.pending.clear();
        reject(err);
      });
    });
  }

  request<T>(msg: Message): Promise<T> {
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.proc.send({ ...msg, id });
    });
  }

  async close(): Promise<void> {
    if (this.exited) return;
    const gone = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.send({ id: ++this.seq, type: 'close' });
    const timer = setTimeout(() => this.proc.kill('SIGKILL'), 30_000);
    await gone;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (Linux /proc): this machine is shared, so every figure says how much CPU
// anything else used meanwhile, and a measurement waits (up to a minute) for a quiet machine.

interface CpuSnapshot {
  at: number;
  busy: number;
  pids: Map<number, { comm: string; ticks: number }>;
}

function cpuSnapshot(): CpuSnapshot | undefined {
  try {
    const fields = fs.readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number);
    // user nice system idle iowait irq softirq steal
    const busy = fields[0]! + fields[1]! + fields[2]! + fields[5]! + fields[6]! + (fields[7] ?? 0);
    const pids = new Map(processTimes().map(({ pid, comm, ticks }) => [pid, { comm, ticks }]));
    return { at: performance.now(), busy, pids };
  } catch {
    return undefined;
  }
}

function cpuShare(a: CpuSnapshot | undefined, b: CpuSnapshot | undefined, serverPids: number[]): CpuShare | undefined {
  if (!a || !b) return undefined;
  const seconds = (b.at - a.at) / 1000;
  let server = 0;
  let postgres = 0;
  let loadgen = 0;
  for (const [pid, now] of b.pids) {
    const before = a.pids.get(pid)?.ticks ?? 0;
    const d = now.ticks - before;
    if (serverPids.includes(pid)) server += d;
    else if (pid === process.pid) loadgen += d;
    else if (now.comm === 'postgres') postgres += d;
  }
  const cores = (ticks: number) => ticks / CLK_TCK / seconds;
  return {
    server: cores(server),
    postgres: cores(postgres),
    loadgen: cores(loadgen),
    other: Math.max(0, cores(b.busy - a.busy - server - postgres - loadgen)),
  };
}

/** Until everything but us and Postgres uses under 0.15 cores for a second (at most BENCH_QUIET_MS, a minute). */
async function quiet(serverPids: number[]): Promise<number> {
  if (QUIET_MS === 0) return 0;
  const deadline = Date.now() + QUIET_MS;
  let other = 0;
  do {
    const a = cpuSnapshot();
    await new Promise((r) => setTimeout(r, 1000));
    const share = cpuShare(a, cpuSnapshot(), serverPids);
    if (!share) return 0;
    other = share.other;
    if (other < 0.15) return other;
    log(`waiting for a quiet machine: other processes use ${other.toFixed(2)} cores`);
  } while (Date.now() < deadline);
  return other;
}

// ---------------------------------------------------------------------------------------------
// Load

type Req = { method?: string; path: string; body?: string; headers?: Record<string, string> };

async function cannon(
  url: string,
  token: string | undefined,
  next: () => Req,
  opts: { duration: number; connections: number; serverPids?: number[] },
): Promise<Measured> {
  const first = next();
  const before = opts.serverPids ? cpuSnapshot() : undefined;
  const result = await autocannon({
    url,
    connections: opts.connections,
    duration: opts.duration,
    timeout: 60,
    method: (first.method ?? 'GET') as 'GET',
    headers: { ...(token ? { authorization: `Bearer ${token}` } : {}), ...(first.body ? { 'content-type': 'application/json' } : {}) },
    requests: [
      {
        setupRequest: (req) => {
          const r = next();
          return { ...req, method: (r.method ?? 'GET') as 'GET', path: r.path, body: r.body };
        },
      },
    ],
  });
  const cpu = opts.serverPids ? cpuShare(before, cpuSnapshot(), opts.serverPids) : undefined;
  const statuses: Record<string, number> = {};
  for (const [code, v] of Object.entries(result.statusCodeStats ?? {})) statuses[code] = v.count ?? 0;
  return {
    rps: result['2xx'] / result.duration,
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statuses,
    cpu,
  };
}

/** How long a drain waits at most: for the service to answer a database round trip quickly again (requests queued by a slow scenario drain). */
const DRAIN = { deadlineMs: 180_000, requestTimeoutMs: 60_000 };

// ---------------------------------------------------------------------------------------------
// Scenarios

interface Scenario {
  id: string;
  label: string;
  next: () => Req;
  write?: boolean;
  /** For an organization list page: the build expected first on it (seeded data only). */
  firstOnPage?: number;
}

/** The seeded build that is k-th newest in the organization (k from 0): build n of every pipeline precedes build n+1 of any. */
function kthNewest(s: SetupResult, k: number): { slug: string; number: number } {
  const P = s.pipelines.length;
  const index = P * PER_PIPELINE - 1 - k;
  return { slug: s.pipelines[index % P]!.slug, number: Math.floor(index / P) + 1 };
}

/** One request before the load: status, size and what came back, so a fast empty page cannot pass for a result. */
async function probe(url: string, token: string, s: SetupResult, sc: Scenario): Promise<{ text: string; ok: boolean }> {
  const r = sc.next();
  const res = await fetch(`${url}${r.path}`, {
    method: r.method ?? 'GET',
    headers: { Authorization: `Bearer ${token}`, ...(r.body ? { 'Content-Type': 'application/json' } : {}) },
    body: r.body,
  });
  const text = await res.text();
  const kb = `${fmt(Buffer.byteLength(text) / 1024, 1)} KB`;
  if (res.status >= 300) return { text: `${res.status}, ${kb}`, ok: false };
  const body = JSON.parse(text) as unknown;
  if (!Array.isArray(body)) return { text: `1 build, ${kb}`, ok: true };
  const items = body as { number: number; pipeline: { slug: string }; jobs: unknown[] }[];
  let ok = items.length > 0;
  let first = '';
  if (sc.firstOnPage !== undefined && items[0]) {
    const want = kthNewest(s, sc.firstOnPage);
    const got = { slug: items[0].pipeline.slug, number: items[0].number };
    ok = ok && want.slug === got.slug && want.number === got.number;
    first = `, first ${got.slug} #${got.number}${ok ? ' as expected' : ` (expected ${want.slug} #${want.number})`}`;
  }
  const jobs = items.reduce((n, b) => n + b.jobs.length, 0);
  return { text: `${items.length} builds, ${jobs} jobs, ${kb}${first}`, ok };
}

function scenarios(s: SetupResult): Scenario[] {
  const org = `/v2/organizations/${s.orgSlug}`;
  const P = s.pipelines.length;
  const pick = <T>(xs: T[]) => xs[Math.floor(Math.random() * xs.length)]!;
  let turn = 0;
  const body = (i: number) => JSON.stringify({ commit: COMMIT, branch: 'main', message: `Bench create ${i}` });
  return [
    // The cheapest authenticated operation: the token (cached), the rate limit, the validator and
    // a small answer, no database read. What the middleware stack alone costs per request.
    { id: 'floor', label: 'the stack alone: GET /v2/access-token (no database read)', next: () => ({ path: '/v2/access-token' }) },
    {
      id: 'get',
      label: 'get a build (random pipeline and number)',
      next: () => ({ path: `${org}/pipelines/${pick(s.pipelines).slug}/builds/${1 + Math.floor(Math.random() * PER_PIPELINE)}` }),
    },
    { id: 'list1', label: 'list builds, org, page 1 (30 with jobs)', next: () => ({ path: `${org}/builds?page=1` }), firstOnPage: 0 },
    {
      id: 'listdeep',
      label: `list builds, org, page ${DEEP_PAGE.toLocaleString('en-US')}`,
      next: () => ({ path: `${org}/builds?page=${DEEP_PAGE}` }),
      firstOnPage: (DEEP_PAGE - 1) * PER_PAGE,
    },
    {
      id: 'filter_pipeline',
      label: 'list builds, pipeline, state=passed&branch=main',
      next: () => ({ path: `${org}/pipelines/${pick(s.pipelines).slug}/builds?state=passed&branch=main` }),
    },
    {
      id: 'filter_org',
      label: 'list builds, org, state[]=passed&state[]=failed&branch=main',
      next: () => ({ path: `${org}/builds?state%5B%5D=passed&state%5B%5D=failed&branch=main` }),
    },
    {
      id: 'create_one',
      label: `create build, one pipeline (${s.pipelines[0]!.slug})`,
      write: true,
      next: () => ({ method: 'POST', path: `${org}/pipelines/${s.pipelines[0]!.slug}/builds`, body: body(turn++) }),
    },
    {
      id: 'create_many',
      label: `create build, rotating over ${P} pipelines`,
      write: true,
      next: () => {
        const i = turn++;
        return { method: 'POST', path: `${org}/pipelines/${s.pipelines[i % P]!.slug}/builds`, body: body(i) };
      },
    },
  ].filter((sc) => !ONLY || ONLY.has(sc.id));
}

// ---------------------------------------------------------------------------------------------
// Stores

interface StoreRun {
  store: Store;
  skipped?: string;
  seed?: SetupResult['seed'];
  rows: Row[];
  verify: string[];
  sql: string[];
}

let baseline: Measured | undefined;
/** The same bodies as the service's get-a-build and page 1, from node:http and from bare Express (issue 31). */
type BodyId = 'get' | 'list1';
const BODIES: { id: BodyId; label: string }[] = [
  { id: 'get', label: 'a build' },
  { id: 'list1', label: 'list page 1' },
];
const baselines: Record<'http' | 'express', Partial<Record<BodyId, Measured & { bytes: number }>>> = { http: {}, express: {} };
let prism: { m?: Measured; note: string } | undefined;

async function runStore(store: Store): Promise<StoreRun> {
  const run: StoreRun = { store, rows: [], verify: [], sql: [] };
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-'));
  let databaseUrl: string;
  if (store === 'postgres') {
    try {
      await createPgDatabase(PG_DB);
    } catch (err) {
      run.skipped = `Postgres at ${PG_URL} is not reachable (${(err as Error).message}): skipped`;
      fs.rmSync(dataDir, { recursive: true, force: true });
      return run;
    }
    databaseUrl = `${PG_URL}/${PG_DB}`;
  } else {
    databaseUrl = path.join(dataDir, 'windsock.sqlite3');
  }
  let child: Child | undefined;
  try {
    log(`${store}: starting the service (${databaseUrl})`);
    child = await Child.start('service', {
      BENCH_DATA_DIR: dataDir,
      BENCH_DATABASE_URL: databaseUrl,
      BENCH_JWT_SECRET: crypto.randomBytes(48).toString('base64'),
    });
    const setup = await child.request<SetupResult>({ type: 'setup', pipelines: PIPELINES, buildsPerPipeline: PER_PIPELINE, sqliteAnalyze: SQLITE_ANALYZE });
    run.seed = setup.seed;
    log(`${store}: seeded ${setup.seed.builds} builds and ${setup.seed.jobs} jobs in ${(setup.seed.ms.total / 1000).toFixed(1)} s`);
    if (!baseline) await measureBaselines(setup);

    for (const sc of scenarios(setup)) {
      const probed = await probe(child.url, setup.token, setup, sc);
      log(`${store}: ${sc.label}: one request: ${probed.text}`);
      log(`${store}: ${sc.label}: warm-up`);
      await cannon(child.url, setup.token, sc.next, { duration: 1, connections: 5 });
      await drain(child.url, DRAIN);
      log(`${store}: ${sc.label}: ${DURATION} s at ${CONNECTIONS} connections`);
      await quiet([child.pid]);
      if (SQL_STATS) await child.request<SqlStats>({ type: 'sqlstats', reset: true });
      if (CPU_PROF) await child.request({ type: 'profile', action: 'start' });
      const m = await cannon(child.url, setup.token, sc.next, { duration: DURATION, connections: CONNECTIONS, serverPids: [child.pid] });
      if (CPU_PROF) {
        const file = path.join(CPU_PROF, `${store}-${sc.id}.cpuprofile`);
        await child.request({ type: 'profile', action: 'stop', file });
        log(`${store}: ${sc.label}: profile written to ${file}`);
      }
      if (SQL_STATS) {
        const stats = (await child.request<SqlStats>({ type: 'sqlstats', reset: true })).sort((a, b) => b.ms - a.ms);
        const total = m.ok + m.non2xx;
        const queries = stats.reduce((n, q) => n + q.n, 0);
        const ms = stats.reduce((n, q) => n + q.ms, 0);
        const lines = [`${sc.id}: ${fmt(queries / Math.max(1, total), 1)} queries and ${fmt(ms / Math.max(1, total), 2)} ms in queries per response; by time:`];
        for (const q of stats.slice(0, 6))
          lines.push(`  ${fmt(q.n / Math.max(1, total), 2)}/req, ${fmt(q.ms / Math.max(1, q.n), 3)} ms each: ${q.sql.replace(/\s+/g, ' ').slice(0, 300)}`);
        run.sql.push(...lines);
        for (const l of lines) log(`${store}: ${l}`);
      }
      log(
        `${store}: ${sc.label}: ${m.rps.toFixed(0)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms, non-2xx ${m.non2xx}, errors ${m.errors} ${JSON.stringify(m.statuses)} cpu ${JSON.stringify(m.cpu)}`,
      );
      run.rows.push({ id: sc.id, label: sc.label, m, response: probed.text, met: probed.ok ? undefined : false });
      await drain(child.url, DRAIN);
      if (sc.write) {
        const v = await child.request<VerifyResult>({
          type: 'verify',
          seededBuildsPerPipeline: PER_PIPELINE,
          organizationId: setup.organizationId,
          pipelineIds: setup.pipelines.map((p) => p.id),
        });
        const created = Object.values(v.created).reduce((a, b) => a + b, 0);
        const pipelinesTouched = Object.keys(v.created).length;
        const line =
          `${sc.id}: after the run ${created} builds beyond the seed on ${pipelinesTouched} pipeline(s) (warm-ups included); ` +
          `duplicate numbers ${v.duplicates}, gaps ${v.gaps}; ` +
          (v.problems.length ? `PROBLEMS: ${v.problems.slice(0, 5).join('; ')}` : 'every pipeline numbered exactly 1..builds_counter');
        run.verify.push(line);
        log(`${store}: ${line}`);
        const row = run.rows[run.rows.length - 1]!;
        row.note =
          v.duplicates === 0 && v.gaps === 0 && !v.problems.length
            ? 'numbers unique and contiguous'
            : `numbering broken: ${v.duplicates} duplicates, ${v.gaps} gaps`;
        row.met = row.met !== false && v.duplicates === 0 && v.gaps === 0 && !v.problems.length;
      }
    }
  } finally {
    await child?.close().catch(() => undefined);
    if (KEEP_DATA) log(`${store}: kept ${store === 'sqlite' ? `the database in ${dataDir}` : `the database ${PG_DB}`} (BENCH_KEEP_DATA=1)`);
    if (!KEEP_DATA || store === 'postgres') fs.rmSync(dataDir, { recursive: true, force: true });
    if (store === 'postgres' && !KEEP_DATA) {
      await dropPgDatabase(PG_DB).catch((err: Error) => log(`could not drop ${PG_DB}: ${err.message}`));
    }
  }
  return run;
}

// ---------------------------------------------------------------------------------------------
// Baselines

function findPrism(): string | undefined {
  const dirs = [path.join(ROOT, 'node_modules', '.bin'), ...(process.env.PATH ?? '').split(path.delimiter)];
  for (const d of dirs) {
    const candidate = path.join(d, 'prism');
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      return candidate;
    } catch {
      /* not here */
    }
  }
  return undefined;
}

async function measureBaselines(setup: SetupResult): Promise<void> {
  const bodyFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-baseline-')), 'build.json');
  fs.writeFileSync(bodyFile, JSON.stringify({ [setup.samplePath]: setup.sampleBuildBody }));
  const base = await Child.start('baseline', { BENCH_BASELINE_BODIES: bodyFile });
  try {
    const next = () => ({ path: setup.samplePath });
    log(`node:http baseline: warm-up`);
    await cannon(base.url, setup.token, next, { duration: 1, connections: 5 });
    log(`node:http baseline: ${DURATION} s at ${CONNECTIONS} connections (fixed ${setup.sampleBuildBody.length}-byte build body)`);
    await quiet([base.pid]);
    baseline = await cannon(base.url, setup.token, next, { duration: DURATION, connections: CONNECTIONS, serverPids: [base.pid] });
    log(`node:http baseline: ${baseline.rps.toFixed(0)} req/s, p50 ${baseline.p50} ms, p99 ${baseline.p99} ms, cpu ${JSON.stringify(baseline.cpu)}`);
  } finally {
    await base.close();
    fs.rmSync(path.dirname(bodyFile), { recursive: true, force: true });
  }
  await measureSameBodies(setup);

  const bin = PRISM ? findPrism() : undefined;
  if (!PRISM) {
    prism = { note: 'skipped (BENCH_PRISM=0)' };
    return;
  }
  if (!bin) {
    prism = { note: '`prism` (@stoplight/prism-cli) is not installed: the Prism comparison was skipped' };
    log(prism.note);
    return;
  }
  const port = await freePort();
  const proc = spawn(bin, ['mock', '-h', '127.0.0.1', '-p', String(port), path.join(ROOT, 'generated', 'openapi.yaml')], { stdio: 'ignore' });
  try {
    const url = `http://127.0.0.1:${port}`;
    const deadline = Date.now() + 60_000;
    for (;;) {
      try {
        await fetch(`${url}${setup.samplePath}`, { headers: { Authorization: `Bearer ${setup.token}` }, signal: AbortSignal.timeout(2000) });
        break;
      } catch {
        if (Date.now() > deadline) throw new Error('prism did not start within 60 s');
        await new Promise((r) => setTimeout(r, 500));
      }
    }
    const next = () => ({ path: setup.samplePath });
    await cannon(url, setup.token, next, { duration: 1, connections: 5 });
    await quiet([proc.pid!]);
    const m = await cannon(url, setup.token, next, { duration: DURATION, connections: CONNECTIONS, serverPids: [proc.pid!] });
    prism = { m, note: `${bin} mock generated/openapi.yaml (the bundled spec), the get-a-build route` };
    log(`prism: ${m.rps.toFixed(0)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms`);
  } catch (err) {
    prism = { note: `prism found at ${bin} but not measured: ${(err as Error).message}` };
  } finally {
    proc.kill('SIGTERM');
  }
}

/**
 * node:http and bare Express, one after the other, each serving the service's own build and list
 * page 1 bodies at the service's paths, under the same load as the service's scenarios.
 */
async function measureSameBodies(setup: SetupResult): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-bodies-'));
  const file = path.join(dir, 'bodies.json');
  const paths: Record<BodyId, string> = { get: setup.samplePath, list1: setup.sampleListPath };
  const texts: Record<BodyId, string> = { get: setup.sampleBuildBody, list1: setup.sampleListBody };
  fs.writeFileSync(file, JSON.stringify({ [paths.get]: texts.get, [paths.list1]: texts.list1 }));
  try {
    for (const kind of ['http', 'express'] as const) {
      const name = kind === 'http' ? 'node:http' : 'bare Express';
      const server = await Child.start(kind === 'http' ? 'baseline' : 'express', { BENCH_BASELINE_BODIES: file });
      try {
        for (const { id, label } of BODIES) {
          const next = () => ({ path: paths[id] });
          // What it answers must be the service's body, byte for byte once parsed: a 404 or an empty page cannot pass.
          const res = await fetch(`${server.url}${paths[id]}`, { headers: { Authorization: `Bearer ${setup.token}` } });
          const text = await res.text();
          if (res.status !== 200 || JSON.stringify(JSON.parse(text)) !== JSON.stringify(JSON.parse(texts[id])))
            throw new Error(`${name} did not answer ${label} as the service did (${res.status}, ${text.length} bytes)`);
          await cannon(server.url, setup.token, next, { duration: 1, connections: 5 });
          log(`${name}, ${label} (${fmt(Buffer.byteLength(text) / 1024, 1)} KB): ${DURATION} s at ${CONNECTIONS} connections`);
          await quiet([server.pid]);
          const m = await cannon(server.url, setup.token, next, { duration: DURATION, connections: CONNECTIONS, serverPids: [server.pid] });
          baselines[kind][id] = { ...m, bytes: Buffer.byteLength(text) };
          log(`${name}, ${label}: ${m.rps.toFixed(0)} req/s, p50 ${m.p50} ms, p99 ${m.p99} ms, cpu ${JSON.stringify(m.cpu)}`);
        }
      } finally {
        await server.close();
      }
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------------------------
// Report

const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });
const ratio = (a: number, b: number | undefined) => {
  if (!b || b <= 0) return '—';
  const r = a / b;
  return `${r >= 100 ? fmt(r, 0) : String(Number(r.toPrecision(2)))}×`;
};

function applyTargets(runs: StoreRun[]): void {
  const sqlite = runs.find((r) => r.store === 'sqlite' && !r.skipped);
  for (const run of runs) {
    const by = new Map(run.rows.map((r) => [r.id, r]));
    for (const row of run.rows) {
      let min: number | undefined;
      let text = '';
      if (run.store === 'sqlite') {
        if (row.id === 'get') [min, text] = [1300, '≥ 1,300/s'];
        if (row.id === 'list1') [min, text] = [500, '≥ 500/s'];
        if (row.id === 'listdeep' && by.get('list1')) [min, text] = [0.8 * by.get('list1')!.m.rps, `≥ 0.8× page 1 = ${fmt(0.8 * by.get('list1')!.m.rps)}/s`];
        if (row.id === 'create_one') [min, text] = [400, '≥ 400/s, no duplicates'];
      } else {
        const s = sqlite?.rows.find((r) => r.id === row.id);
        // Issue 31's figure (an earlier one asked 0.7×).
        if (s) [min, text] = [0.8 * s.m.rps, `≥ 0.8× SQLite = ${fmt(0.8 * s.m.rps)}/s`];
      }
      if (min === undefined) continue;
      row.target = { min, text };
      const clean = row.m.non2xx === 0 && row.m.errors === 0;
      row.met = row.m.rps >= min && clean && row.met !== false;
    }
  }
}

function cpuText(c: CpuShare | undefined): string {
  if (!c) return '—';
  const t = `${fmt(c.server, 2)} / ${fmt(c.postgres, 2)} / ${fmt(c.loadgen, 2)} / ${fmt(c.other, 2)}`;
  return c.other >= 0.2 ? `${t} (disturbed)` : t;
}

function table(run: StoreRun): void {
  say(
    `| scenario | req/s | req/s ÷ node:http | p50 ms | p99 ms | p50 ÷ node:http | p99 ÷ node:http | non-2xx / errors | CPU cores: service / pg / autocannon / other | one response | target | met? |`,
  );
  say(`| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |`);
  for (const r of run.rows) {
    const bad =
      r.m.non2xx || r.m.errors ? `${r.m.non2xx} / ${r.m.errors}${Object.keys(r.m.statuses).length ? ` ${JSON.stringify(r.m.statuses)}` : ''}` : '0 / 0';
    const met = r.met === undefined ? '' : r.met ? 'yes' : '**no**';
    const target = [r.target?.text, r.note].filter(Boolean).join('; ') || '—';
    say(
      `| ${r.label} | ${fmt(r.m.rps)} | ${ratio(r.m.rps, baseline?.rps)} | ${fmt(r.m.p50)} | ${fmt(r.m.p99)} | ${ratio(r.m.p50, baseline?.p50)} | ${ratio(r.m.p99, baseline?.p99)} | ${bad} | ${cpuText(r.m.cpu)} | ${r.response ?? '—'} | ${target} | ${met} |`,
    );
  }
}

/** node:http and bare Express serving the service's own bodies (issue 31). */
function sameBodiesTable(): void {
  if (!Object.keys(baselines.http).length && !Object.keys(baselines.express).length) return;
  say();
  say(
    'The same bodies as the service answers (same load, same run): node:http writes the bytes; bare Express 5 has express.json() and res.json() of the body parsed once.',
  );
  say();
  say('| server | body | req/s | p50 ms | p99 ms | CPU cores: server / pg / autocannon / other |');
  say('| --- | --- | ---: | ---: | ---: | ---: |');
  for (const kind of ['http', 'express'] as const) {
    for (const { id, label } of BODIES) {
      const m = baselines[kind][id];
      if (!m) continue;
      say(
        `| ${kind === 'http' ? 'node:http' : 'bare Express'} | ${label} (${fmt(m.bytes / 1024, 1)} KB) | ${fmt(m.rps)} | ${fmt(m.p50)} | ${fmt(m.p99)} | ${cpuText(m.cpu)} |`,
      );
    }
  }
}

/**
 * The server process's CPU milliseconds per 2xx response (its own process only, not Postgres):
 * on a shared machine a server that gets less than a core answers fewer requests, but each costs
 * about as much, so this ratio holds up under load where req/s ratios do not.
 */
function cpuMs(m: Measured | undefined): number | undefined {
  if (!m?.cpu || m.rps <= 0) return undefined;
  return (m.cpu.server / m.rps) * 1000;
}

/** The service's get-a-build and page 1 as ratios to node:http and to bare Express serving the same body. */
function beside(run: StoreRun): void {
  const rows = BODIES.flatMap(({ id, label }) => {
    const r = run.rows.find((row) => row.id === id);
    const h = baselines.http[id];
    const e = baselines.express[id];
    if (!r || (!h && !e)) return [];
    const ms = cpuMs(r.m);
    // CPU per response as bare Express ÷ Windsock, so that like req/s, 1× or more means "as cheap as bare Express".
    const cpuRatio = ms === undefined ? '—' : ratio(cpuMs(e) ?? 0, ms);
    return [
      `| ${label} | ${fmt(r.m.rps)} | ${ratio(r.m.rps, h?.rps)} | ${ratio(r.m.rps, e?.rps)} | ${ms === undefined ? '—' : fmt(ms, 2)} | ${cpuMs(e) === undefined ? '—' : fmt(cpuMs(e)!, 2)} | ${cpuRatio} | ${ratio(r.m.p50, h?.p50)} | ${ratio(r.m.p50, e?.p50)} | ${ratio(r.m.p99, h?.p99)} | ${ratio(r.m.p99, e?.p99)} |`,
    ];
  });
  if (!rows.length) return;
  say();
  say(
    'Windsock beside node:http and bare Express serving the same body (CPU ms: the server process per 2xx response; the CPU ratio is bare Express ÷ Windsock, so 1× means as cheap):',
  );
  say();
  say(
    '| body | Windsock req/s | req/s ÷ node:http | req/s ÷ bare Express | Windsock CPU ms | bare Express CPU ms | CPU: bare Express ÷ Windsock | p50 ÷ node:http | p50 ÷ bare Express | p99 ÷ node:http | p99 ÷ bare Express |',
  );
  say('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
  for (const row of rows) say(row);
}

function machine(): string[] {
  const sh = (cmd: string) => {
    try {
      return execSync(cmd, { cwd: ROOT, stdio: ['ignore', 'pipe', 'ignore'] })
        .toString()
        .trim();
    } catch {
      return '';
    }
  };
  const commit = sh('git rev-parse --short HEAD');
  const dirty = sh('git status --porcelain -- src openapi generated');
  return [
    `- date: ${new Date().toISOString()}`,
    `- commit: ${commit || 'unknown'}${dirty ? ' (with uncommitted changes under src/, openapi/ or generated/)' : ''}`,
    `- machine: nproc ${sh('nproc --all') || os.cpus().length}${PIN ? ' (server pinned to CPU 1, load generator to CPU 0: BENCH_PIN=1)' : ''}, ${os.cpus()[0]?.model ?? 'unknown CPU'}; memory ${sh('free -h | awk \'/^Mem:/ {print $2" total, "$7" available"}\'') || `${Math.round(os.totalmem() / 2 ** 30)} GiB`}`,
    `- node ${process.version}, autocannon ${readVersion('autocannon')}, ${sh('psql --version | awk \'{print $1" "$3}\'') || 'psql unknown'}`,
    `- load: ${CONNECTIONS} connections, ${DURATION} s per scenario after a 1 s warm-up at 5 connections, 127.0.0.1; the service in its own process (node ${SERVER_NODE_OPTIONS.join(' ')}, as npm start runs it), LOG_LEVEL=${process.env.BENCH_LOG_LEVEL ?? 'silent'}, VALIDATE_RESPONSES=false (request validation on, as always)`,
    `- data: ${fmt(PIPELINES)} pipelines × ${fmt(PER_PIPELINE)} builds = ${fmt(PIPELINES * PER_PIPELINE)} builds, one job each`,
  ];
}

function readVersion(pkg: string): string {
  try {
    return (JSON.parse(fs.readFileSync(path.join(ROOT, 'node_modules', pkg, 'package.json'), 'utf8')) as { version: string }).version;
  } catch {
    return '?';
  }
}

async function main(): Promise<void> {
  const started = Date.now();
  const runs: StoreRun[] = [];
  for (const store of STORES) {
    try {
      runs.push(await runStore(store));
    } catch (err) {
      log(`${store}: ${(err as Error).stack ?? String(err)}`);
      runs.push({ store, rows: [], verify: [], sql: [], skipped: `The run failed: ${(err as Error).message.split('\n')[0]}` });
    }
  }
  applyTargets(runs);

  say(`## Builds benchmark`);
  say();
  for (const line of machine()) say(line);
  say();
  if (baseline) {
    say(
      `node:http baseline (fixed build body, same load): ${fmt(baseline.rps)} req/s, p50 ${fmt(baseline.p50)} ms, p99 ${fmt(baseline.p99)} ms; CPU cores server / pg / autocannon / other: ${cpuText(baseline.cpu)}.`,
    );
  }
  if (prism?.m)
    say(
      `Prism (${prism.note}): ${fmt(prism.m.rps)} req/s (${ratio(prism.m.rps, baseline?.rps)} node:http), p50 ${fmt(prism.m.p50)} ms, p99 ${fmt(prism.m.p99)} ms.`,
    );
  else if (prism) say(`Prism: ${prism.note}.`);
  sameBodiesTable();
  for (const run of runs) {
    say();
    say(`### ${run.store === 'sqlite' ? 'SQLite' : 'Postgres'}`);
    say();
    if (run.skipped) {
      say(run.skipped);
      continue;
    }
    if (run.seed) {
      const s = run.seed;
      say(
        `Seeded ${fmt(s.builds)} builds and ${fmt(s.jobs)} jobs in ${fmt(s.ms.total / 1000, 1)} s ` +
          `(pipelines ${fmt(s.ms.pipelines / 1000, 1)} s, builds ${fmt(s.ms.builds / 1000, 1)} s, jobs ${fmt(s.ms.jobs / 1000, 1)} s, ` +
          `${run.store === 'sqlite' ? `WAL checkpoint${SQLITE_ANALYZE ? ' + ANALYZE' : ''}` : 'VACUUM ANALYZE + CHECKPOINT'} ${fmt(s.ms.finish / 1000, 1)} s).`,
      );
      say();
    }
    table(run);
    beside(run);
    if (run.verify.length) {
      say();
      for (const v of run.verify) say(`- ${v}`);
    }
    if (run.sql.length) {
      say();
      say('SQL per response (BENCH_SQL_STATS=1; Knex query to query-response, so pool waits are excluded):');
      say();
      say('```');
      for (const l of run.sql) say(l);
      say('```');
    }
  }
  say();
  say(`Whole run: ${fmt((Date.now() - started) / 1000, 0)} s.`);
  if (process.env.BENCH_REPORT) fs.writeFileSync(process.env.BENCH_REPORT, out.join('\n') + '\n');
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
