/**
 * Whether a slow or dead receiver slows the API (`npm run bench:notifications`, issue 17): the
 * service in a child process on loopback (SQLite in a temporary directory, or Postgres with
 * BENCH_STORE=postgres) with its notification worker running, and a client creating builds
 * (`POST .../builds`, BENCH_CLIENTS at a time, default 4) for BENCH_SECONDS (default 10) in
 * three phases:
 *
 *   (a) no notification service;
 *   (b) one webhook service (every build.* and job.* event) whose receiver answers each request
 *       after 5 s;
 *   (c) that service disabled, and another whose receiver is down (connection refused).
 *
 * Per phase: creates/s, p50/p99 latency of the creates, the service's event-loop delay
 * (perf_hooks.monitorEventLoopDelay) and its deliveries at the end of the phase (delivered,
 * pending, failed, and attempts made).
 *
 *   node dist/scripts/bench-notifications.js            the benchmark
 *   node dist/scripts/bench-notifications.js server     the child (forked by the benchmark)
 */
import { fork, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { createApp } from '../src/app';
import { SCOPES } from '../src/core/identity';
import { migrateLatest } from '../src/db/knex';
import { createLogger } from '../src/http/logger';
import { createServices } from '../src/services';
import { intEnv, serverNodeOptions } from './bench-env';

interface Ready {
  type: 'ready';
  port: number;
  token: string;
}

async function serve(): Promise<void> {
  const kind = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-notify-'));
  const schema = `notify_${process.pid}`;
  const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const logger = createLogger('silent');
  const services = createServices({
    database: kind === 'sqlite' ? { kind, url: path.join(dir, 'db.sqlite3') } : { kind, url: pgUrl, schema },
    secret: crypto.randomBytes(32).toString('hex'),
    publicUrl: 'http://127.0.0.1',
    github: { apiUrl: undefined, token: undefined },
    githubEnterprise: { apiUrl: undefined, token: undefined },
    logger,
    // Loopback receivers; the defaults otherwise (10 s timeout, 16 in flight, back-off from 2 s).
    outbound: { allowPrivate: true, timeoutMs: 10_000, maxResponseBytes: 65_536 },
  });
  if (kind === 'postgres') await services.db.raw(`create schema if not exists ${schema}`);
  await migrateLatest(services.db);
  const app = createApp({
    ...services,
    logger,
    publicUrl: 'http://127.0.0.1',
    bodyLimitBytes: 1024 * 1024,
    uploadBodyLimitBytes: 64 * 1024 * 1024,
    validateResponses: false,
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  const port = (server.address() as AddressInfo).port;
  services.notificationWorker.start();

  const org = await services.orgs.create({ slug: 'notify', name: 'Notify' });
  const user = await services.users.create({ name: 'Notify', email: 'notify@example.com' });
  await services.orgs.addMember(org.id, user.id, 'admin');
  const { jwt } = await services.tokens.create({
    userId: user.id,
    organizationIds: [org.id],
    scopes: [...SCOPES],
    expiresAt: new Date(Date.now() + 86_400_000),
  });

  const delay = monitorEventLoopDelay({ resolution: 5 });
  process.on('message', async (m: { type: string }) => {
    if (m.type === 'start') {
      delay.reset();
      delay.enable();
      process.send!({ type: 'started' });
    } else if (m.type === 'stop') {
      delay.disable();
      const states: { state: string; n: number | string }[] = await services.db('notification_deliveries').select('state').count({ n: '*' }).groupBy('state');
      const by = Object.fromEntries(states.map((r) => [String(r.state), Number(r.n)]));
      const attempts = Number((await services.db('notification_attempts').count({ n: '*' }).first())?.n ?? 0);
      const unfanned = Number((await services.db('outbox_events').whereNull('fanned_out_at').count({ n: '*' }).first())?.n ?? 0);
      process.send!({
        type: 'delay',
        maxMs: delay.max / 1e6,
        p99Ms: delay.percentile(99) / 1e6,
        delivered: by.delivered ?? 0,
        pending: by.pending ?? 0,
        failed: by.failed ?? 0,
        attempts,
        unfanned,
      });
    } else if (m.type === 'exit') {
      await services.notificationWorker.stop(0);
      server.close();
      server.closeAllConnections();
      if (kind === 'postgres') await services.db.raw(`drop schema ${schema} cascade`);
      await services.db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
      process.exit(0);
    }
  });
  process.send!({ type: 'ready', port, token: jwt } satisfies Ready);
}

const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;

function request(agent: http.Agent, port: number, method: string, urlPath: string, token: string, body?: unknown): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const data = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
    const headers: Record<string, string | number> = { Authorization: `Bearer ${token}` };
    if (data) Object.assign(headers, { 'Content-Type': 'application/json', 'Content-Length': data.length });
    const req = http.request({ agent, host: '127.0.0.1', port, method, path: urlPath, headers }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text }));
    });
    req.on('error', reject);
    req.end(data);
  });
}

function ask(child: ChildProcess, type: string, answer: string): Promise<Record<string, number>> {
  return new Promise((resolve) => {
    const on = (m: { type: string }) => {
      if (m.type !== answer) return;
      child.off('message', on);
      resolve(m as unknown as Record<string, number>);
    };
    child.on('message', on);
    child.send({ type });
  });
}

