/**
 * What the benchmark scripts share besides their settings (bench-env.ts): the service in this
 * process with its app on 127.0.0.1, the admin that drives it, a database per run, and the
 * measuring helpers, so that each scripts/bench-*.ts keeps only what it measures.
 */
import { execSync, type ChildProcess } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createApp } from '../src/app';
import { SCOPES } from '../src/core/identity';
import { migrateLatest } from '../src/db/knex';
import { isOneOf } from '../src/db/row-types';
import { createLogger } from '../src/http/middleware/logger';
import { createServices, type ServiceOptions, type Services } from '../src/services';

export const STORES = ['sqlite', 'postgres'] as const;
export type Store = (typeof STORES)[number];

/** BENCH_STORES: the stores to measure, in order (default sqlite,postgres). */
export function benchStores(): Store[] {
  const named = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim());
  return named.map((s) => {
    if (!isOneOf(STORES, s)) throw new Error(`BENCH_STORES: unknown store ${s}`);
    return s;
  });
}

/** A store's name from the environment (a forked child's BENCH_STORE), checked. */
export function storeOf(value: string | undefined): Store {
  if (!isOneOf(STORES, value)) throw new Error(`unknown store ${value}`);
  return value;
}

/** BENCH_PG_URL: the Postgres server (no database in it) on which a run creates its own database. */
export const PG_URL = (process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');

/** Runs `statements` in order on the Postgres server's maintenance database (creating and dropping a run's database). */
export async function pgAdmin(...statements: string[]): Promise<void> {
  const c = new pg.Client({ connectionString: `${PG_URL}/postgres`, connectionTimeoutMillis: 3000 });
  await c.connect();
  try {
    for (const sql of statements) await c.query(sql);
  } finally {
    await c.end();
  }
}

/** A database for one run, afresh: drops one of that name first (a run cut short leaves its own). */
export async function createPgDatabase(name: string): Promise<void> {
  await pgAdmin(`drop database if exists ${name} with (force)`, `create database ${name}`);
}

export async function dropPgDatabase(name: string): Promise<void> {
  await pgAdmin(`drop database if exists ${name} with (force)`);
}

/**
 * A database of `kind` for the run of benchmark `name`: a SQLite file in a temporary directory,
 * or the Postgres database windsock_bench_<name>_<pid> (one per run: two runs on one machine, from
 * two checkouts, must not drop each other's). Null, with `unreachable` written, when Postgres is
 * not there.
 */
export async function benchDatabase(
  kind: Store,
  name: string,
  unreachable: (message: string) => string,
): Promise<{ url: string; cleanup: () => Promise<void> } | null> {
  if (kind === 'sqlite') {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), `windsock-bench-${name}-`));
    return { url: path.join(dir, 'bench.sqlite3'), cleanup: async () => fs.rmSync(dir, { recursive: true, force: true }) };
  }
  const database = `windsock_bench_${name}_${process.pid}`;
  try {
    await createPgDatabase(database);
  } catch (err) {
    process.stdout.write(unreachable(err instanceof Error ? err.message : String(err)));
    return null;
  }
  return { url: `${PG_URL}/${database}`, cleanup: () => dropPgDatabase(database) };
}

/**
 * The database of a benchmark's forked service: SQLite in a temporary directory, or with
 * BENCH_STORE=postgres a schema of its own (`<name>_<pid>`) in the database of BENCH_PG_URL
 * (default postgres://postgres@127.0.0.1:5432/test). `prepare` creates and migrates it, `close` drops it.
 */
