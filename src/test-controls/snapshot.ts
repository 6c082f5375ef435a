/**
 * A copy of every table's rows, taken once after start (fixtures loaded, admin token made) and
 * written back by a reset in one transaction. Kept in the process's memory, so nothing is added
 * to the database's schema and a crash leaves nothing behind.
 *
 * - Postgres: each table is one JSON document (`json_agg`), written back by one
 *   `INSERT ... SELECT * FROM json_populate_recordset(null::t, $1)` per table after one
 *   `TRUNCATE` of them all: a round trip per table, the rows never cross the wire one by one.
 *   Tables are written parents first (foreign keys are checked per statement), and sequences
 *   (the outbox's) continue after the restored rows.
 * - SQLite: the rows as the driver returns them, written back by chunked multi-row inserts (no
 *   round trips: the database is in the process) with foreign keys checked at commit
 *   (`defer_foreign_keys`); `sqlite_sequence` is restored too.
 *
 * The outbox triggers fire while builds, jobs and agents are written back; the outbox's own
 * tables are written last, after clearing what the triggers queued, so a reset notifies no one.
 * The snapshot is a library-level copy of rows, not of the schema: it is taken after the
 * migrations and is valid for the life of the process.
 */
import type { Knex } from 'knex';
import { isPostgres } from '../db/knex';

/** Tables the outbox triggers write to: restored last (see the module header). */
const WRITTEN_BY_TRIGGERS = ['outbox_events'];

interface TableCopy {
  name: string;
  rows: number;
  /** Postgres: the rows as one JSON array; SQLite: the rows. */
  data: string | Record<string, unknown>[];
}

export interface RestoreResult {
  tables: number;
  rows: number;
}

export class Snapshot {
  constructor(
    private readonly tables: TableCopy[],
    private readonly sequences: { table: string; column: string; sequence: string }[],
  ) {}

  static async take(db: Knex): Promise<Snapshot> {
    return isPostgres(db) ? takePostgres(db) : takeSqlite(db);
  }

  async restore(db: Knex): Promise<RestoreResult> {
    if (isPostgres(db)) await this.restorePostgres(db);
    else await this.restoreSqlite(db);
    return { tables: this.tables.length, rows: this.tables.reduce((n, t) => n + t.rows, 0) };
  }

  private async restorePostgres(db: Knex): Promise<void> {
    await db.transaction(async (trx) => {
      await trx.raw(`truncate ${this.tables.map((t) => quote(t.name)).join(', ')}`);
      for (const t of this.tables) {
        if (WRITTEN_BY_TRIGGERS.includes(t.name)) await trx.raw(`delete from ${quote(t.name)}`);
        if (t.rows > 0)
          await trx.raw(`insert into ${quote(t.name)} select * from json_populate_recordset(null::${quote(t.name)}, ?::json)`, [t.data as string]);
      }
      for (const s of this.sequences) {
        await trx.raw(`select setval(?, coalesce((select max(${quote(s.column)}) from ${quote(s.table)}), 0) + 1, false)`, [s.sequence]);
      }
    });
  }

  private async restoreSqlite(db: Knex): Promise<void> {
    await db.transaction(async (trx) => {
      await trx.raw('pragma defer_foreign_keys = on');
      for (const t of this.tables) await trx.raw(`delete from ${quote(t.name)}`);
      for (const t of this.tables) {
        if (WRITTEN_BY_TRIGGERS.includes(t.name)) await trx.raw(`delete from ${quote(t.name)}`);
        const rows = t.data as Record<string, unknown>[];
        if (!rows.length) continue;
        // better-sqlite3 binds at most 32,766 variables per statement.
        const chunk = Math.max(1, Math.floor(30_000 / Object.keys(rows[0]!).length));
        for (let i = 0; i < rows.length; i += chunk) await trx(t.name).insert(rows.slice(i, i + chunk));
      }
    });
  }
}

async function takePostgres(db: Knex): Promise<Snapshot> {
  const names = (
    (await db.raw(`select tablename from pg_tables where schemaname = current_schema() and tablename not like 'knex_%'`)).rows as {
      tablename: string;
    }[]
  ).map((r) => r.tablename);
  const edges = (
    await db.raw(`select conrelid::regclass::text as child, confrelid::regclass::text as parent from pg_constraint
      where contype = 'f' and connamespace = current_schema()::regnamespace`)
  ).rows as { child: string; parent: string }[];
  const ordered = parentsFirst(names, edges);
  const tables: TableCopy[] = [];
  for (const name of ordered) {
    const row = (await db.raw(`select count(*)::int as n, coalesce(json_agg(t), '[]'::json)::text as data from ${quote(name)} t`)).rows[0] as {
      n: number;
      data: string;
    };
    tables.push({ name, rows: row.n, data: row.data });
  }
  const sequences = (
    await db.raw(`select table_name as table, column_name as column, pg_get_serial_sequence(quote_ident(table_name), column_name) as sequence
      from information_schema.columns where table_schema = current_schema() and column_default like 'nextval%' and table_name not like 'knex_%'`)
  ).rows as { table: string; column: string; sequence: string }[];
  return new Snapshot(tables, sequences);
}

async function takeSqlite(db: Knex): Promise<Snapshot> {
  const names = (
    (await db.raw(`select name from sqlite_master where type = 'table' and name not like 'knex_%' and name not like 'sqlite_%'`)) as { name: string }[]
  ).map((r) => r.name);
  const hasSequence = ((await db.raw(`select count(*) as n from sqlite_master where name = 'sqlite_sequence'`)) as { n: number }[])[0]!.n > 0;
  if (hasSequence) names.push('sqlite_sequence');
  const ordered = [...names.filter((n) => !WRITTEN_BY_TRIGGERS.includes(n)), ...names.filter((n) => WRITTEN_BY_TRIGGERS.includes(n))];
  const tables: TableCopy[] = [];
  for (const name of ordered) {
    const rows = (await db.raw(`select * from ${quote(name)}`)) as Record<string, unknown>[];
    tables.push({ name, rows: rows.length, data: rows });
  }
  return new Snapshot(tables, []);
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