/** A receiver that answers every request after `delayMs`; counts what it got. */
async function slowReceiver(delayMs: number): Promise<{ url: string; received: () => number; close: () => Promise<void> }> {
  let received = 0;
  const server = http.createServer((req, res) => {
    received++;
    req.resume();
    req.on('end', () => setTimeout(() => res.writeHead(200).end('ok'), delayMs));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    received: () => received,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** A loopback address nobody listens on (a port bound, then released): connection refused. */
async function downUrl(): Promise<string> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}/hook`;
}

const EVENTS = [
  'build.scheduled',
  'build.running',
  'build.failing',
  'build.finished',
  'build.skipped',
  'job.scheduled',
  'job.started',
  'job.finished',
  'job.activated',
];

async function main(): Promise<void> {
  const seconds = intEnv('BENCH_SECONDS', 10);
  const clients = intEnv('BENCH_CLIENTS', 4);
  const child = fork(__filename, ['server'], { execArgv: [...process.execArgv, ...serverNodeOptions()] });
  const ready = await new Promise<Ready>((resolve) => child.once('message', (m) => resolve(m as Ready)));
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients + 1 });
  const call = async (method: string, p: string, body?: unknown, expect = 200) => {
    const res = await request(agent, ready.port, method, p, ready.token, body);
    if (res.status !== expect) throw new Error(`${method} ${p} answered ${res.status}: ${res.body}`);
    return JSON.parse(res.body || '{}') as Record<string, unknown>;
  };
  const pipeline = await call(
    'POST',
    '/v2/organizations/notify/pipelines',
    { name: 'Notify', repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make test\n  - wait\n  - command: make deploy\n' },
    201,
  );
  const builds = `/v2/organizations/notify/pipelines/${String(pipeline.slug)}/builds`;
  const slow = await slowReceiver(5_000);
  const down = await downUrl();
  // Warm-up: the validator compiles an operation's schemas on its first request.
  for (let i = 0; i < 20; i++) await call('POST', builds, { commit: 'HEAD', branch: 'warm-up', message: `warm-up ${i}` }, 201);

  let slowServiceId = '';
  const phases: { label: string; before: () => Promise<void> }[] = [
    { label: '(a) no notification service', before: async () => {} },
    {
      label: '(b) one webhook, receiver answers after 5 s',
      before: async () => {
        const s = await call(
          'POST',
          '/v2/organizations/notify/services',
          { provider: 'webhook', description: 'slow', settings: { url: slow.url, events: EVENTS } },
          201,
        );
        slowServiceId = String(s.id);
      },
    },
    {
      label: '(c) one webhook, receiver down (connection refused)',
      before: async () => {
        await call('PUT', `/v2/organizations/notify/services/${slowServiceId}/disable`);
        await call('POST', '/v2/organizations/notify/services', { provider: 'webhook', description: 'down', settings: { url: down, events: EVENTS } }, 201);
      },
    },
  ];

  process.stdout.write(`store: ${process.env.BENCH_STORE ?? 'sqlite'}; ${clients} clients creating builds for ${seconds} s per phase; 3 jobs per build\n\n`);
  process.stdout.write(
    '| phase | creates/s | create p50 | create p99 | event-loop delay p99 / max | deliveries at the end (delivered / pending / failed, attempts) | receiver got |\n| --- | --- | --- | --- | --- | --- | --- |\n',
  );
  for (const phase of phases) {
    await phase.before();
    const receivedBefore = slow.received();
    await ask(child, 'start', 'started');
    const latencies: number[] = [];
    const end = Date.now() + seconds * 1000;
    const t0 = Date.now();
    await Promise.all(
      Array.from({ length: clients }, async (_, c) => {
        for (let i = 0; Date.now() < end; i++) {
          const t = process.hrtime.bigint();
          await call('POST', builds, { commit: 'HEAD', branch: 'main', message: `${phase.label} ${c} #${i}` }, 201);
          latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
      }),
    );
    const elapsed = (Date.now() - t0) / 1000;
    const s = await ask(child, 'stop', 'delay');
    latencies.sort((a, b) => a - b);
    const f = (ms: number) => `${ms.toFixed(1)} ms`;
    process.stdout.write(
      `| ${phase.label} | ${(latencies.length / elapsed).toFixed(0)} | ${f(percentile(latencies, 50))} | ${f(percentile(latencies, 99))} | ${f(s.p99Ms!)} / ${f(s.maxMs!)} | ${s.delivered} / ${s.pending} / ${s.failed}, ${s.attempts} attempts${s.unfanned ? `, ${s.unfanned} events not fanned out yet` : ''} | ${slow.received() - receivedBefore} |\n`,
    );
  }
  child.send({ type: 'exit' });
  await new Promise((resolve) => child.once('exit', resolve));
  await slow.close();
  agent.destroy();
}

if (process.argv[2] === 'server') {
  serve().catch((err) => {
    console.error(err);
    process.exit(1);
  });
} else {
  main().catch((err) => {
    console.error(err);
    process.exit(1);
  });
}
