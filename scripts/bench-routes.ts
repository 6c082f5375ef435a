/**
 * Route lookup benchmark (`npm run bench:routes`): the service's CPU per get-a-build request
 * with express-openapi-validator as installed (patched at `npm ci` by
 * patches/express-openapi-validator+*.patch, which keeps its compiled route matchers) and as
 * published (the same package with the patch reversed, in a copy under dist/: every route of
 * the spec compiled on every request).
 *
 * CPU, not requests per second: the machine is shared, and wall-clock throughput moves with
 * whatever else runs, while the CPU a request costs the server moves much less. Each variant is
 * the real service (scripts/bench-server.ts, SQLite, a small seed) in its own child process; the
 * child reports its own `process.cpuUsage()` (every thread: GC, libuv) before and after a round
 * of requests sent on loopback, once one after another over one connection and once over
 * several connections at a time. Rounds alternate between the variants, so a busy spell on the
 * machine falls on both; the report gives the median and the range of the rounds.
 *
 * Settings (environment):
 *   BENCH_REQUESTS     requests per round and mode (default 2000)
 *   BENCH_ROUNDS       rounds per variant (default 7)
 *   BENCH_CONNECTIONS  connections of the concurrent mode (default 16)
 *   BENCH_NODE_OPTIONS node options of the service instead of package.json config.serverNodeOptions
 * Not part of CI or `npm test`; BENCHMARKS.md has the figures.
 */
import { fork, spawnSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import Module from 'node:module';
import os from 'node:os';
import path from 'node:path';
import type { Message, SetupResult } from './bench-server';
import { intEnv } from './bench-env';

const ROOT = path.resolve(__dirname, '..', '..');
/** Where the published (unpatched) copy of the validator goes: dist/ is emptied before each benchmark. */
const PUBLISHED_COPY = path.join(ROOT, 'dist', 'bench-routes', 'node_modules', 'express-openapi-validator');

// Loaded with `--require` into a service child (not run): make `express-openapi-validator`
// resolve to the copy named by BENCH_ROUTES_VALIDATOR. The copy lives under a node_modules of
// the repository, so its own dependencies resolve as the installed package's do.
if (require.main !== module && process.env.BENCH_ROUTES_VALIDATOR) {
  const copy = process.env.BENCH_ROUTES_VALIDATOR;
  const m = Module as unknown as { _resolveFilename: (request: string, ...rest: unknown[]) => string };
  const resolve = m._resolveFilename;
  m._resolveFilename = function (this: unknown, request: string, ...rest: unknown[]) {
    return resolve.call(this, request === 'express-openapi-validator' ? copy : request, ...rest);
  };
}

const REQUESTS = intEnv('BENCH_REQUESTS', 2000);
const ROUNDS = intEnv('BENCH_ROUNDS', 7);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 16);
const SERVER_NODE_OPTIONS = (
  process.env.BENCH_NODE_OPTIONS ??
  (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { config: { serverNodeOptions: string } }).config.serverNodeOptions
)
  .split(/\s+/)
  .filter(Boolean);

const log = (line: string) => console.error(`[bench:routes] ${line}`);

interface Variant {
  id: string;
  label: string;
  /** A copy of the validator to load instead of the installed one. */
  validator?: string;
}

/**
 * The variants this checkout can show: as installed, and, while a patch of the validator is
 * carried, as published (the patch reversed in a copy).
 */
function variants(): Variant[] {
  const installed = path.join(ROOT, 'node_modules', 'express-openapi-validator');
  const version = (JSON.parse(fs.readFileSync(path.join(installed, 'package.json'), 'utf8')) as { version: string }).version;
  const patchFile = path.join(ROOT, 'patches', `express-openapi-validator+${version}.patch`);
  if (!fs.existsSync(patchFile)) return [{ id: 'installed', label: `express-openapi-validator ${version} as installed (no patch)` }];
  fs.rmSync(PUBLISHED_COPY, { recursive: true, force: true });
  fs.cpSync(installed, PUBLISHED_COPY, { recursive: true });
  // The patch names files as a/node_modules/express-openapi-validator/<file>: -p3 leaves <file>.
  const reversed = spawnText('patch', ['-R', '-p3', '--batch', '--silent', '-d', PUBLISHED_COPY, '-i', patchFile]);
  if (reversed.status !== 0) throw new Error(`reversing ${path.basename(patchFile)} in the copy failed (is it applied?): ${reversed.text}`);
  return [
    { id: 'patched', label: `express-openapi-validator ${version} with ${path.relative(ROOT, patchFile)} (as installed)` },
    { id: 'published', label: `express-openapi-validator ${version} as published (the patch reversed)`, validator: PUBLISHED_COPY },
  ];
}

function spawnText(cmd: string, args: string[]): { status: number | null; text: string } {
  const r = spawnSync(cmd, args, { encoding: 'utf8' });
  return { status: r.status, text: `${r.stdout}${r.stderr}`.trim() };
}

/** A service child (scripts/bench-server.js service) and its request/answer channel. */
class Service {
  private seq = 0;
  private readonly pending = new Map<number, (msg: { ok: boolean; result?: unknown; error?: string }) => void>();
  url = '';

  private constructor(private readonly proc: ChildProcess) {}

