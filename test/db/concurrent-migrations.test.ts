/**
 * Several processes starting at once on one empty Postgres database (instances behind a load
 * balancer, issue 31) all migrate it: one at a time under an advisory lock (src/db/knex.ts,
 * migrateLatest), so none fails on knex's bookkeeping tables the others are creating, and every
 * migration is applied once. A process that waits too long for another's lock gives up with a
 * message saying so. Postgres only: a SQLite file has one writer and is served by one process.
 */
import crypto from 'node:crypto';
import { Client } from 'pg';
import { createKnex, migrateLatest } from '../../src/db/knex';
import { migrationSource } from '../../src/db/migrations';
import { databases } from '../support/context';

const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

(databases.includes('postgres') ? describe : describe.skip)('migrations started by several processes at once (postgres)', () => {
  let admin: Client;
  let schema: string;

  beforeEach(async () => {
    schema = `t_concurrent_${crypto.randomBytes(6).toString('hex')}`;
    admin = new Client({ connectionString: pgUrl });
    await admin.connect();
    await admin.query(`create schema ${schema}`);
  });
  afterEach(async () => {
    await admin.query(`drop schema if exists ${schema} cascade`);
    await admin.end();
  });

  it('three at once on an empty database: all succeed, each migration applied once, in one batch', async () => {
    const handles = [0, 1, 2].map(() => createKnex({ kind: 'postgres', url: pgUrl, schema }));
    try {
      const outcomes = await Promise.allSettled(handles.map((db) => migrateLatest(db)));
      expect(outcomes.filter((o) => o.status === 'rejected')).toEqual([]);
      const applied = await handles[0]!('knex_migrations').select('name', 'batch').orderBy('id');
      const all = (await migrationSource.getMigrations([])).map((m) => migrationSource.getMigrationName(m));
      expect(applied.map((r) => r.name)).toEqual(all);
      expect(new Set(applied.map((r) => Number(r.batch)))).toEqual(new Set([1]));
      // The lock is free again: a later start finds nothing to do at once.
      await migrateLatest(handles[1]!, 1_000);
      expect(await handles[0]!('knex_migrations').count<{ n: string }[]>({ n: '*' })).toEqual([{ n: String(all.length) }]);
    } finally {
      await Promise.all(handles.map((db) => db.destroy()));
    }
  });

  it('waits for a process that holds the lock, and gives up with a message past the wait', async () => {
    const db = createKnex({ kind: 'postgres', url: pgUrl, schema });
    const holder = new Client({ connectionString: pgUrl });
    await holder.connect();
    try {
      await holder.query(`set search_path to ${schema}`);
      await holder.query(`select pg_advisory_lock(hashtext('windsock migrations ' || current_schema()))`);
      await expect(migrateLatest(db, 1_000)).rejects.toThrow('another process has been migrating this database for more than 1 s: not waiting longer');
      expect(await db.schema.hasTable('knex_migrations')).toBe(false);
      // Released (the holder's session ends, as when its process dies): the next start migrates.
      await holder.end();
      await migrateLatest(db, 5_000);
      expect(await db.schema.hasTable('knex_migrations')).toBe(true);
    } finally {
      await holder.end().catch(() => undefined);
      await db.destroy();
    }
  });
});
