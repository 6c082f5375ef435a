/**
 * Workers benchmark (`npm run bench:workers`, issue 31), Postgres only (several workers need it):
 * the real `windsock serve` (dist/src/cli/main.js, with the node options `npm start` uses), first
 * as one process (WINDSOCK_WORKERS=1), then as a primary with two workers (WINDSOCK_WORKERS=2),
 * on the same database, in the same run:
 *
 * 1. get a build and list page 1 (30 builds with their jobs) under autocannon at
 *    BENCH_CONNECTIONS (50) for BENCH_DURATION seconds each: req/s, p50, p99 and the CPU of the
 *    server's processes (the primary and its workers) and of Postgres;
 * 2. agent polls: BENCH_AGENTS (1,000) agents, registered and connected through /v3 once, poll
 *    `GET /v3/ping` with their own tokens (each once first, as a warm-up that is not counted)
 *    at fixed offered rates (BENCH_POLL_RATES polls per
 *    second, each for BENCH_DURATION seconds); the figure is the highest rate whose polls were all
 *    answered (200) with p99 under 50 ms. 1,000 agents polling every 5 s is 200 polls/s.
 *
 * The load generator (autocannon, and the poll loop in this process) shares the machine's cores
 * with the server: on a 2-core machine, two workers compete with it for the same two cores, so
 * the report shows the CPU each side used. Setup (organization, token, agent registration token)
 * goes through the services; the pipeline and its builds through the API.
 *
 * Settings (environment): BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432; the database
 * windsock_bench_workers_<pid> is created and dropped), BENCH_DURATION (5), BENCH_CONNECTIONS
 * (50), BENCH_AGENTS (1000), BENCH_POLL_RATES (100,200,400,800,1200,1600,2400,3200),
 * BENCH_WORKERS (1,2), BENCH_POLL_STOP_MS (100: the poll rates stop at the first with a p99 at or
 * above it), BENCH_REPORT (also write the markdown report there).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import autocannon from 'autocannon';
import { loadConfig } from '../src/config';
import { migrateLatest } from '../src/db/knex';
import { createLogger } from '../src/http/middleware/logger';
import { servicesFromConfig } from '../src/services';
import { intEnv, serverNodeOptions } from './bench-env';
import { benchAdmin, CLK_TCK, createPgDatabase, drain, dropPgDatabase, freePort, PG_URL, processTimes } from './bench-support';

const ROOT = path.resolve(__dirname, '..', '..');
const PG_DB = `windsock_bench_workers_${process.pid}`;
const DURATION = intEnv('BENCH_DURATION', 5);
const CONNECTIONS = intEnv('BENCH_CONNECTIONS', 50);
const AGENTS = intEnv('BENCH_AGENTS', 1000);
const RATES = (process.env.BENCH_POLL_RATES ?? '100,200,400,800,1200,1600,2400,3200').split(',').map((s) => Number(s.trim()));
/** The poll rates stop at the first one with a p99 at or above this (ms; default twice the budget). */
const POLL_STOP_MS = intEnv('BENCH_POLL_STOP_MS', 100);
const WORKERS = (process.env.BENCH_WORKERS ?? '1,2').split(',').map((s) => Number(s.trim()));
const P99_BUDGET_MS = 50;
const BUILDS = 40;

const out: string[] = [];
const say = (line = '') => {
  console.log(line);
  out.push(line);
};
const log = (line: string) => console.error(`[bench:workers] ${line}`);
const fmt = (n: number, digits = 0) => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

// ---------------------------------------------------------------------------------------------
// CPU of a process tree and of Postgres, from /proc

/** The CPU time so far (clock ticks) of the processes that `pids` picks. */
function ticksOf(pids: (pid: number, comm: string, ppid: number) => boolean): number {
  return processTimes().reduce((ticks, p) => (pids(p.pid, p.comm, p.ppid) ? ticks + p.ticks : ticks), 0);
}
interface Cpu {
  server: number;
  postgres: number;
  loadgen: number;
}
function cpuMeter(serverPid: number): () => Cpu {
  const tree = (pid: number, _comm: string, ppid: number) => pid === serverPid || ppid === serverPid;
  const postgres = (_pid: number, comm: string) => comm === 'postgres';
  const self = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const at = performance.now();
  const [s0, p0, l0] = [ticksOf(tree), ticksOf(postgres), self()];
  return () => {
    const seconds = (performance.now() - at) / 1000;
    return {
      server: (ticksOf(tree) - s0) / CLK_TCK / seconds,
      postgres: (ticksOf(postgres) - p0) / CLK_TCK / seconds,
      loadgen: (self() - l0) / seconds,
    };
  };
}
const cpuText = (c: Cpu) => `${fmt(c.server, 2)} / ${fmt(c.postgres, 2)} / ${fmt(c.loadgen, 2)}`;

