/**
 * What the CLI tests share: running `windsock` in-process with its output and exit code, and an
 * embedded SQLite database in a temporary data directory for the whole suite.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { failure, main } from '../../src/cli/main';

/** Runs `windsock <args>`: its exit code and what it printed (or the failure's text). */
export async function run(...args: string[]): Promise<{ code: number; text: string }> {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c) => (text += c));
  try {
    return { code: await main(args, out), text };
  } catch (err) {
    const f = failure(err);
    return { code: f.code, text: f.text };
  }
}

/** The suite runs on a fresh DATA_DIR (embedded SQLite, a generated secret, port 0), removed and the environment restored after. */
export function withTempDataDir(prefix: string): void {
  let dir: string;
  const saved = { ...process.env };
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
    process.env.DATA_DIR = dir;
    delete process.env.DATABASE_URL;
    delete process.env.JWT_SECRET;
    process.env.LOG_LEVEL = 'silent';
    process.env.PORT = '0';
  });
  afterAll(() => {
    process.env = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  });
}
