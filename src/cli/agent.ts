/**
 * The reference agent (`windsock agent`): registers with an organization's registration token,
 * connects, polls for work and runs each job's command in a shell, in a fresh build directory,
 * with the job's environment, streaming its output as log chunks and reporting its exit status.
 * It speaks the real `buildkite-agent`'s protocol: log chunks as gzip-compressed `text/plain`
 * with `sequence`, `offset` and `size` in the query string, and a finish with the exit status as
 * a string, `finished_at` and `chunks_failed_count`.
 * While a job runs it asks the service for the job's state every poll interval: `canceling`
 * (the build was canceled) or `timing_out` (the service's timeout) stops the job's process
 * group as the real agent does (SIGTERM, then SIGKILL after the cancel grace period), and so
 * does its own `timeout_in_minutes` timer, the fallback; the output printed until then is still
 * sent, and the job finished. No answer of the service ends the agent: a failed call is logged
 * and retried with back-off, or the job is given up. When the service cannot
 * be reached (a restart), it keeps polling and connects again; told to disconnect, it
 * disconnects, and ends if that made it `stopped` (an administrator stopped it), else (the
 * service marked it lost) registers again. Told `pause`, it takes no job and keeps polling. Each
 * job has a `buildkite-agent` command on its PATH (see ./buildkite-agent-shim).
 * After the command, whatever its exit status, the step's `artifact_paths` are uploaded with
 * `buildkite-agent artifact upload` (the upload's outcome does not change the job's).
 */
import { spawn } from 'node:child_process';
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createWindsockClient, ok, WindsockApiError, type paths } from '../../clients/typescript/src';
import { installBuildkiteAgentShim } from './buildkite-agent-shim';
import { errorMessage } from '../core/guards';

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
  /** Seconds between SIGTERM and SIGKILL when a job is stopped (the real agent's `--cancel-grace-period`, default 10). */
  cancelGracePeriodSeconds?: number;
}

const gzip = promisify(zlib.gzip);

/** What `GET /v3/ping` answers: an action, and a job as the agent API hands it out. */
type AgentPing = paths['/v3/ping']['get']['responses'][200]['content']['application/json'];
type AgentJob = NonNullable<AgentPing['job']>;

/** Flush output at least this often, and at once past this size (or the job's `chunks_max_size_bytes`, if smaller). */
const FLUSH_MS = 1000;
const FLUSH_BYTES = 256 * 1024;
/** How many times a chunk or a finish is sent while the service is unreachable. */
const RETRIES = 60;
/** The longest wait between retries, and between registration attempts. */
const MAX_BACKOFF_MS = 30_000;
/** The real agent's default `--cancel-grace-period`. */
const DEFAULT_CANCEL_GRACE_PERIOD_SECONDS = 10;

const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve) => {
    const onAbort = () => (clearTimeout(t), resolve());
    const t = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

/** The agent API (/v3) through the SDK, as this token (`Authorization: Token <token>`); a failed call throws a `WindsockApiError`. */
const agentApi = (endpoint: string, token: string) => createWindsockClient({ baseUrl: endpoint, token, scheme: 'Token' });
type AgentApi = ReturnType<typeof agentApi>;
/** The job's path parameter. */
const jobPath = (id: string) => ({ params: { path: { job_id: id } } });

/**
 * Calls again while the service can't be reached or answers 5xx (a restart), up to `attempts`
 * times, waiting twice as long each time (at most MAX_BACKOFF_MS): a job's log and its finish
 * must not be lost to a restart. A 4xx is final.
 */
async function persistently<T>(attempts: number, delayMs: number, fn: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
    } catch (err) {
      if ((err instanceof WindsockApiError && err.status < 500) || i >= attempts) throw err;
      await sleep(Math.min(delayMs * 2 ** Math.min(i - 1, 16), MAX_BACKOFF_MS));
    }
  }
}

/** Runs `spawn` agents until the signal aborts; each disconnects on the way out. */
export async function runAgents(o: AgentOptions): Promise<void> {
  await Promise.all(Array.from({ length: o.spawn }, (_, i) => runAgent({ ...o, name: o.spawn > 1 ? `${o.name}-${i + 1}` : o.name })));
}

