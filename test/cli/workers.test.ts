/**
 * `windsock serve --workers N|auto` (WINDSOCK_WORKERS, issue 31): what the setting resolves to on
 * each store, and the refusals a person meets before anything starts (exit 2, the reason named):
 * more than one process on SQLite (single-writer), or with the test controls (a clock per
 * process), or a value that is neither `auto` nor a whole number in range. The cluster itself is
 * exercised by test/faults/workers.test.ts on the compiled CLI.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { loadConfig, MAX_WORKERS } from '../../src/config';
import { run } from './support';

const PG = { DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/none' };
const SQLITE_REFUSAL = (n: number) =>
  `WINDSOCK_WORKERS=${n} needs Postgres: SQLite is single-writer, so it is served by one process; set DATABASE_URL to a postgres:// database for several workers, or use 1 (or auto)`;

describe('WINDSOCK_WORKERS', () => {
  it('is 1 unless set; a number on Postgres is that many; auto is the cores on Postgres and 1 on SQLite', () => {
    expect(loadConfig({}).workers).toBe(1);
    expect(loadConfig({ ...PG, WINDSOCK_WORKERS: '3' }).workers).toBe(3);
    expect(loadConfig({ ...PG, WINDSOCK_WORKERS: String(MAX_WORKERS) }).workers).toBe(MAX_WORKERS);
    expect(loadConfig({ ...PG, WINDSOCK_WORKERS: 'auto' }).workers).toBe(Math.min(MAX_WORKERS, os.availableParallelism()));
    expect(loadConfig({ WINDSOCK_WORKERS: 'auto' }).workers).toBe(1);
    expect(loadConfig({ WINDSOCK_WORKERS: '1' }).workers).toBe(1);
    expect(loadConfig({ WINDSOCK_EPHEMERAL: 'true', WINDSOCK_WORKERS: 'auto' }).workers).toBe(1);
    // The test controls' clock lives in one process: auto is 1 with them.
    expect(loadConfig({ ...PG, WINDSOCK_WORKERS: 'auto', WINDSOCK_TEST_CONTROLS: 'true' }).workers).toBe(1);
  });

  it('refuses more than one on SQLite, with the test controls, and anything but auto or 1 to the maximum', () => {
    expect(() => loadConfig({ WINDSOCK_WORKERS: '2' })).toThrow(SQLITE_REFUSAL(2));
    expect(() => loadConfig({ WINDSOCK_EPHEMERAL: 'true', WINDSOCK_WORKERS: '4' })).toThrow(SQLITE_REFUSAL(4));
    expect(() => loadConfig({ ...PG, WINDSOCK_WORKERS: '2', WINDSOCK_TEST_CONTROLS: 'true' })).toThrow(
      'WINDSOCK_WORKERS=2 cannot be used with WINDSOCK_TEST_CONTROLS: the test clock lives in one process; use 1 worker',
    );
    for (const bad of ['0', '-1', '1.5', 'two', 'AUTO', String(MAX_WORKERS + 1)]) {
      expect(() => loadConfig({ ...PG, WINDSOCK_WORKERS: bad })).toThrow(
        `WINDSOCK_WORKERS must be auto or a whole number from 1 to ${MAX_WORKERS}, got "${bad}"`,
      );
    }
  });
});

describe('windsock serve --workers', () => {
  const saved = { ...process.env };
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-cli-workers-'));
    process.env.DATA_DIR = dir;
    process.env.LOG_LEVEL = 'silent';
    process.env.PORT = '0';
    delete process.env.DATABASE_URL;
    delete process.env.WINDSOCK_WORKERS;
  });
  afterEach(() => {
    process.env = { ...saved };
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('--workers 2 on SQLite exits 2 with the reason, before anything is created', async () => {
    expect(await run('serve', '--workers', '2')).toEqual({ code: 2, text: `windsock: ${SQLITE_REFUSAL(2)}\n` });
    expect(process.env.WINDSOCK_WORKERS).toBe('2');
    expect(fs.readdirSync(dir)).toEqual([]);
  });

  it('a value that is not a count is refused as its variable is', async () => {
    expect(await run('serve', '--workers', 'many')).toEqual({
      code: 2,
      text: `windsock: WINDSOCK_WORKERS must be auto or a whole number from 1 to ${MAX_WORKERS}, got "many"\n`,
    });
  });

  it('--help names the flag and the setting it sets', async () => {
    const help = await run('serve', '--help');
    expect(help.code).toBe(0);
    expect(help.text).toMatch(/^ {2}--workers <N> +processes serving the port/m);
    expect(help.text).toMatch(/^ {2}--workers +WINDSOCK_WORKERS$/m);
  });
});