// ---------------------------------------------------------------------------------------------
// The server

interface Server {
  proc: ChildProcess;
  url: string;
  stderr: string[];
}

async function serve(env: Record<string, string>, workers: number): Promise<Server> {
  const port = await freePort();
  const proc = spawn(process.execPath, [...serverNodeOptions(), path.join(ROOT, 'dist', 'src', 'cli', 'main.js'), 'serve'], {
    env: { ...process.env, ...env, PORT: String(port), HOST: '127.0.0.1', WINDSOCK_WORKERS: String(workers) },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const stderr: string[] = [];
  proc.stderr!.on('data', (d: Buffer) => stderr.push(d.toString()));
  const url = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (proc.exitCode !== null) throw new Error(`serve exited with ${proc.exitCode}: ${stderr.join('')}`);
    try {
      const res = await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(2000) });
      if (res.status === 200) break;
    } catch {
      /* not yet */
    }
    if (Date.now() > deadline) throw new Error(`serve did not get ready: ${stderr.join('')}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  // With workers, every one of them must be listening (the primary starts the first alone).
  if (workers > 1) {
    const deadline2 = Date.now() + 60_000;
    while (countChildren(proc.pid!) < workers && Date.now() < deadline2) await new Promise((r) => setTimeout(r, 200));
    await new Promise((r) => setTimeout(r, 2000));
  }
  return { proc, url, stderr };
}

function countChildren(pid: number): number {
  let n = 0;
  ticksOf((_p, _c, ppid) => {
    if (ppid === pid) n++;
    return false;
  });
  return n;
}

async function stop(s: Server): Promise<void> {
  if (s.proc.exitCode !== null) return;
  const gone = new Promise<void>((resolve) => s.proc.once('exit', () => resolve()));
  s.proc.kill('SIGTERM');
  const timer = setTimeout(() => s.proc.kill('SIGKILL'), 60_000);
  await gone;
  clearTimeout(timer);
}

async function api(url: string, token: string, method: string, p: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(`${url}${p}`, {
    method,
    headers: { Authorization: token, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  return { status: res.status, json: text ? (JSON.parse(text) as unknown) : null };
}

// ---------------------------------------------------------------------------------------------
// Load

interface Measured {
  rps: number;
  p50: number;
  p99: number;
  bad: number;
  cpu: Cpu;
}

/** How long a drain waits at most: for the server to answer quickly again (requests queued by the last measurement drain). */
const DRAIN = { deadlineMs: 120_000, requestTimeoutMs: 30_000 };

async function cannon(s: Server, token: string, paths: () => string): Promise<Measured> {
  const run = (duration: number, connections: number) =>
    autocannon({
      url: s.url,
      connections,
      duration,
      headers: { authorization: `Bearer ${token}` },
      requests: [{ setupRequest: (req) => ({ ...req, path: paths() }) }],
    });
  await run(1, 5);
  await drain(s.url, DRAIN);
  const meter = cpuMeter(s.proc.pid!);
  const r = await run(DURATION, CONNECTIONS);
  return { rps: r['2xx'] / r.duration, p50: r.latency.p50, p99: r.latency.p99, bad: r.non2xx + r.errors, cpu: meter() };
}

interface PollStep {
  rate: number;
  achieved: number;
  p50: number;
  p99: number;
  bad: number;
  /** Bad polls by status code or connection error code. */
  badBy: Record<string, number>;
  cpu: Cpu;
}

/** `rate` polls per second over the agents in turn, for `seconds`; every latency recorded, and what each bad poll got. */
async function polls(s: Server, tokens: string[], rate: number, seconds = DURATION): Promise<PollStep> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });
  const { port } = new URL(s.url);
  const latencies: number[] = [];
  let bad = 0;
  const badBy = new Map<string, number>();
  const badOne = (what: string) => {
    bad++;
    badBy.set(what, (badBy.get(what) ?? 0) + 1);
  };
  let sent = 0;
  let turn = 0;
  const inflight = new Set<Promise<void>>();
  const one = () => {
    const token = tokens[turn++ % tokens.length]!;
    const t = performance.now();
    const p = new Promise<void>((resolve) => {
      const req = http.request({ host: '127.0.0.1', port, path: '/v3/ping', method: 'GET', agent, headers: { Authorization: `Token ${token}` } }, (res) => {
        res.resume();
        res.on('end', () => {
          latencies.push(performance.now() - t);
          if (res.statusCode !== 200) badOne(String(res.statusCode));
          resolve();
        });
      });
      req.on('error', (err: NodeJS.ErrnoException) => {
        badOne(err.code ?? err.message);
        latencies.push(performance.now() - t);
        resolve();
      });
      req.end();
    });
    inflight.add(p);
    void p.then(() => inflight.delete(p));
  };
  await drain(s.url, DRAIN);
  const meter = cpuMeter(s.proc.pid!);
  const started = performance.now();
  // Requests are sent on a 5 ms tick, as many as the offered rate owes by then.
  await new Promise<void>((resolve) => {
    const timer = setInterval(() => {
      const elapsed = (performance.now() - started) / 1000;
      if (elapsed >= seconds) {
        clearInterval(timer);
        resolve();
        return;
      }
      const owed = Math.floor(elapsed * rate) - sent;
      for (let i = 0; i < owed; i++, sent++) one();
    }, 5);
  });
  await Promise.all(inflight);
  const cpu = meter();
  agent.destroy();
  latencies.sort((a, b) => a - b);
  const q = (f: number) => latencies[Math.min(latencies.length - 1, Math.floor(f * latencies.length))] ?? 0;
  return { rate, achieved: (latencies.length - bad) / seconds, p50: q(0.5), p99: q(0.99), bad, badBy: Object.fromEntries(badBy), cpu };
}

// ---------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const started = Date.now();
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-workers-'));
  await createPgDatabase(PG_DB);
  const env: Record<string, string> = {
    DATABASE_URL: `${PG_URL}/${PG_DB}`,
    DATA_DIR: dataDir,
    JWT_SECRET: crypto.randomBytes(48).toString('base64'),
    LOG_LEVEL: 'silent',
    RATE_LIMIT_PER_MINUTE: '1000000000',
    RATE_LIMIT_PER_USER_PER_MINUTE: '1000000000',
    JOB_EXPIRY_MINUTES: '0',
  };
  try {
    // Setup through the services: an organization, an admin's token with every scope, an agent registration token.
    const services = servicesFromConfig(loadConfig({ ...env, PORT: '0' }), createLogger('silent'));
    let token: string;
    let registration: string;
    try {
      await migrateLatest(services.db);
      const { org, jwt } = await benchAdmin(services);
      token = jwt;
      registration = (await services.agents.createToken(org.id, null, 'bench')).token;
    } finally {
      await services.db.destroy();
    }

    const results: { workers: number; get: Measured; list1: Measured; polls: PollStep[] }[] = [];
    const agentTokens: string[] = [];
    for (const workers of WORKERS) {
      log(`serve with WINDSOCK_WORKERS=${workers}`);
      const s = await serve(env, workers);
      try {
        if (!agentTokens.length) {
          const p = await api(s.url, `Bearer ${token}`, 'POST', '/v2/organizations/bench/pipelines', {
            name: 'Bench 0001',
            repository: 'git@github.com:acme/app.git',
            configuration: 'steps:\n  - label: ":test_tube: Test"\n    command: make test\n    agents:\n      queue: default\n',
          });
          if (p.status !== 201) throw new Error(`pipeline: ${p.status} ${JSON.stringify(p.json)}`);
          for (let i = 0; i < BUILDS; i++) {
            const b = await api(s.url, `Bearer ${token}`, 'POST', '/v2/organizations/bench/pipelines/bench-0001/builds', {
              commit: 'a'.repeat(40),
              branch: 'main',
              message: `Bench ${i}`,
            });
            if (b.status !== 201) throw new Error(`build: ${b.status} ${JSON.stringify(b.json)}`);
          }
          log(`registering and connecting ${AGENTS} agents`);
          for (let i = 0; i < AGENTS; i++) {
            const r = await api(s.url, `Token ${registration}`, 'POST', '/v3/register', {
              name: `bench-${i}`,
              hostname: `bench-${i}.local`,
              version: '3.0.0',
              os: 'linux',
              arch: 'amd64',
              meta_data: ['queue=idle'],
            });
            const accessToken = (r.json as { access_token?: string } | null)?.access_token;
            if (r.status !== 201 || !accessToken) throw new Error(`register: ${r.status} ${JSON.stringify(r.json)}`);
            const c = await api(s.url, `Token ${accessToken}`, 'POST', '/v3/connect');
            if (c.status !== 200) throw new Error(`connect: ${c.status} ${JSON.stringify(c.json)}`);
            agentTokens.push(accessToken);
          }
        }
        const get = await cannon(s, token, () => `/v2/organizations/bench/pipelines/bench-0001/builds/${1 + Math.floor(Math.random() * BUILDS)}`);
        log(`${workers} worker(s): get ${fmt(get.rps)} req/s, p99 ${get.p99} ms`);
        const list1 = await cannon(s, token, () => '/v2/organizations/bench/builds?page=1');
        log(`${workers} worker(s): list1 ${fmt(list1.rps)} req/s, p99 ${list1.p99} ms`);
        // Every agent polls once first, not counted (as autocannon's scenarios warm up): the
        // server's first polls compile its code and open connections, and every agent's first
        // poll writes its heartbeat, which then settles to one write in three polls.
        const warm = await polls(s, agentTokens, RATES[0]!, AGENTS / RATES[0]!);
        log(`${workers} worker(s): warm-up, each agent once at ${RATES[0]} polls/s: p99 ${fmt(warm.p99, 1)} ms, bad ${warm.bad}`);
        const steps: PollStep[] = [];
        for (const rate of RATES) {
          const step = await polls(s, agentTokens, rate);
          steps.push(step);
          log(
            `${workers} worker(s): ${rate} polls/s offered: ${fmt(step.achieved)} answered/s, p50 ${fmt(step.p50, 1)} ms, p99 ${fmt(step.p99, 1)} ms, bad ${step.bad}${step.bad ? ` ${JSON.stringify(step.badBy)}` : ''}`,
          );
          if (step.bad || step.p99 >= POLL_STOP_MS) break;
        }
        results.push({ workers, get, list1, polls: steps });
      } finally {
        await stop(s);
      }
    }

    const load = fs.readFileSync('/proc/loadavg', 'utf8').split(' ').slice(0, 3).join(' ');
    say('## Workers benchmark');
    say();
    say(`- date: ${new Date().toISOString()}; load average at the end ${load}; nproc ${os.availableParallelism()}`);
    say(`- Postgres; ${CONNECTIONS} connections, ${DURATION} s per measurement; ${BUILDS} builds of one pipeline; ${AGENTS} agents`);
    say('- the load generator runs in the benchmark process, on the same cores as the server');
    say();
    say('| workers | scenario | req/s | ÷ one process | p50 ms | p99 ms | non-2xx + errors | CPU cores: server (all processes) / postgres / load generator |');
    say('| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |');
    const one = results.find((r) => r.workers === 1);
    for (const r of results) {
      for (const [label, m, base] of [
        ['get a build', r.get, one?.get],
        ['list page 1', r.list1, one?.list1],
      ] as const) {
        say(
          `| ${r.workers} | ${label} | ${fmt(m.rps)} | ${base ? `${(m.rps / base.rps).toFixed(2)}×` : '—'} | ${fmt(m.p50)} | ${fmt(m.p99)} | ${m.bad} | ${cpuText(m.cpu)} |`,
        );
      }
    }
    say();
    say(`Agent polls (\`GET /v3/ping\`, each agent its own token, round robin over ${AGENTS} agents), offered at fixed rates:`);
    say();
    say(
      '| workers | offered polls/s | answered/s | p50 ms | p99 ms | non-200 + errors | CPU cores: server / postgres / load generator | server CPU ms per poll |',
    );
    say('| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    for (const r of results)
      for (const st of r.polls)
        say(
          `| ${r.workers} | ${fmt(st.rate)} | ${fmt(st.achieved)} | ${fmt(st.p50, 1)} | ${fmt(st.p99, 1)} | ${
            st.bad
              ? `${st.bad} (${Object.entries(st.badBy)
                  .map(([what, n]) => `${what}: ${n}`)
                  .join(', ')})`
              : 0
          } | ${cpuText(st.cpu)} | ${st.achieved ? fmt((st.cpu.server * 1000) / st.achieved, 2) : '—'} |`,
        );
    say();
    for (const r of results) {
      const ok = r.polls.filter((st) => !st.bad && st.p99 < P99_BUDGET_MS && st.achieved >= 0.95 * st.rate);
      const best = ok.at(-1);
      say(
        `- ${r.workers} worker(s): ${best ? `${fmt(best.rate)} polls/s sustained with p99 ${fmt(best.p99, 1)} ms (< ${P99_BUDGET_MS} ms)` : `no offered rate kept p99 under ${P99_BUDGET_MS} ms`}`,
      );
    }
    say();
    say(`Whole run: ${fmt((Date.now() - started) / 1000)} s.`);
    if (process.env.BENCH_REPORT) fs.writeFileSync(process.env.BENCH_REPORT, out.join('\n') + '\n');
  } finally {
    fs.rmSync(dataDir, { recursive: true, force: true });
    await dropPgDatabase(PG_DB).catch((err: Error) => log(`could not drop ${PG_DB}: ${err.message}`));
  }
}

main().catch((err: Error) => {
  console.error(err);
  process.exit(1);
});
