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
 * Then the slow-receiver case (issue 26, section 2; BENCH_CASE=slow-receiver runs only it): in
 * one organization a webhook receiver that answers 200 and then trickles 10 bytes every 0.5 s,
 * never ending; in another organization a webhook receiver that answers at once; 50 builds
 * finish (25 in each, the slow organization's first). Reported: the fast receiver's latency from
 * its build finishing (the cancel answered) to its `build.finished` arriving (p50 / p99 / max),
 * and how long the slow receiver's exchanges lasted (request received to connection closed)
 * against OUTBOUND_TIMEOUT_MS (BENCH_OUTBOUND_TIMEOUT_MS, default 10000).
 *
 *   node dist/scripts/bench-notifications.js            the benchmark
 *   node dist/scripts/bench-notifications.js server     the child (forked by the benchmark)
 */
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { intEnv, serverNodeOptions } from './bench-env';
import { ask, benchAdmin, benchServices, childDatabase, exitOnFailure, listenApp, percentile } from './bench-support';

interface Ready {
  type: 'ready';
  port: number;
  token: string;
}

async function serve(): Promise<void> {
  const store = childDatabase('notify');
  const services = benchServices(store.database, {
    // Loopback receivers; the defaults otherwise (10 s timeout, 16 in flight, back-off from 2 s).
    outbound: { allowPrivate: true, timeoutMs: intEnv('BENCH_OUTBOUND_TIMEOUT_MS', 10_000), maxResponseBytes: 65_536 },
  });
  await store.prepare(services);
  const { server, port } = await listenApp(services);
  services.notificationWorker.start();

  // The slow-receiver case's second organization (Other) is the fast receiver's.
  const { jwt } = await benchAdmin(services, ['Notify', 'Other']);

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
      await store.close(services);
      process.exit(0);
    }
  });
  process.send!({ type: 'ready', port, token: jwt } satisfies Ready);
}

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

type Call = (method: string, p: string, body?: unknown, expect?: number) => Promise<Record<string, unknown>>;

