/**
 * How long a large upload stalls everything else (`npm run bench:upload-stall`): the service in a
 * child process on loopback (SQLite in a temporary directory, or Postgres with
 * BENCH_STORE=postgres), a client asking `/healthz` back to back on its own connection while a
 * second connection sends uploads, and the service's own event-loop delay
 * (perf_hooks.monitorEventLoopDelay) over each upload.
 *
 * Uploads, each BENCH_UPLOADS times (default 5): 5,000 results in the JavaScript collector's
 * shape as a JSON body (about 1.6 MB); 5,000 results with long expanded failures (about 50 MB)
 * as a JSON body; and the same 50 MB as a multipart `data` file.
 *
 *   node dist/scripts/bench-upload-stall.js            the benchmark
 *   node dist/scripts/bench-upload-stall.js server     the child (forked by the benchmark)
 */
import { fork } from 'node:child_process';
import crypto from 'node:crypto';
import http from 'node:http';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { intEnv } from './bench-env';
import { ask, benchAdmin, benchServices, childDatabase, exitOnFailure, listenApp, percentile } from './bench-support';

interface Ready {
  type: 'ready';
  port: number;
  suiteToken: string;
}

async function serve(): Promise<void> {
  const store = childDatabase('stall');
  const services = benchServices(store.database);
  await store.prepare(services);
  const { server, port } = await listenApp(services);

  const { jwt } = await benchAdmin(services, ['Stall']);
  const created = await fetch(`http://127.0.0.1:${port}/v2/analytics/organizations/stall/suites`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${jwt}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ name: 'Stall', show_api_token: true }),
  });
  const suite = (await created.json()) as { api_token: string };

  const delay = monitorEventLoopDelay({ resolution: 5 });
  process.on('message', async (m: { type: string }) => {
    if (m.type === 'start') {
      delay.reset();
      delay.enable();
      process.send!({ type: 'started' });
    } else if (m.type === 'stop') {
      delay.disable();
      process.send!({ type: 'delay', maxMs: delay.max / 1e6, p99Ms: delay.percentile(99) / 1e6 });
    } else if (m.type === 'exit') {
      server.close();
      await store.close(services);
      process.exit(0);
    }
  });
  process.send!({ type: 'ready', port, suiteToken: suite.api_token } satisfies Ready);
}

function results(count: number, expandedLines: number) {
  const line = 'x'.repeat(100);
  return Array.from({ length: count }, (_, i) => ({
    id: crypto.randomUUID(),
    scope: `Stall ${Math.floor(i / 50)}`,
    name: `does thing ${i}`,
    location: `./spec/stall_${Math.floor(i / 50)}.test.js:${(i % 50) + 1}`,
    file_name: `./spec/stall_${Math.floor(i / 50)}.test.js`,
    result: i % 20 === 0 ? 'failed' : 'passed',
    failure_reason: 'Error: expect(received).toBe(expected)',
    failure_expanded: [{ expanded: Array.from({ length: expandedLines }, (_, j) => `${j} ${line}`), backtrace: [] }],
    history: { section: 'top', start_at: 1700000000000 + i, end_at: 1700000000010 + i, duration: 0.01 },
  }));
}

