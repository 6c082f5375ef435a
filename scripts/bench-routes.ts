/**
 * Route lookup benchmark (`npm run bench:routes`): the service's CPU per get-a-build request,
 * the figure behind how express-openapi-validator is mounted (src/http/contract/openapi-validator.ts).
 *
 * CPU, not requests per second: the machine is shared, and wall-clock throughput moves with
 * whatever else runs, while the CPU a request costs the server moves much less. Each variant is
 * the real service (its checkout's dist/scripts/bench-server.js, SQLite, a small seed) in its
 * own child process, which reports its own `process.cpuUsage()` (every thread: GC, libuv)
 * before and after a round of requests sent on loopback: once one after another over one
 * connection, once over several connections at a time. Rounds alternate between the variants,
 * so a busy spell on the machine falls on all of them; the report gives the median and the range.
 * Before those rounds, each service answers one GET of each documented /v2 GET path, and the
 * report gives what that first pass cost: CPU from the start, wall time, memory after GC.
 *
 * Settings (environment):
 *   BENCH_ROUTES_VARIANTS  what to compare, `;`-separated `label=checkout` or
 *                          `label=checkout@validator` (default: `this checkout=.`). A checkout
 *                          must be built for the benchmarks (`npm run clean && tsc -p
 *                          scripts/bench.tsconfig.json` in it) and have its node_modules; a
 *                          validator is a directory holding an express-openapi-validator package
 *                          to load instead of the installed one (inside a tree whose node_modules
 *                          have its dependencies). Relative paths are from the current directory.
 *   BENCH_REQUESTS         requests per round and mode (default 2000)
 *   BENCH_ROUNDS           rounds per variant (default 7)
 *   BENCH_CONNECTIONS      connections of the concurrent mode (default 16)
 *   BENCH_NODE_OPTIONS     node options of the service instead of package.json config.serverNodeOptions
 * Not part of CI or `npm test`; BENCHMARKS.md has the figures.
 */
import { execFileSync, fork, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import Module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { SetupResult } from './bench-server';
import { intEnv, serverNodeOptions } from './bench-env';

// Loaded with `--require` into a service child (not run): answer CPU and memory questions, and load the
// validator named by BENCH_ROUTES_VALIDATOR, if any, wherever `express-openapi-validator` is
// required. Both from here, so that a checkout of an older commit can be measured as it is.
if (require.main !== module && process.env.BENCH_ROUTES_CHILD === '1') {
  process.on('message', (msg: { type?: string }) => {
    if (msg.type === 'routes-cpu') process.send?.({ type: 'routes-cpu', usage: process.cpuUsage() });
    if (msg.type === 'routes-memory') {
      (globalThis as { gc?: () => void }).gc?.();
      process.send?.({ type: 'routes-memory', memory: process.memoryUsage() });
    }
  });
  const validator = process.env.BENCH_ROUTES_VALIDATOR;
  if (validator) {
    const m = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
    const resolve = m._resolveFilename;
    m._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]) {
      return resolve.call(this, request === 'express-openapi-validator' ? validator : request, ...rest);
    };
  }
}

const REQUESTS = intEnv('BENCH_REQUESTS', 2000);
const ROUNDS = intEnv('BENCH_ROUNDS', 7);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 16);
const SERVER_NODE_OPTIONS = serverNodeOptions();

const log = (line: string) => console.error(`[bench:routes] ${line}`);

interface Variant {
  label: string;
  checkout: string;
  validator?: string;
}

function variants(): Variant[] {
  const spec = process.env.BENCH_ROUTES_VARIANTS || 'this checkout=.';
  return spec.split(';').map((entry) => {
    const m = /^([^=]+)=([^@]+)(?:@(.+))?$/.exec(entry.trim());
    if (!m) throw new Error(`BENCH_ROUTES_VARIANTS: "${entry}" is not label=checkout or label=checkout@validator`);
    const checkout = path.resolve(m[2]!.trim());
    if (!fs.existsSync(path.join(checkout, 'dist', 'scripts', 'bench-server.js'))) throw new Error(`${checkout} is not built for the benchmarks`);
    return { label: m[1]!.trim(), checkout, validator: m[3] ? path.resolve(m[3].trim()) : undefined };
  });
}

/** What the variant runs: its commit, and the validator's version and whether it is the installed one. */
function describe(v: Variant): string {
  // A tree without .git (an export of a commit) would report the commit of a repository around it.
  const commit = fs.existsSync(path.join(v.checkout, '.git'))
    ? execFileSync('git', ['-C', v.checkout, 'rev-parse', '--short', 'HEAD']).toString().trim()
    : 'not a git checkout';
  const dir = v.validator ?? path.join(v.checkout, 'node_modules', 'express-openapi-validator');
  const version = (JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { version: string }).version;
  return `${commit}, express-openapi-validator ${version} ${v.validator ? `from ${path.relative(process.cwd(), v.validator) || '.'}` : 'as installed'}`;
}

