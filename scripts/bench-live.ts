/**
 * Live build page benchmark (`npm run bench:live`): what one open live stream costs the instance
 * that serves it, while BENCH_JOBS (default 200) jobs of one build run and their agents append to
 * their logs (each agent a chunk every BENCH_APPEND_MS, default 1000 ms).
 *
 * Two instances on one Postgres database, as behind a load balancer: this process is instance A
 * (the agents' appends go through its agent work service, as its chunks route does, and are
 * published on LISTEN/NOTIFY), a child process is
 * instance B, which serves the page's stream only. B's own CPU time (process.cpuUsage, asked over
 * IPC) is measured over BENCH_SECONDS (default 20) twice: with no stream open (what hearing the
 * other instance's changes costs), then with one stream open for the build; and the events the
 * stream sent per second. Not part of CI or `npm test`; BENCHMARKS.md has figures.
 *
 * Settings (environment): BENCH_JOBS, BENCH_APPEND_MS, BENCH_SECONDS, BENCH_PG_URL (default
 * postgres://postgres@127.0.0.1:5432; the database windsock_bench_live_<pid> is created and
 * dropped).
 */
import { fork, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrateLatest } from '../src/db/knex';
import type { Services } from '../src/services';
import { startChangeFeed } from '../src/live/feeds';
import type { Agent } from '../src/agents/repository';
import { intEnv } from './bench-env';
import { benchAdmin, benchServices, createPgDatabase, dropPgDatabase, exitOnFailure, jsonCaller, listenApp, PG_URL } from './bench-support';

const JOBS = intEnv('BENCH_JOBS', 200);
const APPEND_MS = intEnv('BENCH_APPEND_MS', 1000);
const SECONDS = intEnv('BENCH_SECONDS', 20);
const SECRET = 'bench-live-secret-bench-live-secret-0123456789';

/** An instance on the database: services with the LISTEN/NOTIFY feed, the app on 127.0.0.1. */
async function instance(url: string): Promise<{ services: Services; base: string; close: () => Promise<void> }> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-live-'));
  const feed = startChangeFeed({ database: { kind: 'postgres', url }, report: () => undefined });
  const services = benchServices({ kind: 'postgres', url }, { secret: SECRET, artifacts: { dir: path.join(dir, 'artifacts') }, changes: feed.feed });
  await feed.ready;
  const { server, base } = await listenApp(services, { uploadBodyLimitBytes: 1024 * 1024 });
  return {
    services,
    base,
    close: async () => {
      services.liveStreams.endAll();
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
      await services.changes.close();
      await services.db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Instance B: serves, and answers `cpu` with its CPU time so far (µs). */
async function child(url: string): Promise<void> {
  const b = await instance(url);
  process.on('message', (m: unknown) => {
    if (m === 'cpu') {
      const u = process.cpuUsage();
      process.send!({ cpu: u.user + u.system });
    } else if (m === 'stop') void b.close().then(() => process.exit(0));
  });
  process.send!({ base: b.base });
}

function ask<T>(c: ChildProcess, message: string, key: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: unknown) => {
      if (typeof m === 'object' && m !== null && key in m) {
        c.off('message', on);
        resolve((m as Record<string, T>)[key]!); // cast: the child's own answer
      }
    };
    c.on('message', on);
    if (message) c.send(message);
  });
}

