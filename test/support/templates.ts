/**
 * Migrated databases to copy: each test context starts from a copy instead of running every
 * migration (32 of them, about a second per context on SQLite and three on Postgres).
 *
 * - SQLite: an in-memory database migrated once, as its image (better-sqlite3's `serialize()`);
 *   a context opens a copy of it in memory (`DatabaseOptions.sqliteImage`).
 * - Postgres: the statements the migrations ran in a schema of their own, recorded once with
 *   their values written in; a context runs them in one round trip in its new schema (its
 *   `search_path`). No statement names the schema: Knex sets the search path on the connection.
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
import { Client } from 'pg';
import { createKnex, migrateLatest, type DatabaseKind } from '../../src/db/knex';

const DIR_ENV = 'WINDSOCK_TEST_TEMPLATES';
const SQLITE_FILE = 'sqlite.image';
const POSTGRES_FILE = 'postgres.sql';

/** Builds the templates of `kinds` into a new directory, named in WINDSOCK_TEST_TEMPLATES for the workers. */
export async function buildTemplates(kinds: readonly DatabaseKind[], pgUrl: string): Promise<string> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-test-templates-'));
  if (kinds.includes('sqlite')) fs.writeFileSync(path.join(dir, SQLITE_FILE), await migratedSqliteImage());
  if (kinds.includes('postgres')) fs.writeFileSync(path.join(dir, POSTGRES_FILE), await recordedPostgresMigrations(pgUrl));
  process.env[DIR_ENV] = dir;
  return dir;
}

export function removeTemplates(): void {
  const dir = process.env[DIR_ENV];
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
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
  const client = new Client({ connectionString: pgUrl });
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
  const admin = new Client({ connectionString: pgUrl });
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
