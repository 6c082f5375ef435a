/**
 * Issue 7, item 10: the database goes away under load and comes back.
 *
 * Postgres: a throwaway cluster of the test's own (initdb + pg_ctl on a free port), the service
 * on it under a mixed read/write load, the cluster stopped with `-m immediate`, then started
 * again. SQLite: another process holds the write lock (`BEGIN EXCLUSIVE`) on the service's file,
 * then releases it. Meanwhile every answer comes within 5 s and is a 2xx or a 503 with
 * Retry-After, never a 401, a 500 or a hang, and the service recovers without a restart.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { databases } from '../support/context';
import { api, freshStore, itRequiring, PIPELINE, ROOT, sleep, startService, stopService, type Service, type Store } from './support';

const WORKERS = 6;
const ANSWER_WITHIN_MS = 5000;

interface Sample {
  op: string;
  status: number | string;
  ms: number;
  retryAfter: string | null;
}

/** Runs a mixed load for `ms` and returns every answer (a refused or timed-out request is a string status). */
async function load(url: string, token: string, builds: string, ms: number): Promise<Sample[]> {
  const samples: Sample[] = [];
  const until = Date.now() + ms;
  const ops: [string, string, string, unknown?][] = [
    ['list builds', 'GET', `${builds}?per_page=10`],
    ['create build', 'POST', builds, { commit: 'HEAD', branch: 'main', message: 'under load' }],
    ['get pipeline', 'GET', builds.replace(/\/builds$/, '')],
    ['list pipelines', 'GET', '/v2/organizations/default/pipelines'],
  ];
  await Promise.all(
    Array.from({ length: WORKERS }, async (_, w) => {
      for (let i = w; Date.now() < until; i++) {
        const [op, method, p, body] = ops[i % ops.length]!;
        const start = Date.now();
        try {
          const res = await api(url, token, method, p, body);
          samples.push({ op, status: res.status, ms: Date.now() - start, retryAfter: res.headers.get('retry-after') });
        } catch (err) {
          samples.push({
            op,
            status: String((err as { cause?: { code?: string } }).cause?.code ?? (err as Error).name),
            ms: Date.now() - start,
            retryAfter: null,
          });
        }
      }
    }),
  );
  return samples;
}

function summary(samples: Sample[]) {
  const byStatus: Record<string, number> = {};
  for (const s of samples) byStatus[s.status] = (byStatus[s.status] ?? 0) + 1;
  return { requests: samples.length, byStatus, maxMs: Math.max(0, ...samples.map((s) => s.ms)) };
}

/** During the outage: 2xx (reads that need no write), or 503 with Retry-After; always within 5 s; writes fail. */
function expectOutageAnswers(samples: Sample[]) {
  for (const s of samples) {
    expect({ ...s, within: s.ms < ANSWER_WITHIN_MS }).toMatchObject({ within: true });
    if (s.status === 503) expect(s).toMatchObject({ retryAfter: '5' });
    expect([200, 201, 503]).toContain(s.status);
    if (s.op === 'create build') expect(s.status).toBe(503);
  }
  expect(samples.filter((s) => s.status === 503).length).toBeGreaterThan(0);
}

/** Waits until a write succeeds again (the service was not restarted), then expects a clean second of load. */
async function expectRecovery(url: string, token: string, builds: string) {
  const since = Date.now();
  for (;;) {
    const res = await api(url, token, 'POST', builds, { commit: 'HEAD', branch: 'main', message: 'recovered?' }).catch(() => undefined);
    if (res?.status === 201) break;
    if (Date.now() - since > 15_000) throw new Error(`no recovery in 15 s: last answer ${res?.status}`);
    await sleep(100);
  }
  const recoveredMs = Date.now() - since;
  const after = await load(url, token, builds, 1000);
  for (const s of after) expect([200, 201]).toContain(s.status);
  return { recoveredMs, after: summary(after) };
}

interface LogLine {
  level: number;
  msg: string;
  status?: number;
  err?: unknown;
  stack?: unknown;
}

/**
 * Issue 13, item 7: the outage is logged once at error level and its end once at info level;
 * each request answered 503 meanwhile at most at warn, never with a stack.
 */