/** A receiver that answers 200 and then 10 bytes every 0.5 s, never ending; how long each exchange lasted until the client closed it. */
async function tricklingReceiver(): Promise<{ url: string; durations: number[]; open: () => number; close: () => Promise<void> }> {
  const durations: number[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    const t0 = process.hrtime.bigint();
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"partial":');
      const t = setInterval(() => res.write('0123456789'), 500);
      timers.add(t);
      res.on('close', () => {
        clearInterval(t);
        timers.delete(t);
        durations.push(Number(process.hrtime.bigint() - t0) / 1e6);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    durations,
    open: () => timers.size,
    close: async () => {
      for (const t of timers) clearInterval(t);
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** A receiver that answers at once; when each build's `build.finished` arrived (by build id). */
async function fastReceiver(): Promise<{ url: string; arrived: Map<string, bigint>; close: () => Promise<void> }> {
  const arrived = new Map<string, bigint>();
  const server = http.createServer((req, res) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => (text += c));
    req.on('end', () => {
      const at = process.hrtime.bigint();
      res.writeHead(200).end('ok');
      try {
        const body = JSON.parse(text) as { event?: string; build?: { id?: string } };
        if (body.event === 'build.finished' && body.build?.id && !arrived.has(body.build.id)) arrived.set(body.build.id, at);
      } catch {
        // Not a delivery body: nothing to time.
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrived,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}

/** Resolves when `done()` holds, checked every 20 ms; rejects after `limitMs` (the benchmark then fails). */
function until(done: () => boolean, limitMs: number, what: () => string): Promise<void> {
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      clearInterval(poll);
      reject(new Error(`gave up after ${limitMs} ms: ${what()}`));
    }, limitMs);
    const poll = setInterval(() => {
      if (!done()) return;
      clearTimeout(guard);
      clearInterval(poll);
      resolve();
    }, 20);
  });
}

/** Issue 26 §2: one trickling receiver, one fast receiver in another organization, 50 builds finishing. */
async function slowReceiverCase(call: Call): Promise<void> {
  const timeoutMs = intEnv('BENCH_OUTBOUND_TIMEOUT_MS', 10_000);
  const perOrg = 25;
  const slow = await tricklingReceiver();
  const fast = await fastReceiver();
  await call(
    'POST',
    '/v2/organizations/notify/services',
    { provider: 'webhook', description: 'trickling', settings: { url: slow.url, events: ['build.finished'] } },
    201,
  );
  await call(
    'POST',
    '/v2/organizations/other/services',
    { provider: 'webhook', description: 'fast', settings: { url: fast.url, events: ['build.finished'] } },
    201,
  );
  const finishedAt = new Map<string, bigint>();
  const t0 = Date.now();
  for (const org of ['notify', 'other']) {
    const p = await call(
      'POST',
      `/v2/organizations/${org}/pipelines`,
      { name: `Slow case ${org}`, repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make test\n' },
      201,
    );
    const builds = `/v2/organizations/${org}/pipelines/${String(p.slug)}/builds`;
    for (let i = 0; i < perOrg; i++) {
      const b = await call('POST', builds, { commit: 'HEAD', branch: 'main', message: `slow case ${org} #${i}` }, 201);
      await call('PUT', `${builds}/${String(b.number)}/cancel`);
      if (org === 'other') finishedAt.set(String(b.id), process.hrtime.bigint());
    }
  }
  const limit = Math.max(120_000, timeoutMs * 12);
  await until(
    () => fast.arrived.size >= perOrg,
    limit,
    () => `the fast receiver got ${fast.arrived.size} of ${perOrg}`,
  );
  const fastDoneS = (Date.now() - t0) / 1000;
  const slowOpenAtFastDone = slow.open();
  const slowCutAtFastDone = slow.durations.length;
  // At least one full wave of slow exchanges ended, to time them.
  await until(
    () => slow.durations.length >= 8,
    limit,
    () => `${slow.durations.length} slow exchanges ended`,
  );
  const latencies = [...fast.arrived].map(([id, at]) => Number(at - finishedAt.get(id)!) / 1e6).sort((a, b) => a - b);
  const cut = [...slow.durations].sort((a, b) => a - b);
  const f = (ms: number) => `${ms.toFixed(0)} ms`;
  process.stdout.write(`\nslow-receiver case: OUTBOUND_TIMEOUT_MS ${timeoutMs}; ${perOrg} builds finished in each organization, the trickling one's first\n\n`);
  process.stdout.write(
    '| fast receiver: build finished to delivered, p50 / p99 / max | fast receiver got all 25 after (from the first build) | slow exchanges at that moment: open / cut off | slow exchange duration, min / p50 / max (n) |\n| --- | --- | --- | --- |\n',
  );
  process.stdout.write(
    `| ${f(percentile(latencies, 50))} / ${f(percentile(latencies, 99))} / ${f(latencies.at(-1)!)} | ${fastDoneS.toFixed(1)} s | ${slowOpenAtFastDone} / ${slowCutAtFastDone} | ${f(cut[0]!)} / ${f(percentile(cut, 50))} / ${f(cut.at(-1)!)} (${cut.length}) |\n`,
  );
  await slow.close();
  await fast.close();
}

async function main(): Promise<void> {
  const seconds = intEnv('BENCH_SECONDS', 10);
  const clients = intEnv('BENCH_CLIENTS', 4);
  const only = process.env.BENCH_CASE;
  if (only !== undefined && only !== 'slow-receiver') throw new Error(`BENCH_CASE must be slow-receiver (or unset for every case), got "${only}"`);
  if (only !== 'slow-receiver') await phases(seconds, clients);
  // A service of its own (a fresh database): the phases' backlog is not part of it.
  const { call, exit } = await startChild(2);
  await slowReceiverCase(call);
  await exit();
}

/** The service in a child process, and a client for it. */
async function startChild(sockets: number): Promise<{ child: ChildProcess; call: Call; exit: () => Promise<void> }> {
  const child = fork(__filename, ['server'], { execArgv: [...process.execArgv, ...serverNodeOptions()] });
  const ready = await new Promise<Ready>((resolve) => child.once('message', (m) => resolve(m as Ready)));
  const agent = new http.Agent({ keepAlive: true, maxSockets: sockets });
  const call: Call = async (method, p, body, expect = 200) => {
    const res = await request(agent, ready.port, method, p, ready.token, body);
    if (res.status !== expect) throw new Error(`${method} ${p} answered ${res.status}: ${res.body}`);
    return JSON.parse(res.body || '{}') as Record<string, unknown>;
  };
  const exit = async () => {
    child.send({ type: 'exit' });
    await new Promise((resolve) => child.once('exit', resolve));
    agent.destroy();
  };
  return { child, call, exit };
}

/** Issue 17's three phases (a), (b), (c). */
async function phases(seconds: number, clients: number): Promise<void> {
  const { child, call, exit } = await startChild(clients + 1);
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
    await ask<Record<string, number>>(child, 'start', 'started');
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
    const s = await ask<Record<string, number>>(child, 'stop', 'delay');
    latencies.sort((a, b) => a - b);
    const f = (ms: number) => `${ms.toFixed(1)} ms`;
    process.stdout.write(
      `| ${phase.label} | ${(latencies.length / elapsed).toFixed(0)} | ${f(percentile(latencies, 50))} | ${f(percentile(latencies, 99))} | ${f(s.p99Ms!)} / ${f(s.maxMs!)} | ${s.delivered} / ${s.pending} / ${s.failed}, ${s.attempts} attempts${s.unfanned ? `, ${s.unfanned} events not fanned out yet` : ''} | ${slow.received() - receivedBefore} |\n`,
    );
  }
  await exit();
  await slow.close();
}

exitOnFailure(process.argv[2] === 'server' ? serve() : main());
