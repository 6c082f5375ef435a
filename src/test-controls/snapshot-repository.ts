/**
 * The test controls' repository (their only SQL): a copy of every table, taken once after start
 * (fixtures loaded, admin token made) and copied back by a reset in one transaction, inside the
 * database engine (no row crosses into the process):
 *
 * - SQLite: the copies live in a temporary database file ATTACHed to the connection as
 *   `windsock_snapshot` (re-attached if the connection was reopened; removed at exit). The
 *   outbox triggers are set aside during the copy (withoutOutboxTriggers: a reset notifies no
 *   one), tables are emptied children first (no cascades) and filled with foreign keys checked
 *   at commit (`defer_foreign_keys`), parents first. `sqlite_sequence` is restored too.
 * - Postgres: the copies are unlogged tables in a schema of their own (`<schema>_snapshot`,
 *   dropped by dispose). The restore runs with `session_replication_role = replica`, which skips
 *   triggers (the outbox's) and foreign-key checks; a role that may not set it (not a
 *   superuser) gets a slower restore: parents first, then what the triggers queued is cleared.
 *   Sequences (the outbox's) continue after the restored rows.
 *
 * The snapshot copies rows, not the schema: it is valid for the life of the process.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { isPostgres } from '../db/knex';
import { withoutOutboxTriggers } from '../db/migrations/20261126090000_outbox';
import { rawRows, required } from '../db/row-types';

/** A foreign key between two tables, as both stores' catalogues list it. */
interface ForeignKey {
  child: string;
  parent: string;
}

/** A row of SQLite's AUTOINCREMENT counters. */
interface SqliteSequence {
  name: string;
  seq: number;
}

/** The `n` of a raw `select count(*) as n`, from either driver (pg gives a bigint count as text). */
function countOf(result: unknown): number {
  return Number(required(rawRows<{ n: number | string }>(result)[0], 'count(*)').n);
}

/** Tables the outbox triggers write to: restored after the others (see the module header). */
const WRITTEN_BY_TRIGGERS = ['outbox_events'];
const SQLITE_SNAPSHOT = 'windsock_snapshot';

export interface RestoreResult {
  tables: number;
  rows: number;
}

interface Plan {
  /** Parents first: emptied in the reverse order (no cascades), filled in this one. */
  tables: string[];
  rows: number;
}

export abstract class Snapshot {
  static async take(db: Knex): Promise<Snapshot> {
    const snapshot = isPostgres(db) ? new PostgresSnapshot() : new SqliteSnapshot();
    await snapshot.copy(db);
    return snapshot;
  }

  protected plan: Plan = { tables: [], rows: 0 };

  /** Takes the copies. */
  abstract copy(db: Knex): Promise<void>;
  protected abstract copyBack(db: Knex): Promise<void>;
  abstract dispose(db: Knex): Promise<void>;

  async restore(db: Knex): Promise<RestoreResult> {
    await this.copyBack(db);
    return { tables: this.plan.tables.length, rows: this.plan.rows };
  }
}

class SqliteSnapshot extends Snapshot {
  private readonly file = path.join(os.tmpdir(), `windsock-snapshot-${process.pid}-${crypto.randomBytes(4).toString('hex')}.db`);
  /** `sqlite_sequence` (AUTOINCREMENT counters), null when no table has one. */
  private sequences: SqliteSequence[] | null = null;

  async copy(db: Knex): Promise<void> {
    await this.attach(db);
    const edges = rawRows<ForeignKey>(
      await db.raw(`select m.name as child, f."table" as parent from main.sqlite_master m join pragma_foreign_key_list(m.name) f where m.type = 'table'`),
    );
    const names = rawRows<{ name: string }>(
      await db.raw(`select name from main.sqlite_master where type = 'table' and name not like 'knex_%' and name not like 'sqlite_%'`),
    ).map((r) => r.name);
    let rows = 0;
    for (const name of names) {
      await db.raw(`drop table if exists ${SQLITE_SNAPSHOT}.${quote(name)}`);
      await db.raw(`create table ${SQLITE_SNAPSHOT}.${quote(name)} as select * from main.${quote(name)}`);
      rows += countOf(await db.raw(`select count(*) as n from ${SQLITE_SNAPSHOT}.${quote(name)}`));
    }
    const hasSequence = countOf(await db.raw(`select count(*) as n from main.sqlite_master where name = 'sqlite_sequence'`)) > 0;
    this.sequences = hasSequence ? rawRows<SqliteSequence>(await db.raw('select name, seq from main.sqlite_sequence')) : null;
    this.plan = { tables: parentsFirst(names, edges), rows };
    process.once('exit', () => fs.rmSync(this.file, { force: true }));
  }

