/**
 * Issue 17: notifications survive a crash, and several processes share one outbox.
 *
 * 1. On each store: the service (a child process) has a webhook service whose receiver answers
 *    slowly; builds are created, the service is SIGKILLed while deliveries are in flight, and
 *    restarted on the same database. Every build's `build.scheduled` arrives (at least once);
 *    the only duplicates are deliveries that were in flight at the kill (at most
 *    NOTIFICATION_CONCURRENCY of them, each one already received before the kill: its lease
 *    expired, OUTBOUND_TIMEOUT_MS + 5 s, and it was sent again); the history shows every delivery
 *    `delivered`.
 * 2. On Postgres: two service processes on the same database and a fast receiver; every event is
 *    delivered exactly once (the events' claims and the deliveries' leases are conditional
 *    updates, so of two processes one wins).
 */
import { describeEachDatabase } from '../support/context';
import { startReceiver, type Receiver } from '../notifications/receiver';
import { api, freshStore, PIPELINE, sleep, startService, stopService, type Service, type Store } from './support';

const CONCURRENCY = 4;
const BUILDS = 30;

const NOTIFY_ENV = {
  OUTBOUND_ALLOW_PRIVATE: 'true',
  OUTBOUND_TIMEOUT_MS: '2000',
  NOTIFICATION_RETRY_BASE_MS: '50',
  NOTIFICATION_RETRY_CAP_MS: '500',
  NOTIFICATION_CONCURRENCY: String(CONCURRENCY),
};

interface DeliveryJson {
  id: string;
  event: string;
  state: string;
  attempts_count: number;
  payload: { build?: { id: string } };
}

/** The build ids of the `build.scheduled` requests received, in arrival order. */
const scheduledBuildIds = (r: Receiver) =>
  r.received.filter((x) => x.headers['x-buildkite-event'] === 'build.scheduled').map((x) => (x.body.build as { id: string }).id);

/** Waits until `done()` or fails with what is missing after `ms`. */
async function waitFor(what: string, ms: number, done: () => boolean, missing: () => string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!done()) {
    if (Date.now() > deadline) throw new Error(`${what}: not done after ${ms} ms; ${missing()}`);
    await sleep(25);
  }
}

async function givenWebhook(service: Service, token: string, receiver: Receiver): Promise<string> {
  const res = await api(service.url, token, 'POST', '/v2/organizations/default/services', {
    provider: 'webhook',
    description: 'faults',
    settings: { url: receiver.url, token: 'faults-token', events: ['build.scheduled', 'build.finished'] },
  });
  if (res.status !== 201) throw new Error(`creating the webhook service answered ${res.status}: ${JSON.stringify(res.body)}`);
  return (res.body as { id: string }).id;
}

async function givenPipelineBuilds(service: Service, token: string): Promise<string> {
  const created = await api(service.url, token, 'POST', '/v2/organizations/default/pipelines', PIPELINE);
  if (created.status !== 201) throw new Error(`creating the pipeline answered ${created.status}: ${JSON.stringify(created.body)}`);
  return `/v2/organizations/default/pipelines/${(created.body as { slug: string }).slug}/builds`;
}

let retried503 = 0;

/** Creates `n` builds, a few at a time; their ids. */
async function createBuilds(service: Service, token: string, path: string, n: number): Promise<string[]> {
  const ids: string[] = [];
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < n) {
        const i = next++;
        let res = await api(service.url, token, 'POST', path, { commit: 'HEAD', branch: 'main', message: `build ${i}` });
        // Two processes creating builds of one pipeline at once were answered a rare 503
        // ("retry shortly") once in four runs on Postgres: retried as documented, and counted.
        for (let retry = 0; res.status === 503 && retry < 3; retry++) {
          retried503++;
          await sleep(200);
          res = await api(service.url, token, 'POST', path, { commit: 'HEAD', branch: 'main', message: `build ${i}` });
        }
        if (res.status !== 201) throw new Error(`create answered ${res.status}: ${JSON.stringify(res.body)}`);
        ids.push((res.body as { id: string }).id);
      }
    }),
  );
  return ids;
}

/** Every delivery of the service, through the documented history (pages of 100). */
async function history(service: Service, token: string, serviceId: string): Promise<DeliveryJson[]> {
  const out: DeliveryJson[] = [];
  for (let page = 1; ; page++) {
    const res = await api(service.url, token, 'GET', `/v2/organizations/default/services/${serviceId}/deliveries?per_page=100&page=${page}`);
    if (res.status !== 200) throw new Error(`history answered ${res.status}: ${JSON.stringify(res.body)}`);
    out.push(...(res.body as DeliveryJson[]));
    if (!/rel="next"/.test(res.headers.get('link') ?? '')) return out;
  }
}

const counts = (ids: string[]) => ids.reduce((m, id) => m.set(id, (m.get(id) ?? 0) + 1), new Map<string, number>());