function request(agent: http.Agent, port: number, method: string, urlPath: string, headers: Record<string, string | number>, body?: Buffer): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ agent, host: '127.0.0.1', port, method, path: urlPath, headers }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function main(): Promise<void> {
  const rounds = intEnv('BENCH_UPLOADS', 5);
  const child = fork(__filename, ['server'], { execArgv: [...process.execArgv, ...(process.env.BENCH_SERVER_NODE_OPTIONS ?? '').split(' ').filter(Boolean)] });
  const ready = await new Promise<Ready>((resolve) => child.once('message', (m) => resolve(m as Ready)));
  const auth = `Token token="${ready.suiteToken}"`;
  const env = (key: string) => ({ ci: 'generic', key, branch: 'main', commit_sha: crypto.randomBytes(20).toString('hex') });
  const small = results(5000, 0);
  const large = results(5000, 95);
  const boundary = 'StallBoundary';
  const multipart = (key: string, data: unknown[]) =>
    Buffer.concat([
      Buffer.from(
        `--${boundary}\r\nContent-Disposition: form-data; name="format"\r\n\r\njson\r\n--${boundary}\r\nContent-Disposition: form-data; name="run_env[key]"\r\n\r\n${key}\r\n`,
      ),
      Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="data"; filename="results.json"\r\nContent-Type: application/json\r\n\r\n`),
      Buffer.from(JSON.stringify(data)),
      Buffer.from(`\r\n--${boundary}--\r\n`),
    ]);
  const json = (key: string, data: unknown[]) => Buffer.from(JSON.stringify({ format: 'json', run_env: env(key), data }));
  const kinds: { label: string; data: unknown[]; body: (key: string, data: unknown[]) => Buffer; type: string }[] = [
    { label: '5,000 results, JSON body', data: small, body: json, type: 'application/json' },
    { label: '5,000 results with long failures, JSON body', data: large, body: json, type: 'application/json' },
    { label: '5,000 results with long failures, multipart file', data: large, body: multipart, type: `multipart/form-data; boundary=${boundary}` },
  ];
  const health = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const uploads = new http.Agent({ keepAlive: true, maxSockets: 1 });
  for (let i = 0; i < 20; i++) await request(health, ready.port, 'GET', '/healthz', {});
  // Warm-up, one small upload of each kind: the validator compiles an operation's schemas for a
  // content type on its first request, once per process.
  for (const kind of kinds) {
    const warm = kind.body(`warm-up ${kind.label}`, results(10, 1));
    await request(uploads, ready.port, 'POST', '/v1/uploads', { Authorization: auth, 'Content-Type': kind.type, 'Content-Length': warm.length }, warm);
  }

  process.stdout.write(`store: ${process.env.BENCH_STORE ?? 'sqlite'}; ${rounds} uploads of each kind\n\n`);
  process.stdout.write(
    '| upload | size | upload time (p50) | /healthz p50 | /healthz p99 | /healthz max | service event-loop delay max |\n| --- | --- | --- | --- | --- | --- | --- |\n',
  );
  for (const kind of kinds) {
    const latencies: number[] = [];
    const times: number[] = [];
    let loopMax = 0;
    let size = 0;
    for (let r = 0; r < rounds; r++) {
      const body = kind.body(`stall-${kind.label}-${r}`, kind.data);
      size = body.length;
      await ask<Record<string, number>>(child, 'start', 'started');
      let uploading = true;
      const polling = (async () => {
        while (uploading) {
          const t = process.hrtime.bigint();
          await request(health, ready.port, 'GET', '/healthz', {});
          latencies.push(Number(process.hrtime.bigint() - t) / 1e6);
        }
      })();
      const t = process.hrtime.bigint();
      const status = await request(
        uploads,
        ready.port,
        'POST',
        '/v1/uploads',
        { Authorization: auth, 'Content-Type': kind.type, 'Content-Length': body.length },
        body,
      );
      times.push(Number(process.hrtime.bigint() - t) / 1e6);
      uploading = false;
      await polling;
      if (status !== 202) throw new Error(`upload answered ${status}`);
      loopMax = Math.max(loopMax, (await ask<Record<string, number>>(child, 'stop', 'delay')).maxMs!);
    }
    latencies.sort((a, b) => a - b);
    times.sort((a, b) => a - b);
    const f = (ms: number) => `${ms.toFixed(1)} ms`;
    process.stdout.write(
      `| ${kind.label} | ${(size / 1024 / 1024).toFixed(1)} MiB | ${f(percentile(times, 50))} | ${f(percentile(latencies, 50))} | ${f(percentile(latencies, 99))} | ${f(latencies[latencies.length - 1]!)} | ${f(loopMax)} |\n`,
    );
  }
  child.send({ type: 'exit' });
  health.destroy();
  uploads.destroy();
}

exitOnFailure(process.argv[2] === 'server' ? serve() : main());