  /** ATTACH cannot run inside a transaction: done before, and again if the connection was reopened. */
  private async attach(db: Knex): Promise<void> {
    const attached = rawRows<{ name: string }>(await db.raw('pragma database_list'));
    if (attached.some((d) => d.name === SQLITE_SNAPSHOT)) return;
    await db.raw(`attach database ? as ${SQLITE_SNAPSHOT}`, [this.file]);
    await db.raw(`pragma ${SQLITE_SNAPSHOT}.journal_mode = off`);
    await db.raw(`pragma ${SQLITE_SNAPSHOT}.synchronous = off`);
  }

  protected async copyBack(db: Knex): Promise<void> {
    await this.attach(db);
    await db.transaction(async (trx) => {
      await trx.raw('pragma defer_foreign_keys = on');
      await withoutOutboxTriggers(trx, async () => {
        for (const name of [...this.plan.tables].reverse()) await trx.raw(`delete from main.${quote(name)}`);
        for (const name of this.plan.tables) await trx.raw(`insert into main.${quote(name)} select * from ${SQLITE_SNAPSHOT}.${quote(name)}`);
        if (this.sequences) {
          await trx.raw('delete from main.sqlite_sequence');
          for (const s of this.sequences) await trx.raw('insert into main.sqlite_sequence (name, seq) values (?, ?)', [s.name, s.seq]);
        }
      });
    });
  }

  async dispose(db: Knex): Promise<void> {
    await db.raw(`detach database ${SQLITE_SNAPSHOT}`).catch(() => undefined);
    fs.rmSync(this.file, { force: true });
  }
}

class PostgresSnapshot extends Snapshot {
  private schema = '';
  /** The whole restore as one script: one round trip (a statement per table would be dozens). */
  private script = '';

  async copy(db: Knex): Promise<void> {
    const current = required(rawRows<{ s: string }>(await db.raw('select current_schema() as s'))[0], 'current_schema()').s;
    this.schema = `${current}_snapshot`;
    const names = rawRows<{ tablename: string }>(
      await db.raw(`select tablename from pg_tables where schemaname = current_schema() and tablename not like 'knex_%'`),
    ).map((r) => r.tablename);
    const edges = rawRows<ForeignKey>(
      await db.raw(`select conrelid::regclass::text as child, confrelid::regclass::text as parent from pg_constraint
        where contype = 'f' and connamespace = current_schema()::regnamespace`),
    );
    await db.raw(`drop schema if exists ${quote(this.schema)} cascade`);
    await db.raw(`create schema ${quote(this.schema)}`);
    let rows = 0;
    for (const name of names) {
      await db.raw(`create unlogged table ${quote(this.schema)}.${quote(name)} as select * from ${quote(name)}`);
      rows += countOf(await db.raw(`select count(*)::int as n from ${quote(this.schema)}.${quote(name)}`));
    }
    const sequences = rawRows<{ table: string; column: string; sequence: string }>(
      await db.raw(`select table_name as table, column_name as column, pg_get_serial_sequence(quote_ident(table_name), column_name) as sequence
        from information_schema.columns where table_schema = current_schema() and column_default like 'nextval%' and table_name not like 'knex_%'`),
    );
    const tables = parentsFirst(names, edges);
    this.plan = { tables, rows };
    const replica = await db
      .transaction(async (trx) => {
        await trx.raw('set local session_replication_role = replica');
      })
      .then(
        () => true,
        () => false,
      );
    this.script = [
      ...(replica
        ? ['set local session_replication_role = replica', ...[...tables].reverse().map((name) => `delete from ${quote(name)}`)]
        : [`truncate ${tables.map(quote).join(', ')}`]),
      ...tables.flatMap((name) => [
        ...(!replica && WRITTEN_BY_TRIGGERS.includes(name) ? [`delete from ${quote(name)}`] : []),
        `insert into ${quote(name)} select * from ${quote(this.schema)}.${quote(name)}`,
      ]),
      ...sequences.map(
        (q) => `select setval('${q.sequence.replace(/'/g, "''")}', coalesce((select max(${quote(q.column)}) from ${quote(q.table)}), 0) + 1, false)`,
      ),
    ].join(';\n');
  }

  protected async copyBack(db: Knex): Promise<void> {
    await db.transaction(async (trx) => {
      await trx.raw(this.script);
    });
  }

  async dispose(db: Knex): Promise<void> {
    if (this.schema) await db.raw(`drop schema if exists ${quote(this.schema)} cascade`);
  }
}

/** Tables ordered so each comes after the tables it references (self-references aside); the trigger-written ones last. */
function parentsFirst(names: string[], edges: { child: string; parent: string }[]): string[] {
  const out: string[] = [];
  const done = new Set<string>();
  const visit = (name: string, path: Set<string>) => {
    if (done.has(name) || path.has(name)) return;
    path.add(name);
    for (const e of edges) if (e.child === name && e.parent !== name && names.includes(e.parent)) visit(e.parent, path);
    path.delete(name);
    done.add(name);
    out.push(name);
  };
  for (const n of names) visit(n, new Set());
  return [...out.filter((n) => !WRITTEN_BY_TRIGGERS.includes(n)), ...out.filter((n) => WRITTEN_BY_TRIGGERS.includes(n))];
}

function quote(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
