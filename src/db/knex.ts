/**
 * The one place a Knex instance is created. SQLite (better-sqlite3) is the embedded default,
 * Postgres the production store; both get settings chosen on purpose, explained inline.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import knexFactory, { Knex } from 'knex';
import type { Logger } from 'pino';
import { WalCheckpointer } from './checkpointer';
import { migrationSource } from './migrations';
import { fieldOf, stringField } from '../core/guards';
import { rawRows } from './row-types';

// cast: Knex's dialect modules (knex/lib/...) have no types; these are the shapes this file uses.
const BetterSqlite3Client = require('knex/lib/dialects/better-sqlite3') as typeof Knex.Client;
// cast: as above.
const SqliteQueryCompiler = require('knex/lib/dialects/sqlite3/query/sqlite-querycompiler') as new (...args: unknown[]) => {
  single: { limit?: unknown };
  limit(): string;
};

/**
 * SQLite re-prepares a statement on every run when its LIMIT is a bound parameter (the planner
 * uses the value), which Knex always does: measured here, a one-row lookup by unique index took
 * 20 µs with `limit ?` and 3 µs with `limit 1`. Knex has already parsed the value to an integer
 * (QueryBuilder.limit), so writing it into the SQL is safe; the prepared-statement cache keeps
 * one statement per distinct limit (page sizes, so few).
 */
class InlineLimitCompiler extends SqliteQueryCompiler {
  override limit(): string {
    const n = this.single.limit;
    return typeof n === 'number' && Number.isSafeInteger(n) && n >= 0 ? `limit ${n}` : super.limit();
  }
}

/** The WAL checkpointer of each connection to a database file (src/db/checkpointer.ts). */
const checkpointers = new WeakMap<object, WalCheckpointer>();

/**
 * Resolves after the next round of the WAL checkpointer of `db` (a SQLite file), so that a test
 * waits for it instead of sleeping; at once for a database without one.
 */
export async function nextCheckpointRound(db: Knex): Promise<void> {
  // cast: Knex types `db.client` as any; these are the pool methods of its Client.
  const client = db.client as { acquireConnection(): Promise<object>; releaseConnection(c: object): Promise<void> };
  const conn = await client.acquireConnection();
  const checkpointer = checkpointers.get(conn);
  await client.releaseConnection(conn);
  await checkpointer?.nextRound();
}

class SqliteClient extends BetterSqlite3Client {
  // Knex's typings declare one parameter; the dialects take (builder, formatter).
  override queryCompiler(builder: unknown, ...rest: unknown[]) {
    return new InlineLimitCompiler(this, builder, ...rest);
  }

  override async destroyRawConnection(connection: object): Promise<void> {
    await checkpointers.get(connection)?.stop();
    return super.destroyRawConnection(connection);
  }
}

/** A client whose connections open `image` in memory (better-sqlite3 copies it each time). */
function sqliteImageClient(image: Buffer): typeof Knex.Client {
  return class extends SqliteClient {
    override async acquireRawConnection(): Promise<Database.Database> {
      return new Database(image);
    }
  };
}

export type DatabaseKind = 'sqlite' | 'postgres';

export interface DatabaseOptions {
  kind: DatabaseKind;
  url: string;
  /** Postgres only: run in this schema (tests give each suite its own). */
  schema?: string;
  /**
   * SQLite in memory only: start from this image of a database (better-sqlite3's `serialize()`)
   * instead of an empty one. The test suites copy a database migrated once rather than running
   * every migration for each test context.
   */
  sqliteImage?: Buffer;
  /** Where Knex's own warnings go (it would print them with console.log). */
  logger?: Logger;
}

function knexLog(logger: Logger | undefined): Knex.Config['log'] {
  const to = (level: 'warn' | 'error' | 'debug') => (message: unknown) => logger?.[level]({ knex: String(message) }, 'knex');
  return { warn: to('warn'), error: to('error'), deprecate: to('warn'), debug: to('debug') };
}

interface PgQuery {
  sql: string;
  bindings?: unknown[];
  options?: Record<string, unknown>;
}

