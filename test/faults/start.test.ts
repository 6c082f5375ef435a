/**
 * Starting `windsock serve` as a process (issue 18): a port that is taken ends the process at once
 * with exit 1 and a reason, before anything is created, so the first-start token is made by the
 * start that can serve; the token goes to the terminal (stderr when stdout is a pipe), never into
 * the JSON log lines, and into a 0600 file beside the embedded database that a restart points to.
 * `--ephemeral` (WINDSOCK_EPHEMERAL) serves from memory and leaves nothing behind.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { MAIN, ROOT } from './support';

interface Started {
  stdout: () => string;
  stderr: () => string;
  /** The exit code, or the signal that ended the process. */
  exited: Promise<number | NodeJS.Signals | null>;
  kill: () => void;
}

function serve(env: Record<string, string>, cwd = ROOT): Started {
  const proc = spawn(process.execPath, [MAIN, 'serve'], {
    cwd,
    env: { PATH: process.env.PATH, HOST: '127.0.0.1', PORT: '0', LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => proc.once('exit', (code, signal) => resolve(code ?? signal)));
  return { stdout: () => out, stderr: () => err, exited, kill: () => proc.kill('SIGTERM') };
}

/** The URL once the process logs that it listens, and what it prints on stderr by then (the two pipes may be read in either order). */
async function listening(s: Started, stderr: RegExp): Promise<string> {
  for (;;) {
    const url = /"url":"(http:[^"]+)"[^\n]*"msg":"windsock listening"/.exec(s.stdout())?.[1];
    if (url && stderr.test(s.stderr())) return url;
    const code = await Promise.race([s.exited, new Promise<'running'>((resolve) => setTimeout(() => resolve('running'), 20))]);
    if (code !== 'running') throw new Error(`exited ${code} before listening:\n${s.stdout()}${s.stderr()}`);
  }
}

const tokenIn = (text: string) => /^ {2}(eyJ\S+)$/m.exec(text)?.[1];

async function stop(s: Started): Promise<number | NodeJS.Signals | null> {
  s.kill();
  return s.exited;
}

describe('windsock serve: first start', () => {
  let dir: string;
  let blocker: net.Server;
  let busyPort: number;

  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-start-'));
    blocker = net.createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    busyPort = (blocker.address() as net.AddressInfo).port;
  });
  afterAll(async () => {
    await new Promise((resolve) => blocker.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('a port in use: exit 1 at once with the reason, and no token is made for nobody', async () => {
    const s = serve({ DATA_DIR: dir, PORT: String(busyPort) });
    expect(await s.exited).toBe(1);
    expect(s.stderr()).toContain(`windsock: cannot listen on 127.0.0.1:${busyPort}: port ${busyPort} is in use by another process`);
    expect(tokenIn(s.stdout() + s.stderr())).toBeUndefined();
    expect(fs.existsSync(path.join(dir, 'first-start-token.txt'))).toBe(false);
  });

  it('a bad fixture file or a short admin token: exit 2 (a configuration error, as documented) with the reason, and nothing made', async () => {
    const fixtures = path.join(dir, 'bad-fixtures.yaml');
    fs.writeFileSync(fixtures, 'organizations:\n  - { slug: Not A Slug }\n');
    const bad = serve({ DATA_DIR: path.join(dir, 'bad-fixture'), WINDSOCK_FIXTURES: fixtures });
    expect(await bad.exited).toBe(2);
    expect(bad.stderr()).toContain(fixtures);
    const short = serve({ DATA_DIR: path.join(dir, 'short-token'), WINDSOCK_ADMIN_TOKEN: 'short' });
    expect(await short.exited).toBe(2);
    expect(short.stderr()).toMatch(/^windsock: WINDSOCK_ADMIN_TOKEN /m);
    for (const s of [bad, short]) expect(tokenIn(s.stdout() + s.stderr())).toBeUndefined();
  });

  it('the start that listens makes the token: on stderr (stdout is a pipe), not in the log lines, kept in a 0600 file', async () => {
    const s = serve({ DATA_DIR: dir });
    const url = await listening(s, /kept in/);
    const token = tokenIn(s.stderr());
    expect(token).toBeDefined();
    expect(s.stderr()).toContain(`curl -H "Authorization: Bearer ${token}" ${url}/v2/organizations/default/pipelines`);
    // stdout is the JSON log stream: every line parses, none holds the token.
    const lines = s.stdout().trim().split('\n');
    for (const line of lines) expect(() => JSON.parse(line)).not.toThrow();
    expect(s.stdout()).not.toContain(token!.slice(-20));

    const file = path.join(dir, 'first-start-token.txt');
    expect(fs.readFileSync(file, 'utf8')).toBe(`${token}\n`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(s.stderr()).toContain(`The token is also kept in ${file}`);

    const me = await fetch(`${url}/v2/access-token`, { headers: { Authorization: `Bearer ${token}` } });
    expect(me.status).toBe(200);
    expect(await stop(s)).toBe(0);

    // A restart shows where the token is kept, never the token.
    const again = serve({ DATA_DIR: dir });
    await listening(again, /made on first start is in/);
    expect(again.stderr()).toContain(`The token made on first start is in ${file}`);
    expect(tokenIn(again.stdout() + again.stderr())).toBeUndefined();
    expect(await stop(again)).toBe(0);
  });
});

describe('windsock serve --ephemeral (WINDSOCK_EPHEMERAL=true)', () => {
  it('serves from memory: a working token, nothing written where it runs, nothing left in the temp directory', async () => {
    const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-ephemeral-cwd-'));
    const ephemeralDirs = () => fs.readdirSync(os.tmpdir()).filter((f) => f.startsWith('windsock-ephemeral-') && !f.startsWith('windsock-ephemeral-cwd-'));
    const before = new Set(ephemeralDirs());
    try {
      const s = serve({ WINDSOCK_EPHEMERAL: 'true' }, cwd);
      const url = await listening(s, /^ {2}eyJ/m);
      expect(s.stdout()).toContain('"ephemeral":true');
      const token = tokenIn(s.stderr());
      const res = await fetch(`${url}/v2/organizations/default/pipelines`, { headers: { Authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
      // No token file: the database it belongs to goes with the process.
      expect(s.stderr()).not.toContain('also kept in');
      expect(await stop(s)).toBe(0);
      expect(fs.readdirSync(cwd)).toEqual([]);
      expect(ephemeralDirs().filter((f) => !before.has(f))).toEqual([]);
    } finally {
      fs.rmSync(cwd, { recursive: true, force: true });
    }
  });
});
