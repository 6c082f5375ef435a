/**
 * How soon the service ends what it must end (`npm run bench:timeouts`): figures that used to be
 * timing assertions in pass/fail tests (test/reliability/limits.test.ts,
 * test/agents/reference-agent.test.ts), which now check only the behaviour. Timing depends on
 * the machine, so it is measured and printed here, never asserted in `npm test`.
 *
 * The real server (startServer) on 127.0.0.1 with a SQLite file in a temporary directory,
 * HEADERS_TIMEOUT_MS=1000 and REQUEST_TIMEOUT_MS=1500 (as the limits test), then, BENCH_RUNS
 * times each (default 5), the milliseconds until:
 *   headers     a client sending its headers one byte every 50 ms is answered 408 and closed
 *   body        a client sending its body one byte every 100 ms is answered 408 and closed
 *   huge_body   a declared Content-Length of 1 GiB (8 bytes sent) is answered 413
 *   agent_stop  the reference agent, stopped while its job runs `sleep 30 & sleep 30; wait`,
 *               has killed the job's process group and returned
 * Printed as one line per figure (min / median / max) and, with BENCH_REPORT=<file>, as JSON.
 * Not part of CI or `npm test`; BENCHMARKS.md has figures.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { runAgents } from '../src/cli/agent';
import { loadConfig } from '../src/config';
import { startServer, type RunningServer } from '../src/server';
import { intEnv } from './bench-env';

const RUNS = intEnv('BENCH_RUNS', 5);
const HEADERS_TIMEOUT_MS = 1000;
const REQUEST_TIMEOUT_MS = 1500;

/** Connects, writes `head` at once, then one byte of `trickle` every `everyMs`; resolves with the answer and the ms until the server closed. */
function timeToClose(port: number, head: string, trickle: string, everyMs: number, giveUpMs = 30_000): Promise<{ ms: number; answer: string }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let answer = '';
    let i = 0;
    let timer: NodeJS.Timeout | undefined;
    let started = 0;
    socket.once('connect', () => {
      started = performance.now();
      socket.write(head);
      timer = setInterval(() => {
        if (!socket.destroyed) socket.write(trickle[i++ % trickle.length]!);
      }, everyMs);
    });
    const giveUp = setTimeout(() => {
      socket.destroy();
      reject(new Error(`the server did not close the socket in ${giveUpMs} ms`));
    }, giveUpMs);
    socket.on('data', (d) => (answer += String(d)));
    socket.on('error', () => undefined);
    socket.on('close', () => {
      clearInterval(timer);
      clearTimeout(giveUp);
      resolve({ ms: performance.now() - started, answer });
    });
  });
}

/** Milliseconds until a declared 1 GiB body is answered (only its first 8 bytes are sent). */
function timeToRefuse(port: number, token: string): Promise<{ ms: number; answer: string }> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    let started = 0;
    let answer = '';
    socket.once('connect', () => {
      started = performance.now();
      socket.write(
        `POST /v2/organizations/default/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${2 ** 30}\r\n\r\n{"name":`,
      );
    });
    const done = () => {
      socket.destroy();
      resolve({ ms: performance.now() - started, answer });
    };
    socket.on('data', (d) => {
      answer += String(d);
      if (answer.includes('\r\n\r\n') && answer.includes('}')) done();
    });
    socket.on('error', () => undefined);
    socket.on('close', done);
  });
}

async function api(
  running: RunningServer,
  token: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: Record<string, unknown>; text: string }> {
  const res = await fetch(`${running.url}${p}`, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body ? { 'Content-Type': 'application/json' } : {}) },
    body: body ? JSON.stringify(body) : undefined,
  });
  const text = await res.text();
  let parsed: Record<string, unknown> = {};
  try {
    parsed = JSON.parse(text) as Record<string, unknown>;
  } catch {
    // log.txt and other text answers
  }
  return { status: res.status, body: parsed, text };
}

