/**
 * Issue 13 item 4: on a SQLite file the service's commits never checkpoint the WAL themselves
 * (a commit that did took the event loop for ~100 ms on a 50 MB upload); a worker thread does,
 * with its own connection. These check the behaviour, not its timing: autocheckpoint is off on
 * the service's connection, what it writes reaches the database file without it checkpointing,
 * and closing leaves no WAL behind. (`:memory:` databases have no WAL and no worker.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { createKnex, nextCheckpointRound } from '../../src/db/knex';
import { WalCheckpointer } from '../../src/db/checkpointer';
import type { Knex } from 'knex';

const MiB = 1024 * 1024;

/** Waits for the checkpointer's rounds (not for time) until `check` holds: at most `rounds` of them. */
async function afterRounds(db: Knex, check: () => boolean, what: string, rounds = 40): Promise<void> {
  for (let i = 0; i < rounds && !check(); i++) await nextCheckpointRound(db);
  if (!check()) throw new Error(`not after ${rounds} checkpoint rounds: ${what}`);
}

describe('WAL checkpoints of a SQLite file', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-wal-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it("never happen in the connection's own commits once the worker has taken them over", async () => {
    // The worker's first round is an hour away, so nothing but the commits themselves could
    // checkpoint here (with the service's interval, a round could land between two commits and
    // start the WAL over, as it once did on a slow machine).
    const file = path.join(dir, 'db.sqlite3');
    const conn = new Database(file);
    conn.pragma('journal_mode = WAL');
    const checkpointer = new WalCheckpointer(conn, file, 60 * 60 * 1000);
    try {
      expect(conn.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
      conn.exec('create table blobs (b blob)');
      // 8 MiB in 8 commits: 2,000 pages, twice what would make a commit checkpoint by default.
      const insert = conn.prepare('insert into blobs values (randomblob(?))');
      for (let i = 0; i < 8; i++) insert.run(MiB);
      expect(fs.statSync(`${file}-wal`).size).toBeGreaterThan(8 * MiB);
      expect(fs.statSync(file).size).toBeLessThan(MiB);
    } finally {
      await checkpointer.stop();
      conn.close();
    }
  });

  it('are left to the worker: the connection has autocheckpoint off, its writes reach the database file, and closing leaves no WAL', async () => {
    const file = path.join(dir, 'db.sqlite3');
    const db = createKnex({ kind: 'sqlite', url: file });
    let written = 0;
    try {
      expect(await db.raw('pragma wal_autocheckpoint')).toEqual([{ wal_autocheckpoint: 0 }]);
      await db.raw('create table blobs (b blob)');
      for (let i = 0; i < 8; i++) await db.raw('insert into blobs values (randomblob(?))', [MiB]);
      written = 8;
      await afterRounds(db, () => fs.statSync(file).size >= 8 * MiB, 'the worker copies the WAL into the database file');
      // A write after a complete checkpoint starts the WAL over instead of growing it. The
      // worker's checkpoint may still be finishing when the file has its pages (the WAL is
      // reused only once every frame is marked copied), so the write is tried again after the
      // worker's next round; it must start the WAL over within a few rounds.
      let restarted = false;
      for (let round = 0; round < 5 && !restarted; round++) {
        await nextCheckpointRound(db);
        const walBefore = fs.statSync(`${file}-wal`).size;
        for (let i = 0; i < 4; i++) await db.raw('insert into blobs values (randomblob(?))', [MiB / 2]);
        written += 4;
        restarted = fs.statSync(`${file}-wal`).size <= walBefore;
      }
      expect(restarted).toBe(true);
    } finally {
      await db.destroy();
    }
    expect(fs.existsSync(`${file}-wal`)).toBe(false);
    const reopened = createKnex({ kind: 'sqlite', url: file });
    try {
      expect(await reopened('blobs').count({ n: '*' })).toEqual([{ n: written }]);
    } finally {
      await reopened.destroy();
    }
  });

  it('keeps nothing for an in-memory database: autocheckpoint as SQLite has it', async () => {
    const db = createKnex({ kind: 'sqlite', url: ':memory:' });
    try {
      expect(await db.raw('pragma wal_autocheckpoint')).toEqual([{ wal_autocheckpoint: 1000 }]);
    } finally {
      await db.destroy();
    }
  });
});
