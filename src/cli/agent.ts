/**
 * The reference agent (`windsock agent`): registers with an organization's registration token,
 * connects, polls for work and runs each job's command in a shell, in a fresh build directory,
 * with the job's environment, streaming its output as log chunks and reporting its exit status.
 * While a job runs it asks the service for the job's state every poll interval: `canceling`
 * (the build was canceled) or `timing_out` (the service's timeout) kills the job's process
 * group, and so does its own `timeout_in_minutes` timer, the fallback. When the service cannot
 * be reached (a restart), it keeps polling and connects again; told to disconnect, it
 * disconnects, and ends if that made it `stopped` (an administrator stopped it), else (the
 * service marked it lost) registers again. Told `pause`, it takes no job and keeps polling. Each
 * job has a `buildkite-agent` command on its PATH (see ./buildkite-agent-shim).
 * After the command, whatever its exit status, the step's `artifact_paths` are uploaded with
 * `buildkite-agent artifact upload` (the upload's outcome does not change the job's).
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
  state: string;
  command: string | null;
  env: Record<string, string>;
  timeout_in_minutes: number | null;
}

/** Flush output at least this often, and at once past this size (a chunk may hold 1 MiB). */
const FLUSH_MS = 1000;
const FLUSH_BYTES = 256 * 1024;
/** How many times a chunk or a finish is sent while the service is unreachable. */
const RETRIES = 60;

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
    const onAbort = () => (clearTimeout(t), resolve());
    const t = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
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

/**
 * Calls again while the service can't be reached or answers 5xx (a restart), up to `attempts`
 * times: a job's log and its finish must not be lost to a restart. A 4xx is final.
 */
async function persistently<T>(attempts: number, delayMs: number, fn: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if ((err instanceof ApiError && err.status < 500) || i >= attempts) throw err;
      await sleep(delayMs);
    }
  }
}

/** Runs `spawn` agents until the signal aborts; each disconnects on the way out. */
export async function runAgents(o: AgentOptions): Promise<void> {
  await Promise.all(Array.from({ length: o.spawn }, (_, i) => runAgent({ ...o, name: o.spawn > 1 ? `${o.name}-${i + 1}` : o.name })));
}