function expectOutageLoggedOnce(output: string, refused: number) {
  const lines = output
    .split('\n')
    .filter((l) => l.startsWith('{"level":'))
    .map((l) => JSON.parse(l) as LogLine);
  const errors = lines.filter((l) => l.level >= 50);
  expect(errors.map((l) => l.msg)).toEqual(['database unavailable: requests that need it answer 503 until it is back']);
  expect(lines.filter((l) => l.msg === 'database available again').map((l) => l.level)).toEqual([30]);
  const requestLines = lines.filter((l) => l.status === 503);
  expect(requestLines.length).toBeGreaterThanOrEqual(refused);
  for (const l of requestLines) expect(l).toMatchObject({ level: 40, msg: 'request refused' });
  for (const l of lines) expect(JSON.stringify(l)).not.toContain('"stack"');
  return { logLines: lines.length, errorLines: errors.length, refusedLines: requestLines.length };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as net.AddressInfo).port;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** A Postgres cluster of the test's own, run as the current user (or `postgres` when root: initdb refuses root). */
class Cluster {
  dir = '';
  port = 0;
  private readonly bin = (fs.existsSync('/usr/lib/postgresql') ? fs.readdirSync('/usr/lib/postgresql').sort().reverse() : [])
    .map((v) => `/usr/lib/postgresql/${v}/bin`)
    .find((b) => fs.existsSync(`${b}/initdb`));

  available(): boolean {
    return this.bin !== undefined;
  }

