/**
 * The service as a child process (`node dist/src/cli/main.js serve`, compiled by the global
 * setup), the databases it runs on, a seeded random source and a few HTTP helpers for the fault
 * tests.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import type { DatabaseKind } from '../../src/db/knex';

export const ROOT = path.resolve(__dirname, '../..');
export const MAIN = path.join(ROOT, 'dist/src/cli/main.js');
export const PG_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const JWT_SECRET = 'faults-secret-faults-secret-faults-secret-0123';

export interface Service {
  proc: ChildProcess;
  url: string;
  /** The first-start token, when this start created the database. */
  token?: string;
  output: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Starts the service; resolves once it listens (and, on a fresh database, printed its token). */
export async function startService(env: Record<string, string>, opts: { expectToken?: boolean } = {}): Promise<Service> {
  const proc = spawn(process.execPath, [MAIN, 'serve'], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      PORT: '0',
      HOST: '127.0.0.1',
      LOG_LEVEL: 'info',
      JWT_SECRET,
      RATE_LIMIT_PER_MINUTE: '1000000000',
      RATE_LIMIT_PER_USER_PER_MINUTE: '1000000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  proc.stdout!.setEncoding('utf8');
  proc.stderr!.setEncoding('utf8');
  proc.stdout!.on('data', (c: string) => (out += c));
  proc.stderr!.on('data', (c: string) => (out += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  const started = await new Promise<{ url: string; token?: string }>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not start in 20 s:\n${out}`)), 20_000);
    const check = () => {
      const url = /"url":"(http:[^"]+)","database":"\w+","msg":"windsock listening"/.exec(out)?.[1];
      const token = /^ {2}(eyJ\S+)$/m.exec(out)?.[1];
      if (url && (token || !opts.expectToken)) {
        clearTimeout(timer);
        proc.stdout!.off('data', check);
        proc.stderr!.off('data', check);
        resolve({ url, token });
      }
    };
    // The token is on stderr (stdout is a pipe here), the URL on stdout: either may come last.
    proc.stdout!.on('data', check);
    proc.stderr!.on('data', check);
    void exited.then(({ code, signal }) => {
      clearTimeout(timer);
      reject(new Error(`the service exited (${code ?? signal}) before listening:\n${out}`));
    });
  });
  return { proc, ...started, output: () => out, exited };
}

/** Stops a service still running (a test that failed half-way). */
export async function stopService(s: Service | undefined): Promise<void> {
  if (!s || s.proc.exitCode !== null || s.proc.signalCode !== null) return;
  s.proc.kill('SIGKILL');
  await s.exited;
}

export interface Store {
  kind: DatabaseKind;
  /** DATABASE_URL and DATA_DIR of the service. */
  env: Record<string, string>;
  dir: string;
  sqliteFile?: string;
  drop(): Promise<void>;
}

/** A fresh store: a SQLite file in a temp dir, or a new Postgres database. */
export async function freshStore(kind: DatabaseKind): Promise<Store> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-faults-'));
  if (kind === 'sqlite') {
    const sqliteFile = path.join(dir, 'windsock.sqlite3');
    return { kind, dir, sqliteFile, env: { DATA_DIR: dir, DATABASE_URL: sqliteFile }, drop: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const name = `faults_${crypto.randomBytes(6).toString('hex')}`;
  const admin = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 1 } });
  await admin.raw(`create database ${name}`);
  await admin.destroy();
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    kind,
    dir,
    env: { DATA_DIR: dir, DATABASE_URL: url.toString() },
    drop: async () => {
      const a = knexFactory({ client: 'pg', connection: PG_URL, pool: { min: 0, max: 1 } });
      await a.raw(`drop database if exists ${name} with (force)`);
      await a.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** mulberry32: a small seeded generator, so a failing run can be repeated with its seed. */
export function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function seedFromEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  return raw ? Number(raw) : fallback;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export async function api(
  base: string,
  token: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; headers: Headers; body: unknown }> {
  const res = await fetch(base + p, {
    method,
    headers: { Authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, headers: res.headers, body: parsed };
}

export const PIPELINE = {
  name: 'Faults',
  repository: 'git@github.com:acme/app.git',
  configuration: 'steps:\n  - command: make test\n  - wait\n  - command: make deploy\n',
};

/**
 * What to do with a fault test whose prerequisite (a tool, a binary) is missing: under CI=true
 * it fails, so a CI machine without it is noticed; elsewhere it is skipped with a warning.
 */
export function whenMissing(missing: string | undefined, env: NodeJS.ProcessEnv = process.env): 'run' | 'fail' | 'skip' {
  if (missing === undefined) return 'run';
  return env.CI === 'true' ? 'fail' : 'skip';
}

/** `it` when nothing is missing; otherwise a failing test under CI=true, or a skip with a warning. */
export function itRequiring(missing: string | undefined): jest.It {
  const decision = whenMissing(missing);
  if (decision === 'run') return it;
  if (decision === 'skip') {
    process.stderr.write(`\n!! ${missing}: skipping the tests that need it (set CI=true to make this fatal)\n\n`);
    return it.skip;
  }
  const failing = ((name: string) =>
    it(name, () => {
      throw new Error(`CI=true and a prerequisite is missing: ${missing}`);
    })) as unknown as jest.It;
  return failing;
}
