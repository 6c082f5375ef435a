/**
 * What the CLI tests share: running `windsock` in-process with its output and exit code, and an
 * embedded SQLite database in a temporary data directory for the whole suite.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import knexFactory from 'knex';
import { failure, main } from '../../src/cli/main';
import type { DatabaseKind } from '../../src/db/knex';

/** Runs `windsock <args>`: its exit code, what it printed to stdout and to stderr (a failure's text last, as the process prints it). */
export async function runCaptured(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const streams = { out: new PassThrough(), err: new PassThrough() };
  const text = { out: '', err: '' };
  streams.out.on('data', (c) => (text.out += c));
  streams.err.on('data', (c) => (text.err += c));
  try {
    return { code: await main(args, streams.out, streams.err), ...text };
  } catch (err) {
    const f = failure(err);
    return { code: f.code, out: text.out, err: text.err + f.text };
  }
}

/** Runs `windsock <args>`: its exit code and what it printed (or the failure's text). */
export async function run(...args: string[]): Promise<{ code: number; text: string }> {
  const r = await runCaptured(...args);
  return { code: r.code, text: r.code === 0 ? r.out : r.err.replace(/^windsock: using .*\n/, '') };
}

/** The suite runs on embedded SQLite in a fresh DATA_DIR whose database `windsock migrate` made, removed after. */
export function withTempDataDir(prefix: string): void {
  withStore('sqlite', prefix);
}

/**
 * The suite's database as the CLI finds it from the environment: SQLite in a temporary DATA_DIR,
 * or a Postgres database of its own (the CLI uses the default schema of what DATABASE_URL names),
 * dropped after. `migrate`: made by `windsock migrate` first (otherwise there is none yet).
 * Answers the data dir and, on Postgres, the database's URL (with a password the server ignores).
 */
export function withStore(
  kind: DatabaseKind,
  prefix: string,
  opts: { migrate: boolean } = { migrate: true },
): { dir: () => string; url: () => string | undefined } {
  const saved = { ...process.env };
  let dir = '';
  let url: string | undefined;
  let drop = async (): Promise<void> => undefined;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    process.env.DATA_DIR = dir;
    process.env.LOG_LEVEL = 'silent';
    process.env.PORT = '0';
    process.env.JWT_SECRET = crypto.randomBytes(32).toString('hex');
    delete process.env.DATABASE_URL;
    if (kind === 'postgres') {
      const pgUrl = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
      const name = `cli_${crypto.randomBytes(6).toString('hex')}`;
      const admin = knexFactory({ client: 'pg', connection: pgUrl, pool: { min: 0, max: 1 } });
      await admin.raw(`create database ${name}`);
      await admin.destroy();
      const u = new URL(pgUrl);
      u.pathname = `/${name}`;
      u.password = 'never-printed';
      url = u.toString();
      process.env.DATABASE_URL = url;
      drop = async () => {
        const a = knexFactory({ client: 'pg', connection: pgUrl, pool: { min: 0, max: 1 } });
        await a.raw(`drop database if exists ${name} with (force)`);
        await a.destroy();
      };
    }
    if (opts.migrate) expect(await run('migrate')).toEqual({ code: 0, text: 'migrations applied\n' });
  });
  afterAll(async () => {
    process.env = saved;
    await drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  return { dir: () => dir, url: () => url };
}
