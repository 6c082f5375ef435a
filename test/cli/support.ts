/**
 * What the CLI tests share: running `windsock` in-process with its output and exit code, and an
 * embedded SQLite database in a temporary data directory for the whole suite.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { failure, main } from '../../src/cli/main';

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

/** Sets DATA_DIR (embedded SQLite, a generated secret, port 0) for the suite, restoring the environment after. */
export function useDataDir(dir: () => string): void {
  const saved = { ...process.env };
  beforeAll(() => {
    process.env.DATA_DIR = dir();
    delete process.env.DATABASE_URL;
    delete process.env.JWT_SECRET;
    process.env.LOG_LEVEL = 'silent';
    process.env.PORT = '0';
  });
  afterAll(() => {
    process.env = saved;
  });
}

/** The suite runs on a fresh DATA_DIR whose database `windsock migrate` made, removed after. */
export function withTempDataDir(prefix: string): void {
  let dir = '';
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  });
  useDataDir(() => dir);
  beforeAll(async () => {
    expect(await run('migrate')).toEqual({ code: 0, text: 'migrations applied\n' });
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });
}
