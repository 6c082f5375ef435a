/**
 * The reference agent (`windsock agent`): registers with an organization's registration token,
 * connects, polls for work and runs each job's command in a shell, in a fresh build directory,
 * with the job's environment, streaming its output as log chunks and reporting its exit status.
 * A job's `timeout_in_minutes` kills its process group. When the service cannot be reached (a
 * restart), it keeps polling and connects again. Each job has a `buildkite-agent` command on its
 * PATH for `buildkite-agent pipeline upload`.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { installBuildkiteAgentShim } from './buildkite-agent-shim';

export interface AgentOptions {
  endpoint: string;
  /** The registration token. */
  token: string;
  tags: string[];
  name: string;
  spawn: number;
  pollIntervalMs?: number;
  /** Where build directories are made (default: the system's temp directory). */
  buildRoot?: string;
  signal?: AbortSignal;
  log?: (line: string) => void;
}

interface AgentJob {
  id: string;
  command: string | null;
  env: Record<string, string>;
  timeout_in_minutes: number | null;
}

/** Flush output at least this often, and at once past this size (a chunk may hold 1 MiB). */
const FLUSH_MS = 1000;
const FLUSH_BYTES = 256 * 1024;

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const t = setTimeout(resolve, ms);
    signal?.addEventListener('abort', () => (clearTimeout(t), resolve()), { once: true });
  });

function client(endpoint: string) {
  return async (token: string, method: string, route: string, body?: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${endpoint.replace(/\/$/, '')}/v3${route}`, {
      method,
      headers: { Authorization: `Token ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (!res.ok) throw new ApiError(res.status, `${method} /v3${route}: ${res.status} ${text.slice(0, 200)}`);
    return text ? (JSON.parse(text) as Record<string, unknown>) : {};
  };
}

/** Runs `spawn` agents until the signal aborts; each disconnects on the way out. */
export async function runAgents(o: AgentOptions): Promise<void> {
  await Promise.all(Array.from({ length: o.spawn }, (_, i) => runAgent({ ...o, name: o.spawn > 1 ? `${o.name}-${i + 1}` : o.name })));
}

async function runAgent(o: AgentOptions): Promise<void> {
  const call = client(o.endpoint);
  const log = o.log ?? (() => {});
  const interval = o.pollIntervalMs ?? 1000;
  const reg = await call(o.token, 'POST', '/register', { name: o.name, hostname: os.hostname(), version: 'windsock-agent/0.1.0', os: process.platform, arch: process.arch, meta_data: o.tags });
  const token = reg.access_token as string;
  // The `buildkite-agent` command each job gets on its PATH (see ./buildkite-agent-shim).
  const bin = await installBuildkiteAgentShim(await fs.mkdtemp(path.join(o.buildRoot ?? os.tmpdir(), 'windsock-agent-bin-')));
  await call(token, 'POST', '/connect');
  log(`${o.name}: connected`);
  while (!o.signal?.aborted) {
    let ping: Record<string, unknown>;
    try {
      ping = await call(token, 'GET', '/ping');
    } catch (err) {
      // The service restarted or is unreachable: wait, connect again, go on polling.
      log(`${o.name}: ${(err as Error).message}`);
      await sleep(interval, o.signal);
      await call(token, 'POST', '/connect').catch(() => undefined);
      continue;
    }
    if (ping.action === 'disconnect') break;
    const job = ping.job as AgentJob | null;
    if (!job) {
      await sleep(interval, o.signal);
      continue;
    }
    try {
      await runJob(call, { token, bin }, job, o, log);
    } catch (err) {
      log(`${o.name}: job ${job.id}: ${(err as Error).message}`);
    }
  }
  await call(token, 'POST', '/disconnect').catch(() => undefined);
  await fs.rm(bin, { recursive: true, force: true });
  log(`${o.name}: disconnected`);
}

/**
 * What a job's command runs with: PATH and HOME, the job's env, and what the real agent adds:
 * the checkout path, and the job's agent credentials and endpoint for `buildkite-agent`, whose
 * shim comes first on PATH.
 */
function jobEnvironment(job: AgentJob, dir: string, agent: { token: string; bin: string }, endpoint: string): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? dir,
    ...job.env,
    BUILDKITE_BUILD_CHECKOUT_PATH: dir,
    BUILDKITE_AGENT_ACCESS_TOKEN: agent.token,
    BUILDKITE_AGENT_ENDPOINT: `${endpoint.replace(/\/$/, '')}/v3`,
  };
  env.PATH = `${agent.bin}${path.delimiter}${env.PATH}`;
  return env;
}

async function runJob(call: ReturnType<typeof client>, agent: { token: string; bin: string }, offered: AgentJob, o: AgentOptions, log: (line: string) => void): Promise<void> {
  const token = agent.token;
  const job = (await call(token, 'PUT', `/jobs/${offered.id}/accept`)) as unknown as AgentJob;
  const dir = await fs.mkdtemp(path.join(o.buildRoot ?? os.tmpdir(), 'windsock-build-'));
  await call(token, 'PUT', `/jobs/${job.id}/start`);
  log(`${o.name}: running job ${job.id}`);
  const child = spawn('/bin/sh', ['-c', job.command ?? ''], {
    cwd: dir,
    env: jobEnvironment(job, dir, agent, o.endpoint),
    detached: true, // its own process group, so a timeout kills everything it started
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let pending = '';
  let sequence = 0;
  let offset = 0;
  let sending = Promise.resolve();
  const flush = () => {
    if (!pending) return sending;
    const content = pending;
    pending = '';
    const chunk = { sequence: ++sequence, offset, content };
    offset += Buffer.byteLength(content);
    sending = sending.then(() => call(token, 'POST', `/jobs/${job.id}/chunks`, chunk).then(() => undefined));
    return sending;
  };
  const collect = (data: string) => {
    pending += data;
    if (Buffer.byteLength(pending) >= FLUSH_BYTES) void flush();
  };
  child.stdout.setEncoding('utf8').on('data', collect);
  child.stderr.setEncoding('utf8').on('data', collect);
  const ticker = setInterval(() => void flush(), FLUSH_MS);
  let signalReason: string | null = null;
  const killGroup = (reason: string) => {
    signalReason = reason;
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      // Already gone.
    }
  };
  const timeout = job.timeout_in_minutes ? setTimeout(() => killGroup('timeout'), job.timeout_in_minutes * 60_000) : null;
  const onAbort = () => killGroup('agent_stop');
  o.signal?.addEventListener('abort', onAbort, { once: true });
  const exitStatus = await new Promise<number>((resolve) => {
    child.on('error', (err) => {
      collect(`${err.message}\n`);
      resolve(-1);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : -1)));
  });
  clearInterval(ticker);
  if (timeout) clearTimeout(timeout);
  o.signal?.removeEventListener('abort', onAbort);
  await flush();
  await call(token, 'PUT', `/jobs/${job.id}/finish`, { exit_status: Math.min(exitStatus, 255), signal_reason: signalReason });
  await fs.rm(dir, { recursive: true, force: true });
  log(`${o.name}: job ${job.id} exited ${exitStatus}`);
}