async function main(): Promise<void> {
  const dbName = `windsock_bench_live_${process.pid}`;
  await createPgDatabase(dbName);
  const url = `${PG_URL}/${dbName}`;
  let b: ChildProcess | undefined;
  let a: Awaited<ReturnType<typeof instance>> | undefined;
  try {
    {
      const s = benchServices({ kind: 'postgres', url }, { secret: SECRET });
      await migrateLatest(s.db);
      await s.db.destroy();
    }
    a = await instance(url);
    b = fork(__filename, ['child', url], { stdio: 'inherit' });
    const bBase = await ask<string>(b, '', 'base');

    const services = a.services;
    const { jwt: token } = await benchAdmin(services);
    const call = jsonCaller(a.base);
    const api = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => call(method, p, headers, body);
    const bearer = { Authorization: `Bearer ${token}` };
    const steps = Array.from({ length: JOBS }, (_, i) => `  - command: make test-${i}`).join('\n');
    await api(
      'POST',
      '/v2/organizations/bench/pipelines',
      { name: 'Live', repository: 'git@example.com:a/b.git', configuration: `steps:\n${steps}\n` },
      bearer,
    );
    const build = await api('POST', '/v2/organizations/bench/pipelines/live/builds', { commit: 'HEAD', branch: 'main' }, bearer);
    const reg = (await api('POST', '/v2/organizations/bench/agent-tokens', { description: 'bench' }, bearer)).token as string; // cast: the API's JSON
    // One agent per job, each running its job.
    const running: { auth: Record<string, string>; agent: Agent; job: string; offset: number; sequence: number }[] = [];
    for (let i = 0; i < JOBS; i++) {
      const agent = (await api('POST', '/v3/register', { name: `agent-${i}` }, { Authorization: `Token ${reg}` })).access_token as string; // cast: the API's JSON
      const auth = { Authorization: `Token ${agent}` };
      await api('POST', '/v3/connect', {}, auth);
      const job = (await api('GET', '/v3/ping', undefined, auth)).job as { id: string }; // cast: the API's JSON
      await api('PUT', `/v3/jobs/${job.id}/accept`, {}, auth);
      await api('PUT', `/v3/jobs/${job.id}/start`, {}, auth);
      running.push({ auth, agent: await services.agents.authenticateAgent(auth.Authorization, '127.0.0.1'), job: job.id, offset: 0, sequence: 0 });
    }
    const { sid } = await services.webSessions.create(token);

    // The agents append, each every APPEND_MS, staggered.
    let appends = 0;
    let stopped = false;
    const line = `${'x'.repeat(100)}\n`;
    const appenders = running.map(async (r, i) => {
      await new Promise((resolve) => setTimeout(resolve, (i * APPEND_MS) / JOBS));
      while (!stopped) {
        const t = Date.now();
        r.sequence++;
        // Through A's agent work service, as its chunks route does (without A's HTTP: A is not what is measured).
        await services.agentWork.appendChunk(r.agent, r.job, { sequence: r.sequence, offset: r.offset, content: line });
        r.offset += line.length;
        appends++;
        await new Promise((resolve) => setTimeout(resolve, Math.max(0, APPEND_MS - (Date.now() - t))));
      }
    });

    const measure = async (): Promise<{ cpuPct: number; appendsPerSecond: number }> => {
      const cpu0 = await ask<number>(b!, 'cpu', 'cpu');
      const n0 = appends;
      const t0 = process.hrtime.bigint();
      await new Promise((resolve) => setTimeout(resolve, SECONDS * 1000));
      const cpu1 = await ask<number>(b!, 'cpu', 'cpu');
      const wall = Number(process.hrtime.bigint() - t0) / 1e3;
      return { cpuPct: ((cpu1 - cpu0) / wall) * 100, appendsPerSecond: ((appends - n0) * 1e6) / wall };
    };

    // Warm up, then B with no stream open.
    await new Promise((resolve) => setTimeout(resolve, 3000));
    const idle = await measure();

    // One stream for the build, opened on B.
    const events = new Map<string, number>();
    const controller = new AbortController();
    const res = await fetch(`${bBase}/bench/live/builds/${build.number as number}/events`, {
      headers: { Accept: 'text/event-stream', Cookie: `windsock_session=${sid}` },
      signal: controller.signal,
    });
    if (res.status !== 200) throw new Error(`stream: ${res.status} ${await res.text()}`);
    const reader = res.body!.getReader();
    const decoder = new TextDecoder();
    let counting = false;
    const reading = (async () => {
      for (;;) {
        const { value, done } = await reader.read().catch(() => ({ value: undefined, done: true }));
        if (done) return;
        if (!counting) continue;
        for (const m of decoder.decode(value).matchAll(/^event: (\w+)$/gm)) events.set(m[1]!, (events.get(m[1]!) ?? 0) + 1);
      }
    })();
    await new Promise((resolve) => setTimeout(resolve, 2000));
    counting = true;
    const streamed = await measure();
    counting = false;
    controller.abort();
    await reading;
    stopped = true;
    await Promise.all(appenders);

    const perSecond = (k: string) => ((events.get(k) ?? 0) / SECONDS).toFixed(1);
    console.log(
      `postgres, ${JOBS} running jobs, each appending every ${APPEND_MS} ms (${streamed.appendsPerSecond.toFixed(0)} appends/s through instance A, load average ${os.loadavg()[0]!.toFixed(1)}):`,
    );
    console.log(`  instance B, no stream open: ${idle.cpuPct.toFixed(1)} % of a core`);
    console.log(`  instance B, one stream open: ${streamed.cpuPct.toFixed(1)} % of a core (the stream: ${(streamed.cpuPct - idle.cpuPct).toFixed(1)} points)`);
    console.log(`  events sent per second: log ${perSecond('log')}, job ${perSecond('job')}, build ${perSecond('build')}`);
    console.log(
      `  load average at the end: ${os
        .loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
  } finally {
    if (b) {
      b.send('stop');
      await new Promise((resolve) => b!.once('exit', resolve));
    }
    await a?.close();
    await dropPgDatabase(dbName);
  }
}

exitOnFailure(process.argv[2] === 'child' ? child(process.argv[3]!) : main());