  private run(tool: string, args: string[]) {
    const asRoot = process.getuid?.() === 0;
    const [cmd, argv] = asRoot ? ['runuser', ['-u', 'postgres', '--', `${this.bin}/${tool}`, ...args]] : [`${this.bin}/${tool}`, args];
    execFileSync(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'], cwd: this.dir });
  }

  async init() {
    this.dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-pg-'));
    if (process.getuid?.() === 0) execFileSync('chown', ['postgres', this.dir]);
    this.port = await freePort();
    this.run('initdb', ['-D', `${this.dir}/data`, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  }

  start() {
    this.run('pg_ctl', [
      '-D',
      `${this.dir}/data`,
      '-l',
      `${this.dir}/log`,
      '-w',
      '-o',
      `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off`,
      'start',
    ]);
  }

  stop(mode: 'immediate' | 'fast') {
    this.run('pg_ctl', ['-D', `${this.dir}/data`, '-m', mode, '-w', 'stop']);
  }

  destroy() {
    if (!this.dir) return;
    try {
      this.stop('immediate');
    } catch {
      // not running
    }
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

/** Another process holding SQLite's write lock until told to release it. */
class Locker {
  private readonly proc: ChildProcess;
  private out = '';

  constructor(file: string) {
    const script = `
      const db = require('better-sqlite3')(${JSON.stringify(file)});
      db.pragma('busy_timeout = 10000');
      db.exec('BEGIN EXCLUSIVE');
      process.stdout.write('locked\\n');
      process.stdin.once('data', () => { db.exec('COMMIT'); db.close(); process.stdout.write('released\\n'); process.exit(0); });
    `;
    this.proc = spawn(process.execPath, ['-e', script], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
    this.proc.stdout!.setEncoding('utf8');
    this.proc.stdout!.on('data', (c: string) => (this.out += c));
  }

  private async waitFor(word: string) {
    const since = Date.now();
    while (!this.out.includes(word)) {
      if (Date.now() - since > 15_000) throw new Error(`locker did not say ${word}`);
      await sleep(10);
    }
  }

  locked() {
    return this.waitFor('locked');
  }

  async release() {
    this.proc.stdin!.write('go\n');
    await this.waitFor('released');
  }

  kill() {
    if (this.proc.exitCode === null) this.proc.kill('SIGKILL');
  }
}

async function givenPipeline(service: Service): Promise<string> {
  const created = await api(service.url, service.token!, 'POST', '/v2/organizations/default/pipelines', PIPELINE);
  expect(created.status).toBe(201);
  return `/v2/organizations/default/pipelines/${(created.body as { slug: string }).slug}/builds`;
}

/** A failure with the service's own error lines (an unexpected 500 says why there). */
function withServiceErrors(err: unknown, service: Service | undefined): Error {
  const lines = (service?.output() ?? '').split('\n').filter((l) => l.includes('"level":50') && !l.includes('"msg":"request failed"'));
  return new Error(`${(err as Error).message}\n\nservice errors:\n${lines.slice(0, 5).join('\n')}`);
}

const report = (name: string, figures: unknown) => process.stdout.write(`${name}: ${JSON.stringify(figures)}\n`);

const cluster = new Cluster();
// Postgres left out on purpose (TEST_DATABASES) is a skip; asked for without initdb/pg_ctl, a
// failure under CI=true.
const pgIt = databases.includes('postgres')
  ? itRequiring(cluster.available() ? undefined : 'initdb and pg_ctl (a PostgreSQL server package under /usr/lib/postgresql/<version>/bin) are not installed')
  : it.skip;

describe('database outage', () => {
  let service: Service | undefined;

  afterEach(async () => {
    await stopService(service);
  });

  pgIt('Postgres stopped under load and started again: 503 with Retry-After within 5 s, then recovery without a restart', async () => {
    try {
      await cluster.init();
      cluster.start();
      service = await startService({ DATA_DIR: cluster.dir, DATABASE_URL: `postgres://postgres@127.0.0.1:${cluster.port}/postgres` }, { expectToken: true });
      const { url, token } = service as Required<Service>;
      const builds = await givenPipeline(service);

      const before = await load(url, token, builds, 1000);
      for (const s of before) expect([200, 201]).toContain(s.status);

      const loading = load(url, token, builds, 3000);
      await sleep(500);
      cluster.stop('immediate');
      const during = await loading;
      const ready = await fetch(`${url}/readyz`);
      expect(ready.status).toBe(503);
      expect((await fetch(`${url}/healthz`)).status).toBe(200);
      const outage = await load(url, token, builds, 2000);
      expectOutageAnswers(outage);
      for (const s of during) {
        expect(s.ms).toBeLessThan(ANSWER_WITHIN_MS);
        expect([200, 201, 503]).toContain(s.status);
      }

      cluster.start();
      const recovery = await expectRecovery(url, token, builds);
      expect((await fetch(`${url}/readyz`)).status).toBe(200);
      const logs = expectOutageLoggedOnce(service.output(), [...during, ...outage].filter((s) => s.status === 503).length);
      report('outage [postgres]', { before: summary(before), stopping: summary(during), stopped: summary(outage), ...recovery, logs });
    } catch (err) {
      throw withServiceErrors(err, service);
    } finally {
      await stopService(service);
      cluster.destroy();
    }
  });

  (databases.includes('sqlite') ? it : it.skip)(
    'SQLite write-locked by another process: reads go on, writes answer 503 with Retry-After within 5 s, then recovery',
    async () => {
      const store: Store = await freshStore('sqlite');
      let locker: Locker | undefined;
      try {
        service = await startService(store.env, { expectToken: true });
        const { url, token } = service as Required<Service>;
        const builds = await givenPipeline(service);

        const before = await load(url, token, builds, 1000);
        for (const s of before) expect([200, 201]).toContain(s.status);

        locker = new Locker(store.sqliteFile!);
        await locker.locked();
        const started = Date.now();
        const health = (async () => {
          // The event loop is not held up: liveness answers quickly throughout.
          let worst = 0;
          while (Date.now() - started < 3000) {
            const t = Date.now();
            expect((await fetch(`${url}/healthz`)).status).toBe(200);
            worst = Math.max(worst, Date.now() - t);
            await sleep(100);
          }
          return worst;
        })();
        const locked = await load(url, token, builds, 3000);
        const healthWorstMs = await health;
        expectOutageAnswers(locked);
        // Reads need no lock in WAL mode: they keep working.
        expect(locked.filter((s) => s.op === 'list builds' && s.status === 200).length).toBeGreaterThan(0);
        expect(healthWorstMs).toBeLessThan(2000);

        await locker.release();
        const recovery = await expectRecovery(url, token, builds);
        const logs = expectOutageLoggedOnce(service.output(), locked.filter((s) => s.status === 503).length);
        report('outage [sqlite]', { before: summary(before), locked: summary(locked), healthWorstMs, ...recovery, logs });
      } catch (err) {
        throw withServiceErrors(err, service);
      } finally {
        locker?.kill();
        await stopService(service);
        await store.drop();
      }
    },
  );
});