  static start(variant: Variant, dataDir: string): Promise<Service> {
    const preload = variant.validator ? ['--require', __filename] : [];
    const proc = fork(path.join(__dirname, 'bench-server.js'), ['service'], {
      env: {
        ...process.env,
        BENCH_DATA_DIR: dataDir,
        BENCH_DATABASE_URL: '',
        BENCH_JWT_SECRET: crypto.randomBytes(48).toString('base64'),
        BENCH_ROUTES_VALIDATOR: variant.validator ?? '',
      },
      execArgv: [...SERVER_NODE_OPTIONS, ...preload],
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    });
    const service = new Service(proc);
    return new Promise((resolve, reject) => {
      proc.on('message', (msg: { type?: string; id?: number; ok?: boolean; result?: unknown; error?: string; url?: string; message?: string }) => {
        if (msg.type === 'listening') {
          service.url = msg.url!;
          resolve(service);
        } else if (msg.type === 'log') log(`${variant.id}: ${msg.message}`);
        else if (msg.type === 'fatal') reject(new Error(msg.error));
        else if (msg.id !== undefined) service.pending.get(msg.id)?.({ ok: !!msg.ok, result: msg.result, error: msg.error });
      });
      proc.on('exit', (code) => {
        for (const answer of service.pending.values()) answer({ ok: false, error: `service exited with ${code}` });
        reject(new Error(`${variant.id} service exited with ${code}`));
      });
    });
  }

  request<T>(msg: Message): Promise<T> {
    const id = ++this.seq;
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, (answer) => {
        this.pending.delete(id);
        if (answer.ok) resolve(answer.result as T);
        else reject(new Error(answer.error));
      });
      this.proc.send({ ...msg, id });
    });
  }

  /** The service's CPU so far, microseconds (user + system). */
  async cpu(): Promise<number> {
    const usage = await this.request<NodeJS.CpuUsage>({ type: 'cpu' });
    return usage.user + usage.system;
  }

  async close(): Promise<void> {
    const gone = new Promise<void>((resolve) => this.proc.once('exit', () => resolve()));
    await this.request({ type: 'close' }).catch(() => undefined);
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

const MODES = [
  { id: 'sequential', label: 'one at a time', connections: 1 },
  { id: 'concurrent', label: `${CONNECTIONS} connections`, connections: CONNECTIONS },
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
  const setups: SetupResult[] = [];
  try {
    for (const variant of all) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-routes-'));
      dirs.push(dir);
      const service = await Service.start(variant, dir);
      services.push(service);
      setups.push(await service.request<SetupResult>({ type: 'setup', pipelines: 10, buildsPerPipeline: 100, sqliteAnalyze: false }));
      // Warm-up (the JIT, the caches): one round of each mode, not counted.
      for (const mode of MODES) await load(`${service.url}${setups.at(-1)!.samplePath}`, setups.at(-1)!.token, REQUESTS, mode.connections);
    }
    const loadBefore = os.loadavg();
    const started = Date.now();
    // µs per request, by variant and mode, one entry per round.
    const results = all.map(() => MODES.map(() => [] as number[]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const [v, service] of services.entries()) {
        for (const [m, mode] of MODES.entries()) {
          const before = await service.cpu();
          await load(`${service.url}${setups[v]!.samplePath}`, setups[v]!.token, REQUESTS, mode.connections);
          const us = ((await service.cpu()) - before) / REQUESTS;
          results[v]![m]!.push(us);
        }
      }
      log(
        `round ${round}/${ROUNDS}: ${all.map((variant, v) => `${variant.id} ${MODES.map((_, m) => results[v]![m]!.at(-1)!.toFixed(0)).join('/')}`).join(', ')} µs/request`,
      );
    }
    const loadAfter = os.loadavg();

    const lines = [
      `Service CPU per get-a-build request (µs, user + system, every thread of the service process):`,
      `${REQUESTS} requests per round and mode, ${ROUNDS} rounds alternating between variants, SQLite, ${setups[0]!.samplePath}.`,
      `Machine: ${os.cpus().length} cores, ${os.cpus()[0]?.model ?? 'unknown CPU'}; load average ${loadBefore[0]!.toFixed(2)} before, ${loadAfter[0]!.toFixed(2)} after (${Math.round((Date.now() - started) / 1000)} s); node ${process.version} ${SERVER_NODE_OPTIONS.join(' ')}.`,
      '',
      `| variant | ${MODES.map((m) => `${m.label}: median (min–max)`).join(' | ')} |`,
      `| --- | ${MODES.map(() => '---:').join(' | ')} |`,
      ...all.map(
        (variant, v) =>
          `| ${variant.label} | ${MODES.map((_, m) => {
            const xs = results[v]![m]!;
            return `${median(xs).toFixed(0)} (${Math.min(...xs).toFixed(0)}–${Math.max(...xs).toFixed(0)})`;
          }).join(' | ')} |`,
      ),
    ];
    if (all.length === 2) {
      const share = MODES.map((mode, m) => {
        const [patched, published] = [median(results[0]![m]!), median(results[1]![m]!)];
        return `${mode.label} ${(((published - patched) / published) * 100).toFixed(1)}%`;
      });
      lines.push('', `Share of the published validator's CPU per request that the patch saves: ${share.join(', ')}.`);
    }
    console.log(lines.join('\n'));
  } finally {
    await Promise.all(services.map((s) => s.close()));
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
    fs.rmSync(path.dirname(path.dirname(PUBLISHED_COPY)), { recursive: true, force: true });
  }
}

if (require.main === module) {
  main().catch((err: Error) => {
    console.error(err);
    process.exit(1);
  });
}