export function childDatabase(name: string) {
  const kind: Store = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite';
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `windsock-${name}-`));
  const schema = `${name}_${process.pid}`;
  const pgUrl = process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
  const database: ServiceOptions['database'] = kind === 'sqlite' ? { kind, url: path.join(dir, 'db.sqlite3') } : { kind, url: pgUrl, schema };
  return {
    database,
    prepare: async (services: Services) => {
      if (kind === 'postgres') await services.db.raw(`create schema if not exists ${schema}`);
      await migrateLatest(services.db);
    },
    close: async (services: Services) => {
      if (kind === 'postgres') await services.db.raw(`drop schema ${schema} cascade`);
      await services.db.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export const PUBLIC_URL = 'http://127.0.0.1';

/** The services on `database` as a benchmark runs them: silent, a random secret, no GitHub; `more` adds or overrides. */
export function benchServices(database: ServiceOptions['database'], more: Partial<ServiceOptions> = {}): Services {
  return createServices({
    database,
    secret: crypto.randomBytes(32).toString('hex'),
    publicUrl: PUBLIC_URL,
    github: { apiUrl: undefined, token: undefined },
    githubEnterprise: { apiUrl: undefined, token: undefined },
    logger: createLogger('silent'),
    ...more,
  });
}

/** The app of `services` listening on a free port of 127.0.0.1, responses unvalidated as in production. */
export async function listenApp(
  services: Services,
  limits: { bodyLimitBytes?: number; uploadBodyLimitBytes?: number } = {},
): Promise<{ server: http.Server; port: number; base: string }> {
  const app = createApp({
    ...services,
    logger: createLogger('silent'),
    publicUrl: PUBLIC_URL,
    bodyLimitBytes: limits.bodyLimitBytes ?? 1024 * 1024,
    uploadBodyLimitBytes: limits.uploadBodyLimitBytes ?? 64 * 1024 * 1024,
    validateResponses: false,
  });
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo; // cast: listening on TCP
  return { server, port, base: `http://127.0.0.1:${port}` };
}

/**
 * An admin of one organization per name (slug: the name in lower case; `Bench`: bench) and a token
 * of theirs with every scope for all of them; the user is named after the first.
 */
export async function benchAdmin(services: Services, names: string[] = ['Bench']) {
  const slug = (name: string) => name.toLowerCase();
  const orgs = [];
  for (const name of names) orgs.push(await services.orgs.create({ slug: slug(name), name }));
  const user = await services.users.create({ name: names[0]!, email: `${slug(names[0]!)}@example.com` });
  for (const org of orgs) await services.orgs.addMember(org.id, user.id, 'admin');
  const { jwt } = await services.tokens.create({
    userId: user.id,
    organizationIds: orgs.map((o) => o.id),
    scopes: [...SCOPES],
    expiresAt: new Date(Date.now() + 86_400_000),
  });
  return { org: orgs[0]!, orgs, user, jwt };
}

/** A JSON call to the service at `base` (`body` sent as JSON when given) that throws on any status from 300 up, saying what came back. */
export function jsonCaller(base: string) {
  return async (method: string, url: string, headers: Record<string, string>, body?: unknown): Promise<Record<string, unknown>> => {
    const res = await fetch(`${base}${url}`, {
      method,
      headers: { 'Content-Type': 'application/json', ...headers },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await res.text();
    if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text}`);
    return JSON.parse(text) as Record<string, unknown>; // cast: the API's JSON
  };
}

/** Each store's section of a report: its heading, the table's `head` rows and the rows `measure` returned (no section when it skipped the store). */
export async function storeSections(stores: Store[], head: string[], measure: (kind: Store) => Promise<string[] | null>): Promise<string[]> {
  const report: string[] = [];
  for (const kind of stores) {
    const lines = await measure(kind);
    if (!lines) continue;
    report.push(`\n### ${kind === 'sqlite' ? 'SQLite' : 'Postgres'}\n`, ...head, ...lines);
  }
  return report;
}

/** The value at percentile `p` (0 to 100) of ascending `sorted`. */
export function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

/** The child's first message of type `answer`, after sending it `{ type }` (nothing when `type` is empty). */
export function ask<T>(child: ChildProcess, type: string, answer: string): Promise<T> {
  return new Promise((resolve) => {
    const on = (m: { type: string }) => {
      if (m.type !== answer) return;
      child.off('message', on);
      resolve(m as T); // cast: the child's own answer
    };
    child.on('message', on);
    if (type) child.send({ type });
  });
}

/** A port of 127.0.0.1 free a moment ago, for a server that must be told its port. */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as net.AddressInfo; // cast: a TCP server's address
      srv.close(() => resolve(port));
    });
  });
}

/** Until the service answers /readyz quickly twice in a row (requests queued by the last measurement drain), at most `deadlineMs`. */
export async function drain(url: string, o: { deadlineMs: number; requestTimeoutMs: number }): Promise<void> {
  const deadline = Date.now() + o.deadlineMs;
  let quick = 0;
  while (Date.now() < deadline && quick < 2) {
    const t = performance.now();
    try {
      await fetch(`${url}/readyz`, { signal: AbortSignal.timeout(o.requestTimeoutMs) });
    } catch {
      /* still busy */
    }
    quick = performance.now() - t < 100 ? quick + 1 : 0;
    await new Promise((r) => setTimeout(r, 100));
  }
}

// ---------------------------------------------------------------------------------------------
// CPU accounting (Linux /proc)

/** Clock ticks per second, the unit of /proc's CPU times. */
export const CLK_TCK = (() => {
  try {
    return Number(execSync('getconf CLK_TCK', { stdio: ['ignore', 'pipe', 'ignore'] }).toString()) || 100;
  } catch {
    return 100;
  }
})();

/** Every process now: its command name, parent and CPU time so far (user and system, in clock ticks). */
export function processTimes(): { pid: number; comm: string; ppid: number; ticks: number }[] {
  const found = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      // The command name is in parentheses and may hold spaces: the fields count from its end.
      const close = stat.lastIndexOf(')');
      const rest = stat.slice(close + 2).split(' ');
      found.push({ pid: Number(name), comm: stat.slice(stat.indexOf('(') + 1, close), ppid: Number(rest[1]), ticks: Number(rest[11]) + Number(rest[12]) });
    } catch {
      /* exited meanwhile */
    }
  }
  return found;
}

/** Writes the error's stack and ends the process with 1: how a benchmark's entry point fails. */
export function exitOnFailure(run: Promise<void>): void {
  run.catch((err: unknown) => {
    console.error(err);
    process.exit(1);
  });
}