async function runAgent(o: AgentOptions): Promise<void> {
  const log = o.log ?? (() => {});
  const interval = o.pollIntervalMs ?? 1000;
  const registration = agentApi(o.endpoint, o.token);
  /** Registers a new agent and connects it: its API client, as its own access token. */
  const register = async (): Promise<{ token: string; api: AgentApi }> => {
    const reg = await ok(
      registration.POST('/v3/register', {
        body: { name: o.name, hostname: os.hostname(), version: 'windsock-agent/0.1.0', os: process.platform, arch: process.arch, meta_data: o.tags },
      }),
    );
    const fresh = { token: reg.access_token, api: agentApi(o.endpoint, reg.access_token) };
    await fresh.api.POST('/v3/connect');
    log(`${o.name}: connected`);
    return fresh;
  };
  // The `buildkite-agent` command each job gets on its PATH (see ./buildkite-agent-shim).
  const bin = await installBuildkiteAgentShim(await fs.mkdtemp(path.join(o.buildRoot ?? os.tmpdir(), 'windsock-agent-bin-')));
  // The service may not be up yet, or refuse for a while: try again with back-off, never give up.
  let first: { token: string; api: AgentApi } | null = null;
  for (let attempt = 0; !first; attempt++) {
    try {
      first = await register();
    } catch (err) {
      log(`${o.name}: registering: ${errorMessage(err)}`);
      await sleep(Math.min(interval * 2 ** Math.min(attempt, 16), MAX_BACKOFF_MS), o.signal);
      if (o.signal?.aborted) return void (await fs.rm(bin, { recursive: true, force: true }));
    }
  }
  let agent = first;
  while (!o.signal?.aborted) {
    let ping: AgentPing;
    try {
      ping = await ok(agent.api.GET('/v3/ping'));
    } catch (err) {
      // The service restarted or is unreachable: wait, connect again, go on polling.
      log(`${o.name}: ${errorMessage(err)}`);
      await sleep(interval, o.signal);
      await agent.api.POST('/v3/connect').catch(() => undefined);
      continue;
    }
    if (ping.action === 'disconnect') {
      // Stopped through the REST API (`PUT .../stop`): disconnecting makes it `stopped`, and it ends.
      const left = await ok(agent.api.POST('/v3/disconnect')).catch(() => null);
      if (left?.connection_state === 'stopped') {
        log(`${o.name}: stopped`);
        await fs.rm(bin, { recursive: true, force: true });
        return;
      }
      // The service gave this agent up (lost): start over as a new agent.
      log(`${o.name}: told to disconnect; registering again`);
      const current = agent;
      agent = await register().catch(async (err: Error) => {
        log(`${o.name}: ${err.message}`);
        await sleep(interval, o.signal);
        return current;
      });
      continue;
    }
    const job = ping.job;
    if (!job) {
      await sleep(interval, o.signal);
      continue;
    }
    try {
      await runJob({ ...agent, bin }, job, o, log);
    } catch (err) {
      log(`${o.name}: job ${job.id}: ${errorMessage(err)}`);
      await sleep(interval, o.signal);
    }
  }
  await agent.api.POST('/v3/disconnect').catch(() => undefined);
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

async function runJob(agent: { token: string; api: AgentApi; bin: string }, offered: AgentJob, o: AgentOptions, log: (line: string) => void): Promise<void> {
  const { api } = agent;
  // Canceled after this agent accepted it, before it ran: nothing to stop, only to finish.
  const finishUnstarted = (state: string) =>
    api.PUT('/v3/jobs/{job_id}/finish', {
      ...jobPath(offered.id),
      body: { exit_status: '-1', signal_reason: STOPPING[state], finished_at: new Date().toISOString(), chunks_failed_count: 0 },
    });
  if (STOPPING[offered.state]) return void (await finishUnstarted(offered.state));
  const job = offered.state === 'assigned' ? await ok(api.PUT('/v3/jobs/{job_id}/accept', jobPath(offered.id))) : offered;
  if (STOPPING[job.state]) return void (await finishUnstarted(job.state));
  try {
    await api.PUT('/v3/jobs/{job_id}/start', jobPath(job.id));
  } catch (err) {
    const now = await ok(api.GET('/v3/jobs/{job_id}', jobPath(job.id)));
    if (STOPPING[now.state]) return void (await finishUnstarted(now.state));
    throw err;
  }
  const dir = await fs.mkdtemp(path.join(o.buildRoot ?? os.tmpdir(), 'windsock-build-'));
  log(`${o.name}: running job ${job.id}`);
  // The step's secrets, read before the command runs as the real agent does: a secret that
  // cannot be read fails the job without running it.
  const secrets = await readSecrets(api, job).catch((err: unknown) => new Error(errorMessage(err)));
  const redact = redactor(secrets instanceof Error ? [] : secrets.values);
  const env = { ...jobEnvironment(job, dir, agent, o.endpoint), ...(secrets instanceof Error ? {} : secrets.env) };
  const child =
    secrets instanceof Error
      ? null
      : spawn('/bin/sh', ['-c', job.command ?? ''], {
          cwd: dir,
          env,
          detached: true, // its own process group, so a timeout kills everything it started
          stdio: ['ignore', 'pipe', 'pipe'],
        });
  const retryMs = Math.max(100, o.pollIntervalMs ?? 1000);
  // The largest chunk the service takes (uncompressed), as the real agent reads it from the job.
  const chunkBytes = Math.max(1024, Math.min(FLUSH_BYTES, job.chunks_max_size_bytes));
  let pending = '';
  let sequence = 0;
  let offset = 0;
  let chunksFailed = 0;
  let sending = Promise.resolve();
  /** Sends one chunk as the real agent does; a chunk the service refuses (4xx) or never takes is counted, not fatal. */
  const send = async (content: string) => {
    const bytes = Buffer.from(content);
    const query = { sequence: ++sequence, offset, size: bytes.length };
    offset += bytes.length;
    const body = await gzip(bytes);
    try {
      await persistently(RETRIES, retryMs, () =>
        api.POST('/v3/jobs/{job_id}/chunks', {
          params: { path: { job_id: job.id }, query },
          // The gzip bytes as they are: the SDK's JSON serializer is for JSON bodies.
          // cast: the spec types this text/plain body as a string; the bytes go through bodySerializer unchanged.
          body: body as unknown as string,
          // cast: the SDK hands back the body given above (the bytes).
          bodySerializer: (b: unknown) => b as string,
          headers: { 'Content-Type': 'text/plain', 'Content-Encoding': 'gzip' },
        }),
      );
    } catch (err) {
      chunksFailed++;
      log(`${o.name}: job ${job.id}: log chunk ${query.sequence} not sent: ${errorMessage(err)}`);
    }
  };
  /** Sends what is pending, redacted, but for an end that could begin a secret (unless `all`). */
  const flush = (all = false) => {
    const { send: redacted, keep: kept } = redact.split(pending, all);
    pending = redacted;
    while (pending) {
      // Whole characters only: a chunk ends at most chunkBytes in.
      let content = pending;
      while (Buffer.byteLength(content) > chunkBytes) content = content.slice(0, Math.floor(content.length / 2));
      pending = pending.slice(content.length);
      sending = sending.then(() => send(content));
    }
    pending = kept;
    return sending;
  };
  const collect = (data: string) => {
    pending += data;
    if (Buffer.byteLength(pending) >= chunkBytes) void flush();
  };
  if (secrets instanceof Error) collect(`Failed to fetch secrets for job: ${secrets.message}\n`);
  child?.stdout.setEncoding('utf8').on('data', collect);
  child?.stderr.setEncoding('utf8').on('data', collect);
  const ticker = setInterval(() => void flush(), FLUSH_MS);
  let signalReason: string | null = null;
  let killer: NodeJS.Timeout | null = null;
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      if (child) process.kill(-child.pid!, signal);
    } catch {
      // Already gone.
    }
  };
  /** Stops the job's process group as the real agent does: SIGTERM, then SIGKILL once the grace period is over. */
  const stopGroup = (reason: string) => {
    if (signalReason !== null) return;
    signalReason = reason;
    signalGroup('SIGTERM');
    killer = setTimeout(() => signalGroup('SIGKILL'), (o.cancelGracePeriodSeconds ?? DEFAULT_CANCEL_GRACE_PERIOD_SECONDS) * 1000);
  };
  const timeout = job.timeout_in_minutes ? setTimeout(() => stopGroup('timeout'), job.timeout_in_minutes * 60_000) : null;
  // The service's word on the job: a cancel or its own timeout stops the process group.
  const watcher = setInterval(() => {
    ok(api.GET('/v3/jobs/{job_id}', jobPath(job.id))).then(
      (now) => {
        const reason = STOPPING[now.state];
        if (reason) stopGroup(reason);
      },
      () => undefined, // unreachable for now: the next poll asks again
    );
  }, o.pollIntervalMs ?? 1000);
  const onAbort = () => stopGroup('agent_stop');
  o.signal?.addEventListener('abort', onAbort, { once: true });
  // A job whose secrets could not be read did not run: -1, as the agent API documents.
  const exitStatus = await new Promise<number>((resolve) => {
    if (!child) return resolve(-1);
    child.on('error', (err) => {
      collect(`${err.message}\n`);
      resolve(-1);
    });
    child.on('close', (code, signal) => resolve(code ?? (signal ? 128 + (os.constants.signals[signal] ?? 0) : -1)));
  });
  if (killer) clearTimeout(killer);
  // The step's artifact_paths, whatever the exit status: the job's own `buildkite-agent artifact upload`.
  const artifactPaths = job.env.BUILDKITE_ARTIFACT_PATHS;
  if (child && artifactPaths && signalReason !== 'agent_stop') await uploadArtifacts(agent.bin, artifactPaths, dir, env, collect);
  clearInterval(ticker);
  clearInterval(watcher);
  if (timeout) clearTimeout(timeout);
  o.signal?.removeEventListener('abort', onAbort);
  await flush(true);
  try {
    await persistently(RETRIES, retryMs, () =>
      api.PUT('/v3/jobs/{job_id}/finish', {
        ...jobPath(job.id),
        body: {
          exit_status: String(Math.min(exitStatus, 255)),
          signal_reason: signalReason,
          finished_at: new Date().toISOString(),
          chunks_failed_count: chunksFailed,
        },
      }),
    );
  } catch (err) {
    // Refused (the job was taken from this agent) or the service stayed away: the job is given up.
    log(`${o.name}: job ${job.id}: finish not accepted: ${errorMessage(err)}`);
  }
  await fs.rm(dir, { recursive: true, force: true });
  log(`${o.name}: job ${job.id} exited ${exitStatus}`);
}