/**
 * Postgres parses and plans every unnamed statement anew. A named statement is parsed once per
 * connection and reused (node-pg keeps the names it has prepared on each connection), which on
 * a one-row lookup saves about as much server time as running it. Only statements with
 * parameters and a bounded shape get a name: a list of N ids is another text per N, and each
 * named statement stays prepared for the connection's life, so IN-lists longer than 16 values
 * and unparameterised statements (BEGIN, DDL) stay unnamed. The name is a digest of the text,
 * so one name always means one text.
 */
// cast: an untyped Knex dialect module (knex/lib/...), with the one internal method this file overrides.
const PgClient = require('knex/lib/dialects/postgres') as new (config: Knex.Config) => Knex.Client & {
  _query(connection: unknown, obj: PgQuery): Promise<unknown>;
};

/** Statement names by text, so the digest is not computed on every query. */
const statementNames = new Map<string, string>();

class PreparingPgClient extends PgClient {
  override _query(connection: unknown, obj: PgQuery) {
    const n = obj.bindings?.length ?? 0;
    if (n > 0 && n <= 16 && !obj.options?.name && /^\s*(select|insert|update|delete|with)\b/i.test(obj.sql)) {
      let name = statementNames.get(obj.sql);
      if (name === undefined) {
        name = `w${crypto.createHash('sha1').update(obj.sql).digest('base64url')}`;
        if (statementNames.size >= 1000) statementNames.delete(statementNames.keys().next().value!);
        statementNames.set(obj.sql, name);
      }
      obj.options = { ...obj.options, name };
    }
    return super._query(connection, obj);
  }
}

/**
 * `column IN (values)`. On Postgres it is `column = any(?)` with one array parameter: the text
 * is then the same for any number of values, so the statement stays prepared (above) where an
 * IN list of n parameters is parsed and planned on every call (for a page's 30 pipelines with
 * their counts, planning took about 1.5 ms of server time against 0.6 ms to run).
 */
export function whereAnyOf(q: Knex.QueryBuilder, column: string, values: readonly string[]): Knex.QueryBuilder {
  return isPostgres(q) ? q.whereRaw(`${column} = any(?)`, [[...values]]) : q.whereIn(column, [...values]);
}

/**
 * `column` matches `pattern`, where `*` stands for any run of characters and every other
 * character is literal, case-sensitive on both stores (Postgres LIKE with its wildcards escaped;
 * SQLite GLOB, since its LIKE ignores case): the real API's `?branch=*dev*` and `?path=logs/*`.
 */