describeEachDatabase('notifications across a crash', null, (_get, kind) => {
  let store: Store;
  let receiver: Receiver | undefined;
  const running: Service[] = [];

  beforeEach(async () => {
    store = await freshStore(kind);
  });
  afterEach(async () => {
    for (const s of running.splice(0)) await stopService(s);
    await receiver?.close();
    receiver = undefined;
    await store.drop();
  });

  const start = async (opts: { expectToken?: boolean } = {}) => {
    const s = await startService({ ...store.env, ...NOTIFY_ENV }, opts);
    running.push(s);
    return s;
  };

  it(`delivers every build's event after a SIGKILL with deliveries in flight; duplicates only of those (≤ ${CONCURRENCY})`, async () => {
    receiver = await startReceiver();
    const r = receiver;
    r.answer = () => ({ status: 200, delayMs: 400 });
    let service = await start({ expectToken: true });
    const token = service.token!;
    try {
      const serviceId = await givenWebhook(service, token, r);
      const builds = await givenPipelineBuilds(service, token);
      const ids = await createBuilds(service, token, builds, BUILDS);

      // Some arrived, not all: then the kill, with deliveries in flight.
      await waitFor(
        'the first deliveries',
        20_000,
        () => scheduledBuildIds(r).length >= 6,
        () => `${scheduledBuildIds(r).length} received`,
      );
      service.proc.kill('SIGKILL');
      expect(await service.exited).toEqual({ code: null, signal: 'SIGKILL' });
      const beforeKill = scheduledBuildIds(r);
      expect(beforeKill.length).toBeLessThan(BUILDS);

      service = await start();
      const received = () => new Set(scheduledBuildIds(r));
      // Leases of the killed process expire after OUTBOUND_TIMEOUT_MS + 5 s = 7 s.
      await waitFor(
        "every build's build.scheduled after the restart",
        40_000,
        () => ids.every((id) => received().has(id)),
        () => `missing ${ids.filter((id) => !received().has(id)).length} of ${BUILDS}`,
      );
      // Those in flight at the kill were received but not recorded: their leases expire and
      // they are sent again. Wait until the history shows every delivery finished.
      let ds: DeliveryJson[] = [];
      const deadline = Date.now() + 30_000;
      for (;;) {
        ds = await history(service, token, serviceId);
        const open = ds.filter((d) => d.state === 'pending');
        if (!open.length) break;
        if (Date.now() > deadline) throw new Error(`${open.length} deliveries still pending 30 s after the restart`);
        await sleep(250);
      }
      // A late duplicate would show here.
      await sleep(500);

      const all = scheduledBuildIds(r);
      expect(new Set(all)).toEqual(new Set(ids));
      const duplicated = [...counts(all)].filter(([, n]) => n > 1);
      expect(duplicated.every(([, n]) => n === 2)).toBe(true);
      expect(duplicated.length).toBeLessThanOrEqual(CONCURRENCY);
      // Only what had already been received at the kill (its answer lost with the process) came twice.
      for (const [id] of duplicated) expect(beforeKill).toContain(id);

      // The history: one delivery per build (plus the ping), each delivered.
      const scheduled = ds.filter((d) => d.event === 'build.scheduled');
      expect(scheduled.map((d) => d.payload.build?.id).sort()).toEqual([...ids].sort());
      expect(ds.filter((d) => d.state !== 'delivered').map((d) => [d.event, d.state, d.attempts_count])).toEqual([]);
      process.stdout.write(
        `notifications crash [${kind}]: ${beforeKill.length} of ${BUILDS} received before the kill, ${all.length} in all, ${duplicated.length} sent twice\n`,
      );
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${service.output().slice(-2000)}`);
    }
  }, 90_000);

  (kind === 'postgres' ? it : it.skip)(
    'two processes on one database deliver each event exactly once',
    async () => {
      receiver = await startReceiver();
      const r = receiver;
      r.answer = () => ({ status: 200, delayMs: 20 });
      const a = await start({ expectToken: true });
      const token = a.token!;
      const b = await start();
      try {
        const serviceId = await givenWebhook(a, token, r);
        const builds = await givenPipelineBuilds(a, token);
        // Half the builds through each process.
        const ids = (await Promise.all([createBuilds(a, token, builds, 30), createBuilds(b, token, builds, 30)])).flat();
        const received = () => new Set(scheduledBuildIds(r));
        await waitFor(
          "every build's build.scheduled",
          30_000,
          () => ids.every((id) => received().has(id)),
          () => `missing ${ids.filter((id) => !received().has(id)).length} of ${ids.length}`,
        );
        await sleep(1_500);
        const all = scheduledBuildIds(r);
        expect([...counts(all)].filter(([, n]) => n > 1)).toEqual([]);
        expect(all.sort()).toEqual([...ids].sort());
        expect(r.events().filter((e) => e === 'ping')).toHaveLength(1);
        const ds = await history(b, token, serviceId);
        expect(ds.filter((d) => d.event === 'build.scheduled')).toHaveLength(ids.length);
        expect(ds.filter((d) => d.state !== 'delivered')).toEqual([]);
        expect(ds.every((d) => d.attempts_count === 1)).toBe(true);
        process.stdout.write(`notifications two processes: ${ids.length} builds, each told once; ${retried503} creates retried after a 503\n`);
      } catch (err) {
        const notable = (o: string) =>
          o
            .split('\n')
            .filter((l) => /"level":(4|5)\d|"status":5\d\d|unavailable/.test(l))
            .slice(0, 10)
            .join('\n');
        throw new Error(`${(err as Error).message}\n--- a:\n${notable(a.output())}\n--- b:\n${notable(b.output())}`);
      }
    },
    90_000,
  );
});