/** Milliseconds from stopping the reference agent (its job running two 30 s sleeps in one process group) until it returned. */
async function timeToStopAgent(running: RunningServer, token: string, registration: string, pipelineSlug: string): Promise<number> {
  const base = `/v2/organizations/default/pipelines/${pipelineSlug}/builds`;
  const build = await api(running, token, 'POST', base, { commit: 'HEAD', branch: 'main', message: 'stop me' });
  if (build.status !== 201) throw new Error(`build: ${build.status} ${build.text}`);
  const number = build.body.number as number;
  const jobId = (build.body.jobs as { id: string }[])[0]!.id;
  const controller = new AbortController();
  const lines: string[] = [];
  const agents = runAgents({
    endpoint: running.url,
    token: registration,
    tags: [],
    name: 'bench-stopper',
    spawn: 1,
    pollIntervalMs: 20,
    signal: controller.signal,
    log: (l) => lines.push(l),
  });
  for (let i = 0; ; i++) {
    if (i > 1000)
      throw new Error(
        `the job never started: ${JSON.stringify((await api(running, token, 'GET', `${base}/${number}`)).body.jobs)}; the agent said: ${lines.join(' | ')}`,
      );
    if ((await api(running, token, 'GET', `${base}/${number}/jobs/${jobId}/log.txt`)).text.includes('started')) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const started = performance.now();
  controller.abort();
  await agents;
  const ms = performance.now() - started;
  const job = ((await api(running, token, 'GET', `${base}/${number}`)).body.jobs as { state: string; exit_status: number | null }[])[0]!;
  if (job.state !== 'failed' || job.exit_status !== 137) throw new Error(`the stopped job is ${JSON.stringify(job)}`);
  return ms;
}

function stats(values: number[]) {
  const sorted = [...values].sort((a, b) => a - b);
  const round = (n: number) => Math.round(n);
  return { runs: values.length, min: round(sorted[0]!), median: round(sorted[Math.floor(sorted.length / 2)]!), max: round(sorted[sorted.length - 1]!) };
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-timeouts-'));
  let printed = '';
  const out = new Writable({
    write(chunk, _enc, cb) {
      printed += String(chunk);
      cb();
    },
  });
  const running = await startServer(
    loadConfig({
      PORT: '0',
      HOST: '127.0.0.1',
      DATA_DIR: dir,
      DATABASE_URL: path.join(dir, 'db.sqlite3'),
      JWT_SECRET: crypto.randomBytes(32).toString('hex'),
      LOG_LEVEL: 'silent',
      HEADERS_TIMEOUT_MS: String(HEADERS_TIMEOUT_MS),
      REQUEST_TIMEOUT_MS: String(REQUEST_TIMEOUT_MS),
    }),
    out,
  );
  try {
    const token = /^\s+(ey\S+)$/m.exec(printed)?.[1];
    if (!token) throw new Error(`no first-start token in:\n${printed}`);
    const port = Number(new URL(running.url).port);
    const figures: Record<string, ReturnType<typeof stats> & { setting?: string }> = {};

    const headers: number[] = [];
    const body: number[] = [];
    const huge: number[] = [];
    const agentStop: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      const h = await timeToClose(port, 'GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ', 'a', 50);
      if (!h.answer.startsWith('HTTP/1.1 408')) throw new Error(`slow headers: ${h.answer.slice(0, 80)}`);
      headers.push(h.ms);
      const head = `POST /v2/organizations/default/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
      const b = await timeToClose(port, head, '{', 100);
      if (!b.answer.startsWith('HTTP/1.1 408')) throw new Error(`slow body: ${b.answer.slice(0, 80)}`);
      body.push(b.ms);
      const r = await timeToRefuse(port, token);
      if (!r.answer.startsWith('HTTP/1.1 413')) throw new Error(`1 GiB body: ${r.answer.slice(0, 80)}`);
      huge.push(r.ms);
    }
    figures.headers = { ...stats(headers), setting: `HEADERS_TIMEOUT_MS=${HEADERS_TIMEOUT_MS}` };
    figures.body = { ...stats(body), setting: `REQUEST_TIMEOUT_MS=${REQUEST_TIMEOUT_MS}` };
    figures.huge_body = stats(huge);

    const reg = await api(running, token, 'POST', '/v2/organizations/default/agent-tokens', { description: 'bench' });
    if (reg.status !== 201) throw new Error(`agent token: ${reg.status} ${reg.text}`);
    const pipeline = await api(running, token, 'POST', '/v2/organizations/default/pipelines', {
      name: 'Stopper',
      repository: 'git@github.com:acme/app.git',
      configuration: 'steps:\n  - command: echo started; sleep 30 & sleep 30; wait\n',
    });
    if (pipeline.status !== 201) throw new Error(`pipeline: ${pipeline.status} ${pipeline.text}`);
    for (let i = 0; i < RUNS; i++) agentStop.push(await timeToStopAgent(running, token, reg.body.token as string, pipeline.body.slug as string));
    figures.agent_stop = { ...stats(agentStop), setting: 'job: sleep 30 & sleep 30; wait' };

    for (const [name, f] of Object.entries(figures)) {
      process.stdout.write(
        `${name.padEnd(11)} ms until done: min ${f.min}, median ${f.median}, max ${f.max} (${f.runs} runs${f.setting ? `, ${f.setting}` : ''})\n`,
      );
    }
    if (process.env.BENCH_REPORT) fs.writeFileSync(process.env.BENCH_REPORT, `${JSON.stringify(figures, null, 2)}\n`);
  } finally {
    await running.close();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