type Answer = { ok?: boolean; result?: unknown; error?: string; usage?: NodeJS.CpuUsage; memory?: NodeJS.MemoryUsage };

/** A service child (the checkout's bench-server.js service) and its request/answer channel. */
class Service {
  private seq = 0;
  private readonly answers = new Map<number | string, (msg: Answer) => void>();
  url = '';

  private constructor(private readonly proc: ChildProcess) {}

  static start(variant: Variant, dataDir: string): Promise<Service> {
    const proc = fork(path.join(variant.checkout, 'dist', 'scripts', 'bench-server.js'), ['service'], {
      cwd: variant.checkout,
      env: {
        ...process.env,
        BENCH_DATA_DIR: dataDir,
        BENCH_DATABASE_URL: '',
        BENCH_JWT_SECRET: crypto.randomBytes(48).toString('base64'),
        BENCH_ROUTES_CHILD: '1',
        BENCH_ROUTES_VALIDATOR: variant.validator ?? '',
      },
      execArgv: [...SERVER_NODE_OPTIONS, '--expose-gc', '--require', __filename],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const service = new Service(proc);
    return new Promise((resolve, reject) => {
      proc.on('message', (msg: { type?: string; id?: number; url?: string; message?: string; error?: string }) => {
        if (msg.type === 'listening') {
          service.url = msg.url!;
          resolve(service);
        } else if (msg.type === 'log') log(`${variant.label}: ${msg.message}`);
        else if (msg.type === 'fatal') reject(new Error(msg.error));
        else if (msg.type === 'routes-cpu' || msg.type === 'routes-memory') service.answers.get(msg.type)?.(msg);
        else if (msg.id !== undefined) service.answers.get(msg.id)?.(msg);
      });
      proc.on('exit', (code) => {
        for (const answer of service.answers.values()) answer({ ok: false, error: `service exited with ${code}` });
        reject(new Error(`${variant.label}: service exited with ${code}`));
      });
    });
  }

  private ask<T>(key: number | string, message: object, read: (msg: Answer) => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.answers.set(key, (msg) => {
        this.answers.delete(key);
        if (msg.error) reject(new Error(msg.error));
        else resolve(read(msg));
      });
      this.proc.send(message);
    });
  }

  setup(): Promise<SetupResult> {
    const id = ++this.seq;
    return this.ask(id, { id, type: 'setup', pipelines: 10, buildsPerPipeline: 100, sqliteAnalyze: false }, (msg) => msg.result as SetupResult);
  }

  /** The service's CPU so far, microseconds (user + system). */
  cpu(): Promise<number> {
    return this.ask('routes-cpu', { type: 'routes-cpu' }, (msg) => msg.usage!.user + msg.usage!.system);
  }

  /** The service's memory after a full garbage collection. */
  memory(): Promise<NodeJS.MemoryUsage> {
    return this.ask('routes-memory', { type: 'routes-memory' }, (msg) => msg.memory!);
  }

  async close(): Promise<void> {
    const gone = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    this.proc.send({ id: ++this.seq, type: 'close' });
    await gone;
  }
}

/** `count` GETs of `url` over `connections` kept-alive connections; every answer must be a 200. */
async function load(url: string, token: string, count: number, connections: number): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: connections });
  const target = new URL(url);
  const one = () =>
    new Promise<void>((resolve, reject) => {
      const req = http.get({ host: target.hostname, port: target.port, path: target.pathname, agent, headers: { authorization: `Bearer ${token}` } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 200 ? resolve() : reject(new Error(`GET ${target.pathname}: ${res.statusCode}`))));
      });
      req.on('error', reject);
    });
  let left = count;
  const worker = async () => {
    while (left > 0) {
      left--;
      await one();
    }
  };
  try {
    await Promise.all(Array.from({ length: connections }, worker));
  } finally {
    agent.destroy();
  }
}

interface FirstRequests {
  paths: number;
  /** Wall time of one GET of each path, one after another. */
  ms: number;
  /** The service's CPU from its start until those GETs were answered (start, setup and seed included). */
  cpuMs: number;
  heapMiB: number;
  rssMiB: number;
}

/**
 * One GET of each documented `/v2` GET path, right after setup: what a service pays before its
 * validation is warm (one validator loads the whole spec at start; one per path builds each on
 * its first request). Path parameters name the seeded organization, pipeline and build where
 * the path has them, anything else a missing object; any answer but a 5xx will do.
 */
