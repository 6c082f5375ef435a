/**
 * Job log read benchmark (`npm run bench:logs`), per store (SQLite, then Postgres): the p50/p99
 * of `GET /healthz` while BENCH_READERS (default 4) clients read a BENCH_LOG_MB (default 50) MB
 * job log at once, as JSON, and the server's peak RSS and event loop delay meanwhile. One read
 * alone comes first (which also warms up the operation's request validator).
 *
 *   node dist/scripts/bench-logs.js            the client: forks the server, measures
 *   node dist/scripts/bench-logs.js server     the service on 127.0.0.1 (its own event loop),
 *                                              with a job whose log is stored as 1 MiB chunks
 *
 * The server sends { url, path, token } over IPC once the log is stored, and its peak RSS
 * (sampled every 20 ms) on request. The readers consume the body as it comes and keep only its
 * length; /healthz is asked every 10 ms, one request at a time, until every reader is done.
 * Not part of CI or `npm test`; BENCHMARKS.md has figures.
 *
 * Settings (environment): BENCH_LOG_MB, BENCH_READERS, BENCH_STORES (sqlite,postgres),
 * BENCH_PG_URL (server, default postgres://postgres@127.0.0.1:5432; the database
 * windsock_bench_logs_<pid> is created and dropped).
 */
import { fork } from 'node:child_process';
import os from 'node:os';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { migrateLatest } from '../src/db/knex';
import { intEnv } from './bench-env';
import {
  ask,
  benchAdmin,
  benchDatabase,
  benchServices,
  benchStores,
  exitOnFailure,
  jsonCaller,
  listenApp,
  percentile,
  type Store,
  storeOf,
  storeSections,
} from './bench-support';

const LOG_MB = intEnv('BENCH_LOG_MB', 50);
const READERS = intEnv('BENCH_READERS', 4);
const STORES = benchStores();
const MiB = 1024 * 1024;

interface Ready {
  type: 'ready';
  base: string;
  path: string;
  token: string;
  bytes: number;
}

/** The child: the service with one finished job whose log is LOG_MB MiB of 1 MiB chunks. */
async function server(): Promise<void> {
  const kind = storeOf(process.env.BENCH_STORE);
  const services = benchServices({ kind, url: process.env.BENCH_DB_URL! });
  await migrateLatest(services.db);
  const { base } = await listenApp(services, { bodyLimitBytes: 2 * MiB, uploadBodyLimitBytes: 64 * MiB });

  const { org, jwt } = await benchAdmin(services);
  const call = jsonCaller(base);
  const bearer = { Authorization: `Bearer ${jwt}` };
  const pipeline = await call('POST', '/v2/organizations/bench/pipelines', bearer, {
    name: 'Logs',
    repository: 'git@github.com:acme/app.git',
    configuration: 'steps:\n  - command: make\n',
  });
  const build = await call('POST', `/v2/organizations/bench/pipelines/${pipeline.slug as string}/builds`, bearer, {
    commit: 'abc123',
    branch: 'main',
    message: 'bench',
  });
  const { token: registration } = await services.agents.createToken(org.id, null, 'bench');
  const agent = await call('POST', '/v3/register', { Authorization: `Token ${registration}` }, { name: 'logger' });
  const agentAuth = { Authorization: `Token ${agent.access_token as string}` };
  await call('POST', '/v3/connect', agentAuth);
  const job = (await call('GET', '/v3/ping', agentAuth)).job as { id: string };
  await call('PUT', `/v3/jobs/${job.id}/accept`, agentAuth);
  await call('PUT', `/v3/jobs/${job.id}/start`, agentAuth);
  // Through the agent API, as an agent sends them: 1 MiB chunks of log lines.
  const lineText =
    '+++ step\n' + Array.from({ length: 40 }, (_, i) => `line ${i} of the build output, with "quotes" and ünïcödé \u001b[32mcolour\u001b[0m\n`).join('');
  const chunk = lineText.repeat(Math.ceil(MiB / Buffer.byteLength(lineText))).slice(0, MiB - 1024);
  let offset = 0;
  for (let seq = 1; offset + Buffer.byteLength(chunk) <= LOG_MB * MiB; seq++) {
    await call('POST', `/v3/jobs/${job.id}/chunks`, agentAuth, { sequence: seq, offset, content: chunk });
    offset += Buffer.byteLength(chunk);
  }
  await call('PUT', `/v3/jobs/${job.id}/finish`, agentAuth, { exit_status: 0 });

  let peak = 0;
  setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 20).unref();
  // The server's own event loop delay: what /healthz waits for, less the machine's noise.
  const delay = monitorEventLoopDelay({ resolution: 10 });
  delay.enable();
  process.on('message', (m: { type: string }) => {
    if (m.type === 'rss') {
      process.send!({ type: 'rss', peak, now: process.memoryUsage().rss, loopP99: delay.percentile(99) / 1e6, loopMax: delay.max / 1e6 });
      peak = 0;
      delay.reset();
    }
    if (m.type === 'close') void services.db.destroy().then(() => process.exit(0));
  });
  const ready: Ready = {
    type: 'ready',
    base,
    path: `/v2/organizations/bench/pipelines/${pipeline.slug as string}/builds/${build.number as number}/jobs/${job.id}/log`,
    token: jwt,
    bytes: offset,
  };
  process.send!(ready);
}

