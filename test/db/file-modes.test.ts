/**
 * Issue 13, item 7: what Windsock writes to disk is owner-only. The SQLite database (with env,
 * meta-data and job logs in it) and its -wal and -shm files are 0600 like `jwt-secret`, and a
 * DATA_DIR Windsock creates is 0700. On Postgres only DATA_DIR and the secret are on disk.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../src/config';
import { migrateLatest } from '../../src/db/knex';
import { createLogger } from '../../src/http/middleware/logger';
import { servicesFromConfig } from '../../src/services';
import { describeEachDatabase } from '../support/context';

const mode = (p: string) => fs.statSync(p).mode & 0o777;

describeEachDatabase('files on disk', null, (_get, kind) => {
  let root: string;
  beforeEach(() => {
    root = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-modes-'));
  });
  afterEach(() => fs.rmSync(root, { recursive: true, force: true }));

  it('creates DATA_DIR 0700 and the secret 0600, and on SQLite the database, -wal and -shm 0600', async () => {
    const dataDir = path.join(root, 'not', 'there', 'yet');
    const env: Record<string, string> = { DATA_DIR: dataDir };
    if (kind === 'postgres') env.DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
    const services = servicesFromConfig(loadConfig(env), createLogger('silent'));
    try {
      expect(mode(dataDir)).toBe(0o700);
      expect(mode(path.join(dataDir, 'jwt-secret'))).toBe(0o600);
      if (kind === 'sqlite') {
        const file = path.join(dataDir, 'windsock.sqlite3');
        await migrateLatest(services.db);
        await services.orgs.create({ slug: 'modes', name: 'Modes' });
        // While the connection is open, WAL mode keeps both side files.
        expect(fs.readdirSync(dataDir).sort()).toEqual(['jwt-secret', 'windsock.sqlite3', 'windsock.sqlite3-shm', 'windsock.sqlite3-wal']);
        for (const f of [file, `${file}-wal`, `${file}-shm`]) expect([f, mode(f)]).toEqual([f, 0o600]);
      }
    } finally {
      await services.db.destroy();
    }
  });

  (kind === 'sqlite' ? it : it.skip)('a DATABASE_URL file in a directory of its own: the directory 0700, the file 0600', async () => {
    const file = path.join(root, 'db', 'here.sqlite3');
    const services = servicesFromConfig(loadConfig({ DATA_DIR: path.join(root, 'data'), DATABASE_URL: file }), createLogger('silent'));
    try {
      await migrateLatest(services.db);
      expect(mode(path.dirname(file))).toBe(0o700);
      expect(mode(file)).toBe(0o600);
    } finally {
      await services.db.destroy();
    }
  });
});