/**
 * The job's secrets (its step's `secrets`), each read with `GET /v3/jobs/{id}/secrets?key=`: the
 * variables they go into, and every value, to be redacted from the log.
 */
async function readSecrets(api: AgentApi, job: AgentJob): Promise<{ env: Record<string, string>; values: string[] }> {
  const env: Record<string, string> = {};
  const values: string[] = [];
  for (const s of job.step.secrets) {
    const { value } = await ok(api.GET('/v3/jobs/{job_id}/secrets', { params: { path: { job_id: job.id }, query: { key: s.key } } })).catch((err: unknown) => {
      throw new Error(`secret ${s.key}: ${err instanceof WindsockApiError ? `${err.status} ` : ''}${errorMessage(err)}`);
    });
    values.push(value);
    if (s.environment_variable) env[s.environment_variable] = value;
  }
  return { env, values };
}

/**
 * Replaces each secret value in the log with `[REDACTED]`, as the real agent does, on a stream:
 * `split` redacts what is safe to send and keeps the raw rest, the last characters that may
 * begin a secret whose end has not come yet (all of it is sent when `final`).
 */
export function redactor(values: readonly string[]): { split(raw: string, final: boolean): { send: string; keep: string } } {
  // The longest first: where two begin at one place, the longer is redacted whole.
  const secrets = values.filter((v) => v.length > 0).sort((a, b) => b.length - a.length);
  const longest = secrets[0]?.length ?? 0;
  return {
    split(raw, final) {
      if (secrets.length === 0) return { send: raw, keep: '' };
      // From `limit` on, fewer characters than the longest secret are left: a secret starting
      // there may be unfinished. Before it, every secret starting anywhere is whole in `raw`.
      const limit = final ? raw.length : Math.max(0, raw.length - (longest - 1));
      let send = '';
      let i = 0;
      for (;;) {
        let at = -1;
        let hit = '';
        for (const v of secrets) {
          const p = raw.indexOf(v, i);
          if (p !== -1 && (at === -1 || p < at)) [at, hit] = [p, v];
        }
        if (at === -1 || at >= limit) {
          const end = Math.max(i, limit);
          return { send: send + raw.slice(i, end), keep: raw.slice(end) };
        }
        send += `${raw.slice(i, at)}[REDACTED]`;
        i = at + hit.length;
      }
    },
  };
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
