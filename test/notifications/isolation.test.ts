/**
 * One slow receiver never stalls the rest (issue 26, section 2). In one organization an
 * OpenTelemetry collector and a webhook receiver answer 200 and then trickle 10 bytes every 0.5 s
 * without ever ending; in another organization a webhook receiver answers at once. 50 builds
 * finish (25 in each organization, the slow organization's first, so they are first in line).
 *
 * What must hold, told by the order of events rather than by wall-clock thresholds:
 * - the fast receiver gets its first delivery before any slow exchange is cut off (a slot was
 *   free for it: per-target and per-organization caps), and every one of its 25 while the slow
 *   organization still has a backlog;
 * - every slow exchange is cut off at OUTBOUND_TIMEOUT_MS though bytes keep coming (a deadline
 *   for the whole exchange, not an idle timeout), the attempt says so, and the client closed
 *   the connection;
 * - the slow organization never holds more connections than its cap.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { perOrganizationLimit, perTargetLimit } from '../../src/notifications/service';
import { auth, type TestContext, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { startReceiver, type Receiver } from './receiver';

const TIMEOUT_MS = 2_000;
const CONCURRENCY = 4;
const BUILDS_PER_ORG = 25;

/** A receiver that answers 200 and then 10 bytes every 0.5 s, never ending; it logs what happens, in order. */
async function startTrickler(name: string, log: string[], open: { now: number; max: number }) {
  const timers = new Set<NodeJS.Timeout>();
  const server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      open.now++;
      open.max = Math.max(open.max, open.now);
      log.push(`${name}:open`);
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.write('{"partial":');
      const t = setInterval(() => res.write('0123456789'), 500);
      timers.add(t);
      res.on('close', () => {
        clearInterval(t);
        timers.delete(t);
        open.now--;
        log.push(`${name}:closed`);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () =>
      new Promise<void>((resolve) => {
        for (const t of timers) clearInterval(t);
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

describeEachDatabase(
  'a slow receiver and a fast one in another organization',
  {
    outbound: { allowPrivate: true, timeoutMs: TIMEOUT_MS, maxResponseBytes: 65_536 },
    // One attempt each, the worker's own loop (started below) every 10 ms when idle.
    notifications: { concurrency: CONCURRENCY, maxAttempts: 1, intervalMs: 10, retryBaseMs: 60_000, retryCapMs: 60_000 },
  },
  (get) => {
    let ctx: TestContext;
    let fast: Receiver;
    const log: string[] = [];
    const open = { now: 0, max: 0 };
    let otel: Awaited<ReturnType<typeof startTrickler>>;
    let hook: Awaited<ReturnType<typeof startTrickler>>;
    beforeAll(async () => {
      ctx = get();
      fast = await startReceiver();
      otel = await startTrickler('otel', log, open);
      hook = await startTrickler('hook', log, open);
    });
    afterAll(async () => {
      await ctx?.services.notificationWorker.stop(TIMEOUT_MS + 1_000);
      await fast?.close();
      await otel?.close();
      await hook?.close();
    });

    it('serves the fast receiver at once and cuts the slow ones off at the deadline', async () => {
      expect(perTargetLimit(CONCURRENCY)).toBe(2);
      expect(perOrganizationLimit(CONCURRENCY)).toBe(3);
      const slow = await ctx.givenAdmin();
      const quick = await ctx.givenAdmin();
      const service = async (org: { slug: string }, token: string, body: Record<string, unknown>) => {
        const res = await ctx.http().post(`/v2/organizations/${org.slug}/services`).set(auth(token)).send(body);
        expect(res.status).toBe(201);
        return (res.body as { id: string }).id;
      };
      const slowHook = await service(slow.org, slow.token, { provider: 'webhook', settings: { url: `${hook.url}/hook`, events: ['build.finished'] } });
      const slowOtel = await service(slow.org, slow.token, { provider: 'open_telemetry_tracing', settings: { endpoint: `${otel.url}/otlp` } });
      await service(quick.org, quick.token, { provider: 'webhook', settings: { url: fast.url, events: ['build.finished'] } });
      // The pings are not part of it: the slow webhook's is dropped before the worker starts.
      await ctx.services.notifications.fanOut();
      const finish = async (who: typeof slow) => {
        const p = await givenPipeline(ctx, who.org, who.token, 'steps:\n  - command: one\n');
        for (let i = 0; i < BUILDS_PER_ORG; i++) {
          const b = await givenBuild(ctx, who.org, p, who.token);
          await ctx.http().put(`/v2/organizations/${who.org.slug}/pipelines/${p.slug}/builds/${b.number}/cancel`).set(auth(who.token)).expect(200);
        }
      };
      await finish(slow);
      await finish(quick);
      // Every event fanned out before the worker starts: what is measured is delivery, with every delivery waiting.
      while (await ctx.services.notifications.fanOut());

      const fastFinished = () => fast.events().filter((e) => e === 'build.finished').length;
      const worker = ctx.services.notificationWorker;
      // Events, not wall-clock thresholds: the receivers' logs in order; the guard only ends a hang.
      const fastDone = new Promise<void>((resolve, reject) => {
        const guard = setTimeout(() => {
          // A failed run leaves no poll behind (jest would not exit).
          clearInterval(poll);
          reject(new Error(`the fast receiver got ${fastFinished()} of ${BUILDS_PER_ORG}`));
        }, 60_000);
        const poll = setInterval(() => {
          if (fastFinished() === BUILDS_PER_ORG) {
            log.push('fast:all');
            clearTimeout(guard);
            clearInterval(poll);
            resolve();
          }
        }, 5);
        fast.answer = (i, r) => {
          if (r.body.event === 'build.finished' && !log.includes('fast:first')) log.push('fast:first');
          return { status: 200 };
        };
      });
      worker.start();
      await fastDone;

      // The fast receiver was served before any slow exchange was cut off, and fully while the slow organization had a backlog.
      const firstCut = log.findIndex((e) => e.endsWith(':closed'));
      expect(log.indexOf('fast:first')).toBeGreaterThanOrEqual(0);
      if (firstCut >= 0) expect(log.indexOf('fast:first')).toBeLessThan(firstCut);
      const pendingOf = async (id: string) => {
        const res = await ctx.http().get(`/v2/organizations/${slow.org.slug}/services/${id}/deliveries`).set(auth(slow.token)).expect(200);
        return (res.body as { state: string; attempts: { status: number | null; response_excerpt: string }[] }[]).filter((d) => d.state === 'pending').length;
      };
      expect((await pendingOf(slowHook)) + (await pendingOf(slowOtel))).toBeGreaterThan(0);

      // Each slow target's first attempts end at the deadline, trickle or not: the attempt says so, the connection is closed.
      const cutOff = async (id: string) => {
        for (let i = 0; ; i++) {
          if (i > 1_200) throw new Error(`no delivery of ${id} was cut off`);
          const res = await ctx.http().get(`/v2/organizations/${slow.org.slug}/services/${id}/deliveries`).set(auth(slow.token)).expect(200);
          const failed = (res.body as { state: string; attempts: { status: number | null; response_excerpt: string }[] }[]).filter((d) => d.state === 'failed');
          if (failed.length) return failed[0]!.attempts[0]!;
          await new Promise((resolve) => setTimeout(resolve, 50));
        }
      };
      for (const id of [slowHook, slowOtel]) {
        const attempt = await cutOff(id);
        expect(attempt.status).toBeNull();
        expect(attempt.response_excerpt).toContain(`did not answer within ${TIMEOUT_MS} ms`);
      }
      expect(log).toContain('otel:closed');
      expect(log).toContain('hook:closed');
      // The slow organization never held more than its share of the slots.
      expect(open.max).toBeLessThanOrEqual(perOrganizationLimit(CONCURRENCY));
      expect(open.max).toBeGreaterThanOrEqual(2);
    }, 240_000);
  },
);
