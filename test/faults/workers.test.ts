/**
 * `windsock serve --workers N` (issue 31): the compiled CLI as a node:cluster primary on Postgres.
 * Both workers serve the one port (their request lines name their pids), a worker killed with
 * SIGKILL is replaced while the other keeps answering, and SIGTERM to the primary drains every
 * worker and exits 0; workers killed in a loop make it give up with exit 1. On SQLite the flag is
 * refused with exit 2 before anything starts.
 * Postgres only: without it the test is skipped with a warning, and fails under CI=true.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { databases } from '../support/context';
import { freshStore, itRequiring, JWT_SECRET, MAIN, ROOT, sleep, type Store } from './support';

interface Cluster {
  proc: ChildProcess;
  /** stdout: the JSON log lines of the primary and its workers. */
  out: () => string;
  err: () => string;
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function serve(args: string[], env: Record<string, string>): Cluster {
  const proc = spawn(process.execPath, [MAIN, 'serve', ...args], {
    cwd: ROOT,
    env: {
      PATH: process.env.PATH,
      HOST: '127.0.0.1',
      PORT: '0',
      LOG_LEVEL: 'info',
      JWT_SECRET,
      RATE_LIMIT_PER_MINUTE: '1000000000',
      RATE_LIMIT_PER_USER_PER_MINUTE: '1000000000',
      ...env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout!.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr!.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    proc.once('exit', (code, signal) => resolve({ code, signal })),
  );
  return { proc, out: () => out, err: () => err, exited };
}

/** Every JSON log line printed so far. */
function lines(c: Cluster): Record<string, unknown>[] {
  return c
    .out()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** Waits until `pick` finds what it looks for in the log lines (or the process exits, or 30 s pass). */
async function until<T>(c: Cluster, what: string, pick: (ls: Record<string, unknown>[]) => T | undefined): Promise<T> {
  const deadline = Date.now() + 30_000;
  for (;;) {
    const found = pick(lines(c));
    if (found !== undefined) return found;
    if (c.proc.exitCode !== null || c.proc.signalCode !== null) throw new Error(`exited before ${what}:\n${c.out()}${c.err()}`);
    if (Date.now() > deadline) throw new Error(`no ${what} in 30 s:\n${c.out()}${c.err()}`);
    await sleep(50);
  }
}

/** The primary's "worker listening" lines: the pid of each worker that listens, in order. */
const listeningPids = (ls: Record<string, unknown>[]) => ls.filter((l) => l.primary === true && l.msg === 'worker listening').map((l) => l.workerPid as number);

/** GET /healthz on a connection of its own (so the primary hands each one to a worker in turn). */
function health(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.get(`${url}/healthz`, { agent: false, timeout: 10_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.on('timeout', () => req.destroy(new Error('timed out')));
  });
}

/** The pids whose request lines answered /healthz, from the log line index `from` on. */
function answeringPids(c: Cluster, from: number): Set<number> {
  return new Set(
    lines(c)
      .slice(from)
      .filter((l) => l.msg === 'request' && l.path === '/healthz' && l.status === 200)
      .map((l) => l.pid as number),
  );
}

/** The processes whose parent is `ppid` (Linux /proc). */
function childrenOf(ppid: number): number[] {
  const pids: number[] = [];
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, 'utf8');
      // pid (comm) state ppid ...: comm may hold spaces, so read after its closing parenthesis.
      const [state, parent] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(parent) === ppid && state !== 'Z') pids.push(Number(name));
    } catch {
      // exited meanwhile
    }
  }
  return pids;
}

const postgresMissing = databases.includes('postgres') ? undefined : 'Postgres (TEST_DATABASES does not name it): the --workers fault test';