async function firstRequests(service: Service, setup: SetupResult): Promise<FirstRequests> {
  const doc = (await (await fetch(`${service.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, unknown>> };
  const values: Record<string, string> = { org_slug: setup.orgSlug, pipeline_slug: setup.pipelines[0]!.slug, build_number: '90' };
  const paths = Object.keys(doc.paths).filter((p) => p.startsWith('/v2/') && doc.paths[p]!.get);
  const started = performance.now();
  for (const p of paths) {
    const url = p.replace(/\{([^}]+)\}/g, (_, name: string) => values[name] ?? 'missing');
    const res = await fetch(`${service.url}${url}`, { headers: { authorization: `Bearer ${setup.token}` } });
    await res.arrayBuffer();
    if (res.status >= 500) throw new Error(`GET ${url}: ${res.status}`);
  }
  const ms = performance.now() - started;
  const cpuMs = (await service.cpu()) / 1000;
  const memory = await service.memory();
  return { paths: paths.length, ms, cpuMs, heapMiB: memory.heapUsed / 2 ** 20, rssMiB: memory.rss / 2 ** 20 };
}

const MODES = [
  { label: 'one at a time', connections: 1 },
  { label: `${CONNECTIONS} connections`, connections: CONNECTIONS },
];

const median = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  const mid = Math.floor(s.length / 2);
  return s.length % 2 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
};

async function main(): Promise<void> {
  const all = variants();
  const dirs: string[] = [];
  const services: Service[] = [];
  const targets: { url: string; token: string }[] = [];
  const firsts: FirstRequests[] = [];
  try {
    for (const variant of all) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-routes-'));
      dirs.push(dir);
      const service = await Service.start(variant, dir);
      services.push(service);
      const setup = await service.setup();
      const target = { url: `${service.url}${setup.samplePath}`, token: setup.token };
      targets.push(target);
      firsts.push(await firstRequests(service, setup));
      // Warm-up (the JIT, the caches, the validator's first request): one round of each mode, not counted.
      for (const mode of MODES) await load(target.url, target.token, REQUESTS, mode.connections);
    }
    const loadBefore = os.loadavg();
    const started = Date.now();
    // µs per request, by variant and mode, one entry per round.
    const results = all.map(() => MODES.map(() => [] as number[]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [v, service] of services.entries()) {
        for (const [m, mode] of MODES.entries()) {
          const before = await service.cpu();
          await load(targets[v]!.url, targets[v]!.token, REQUESTS, mode.connections);
          results[v]![m]!.push(((await service.cpu()) - before) / REQUESTS);
        }
      }
      const figures = all.map((variant, v) => `${variant.label} ${MODES.map((_, m) => results[v]![m]!.at(-1)!.toFixed(0)).join('/')}`);
      log(`round ${round}/${ROUNDS}: ${figures.join(', ')} µs/request`);
    }
    const loadAfter = os.loadavg();
    const rssAfter = await Promise.all(services.map(async (service) => (await service.memory()).rss / 2 ** 20));

    const cell = (xs: number[]) => `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
    console.log(
      [
        'Service CPU per get-a-build request (µs, user + system, every thread of the service process):',
        `${REQUESTS} requests per round and mode, ${ROUNDS} rounds alternating between variants, SQLite, ${new URL(targets[0]!.url).pathname}.`,
        `Machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}; load average ${loadBefore[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after (${Math.round((Date.now() - started) / 1000)} s); node ${process.version} ${SERVER_NODE_OPTIONS.join(' ')}.`,
        '',
        `| variant | runs | ${MODES.map((m) => `${m.label}: median (min–max)`).join(' | ')} |`,
        `| --- | --- | ${MODES.map(() => '---:').join(' | ')} |`,
        ...all.map((variant, v) => `| ${variant.label} | ${describe(variant)} | ${results[v]!.map(cell).join(' | ')} |`),
        '',
        `Start and first requests (one run each): the service's CPU from its start through setup and one GET of each of the ${firsts[0]!.paths} documented /v2 GET paths, those GETs' wall time, its memory after a full GC then, and its RSS after the rounds above:`,
        '',
        '| variant | CPU from start (ms) | first GETs (ms) | heap used (MiB) | RSS (MiB) | RSS after the rounds (MiB) |',
        '| --- | ---: | ---: | ---: | ---: | ---: |',
        ...all.map((variant, v) => {
          const f = firsts[v]!;
          return `| ${variant.label} | ${f.cpuMs.toFixed(0)} | ${f.ms.toFixed(0)} | ${f.heapMiB.toFixed(1)} | ${f.rssMiB.toFixed(0)} | ${rssAfter[v]!.toFixed(0)} |`;
        }),
      ].join('\n'),
    );
  } finally {
    await Promise.all(services.map((s) => s.close()));
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(err);
    process.exit(1);
  });
}