async function runAgent(o: AgentOptions): Promise<void> {
  const call = client(o.endpoint);
  const log = o.log ?? (() => {});
  const interval = o.pollIntervalMs ?? 1000;
  const register = async () => {
    const reg = await call(o.token, 'POST', '/register', {
      name: o.name,
      hostname: os.hostname(),
      version: 'windsock-agent/0.1.0',
      os: process.platform,
      arch: process.arch,
      meta_data: o.tags,
    });
    const fresh = reg.access_token as string;
    await call(fresh, 'POST', '/connect');
    log(`${o.name}: connected`);
    return fresh;
  };
  // The `buildkite-agent` command each job gets on its PATH (see ./buildkite-agent-shim).
  const bin = await installBuildkiteAgentShim(await fs.mkdtemp(path.join(o.buildRoot ?? os.tmpdir(), 'windsock-agent-bin-')));
  let token = await register();
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
    if (ping.action === 'disconnect') {
      // Stopped through the REST API (`PUT .../stop`): disconnecting makes it `stopped`, and it ends.
      const left = await call(token, 'POST', '/disconnect').catch(() => null);
      if (left?.connection_state === 'stopped') {
        log(`${o.name}: stopped`);
        await fs.rm(bin, { recursive: true, force: true });
        return;
      }
      // The service gave this agent up (lost): start over as a new agent.
      log(`${o.name}: told to disconnect; registering again`);
      token = await register().catch(async (err: Error) => {
        log(`${o.name}: ${err.message}`);
        await sleep(interval, o.signal);
        return token;
      });
      continue;
    }
    const job = ping.job as AgentJob | null;
    if (!job) {
      await sleep(interval, o.signal);
      continue;
    }
    try {
      await runJob(call, { token, bin }, job, o, log);
    } catch (err) {
      log(`${o.name}: job ${job.id}: ${(err as Error).message}`);
      await sleep(interval, o.signal);
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

/** The reason a job the service is stopping gives when the agent finishes it. */
const STOPPING: Record<string, string> = { canceling: 'cancel', timing_out: 'timeout' };

async function runJob(
  call: ReturnType<typeof client>,
  agent: { token: string; bin: string },
  offered: AgentJob,
  o: AgentOptions,
  log: (line: string) => void,
): Promise<void> {
  const token = agent.token;
  // Canceled after this agent accepted it, before it ran: nothing to stop, only to finish.
  const finishUnstarted = (state: string) => call(token, 'PUT', `/jobs/${offered.id}/finish`, { exit_status: -1, signal_reason: STOPPING[state] });
  if (STOPPING[offered.state]) return void (await finishUnstarted(offered.state));
  const job = offered.state === 'assigned' ? ((await call(token, 'PUT', `/jobs/${offered.id}/accept`)) as unknown as AgentJob) : offered;
  if (STOPPING[job.state]) return void (await finishUnstarted(job.state));
  try {
    await call(token, 'PUT', `/jobs/${job.id}/start`);
  } catch (err) {
    const now = (await call(token, 'GET', `/jobs/${job.id}`)) as unknown as AgentJob;
    if (STOPPING[now.state]) return void (await finishUnstarted(now.state));
    throw err;
  }
  const dir = await fs.mkdtemp(path.join(o.buildRoot ?? os.tmpdir(), 'windsock-build-'));
  log(`${o.name}: running job ${job.id}`);
  const env = jobEnvironment(job, dir, agent, o.endpoint);
  const child = spawn('/bin/sh', ['-c', job.command ?? ''], {
    cwd: dir,
    env,
    detached: true, // its own process group, so a timeout kills everything it started
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const retryMs = Math.max(100, o.pollIntervalMs ?? 1000);
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
    sending = sending.then(() => persistently(RETRIES, retryMs, () => call(token, 'POST', `/jobs/${job.id}/chunks`, chunk)).then(() => undefined));
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
  // The service's word on the job: a cancel or its own timeout stops the process group.
  const watcher = setInterval(() => {
    call(token, 'GET', `/jobs/${job.id}`).then(
      (now) => {
        const reason = STOPPING[now.state as string];
        if (reason && signalReason === null) killGroup(reason);
      },
      () => undefined, // unreachable for now: the next poll asks again
    );
  }, o.pollIntervalMs ?? 1000);
  const onAbort = () => killGroup('agent_stop');
  o.signal?.addEventListener('abort', onAbort, { once: true });
  const exitStatus = await new Promise<number>((resolve) => {
    child.on('error', (err) => {
      collect(`${err.message}\n`);
      resolve(-1);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : -1)));
  });
  // The step's artifact_paths, whatever the exit status: the job's own `buildkite-agent artifact upload`.
  const artifactPaths = job.env.BUILDKITE_ARTIFACT_PATHS;
  if (artifactPaths && signalReason !== 'agent_stop') await uploadArtifacts(agent.bin, artifactPaths, dir, env, collect);
  clearInterval(ticker);
  clearInterval(watcher);
  if (timeout) clearTimeout(timeout);
  o.signal?.removeEventListener('abort', onAbort);
  await flush();
  await persistently(RETRIES, retryMs, () =>
    call(token, 'PUT', `/jobs/${job.id}/finish`, { exit_status: Math.min(exitStatus, 255), signal_reason: signalReason }),
  );
  await fs.rm(dir, { recursive: true, force: true });
  log(`${o.name}: job ${job.id} exited ${exitStatus}`);
}

/** Runs the job's `buildkite-agent artifact upload <paths>` (./shim/artifact.ts), its output going to the job's log. */
function uploadArtifacts(bin: string, paths: string, cwd: string, env: Record<string, string>, collect: (data: string) => void): Promise<void> {
  collect('~~~ Uploading artifacts\n');
  return new Promise((resolve) => {
    const up = spawn(path.join(bin, 'buildkite-agent'), ['artifact', 'upload', paths], { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    up.stdout.setEncoding('utf8').on('data', collect);
    up.stderr.setEncoding('utf8').on('data', collect);
    up.on('error', (err) => {
      collect(`artifact upload: ${err.message}\n`);
      resolve();
    });
    up.on('close', () => resolve());
  });
}