export function orWhereMatches(q: Knex.QueryBuilder, column: string, pattern: string): Knex.QueryBuilder {
  return isPostgres(q)
    ? q.orWhereRaw(`?? like ? escape '\\'`, [column, pattern.replace(/[\\%_]/g, '\\$&').replaceAll('*', '%')])
    : q.orWhereRaw('?? glob ?', [column, pattern.replace(/[[?]/g, '[$&]')]);
}

/** Whether a Knex instance (or a query built on one) talks to Postgres, for the few places SQL differs. */
export function isPostgres(db: Knex | Knex.QueryBuilder): boolean {
  const client: Knex.Client = db.client;
  return client.dialect === 'postgresql';
}

/** SQLite's page cache per connection (see afterCreate below). */
const PAGE_CACHE_KIB = 65536;
/** The page cache while a large write runs (withSpillingCache). */
const SPILLING_CACHE_KIB = 8192;
/** Large writes running, per Knex instance: the cache grows back when the last one ends. */
const largeWrites = new WeakMap<Knex, number>();

/**
 * Runs a write of many megabytes (a large test-results upload) with a small SQLite page cache.
 * SQLite keeps the pages a transaction changes in its cache and writes them to the WAL at
 * COMMIT, synchronously: with the 64 MiB cache the commit of a 50 MB upload held the event loop
 * for 55-70 ms. With an 8 MiB cache the changed pages spill to the WAL as the cache fills, a
 * few at a time inside statements the ingestion already yields between, and the commit writes
 * what is left. The cache is back to its size when the last such write ends; on Postgres this
 * only runs `work`.
 */
export async function withSpillingCache<T>(db: Knex, work: () => Promise<T>): Promise<T> {
  if (isPostgres(db)) return work();
  const running = largeWrites.get(db) ?? 0;
  largeWrites.set(db, running + 1);
  if (running === 0) await db.raw(`pragma cache_size = -${SPILLING_CACHE_KIB}`);
  try {
    return await work();
  } finally {
    const left = largeWrites.get(db)! - 1;
    largeWrites.set(db, left);
    if (left === 0) await db.raw(`pragma cache_size = -${PAGE_CACHE_KIB}`);
  }
}

export function createKnex(opts: DatabaseOptions): Knex {
  const db = createKnexFor(opts);
  if (opts.logger) watchAvailability(db, opts.kind, opts.logger);
  return db;
}

function createKnexFor(opts: DatabaseOptions): Knex {
  if (opts.kind === 'sqlite') {
    if (opts.url !== ':memory:') createPrivateFile(path.resolve(opts.url));
    return knexFactory({
      client: opts.sqliteImage && opts.url === ':memory:' ? sqliteImageClient(opts.sqliteImage) : SqliteClient,
      connection: { filename: opts.url },
      useNullAsDefault: true,
      log: knexLog(opts.logger),
      // One connection: SQLite has one writer anyway, and a single connection means a
      // transaction can never wait on another connection of our own pool (every query inside
      // a transaction must use the transaction object).
      pool: {
        min: 1,
        max: 1,
        afterCreate(conn: SqliteConnection, done: (err: Error | null, conn: unknown) => void) {
          try {
            cachePreparedStatements(conn, failFastWhileLocked(conn));
            // WAL: readers never block the writer. NORMAL is durable across process crashes in
            // WAL mode (only an OS crash can lose the last commits), and much faster than FULL.
            conn.pragma('journal_mode = WAL');
            conn.pragma('synchronous = NORMAL');
            conn.pragma('foreign_keys = ON');
            // The default page cache is 2 MB: with a million builds most index pages then come
            // from the OS through a read() each. 64 MiB of cache plus reads through a 256 MiB
            // memory map halved a random get-a-build's query time on the 1M-build bench database.
            conn.pragma(`cache_size = -${PAGE_CACHE_KIB}`);
            conn.pragma('mmap_size = 268435456');
            // Another process holding the lock (a second server, the CLI) is waited for, not failed;
            // see failFastWhileLocked for one that holds it for long.
            conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
            if (opts.url !== ':memory:') checkpointers.set(conn, new WalCheckpointer(conn, path.resolve(opts.url)));
            done(null, conn);
          } catch (err) {
            // cast: the driver's own error, passed on as it is (its code says whether the database is unavailable).
            done(err as Error, conn);
          }
        },
      },
    });
  }
  return knexFactory({
    // cast: Knex's config takes the Client class; the subclass above is one, built on the untyped dialect module.
    client: PreparingPgClient as unknown as typeof Knex.Client,
    connection: { connectionString: opts.url, statement_timeout: 15_000, connectionTimeoutMillis: 3_000 },
    searchPath: opts.schema ? [opts.schema] : undefined,
    log: knexLog(opts.logger),
    // min 0: no connection is held open (or re-dialled) while idle, so a database restart is
    // survived by simply opening new connections.
    pool: {
      min: 0,
      max: 10,
      afterCreate(conn: { on(ev: string, cb: (err: Error) => void): void }, done: (err: Error | null, conn: unknown) => void) {
        // An idle client whose server goes away emits 'error'; unhandled, it would crash the process.
        conn.on('error', (err) => opts.logger?.warn({ err: err.message }, 'idle database connection failed'));
        done(null, conn);
      },
    },
    acquireConnectionTimeout: 5_000,
  });
}

/**
 * The SQLite file holds builds' env, meta-data and job logs: it is created owner-only (0600),
 * like `jwt-secret`, in a directory created 0700 (an existing one keeps its mode). SQLite gives
 * the -wal and -shm files it creates the mode of the database file. An existing database file
 * keeps its mode (an operator may have chosen it).
 */
function createPrivateFile(file: string): void {
  fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
  fs.closeSync(fs.openSync(file, 'a', 0o600));
}

interface SqliteStatement {
  reader: boolean;
  run(...bindings: unknown[]): unknown;
  raw(on: boolean): SqliteStatement;
  columns(): { name: string }[];
  all(...bindings: unknown[]): unknown[];
  get(...bindings: unknown[]): unknown;
}

interface SqliteConnection {
  pragma(s: string): unknown;
  prepare(sql: string): SqliteStatement;
}

/** A statement that changes the schema (a migration's): the shapes of prepared reads may change with it. */
const SCHEMA_CHANGE = /^\s*(?:create|alter|drop)\b/i;

/**
 * Knex prepares every query anew; on better-sqlite3 preparing costs about as much as running a
 * hot read. Statements are reusable (Knex runs each to completion and sets no per-statement
 * options we use), so keep the most recent ones per connection, keyed by SQL text. A schema
 * change empties the cache: SQLite re-prepares a statement after one by itself, but its columns
 * can move (`select j.*` after a column is dropped and added again), and rowsAsLiterals names
 * them by the positions they had when it was prepared.
 */
function cachePreparedStatements(conn: SqliteConnection, wrap: (s: SqliteStatement) => SqliteStatement, max = 500): void {
  const prepare = conn.prepare.bind(conn);
  const cache = new Map<string, SqliteStatement>();
  conn.prepare = (sql: string) => {
    if (SCHEMA_CHANGE.test(sql)) {
      cache.clear();
      return wrap(prepare(sql));
    }
    let statement = cache.get(sql);
    if (statement) {
      cache.delete(sql); // re-insert: most recently used last
    } else {
      statement = wrap(rowsAsLiterals(prepare(sql)));
      if (cache.size >= max) cache.delete(cache.keys().next().value!);
    }
    cache.set(sql, statement);
    return statement;
  };
}

/** How long a write waits for another process's write lock. */
const BUSY_TIMEOUT_MS = 1000;
/** After a wait in vain, how long writes fail at once instead of waiting again. */
const FAIL_FAST_MS = 2000;

/**
 * better-sqlite3 waits for a lock synchronously: the whole process stands still meanwhile, so a
 * lock held for long by another process (a stuck CLI, a backup) would stall every request, reads
 * and liveness included, one busy_timeout after another. Once a statement has waited in vain
 * (SQLITE_BUSY, answered 503), writes stop waiting for FAIL_FAST_MS (busy_timeout 0, also 503);
 * reads go on, as WAL lets them. Then one write waits again, and so on until the lock is gone.
 */
function failFastWhileLocked(conn: SqliteConnection): (s: SqliteStatement) => SqliteStatement {
  let until = 0;
  return (statement) => {
    for (const method of ['run', 'all', 'get'] as const) {
      const call = statement[method].bind(statement);
      statement[method] = (...bindings: unknown[]) => {
        if (until !== 0 && Date.now() >= until) {
          conn.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
          until = 0;
        }
        try {
          // cast: the wrapped better-sqlite3 method's own result, whatever it is for that method.
          return call(...bindings) as never;
        } catch (err) {
          // Plain SQLITE_BUSY: the busy_timeout ran out (not SQLITE_BUSY_SNAPSHOT, which is
          // answered at once when a read transaction tries to write after another writer).
          if (until === 0 && fieldOf(err, 'code') === 'SQLITE_BUSY') {
            conn.pragma('busy_timeout = 0');
            until = Date.now() + FAIL_FAST_MS;
          }
          throw err;
        }
      };
    }
    return statement;
  };
}

/**
 * better-sqlite3 builds each result row by setting its properties one by one, which costs about
 * as much as the query itself on wide rows (a page of 31 builds: 220 µs as objects, 110 µs as
 * arrays). So readers run in array mode and each row becomes an object literal of a function
 * compiled once per statement: same keys, same values (a later duplicate column wins, as in
 * better-sqlite3), one hidden class. The keys are the statement's own column names, quoted by
 * JSON.stringify.
 */
function rowsAsLiterals(statement: SqliteStatement): SqliteStatement {
  if (!statement.reader) return statement;
  const names = statement.columns().map((c) => c.name);
  if (names.includes('__proto__')) return statement;
  // cast: the function built from text here takes a raw row and returns its object.
  const toObject = new Function('r', `return {${names.map((n, i) => `${JSON.stringify(n)}: r[${i}]`).join(', ')}};`) as (row: unknown[]) => unknown;
  statement.raw(true);
  const all = statement.all.bind(statement);
  const get = statement.get.bind(statement);
  statement.all = (...bindings: unknown[]) => {
    // cast: in raw mode (statement.raw(true)) better-sqlite3 returns each row as an array.
    const rows = all(...bindings) as unknown[][];
    const out = new Array<unknown>(rows.length);
    for (let i = 0; i < rows.length; i++) out[i] = toObject(rows[i]!);
    return out;
  };
  statement.get = (...bindings: unknown[]) => {
    // cast: as above, one row.
    const row = get(...bindings) as unknown[] | undefined;
    return row && toObject(row);
  };
  return statement;
}

/**
 * The advisory lock that lets one process at a time migrate a Postgres database (by schema, so
 * schemas of one database, as the tests use, do not wait on each other).
 */
const MIGRATION_LOCK = "hashtext('windsock migrations ' || current_schema())";
/** How long a start waits for another process's migrations before it gives up. */
export const MIGRATION_LOCK_WAIT_MS = 10 * 60_000;

/**
 * Applies the migrations not applied yet. On Postgres, several processes may start at once on
 * one database (instances behind a load balancer, a rolling restart, `windsock migrate` beside a
 * server): on an empty database each would create knex's bookkeeping tables and all but one fail
 * ("relation knex_migrations already exists"). So one migrates at a time: it holds a session
 * advisory lock on a connection of its own while knex migrates on others, and the rest wait for
 * it (short `pg_try_advisory_lock` polls, never a statement the statement timeout could cut off)
 * and then find nothing to do. A process that dies mid-way ends its session, which frees the lock;
 * its migrations' transaction rolls back.
 */
export async function migrateLatest(knex: Knex, waitMs = MIGRATION_LOCK_WAIT_MS): Promise<void> {
  if (!isPostgres(knex)) {
    await knex.migrate.latest({ migrationSource });
    return;
  }
  // cast: Knex types `db.client` as any; acquire and release are its Client's pool methods.
  const client = knex.client as { acquireConnection(): Promise<unknown>; releaseConnection(conn: unknown): Promise<void> };
  const conn = await client.acquireConnection();
  try {
    for (const deadline = Date.now() + waitMs; ;) {
      const [row] = rawRows<{ locked: boolean }>(await knex.raw(`select pg_try_advisory_lock(${MIGRATION_LOCK}) as locked`).connection(conn));
      if (row?.locked === true) break;
      if (Date.now() > deadline)
        throw new Error(`another process has been migrating this database for more than ${Math.round(waitMs / 1000)} s: not waiting longer`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    try {
      await knex.migrate.latest({ migrationSource });
    } finally {
      await knex.raw(`select pg_advisory_unlock(${MIGRATION_LOCK})`).connection(conn);
    }
  } finally {
    await client.releaseConnection(conn);
  }
}

/** Whether knex's own bookkeeping table is there: a database Windsock's migrations have set up. */
export async function hasMigrationTable(knex: Knex): Promise<boolean> {
  return knex.schema.hasTable('knex_migrations');
}

/** One trivial query (readiness): rejects when the database cannot answer. */
export async function ping(knex: Knex): Promise<void> {
  await knex.raw('select 1');
}

/**
 * node-pg's own failures of a connection carry no code, only these fixed messages (client.js):
 * the server went away, the client is broken, or connecting timed out. Knex prefixes the message
 * with the statement that failed and ` - ` (`COMMIT; - Connection terminated unexpectedly`).
 */
const PG_CONNECTION_LOST =
  /(^| - )(Connection terminated( unexpectedly)?|Client has encountered a connection error and is not queryable|Client was closed and is not queryable|timeout expired|Query read timeout)$/;

/** Whether an error says the database cannot be reached (as opposed to a bad query). */
export function isUnavailableError(err: unknown): boolean {
  if (!err) return false;
  if (fieldOf(err, 'name') === 'KnexTimeoutError') return true;
  const code = stringField(err, 'code') ?? '';
  if (!code && PG_CONNECTION_LOST.test(stringField(err, 'message') ?? '')) return true;
  return (
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENOTFOUND', 'EPIPE', 'SQLITE_BUSY', 'SQLITE_LOCKED', 'SQLITE_CANTOPEN'].includes(code) ||
    code.startsWith('SQLITE_BUSY') ||
    // Postgres: 08xxx connection exceptions, 57P01-57P03 admin shutdown / cannot connect now.
    /^08/.test(code) ||
    /^57P0[123]$/.test(code)
  );
}

interface QueryEvent {
  __knexQueryUid?: string;
  method?: string;
  sql?: string;
}

const WRITE_METHODS = new Set(['insert', 'update', 'del', 'delete', 'counter', 'upsert']);

function isWrite(q: QueryEvent): boolean {
  return WRITE_METHODS.has(q.method ?? '') || /^\s*(insert|update|delete|replace)\b/i.test(q.sql ?? '');
}

/**
 * An outage is logged twice: once at error level when the database first cannot be reached
 * (or, on SQLite, stays locked by another process), once at info level when it answers again.
 * Each request answered 503 meanwhile is only a warn line (the request line) and a debug line,
 * without a stack: a 3 s outage under load used to log some 700 errors.
 *
 * The end is the first statement started after the outage began that succeeds (one already
 * running could still come back and end it too early). A lock on SQLite stops only writes
 * (reads go on, WAL), so there the end is the first write that succeeds.
 */
function watchAvailability(db: Knex, kind: DatabaseKind, logger: Logger): void {
  let down: { since: number; code: string; writesOnly: boolean } | undefined;
  /** Statements started during the outage; only kept while it lasts. */
  const startedDuring = new Set<string>();

  const failed = (err: unknown) => {
    if (down || !isUnavailableError(err)) return;
    // node-pg's own connection failures have no code, only a fixed message (after Knex's `<statement> - `).
    const code = stringField(err, 'code') ?? String(fieldOf(err, 'message')).split(' - ').at(-1)!;
    down = { since: Date.now(), code, writesOnly: /^SQLITE_(BUSY|LOCKED)/.test(code) };
    logger.error({ database: kind, code }, 'database unavailable: requests that need it answer 503 until it is back');
  };

  db.on('query', (q: QueryEvent) => {
    if (down && q.__knexQueryUid && startedDuring.size < 100_000) startedDuring.add(q.__knexQueryUid);
  });
  db.on('query-error', (err: unknown, q: QueryEvent) => {
    if (down && q.__knexQueryUid) startedDuring.delete(q.__knexQueryUid);
    failed(err);
  });
  db.on('query-response', (_response: unknown, q: QueryEvent) => {
    if (!down || !q.__knexQueryUid || !startedDuring.delete(q.__knexQueryUid)) return;
    if (down.writesOnly && !isWrite(q)) return;
    logger.info({ database: kind, code: down.code, outageMs: Date.now() - down.since }, 'database available again');
    down = undefined;
    startedDuring.clear();
  });
  // A connection that cannot be opened fails before any statement runs (no query-error).
  // cast: Knex types `db.client` as any; its tarn pool emits createFail.
  const pool = (db.client as { pool?: { on(event: string, cb: (id: unknown, err: unknown) => void): void } }).pool;
  pool?.on('createFail', (_id, err) => failed(err));
}

/** Postgres chose this transaction to end a deadlock (it rolled back; nothing it wrote stays). */
export function isDeadlock(err: unknown): boolean {
  return fieldOf(err, 'code') === '40P01';
}

/** Unique-key violation, by driver error code (never by message text). */
export function isUniqueViolation(err: unknown): boolean {
  const code = fieldOf(err, 'code');
  return code === '23505' || code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY';
}
