/**
 * Migrated databases to copy: each test context starts from a copy instead of running every
 * migration (32 of them, about a second per context on SQLite and three on Postgres).
 *
 * - SQLite: an in-memory database migrated once, as its image (better-sqlite3's `serialize()`);
 *   a context opens a copy of it in memory (`DatabaseOptions.sqliteImage`).
 * - Postgres: the statements the migrations ran in a schema of their own, recorded once with
 *   their values written in (no statement names the schema: Knex sets the search path on the
 *   connection). The global setup runs them once in a template database of the run, in the
 *   schema `TEMPLATE_SCHEMA`; a context is a database of its own made by `create database ...
 *   template` (a file copy, about a fifth of the server's CPU of running the statements again)
 *   and dropped on close. Without the global setup, a context replays the statements in one
 *   round trip in a new schema of the test database.
 *
 * The global setup (test/support/global-setup.ts) builds both once per run into a directory it
 * names in WINDSOCK_TEST_TEMPLATES; without it (another jest config) a test file builds its
 * own on first use. Either way a context still runs `migrateLatest`, which finds nothing to do
 * on a faithful copy; test/db/templates.test.ts proves the copies equal a migrated database.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Knex } from 'knex';
import type { Client } from 'pg';
import { createKnex, migrateLatest, type DatabaseKind } from '../../src/db/knex';

const DIR_ENV = 'WINDSOCK_TEST_TEMPLATES';
const SQLITE_FILE = 'sqlite.image';
const POSTGRES_FILE = 'postgres.sql';
/** The name of the run's Postgres template database; the contexts' databases are named after it. */
const POSTGRES_DATABASE_FILE = 'postgres.database';
/** The schema of the template database, and so of every context's database copied from it. */
export const TEMPLATE_SCHEMA = 'windsock_test_template';

/** Builds the templates of `kinds` into a new directory, named in WINDSOCK_TEST_TEMPLATES for the workers. */
export async function buildTemplates(kinds: readonly DatabaseKind[], pgUrl: string): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-test-templates-'));
  if (kinds.includes('sqlite')) fs.writeFileSync(path.join(dir, SQLITE_FILE), await migratedSqliteImage());
  if (kinds.includes('postgres')) {
    const script = await recordedPostgresMigrations(pgUrl);
    fs.writeFileSync(path.join(dir, POSTGRES_FILE), script);
    // Named after the run: a teardown drops its own run's databases, never another run's.
    const name = `wst_${crypto.randomBytes(5).toString('hex')}`;
    await withClient(pgUrl, async (admin) => {
      await admin.query(`create database ${name}`);
    });
    fs.writeFileSync(path.join(dir, POSTGRES_DATABASE_FILE), name);
    await withClient(databaseUrl(pgUrl, name), async (template) => {
      await template.query(`create schema ${TEMPLATE_SCHEMA}; set search_path to ${TEMPLATE_SCHEMA};\n${script}`);
    });
  }
  process.env[DIR_ENV] = dir;
  return dir;
}

/** Removes the templates and every database of the run a context left behind (a worker that died before its close). */
export async function removeTemplates(pgUrl: string): Promise<void> {
  const dir = process.env[DIR_ENV];
  if (!dir) return;
  const name = fromDir(POSTGRES_DATABASE_FILE)?.toString('utf8');
  if (name) {
    await withClient(pgUrl, async (admin) => {
      const left = await admin.query<{ datname: string }>(`select datname from pg_database where datname = $1 or datname like $2`, [name, `${name}\\_%`]);
      for (const { datname } of left.rows) await admin.query(`drop database if exists ${datname} with (force)`);
    });
  }
  fs.rmSync(dir, { recursive: true, force: true });
}

/** `pgUrl` with another database. */
export function databaseUrl(pgUrl: string, database: string): string {
  const url = new URL(pgUrl);
  url.pathname = `/${database}`;
  return url.toString();
}

/** A node-postgres client, loaded on first use: a SQLite-only run never loads pg (test/bootstrap/lazy-modules.test.ts). */
async function pgClient(url: string): Promise<Client> {
  const { Client: PgClient } = await import('pg');
  return new PgClient({ connectionString: url });
}

async function withClient<T>(url: string, body: (client: Client) => Promise<T>): Promise<T> {
  const client = await pgClient(url);
  await client.connect();
  try {
    return await body(client);
  } finally {
    await client.end();
  }
}

/** A context's Postgres store: where it is, and how to remove it. */
export interface PostgresStore {
  url: string;
  schema: string;
  drop(): Promise<void>;
}

/**
 * A new migrated Postgres store: a database copied from the run's template database when the
 * global setup made one, else a new schema of `pgUrl`'s database with the recorded statements
 * replayed in it.
 */