/** Reads the whole body, keeping only its length. */
async function read(url: string, token: string): Promise<{ bytes: number; ms: number }> {
  const t = Date.now();
  const res = await fetch(url, { headers: { Authorization: `Bearer ${token}` } });
  if (res.status !== 200) throw new Error(`log read: ${res.status}`);
  let bytes = 0;
  for await (const part of res.body as unknown as AsyncIterable<Uint8Array>) bytes += part.length;
  return { bytes, ms: Date.now() - t };
}

async function benchStore(kind: Store): Promise<string[] | null> {
  const store = await benchDatabase(kind, 'logs', (message) => `\n[postgres] skipped: ${message}\n`);
  if (!store) return null;
  const child = fork(__filename, ['server'], { env: { ...process.env, BENCH_STORE: kind, BENCH_DB_URL: store.url } });
  try {
    const ready = await ask<Ready>(child, '', 'ready');
    process.stdout.write(`[${kind}] log of ${(ready.bytes / MiB).toFixed(0)} MiB stored\n`);
    const health = async (): Promise<number> => {
      const t = process.hrtime.bigint();
      const res = await fetch(`${ready.base}/healthz`);
      await res.arrayBuffer();
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    // One read alone first: it also compiles the operation's request validator (a one-time cost
    // of the first request to each operation, which would otherwise land in the figures below).
    const single = await read(`${ready.base}${ready.path}`, ready.token);
    // Idle: /healthz alone.
    const idle: number[] = [];
    for (let i = 0; i < 200; i++) idle.push(await health());
    idle.sort((a, b) => a - b);
    const before = await ask<{ now: number }>(child, 'rss', 'rss');

    let done = false;
    const during: number[] = [];
    const probe = (async () => {
      while (!done) {
        during.push(await health());
        await new Promise((r) => setTimeout(r, 10));
      }
    })();
    const t = Date.now();
    const reads = await Promise.all(Array.from({ length: READERS }, () => read(`${ready.base}${ready.path}`, ready.token)));
    const wall = Date.now() - t;
    done = true;
    await probe;
    const rss = await ask<{ peak: number; loopP99: number; loopMax: number }>(child, 'rss', 'rss');
    during.sort((a, b) => a - b);
    const mb = (n: number) => `${(n / MiB).toFixed(0)} MiB`;
    return [
      `| one read alone of the ${mb(ready.bytes)} log as JSON (${mb(single.bytes)}) | ${(single.ms / 1000).toFixed(2)} s | | | |`,
      `| /healthz alone | ${percentile(idle, 50).toFixed(1)} ms | ${percentile(idle, 99).toFixed(1)} ms | ${idle[idle.length - 1]!.toFixed(1)} ms | |`,
      `| /healthz during ${READERS} concurrent reads of the ${mb(ready.bytes)} log as JSON (${during.length} probes; reads took ${(wall / 1000).toFixed(1)} s, each ${mb(reads[0]!.bytes)}) | ${percentile(during, 50).toFixed(1)} ms | ${percentile(during, 99).toFixed(1)} ms | ${during[during.length - 1]!.toFixed(1)} ms | server RSS ${mb(before.now)} before, peak ${mb(rss.peak)} during; server event loop delay p99 ${rss.loopP99.toFixed(0)} ms, max ${rss.loopMax.toFixed(0)} ms |`,
    ];
  } finally {
    child.send({ type: 'close' });
    await new Promise((resolve) => child.once('exit', resolve));
    await store.cleanup();
  }
}

async function main() {
  const report = await storeSections(STORES, ['| measurement | p50 | p99 | max | |', '| --- | --- | --- | --- | --- |'], benchStore);
  process.stdout.write(`\n## Report (${os.cpus().length} CPUs, Node ${process.version})\n${report.join('\n')}\n`);
}

exitOnFailure(process.argv[2] === 'server' ? server() : main());