describe('windsock serve --workers', () => {
  let store: Store | undefined;
  let running: Cluster | undefined;

  afterEach(async () => {
    if (running && running.proc.exitCode === null && running.proc.signalCode === null) {
      running.proc.kill('SIGKILL');
      await running.exited;
      // Workers left without their primary drain and exit on their own (the IPC channel closed).
    }
    running = undefined;
    await store?.drop();
    store = undefined;
  });

  itRequiring(postgresMissing)('2 workers on Postgres: both serve, a killed one is replaced, SIGTERM drains them and exits 0', async () => {
    store = await freshStore('postgres');
    const c = (running = serve(['--workers', '2'], store.env));
    const first = await until(c, 'two workers listening', (ls) => (listeningPids(ls).length >= 2 ? listeningPids(ls) : undefined));
    const url = await until(c, 'the URL', (ls) => ls.find((l) => l.msg === 'windsock listening')?.url as string | undefined);
    expect(new Set(first).size).toBe(2);
    expect(first).not.toContain(c.proc.pid);
    // The first start's token is printed once, by worker 1 (it starts alone, then the others).
    expect(c.err().match(/^ {2}eyJ\S+$/gm)).toHaveLength(1);

    // Each connection goes to a worker in turn: both answer.
    let mark = lines(c).length;
    for (let i = 0; i < 8; i++) expect(await health(url)).toBe(200);
    await until(c, 'request lines of both workers', () => (answeringPids(c, mark).size === 2 ? true : undefined));
    expect([...answeringPids(c, mark)].sort()).toEqual([...first].sort());

    // SIGKILL one: requests are still served meanwhile, and the primary starts another in its place.
    const [victim, survivor] = first as [number, number];
    process.kill(victim, 'SIGKILL');
    await until(c, 'the replacement notice', (ls) => ls.find((l) => l.msg === 'worker exited unexpectedly: starting another' && l.workerPid === victim));
    for (let i = 0; i < 4; i++) expect(await health(url)).toBe(200);
    const replacement = await until(c, 'a third worker listening', (ls) => listeningPids(ls)[2]);
    expect([victim, survivor]).not.toContain(replacement);
    mark = lines(c).length;
    for (let i = 0; i < 8; i++) expect(await health(url)).toBe(200);
    await until(c, 'request lines of the survivor and the replacement', () => (answeringPids(c, mark).size === 2 ? true : undefined));
    expect([...answeringPids(c, mark)].sort()).toEqual([survivor, replacement].sort());

    // SIGTERM to the primary: every worker drains, then the primary exits 0, well within the deadline.
    const stopped = Date.now();
    c.proc.kill('SIGTERM');
    expect(await c.exited).toEqual({ code: 0, signal: null });
    expect(Date.now() - stopped).toBeLessThan(10_000);
    const exits = lines(c).filter((l) => l.primary === true && l.msg === 'worker exited');
    expect(exits.map((l) => [l.workerPid, l.code]).sort()).toEqual(
      [
        [survivor, 0],
        [replacement, 0],
      ].sort(),
    );
    expect(lines(c).filter((l) => l.msg === 'all workers exited')).toEqual([expect.objectContaining({ exitCode: 0 })]);
    for (const pid of [survivor, replacement]) expect(() => process.kill(pid, 0)).toThrow();
  });

  itRequiring(postgresMissing)('a crash loop: more than N replacements within 10 s and the primary stops the rest and exits 1', async () => {
    store = await freshStore('postgres');
    const c = (running = serve(['--workers', '2'], store.env));
    await until(c, 'two workers listening', (ls) => (listeningPids(ls).length >= 2 ? true : undefined));
    // Every child of the primary killed as soon as it is there, three rounds: 2 + replacements.
    const killed = new Set<number>();
    const deadline = Date.now() + 9_000;
    while (c.proc.exitCode === null && Date.now() < deadline) {
      for (const pid of childrenOf(c.proc.pid!)) {
        if (killed.has(pid)) continue;
        killed.add(pid);
        process.kill(pid, 'SIGKILL');
      }
      await sleep(50);
    }
    expect(await c.exited).toEqual({ code: 1, signal: null });
    expect(killed.size).toBeGreaterThanOrEqual(3);
    const loop = lines(c).find((l) => typeof l.msg === 'string' && l.msg.startsWith('workers keep exiting: 3 replacements in 10 s, more than the 2 allowed'));
    expect(loop).toMatchObject({ primary: true, level: 50, restarts: 3, windowMs: 10_000 });
    expect(lines(c).filter((l) => l.msg === 'worker exited unexpectedly: starting another')).toHaveLength(2);
    expect(childrenOf(c.proc.pid!)).toEqual([]);
  });

  it('on SQLite, --workers 2 is refused at start: exit 2, the reason named, nothing created', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-workers-'));
    try {
      const c = serve(['--workers', '2'], { DATA_DIR: dir });
      expect(await c.exited).toEqual({ code: 2, signal: null });
      expect(c.err()).toBe(
        'windsock: WINDSOCK_WORKERS=2 needs Postgres: SQLite is single-writer, so it is served by one process; set DATABASE_URL to a postgres:// database for several workers, or use 1 (or auto)\n',
      );
      expect(c.out()).toBe('');
      expect(fs.readdirSync(dir)).toEqual([]);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
