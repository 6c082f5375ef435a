/**
 * A test context's database is a copy of one migrated once per run (test/support/templates.ts).
 * The copy must be what running the migrations gives: the same tables, columns, defaults,
 * indexes, constraints and triggers, and the same rows (the migrations' own and Knex's record
 * of them), on both stores.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { Client } from 'pg';
import { createKnex, migrateLatest } from '../../src/db/knex';
import { migrationSource } from '../../src/db/migrations';
import { createTestContext, describeEachDatabase, type TestContext } from '../support/context';

const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Every row of every table, by table (the migrations' timestamps in knex_migrations left out). */
async function rows(db: Knex, tables: string[]): Promise<Record<string, unknown[]>> {
  const out: Record<string, unknown[]> = {};
  for (const table of tables) {
    const all = (await db(table).select('*')) as Record<string, unknown>[];
    out[table] = all
      .map((r) => (table === 'knex_migrations' ? { name: r.name, batch: r.batch } : r))
      .sort((a, b) => (JSON.stringify(a) < JSON.stringify(b) ? -1 : 1));
  }
  return out;
}

/** The schema's description, with its own name written as `<schema>` so that two schemas compare. */
async function describeSchema(db: Knex, kind: string, schema?: string): Promise<{ objects: unknown[]; tables: string[] }> {
  if (kind === 'sqlite') {
    const objects = (await db.raw(`select type, name, tbl_name, sql from sqlite_master order by type, name`)) as { type: string; name: string }[];
    return { objects, tables: objects.filter((o) => o.type === 'table' && !o.name.startsWith('sqlite_')).map((o) => o.name) };
  }
  const ours = (text: unknown) => String(text).split(schema!).join('<schema>');
  const query = async (sql: string) =>
    ((await db.raw(sql, [schema!])) as { rows: Record<string, unknown>[] }).rows.map((r) =>
      Object.fromEntries(Object.entries(r).map(([k, v]) => [k, ours(v)])),
    );
  const columns = await query(
    `select table_name, column_name, ordinal_position, data_type, udt_name, is_nullable, column_default, character_maximum_length, is_identity, is_generated, generation_expression
       from information_schema.columns where table_schema = ? order by table_name, ordinal_position`,
  );
  const indexes = await query(`select tablename, indexname, indexdef from pg_indexes where schemaname = ? order by tablename, indexname`);
  const constraints = await query(
    `select c.conrelid::regclass::text as table_name, c.conname, c.contype, pg_get_constraintdef(c.oid) as def
       from pg_constraint c join pg_namespace n on n.oid = c.connamespace where n.nspname = ? order by 1, 2`,
  );
  const triggers = await query(
    `select event_object_table, trigger_name, event_manipulation, action_statement from information_schema.triggers where trigger_schema = ? order by 1, 2, 3`,
  );
  const sequences = await query(
    `select sequence_name, data_type, start_value, increment from information_schema.sequences where sequence_schema = ? order by 1`,
  );
  const functions = await query(
    `select p.proname, pg_get_functiondef(p.oid) as def from pg_proc p join pg_namespace n on n.oid = p.pronamespace where n.nspname = ? order by 1`,
  );
  const tables = (await db.raw(`select table_name from information_schema.tables where table_schema = ? and table_type = 'BASE TABLE' order by 1`, [
    schema!,
  ])) as {
    rows: { table_name: string }[];
  };
  return { objects: [columns, indexes, constraints, triggers, sequences, functions], tables: tables.rows.map((r) => r.table_name) };
}

describeEachDatabase('a test context copies a database migrated once', (ctx: () => TestContext) => {
  it('holds what running the migrations on an empty database gives', async () => {
    const { kind, schema } = ctx();
    const fresh = kind === 'sqlite' ? undefined : `t_fresh_${crypto.randomBytes(6).toString('hex')}`;
    const admin = fresh ? new Client({ connectionString: pgUrl }) : undefined;
    if (admin) {
      await admin.connect();
      await admin.query(`create schema ${fresh}`);
    }
    const migrated = createKnex(kind === 'sqlite' ? { kind, url: ':memory:' } : { kind, url: pgUrl, schema: fresh });
    try {
      await migrateLatest(migrated);
      const expected = await describeSchema(migrated, kind, fresh);
      const actual = await describeSchema(ctx().services.db, kind, schema);
      expect(actual.tables.length).toBeGreaterThan(30);
      expect(actual.tables).toEqual(expected.tables);
      expect(actual.objects).toEqual(expected.objects);
      expect(await rows(ctx().services.db, actual.tables)).toEqual(await rows(migrated, expected.tables));
      // Knex finds nothing left to run on the copy.
      const [, pending] = (await ctx().services.db.migrate.list({ migrationSource })) as [unknown[], unknown[]];
      expect(pending).toEqual([]);
    } finally {
      await migrated.destroy();
      if (admin) {
        await admin.query(`drop schema if exists ${fresh} cascade`);
        await admin.end();
      }
    }
  });

  it('is a copy of its own: what one context writes, the next does not see', async () => {
    const { org } = await ctx().givenAdmin();
    const other = await createTestContext(ctx().kind);
    try {
      expect(await other.services.db('organizations').where({ id: org.id }).first()).toBeUndefined();
      expect(await ctx().services.db('organizations').where({ id: org.id }).first()).toBeDefined();
    } finally {
      await other.close();
    }
  });
});