export async function createPostgresStore(pgUrl: string): Promise<PostgresStore> {
  const id = crypto.randomBytes(6).toString('hex');
  const template = fromDir(POSTGRES_DATABASE_FILE)?.toString('utf8');
  if (template) {
    const name = `${template}_${id}`;
    await withClient(pgUrl, (admin) => admin.query(`create database ${name} template ${template}`));
    return {
      url: databaseUrl(pgUrl, name),
      schema: TEMPLATE_SCHEMA,
      drop: () => withClient(pgUrl, async (admin) => void (await admin.query(`drop database if exists ${name} with (force)`))),
    };
  }
  const schema = `t_${id}`;
  await createSchemaFromTemplate(pgUrl, schema);
  return {
    url: pgUrl,
    schema,
    drop: () => withClient(pgUrl, async (admin) => void (await admin.query(`drop schema if exists ${schema} cascade`))),
  };
}

function fromDir(file: string): Buffer | undefined {
  const dir = process.env[DIR_ENV];
  const at = dir && path.join(dir, file);
  return at && fs.existsSync(at) ? fs.readFileSync(at) : undefined;
}

let sqlite: Promise<Buffer> | undefined;
let postgres: Promise<string> | undefined;

/** The image of a migrated SQLite database (read once per test file). */
export function sqliteTemplate(): Promise<Buffer> {
  return (sqlite ??= Promise.resolve(fromDir(SQLITE_FILE) ?? migratedSqliteImage()));
}

/** The statements that migrate an empty Postgres schema (read once per test file). */
export function postgresTemplate(pgUrl: string): Promise<string> {
  return (postgres ??= Promise.resolve(fromDir(POSTGRES_FILE)?.toString('utf8') ?? recordedPostgresMigrations(pgUrl)));
}

/** Creates `schema` and runs the migrated template in it, in one round trip. */
export async function createSchemaFromTemplate(pgUrl: string, schema: string): Promise<void> {
  const script = await postgresTemplate(pgUrl);
  const client = await pgClient(pgUrl);
  await client.connect();
  try {
    await client.query(`set synchronous_commit to off; create schema ${schema}; set search_path to ${schema};\n${script}`);
  } finally {
    await client.end();
  }
}

async function migratedSqliteImage(): Promise<Buffer> {
  const db = createKnex({ kind: 'sqlite', url: ':memory:' });
  try {
    await migrateLatest(db);
    const connection = (await db.client.acquireConnection()) as { serialize(): Buffer };
    try {
      return connection.serialize();
    } finally {
      await db.client.releaseConnection(connection);
    }
  } finally {
    await db.destroy();
  }
}

interface QueryEvent {
  sql: string;
  bindings?: readonly unknown[];
}

async function recordedPostgresMigrations(pgUrl: string): Promise<string> {
  const schema = `windsock_template_${crypto.randomBytes(6).toString('hex')}`;
  const admin = await pgClient(pgUrl);
  await admin.connect();
  const statements: string[] = [];
  const failures: string[] = [];
  try {
    await admin.query(`create schema ${schema}`);
    const db = createKnex({ kind: 'postgres', url: pgUrl, schema });
    try {
      db.on('query', (q: QueryEvent) => {
        try {
          statements.push(withValues(db, q));
        } catch (err) {
          failures.push((err as Error).message);
        }
      });
      db.on('query-error', (err: Error) => failures.push(err.message));
      await migrateLatest(db);
    } finally {
      await db.destroy();
    }
  } finally {
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  }
  // A statement that failed and was caught would fail again when replayed; one that names the
  // template's schema would write into it. Neither happens today; either makes this loud.
  if (failures.length > 0) throw new Error(`the migrations failed while being recorded: ${failures.join('; ')}`);
  const named = statements.find((s) => s.includes(schema));
  if (named) throw new Error(`a migration names its schema, so it cannot be replayed in another: ${named}`);
  return statements.map((s) => `${s.replace(/;\s*$/, '')};`).join('\n');
}

/**
 * The statement with its values written in. Knex has already numbered its placeholders
 * (`$1`, `$2`...); they are turned back into `?` in order and Knex writes the values in
 * (`toQuery`). A statement with a literal `?` of its own would be ambiguous, so it is refused.
 */
function withValues(db: Knex, q: QueryEvent): string {
  const bindings = q.bindings ?? [];
  if (bindings.length === 0) return q.sql;
  if (q.sql.includes('?')) throw new Error(`cannot record a statement with a literal ?: ${q.sql}`);
  let next = 0;
  const sql = q.sql.replace(/\$(\d+)/g, (_m, n: string) => {
    if (Number(n) !== ++next) throw new Error(`placeholders out of order: ${q.sql}`);
    return '?';
  });
  if (next !== bindings.length) throw new Error(`${bindings.length} values for ${next} placeholders: ${q.sql}`);
  return db.raw(sql, bindings as Knex.RawBinding[]).toQuery();
}
