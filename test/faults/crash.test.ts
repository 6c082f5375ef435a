/**
 * Issue 7, item 8: crash durability. The service runs as a child process under a burst of
 * create-build requests and is killed with SIGKILL at seeded random moments, then restarted on
 * the same database, again and again. After every restart: each build that was answered 201 is
 * there and identical to the answer, numbers are 1..n without gaps or duplicates, the next build
 * takes n + 1, and (SQLite) `PRAGMA integrity_check` says ok.
 *
 * FAULTS_SEED=<n> repeats a run; the seed is printed when a check fails.
 */
import Database from 'better-sqlite3';
import { describeEachDatabase } from '../support/context';
import { api, freshStore, PIPELINE, seeded, seedFromEnv, sleep, startService, stopService, type Service, type Store } from './support';

const KILLS = 10;
const WORKERS = 8;

type Build = Record<string, unknown> & { number: number; id: string };

/** Every build of the pipeline, by number (pages of 100, following rel="next"). */
async function allBuilds(url: string, token: string, path: string): Promise<Map<number, Build>> {
  const found = new Map<number, Build>();
  for (let page = 1; ; page++) {
    const res = await api(url, token, 'GET', `${path}?per_page=100&page=${page}`);
    expect(res.status).toBe(200);
    for (const b of res.body as Build[]) {
      expect(found.has(b.number)).toBe(false);
      found.set(b.number, b);
    }
    if (!/rel="next"/.test(res.headers.get('link') ?? '')) return found;
  }
}

/**
 * The build as answered, without the embedded pipeline (whose build counts move on), its links
 * without their origin: they name the port of the start that answered (port 0: a new one each).
 */
const own = (b: Build) =>
  JSON.parse(JSON.stringify({ ...b, pipeline: (b.pipeline as { id: string }).id }).replace(/http:\/\/127\.0\.0\.1:\d+\//g, '/')) as Build;

describeEachDatabase('crash durability', null, (_get, kind) => {
  const seed = seedFromEnv('FAULTS_SEED', 20261123);
  let store: Store;
  let service: Service | undefined;

  beforeAll(async () => {
    store = await freshStore(kind);
  });
  afterAll(async () => {
    await stopService(service);
    await store.drop();
  });

  it(`keeps every acknowledged build across ${KILLS} SIGKILLs under a create burst (seed ${seed})`, async () => {
    const random = seeded(seed);
    service = await startService(store.env, { expectToken: true });
    const token = service.token!;
    const created = await api(service.url, token, 'POST', '/v2/organizations/default/pipelines', PIPELINE);
    expect(created.status).toBe(201);
    const builds = `/v2/organizations/default/pipelines/${(created.body as { slug: string }).slug}/builds`;

    const acknowledged = new Map<number, Build>();
    const stats = { kills: 0, acknowledged: 0, unanswered: 0, inDatabaseUnacknowledged: 0, checked: 0 };
    try {
      for (let round = 0; round < KILLS; round++) {
        const url = service.url;
        let stop = false;
        const burst = Array.from({ length: WORKERS }, async (_, w) => {
          for (let i = 0; !stop; i++) {
            let res;
            try {
              res = await api(url, token, 'POST', builds, {
                commit: 'HEAD',
                branch: `round-${round}`,
                message: `round ${round} worker ${w} #${i}`,
                env: { ROUND: String(round) },
              });
            } catch (err) {
              // Only the kill may take an answer away.
              if (!stop) throw err;
              stats.unanswered++;
              return;
            }
            if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
            const b = res.body as Build;
            expect(acknowledged.has(b.number)).toBe(false);
            acknowledged.set(b.number, b);
          }
        });
        await sleep(30 + Math.floor(random() * 400));
        stop = true;
        service.proc.kill('SIGKILL');
        expect(await service.exited).toEqual({ code: null, signal: 'SIGKILL' });
        stats.kills++;
        await Promise.all(burst);

        if (store.sqliteFile) {
          const db = new Database(store.sqliteFile);
          expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
          db.close();
        }

        service = await startService(store.env);
        const stored = await allBuilds(service.url, token, builds);
        const numbers = [...stored.keys()].sort((a, b) => a - b);
        expect(numbers).toEqual(numbers.map((_, i) => i + 1));
        for (const [n, b] of acknowledged) {
          expect(stored.has(n)).toBe(true);
          expect(own(stored.get(n)!)).toEqual(own(b));
        }
        // The builds of this round, read one by one as well.
        for (const b of [...acknowledged.values()].filter((x) => x.branch === `round-${round}`)) {
          const got = await api(service.url, token, 'GET', `${builds}/${b.number}`);
          expect(got.status).toBe(200);
          expect(own(got.body as Build)).toEqual(own(b));
          stats.checked++;
        }
        const next = await api(service.url, token, 'POST', builds, { commit: 'HEAD', branch: 'main', message: `after kill ${round}` });
        expect(next.status).toBe(201);
        expect((next.body as Build).number).toBe(numbers.length + 1);
        acknowledged.set((next.body as Build).number, next.body as Build);
        stats.inDatabaseUnacknowledged = numbers.length + 1 - acknowledged.size;
      }
      stats.acknowledged = acknowledged.size;
      process.stdout.write(`crash durability [${kind}] seed ${seed}: ${JSON.stringify(stats)}\n`);
      expect(stats.kills).toBe(KILLS);
    } catch (err) {
      throw new Error(`seed ${seed} (repeat with FAULTS_SEED=${seed}): ${(err as Error).message}\n${service?.output().slice(-2000) ?? ''}`);
    }
    // Ten restarts (each compiling nothing, but migrating and listening) took over the suite's
    // 120 s on the shared 2-core machine at a load average of 10; no step waits on a clock.
  }, 300_000);
});
