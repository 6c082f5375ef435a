/**
 * A slow receiver with a backlog holds at most half of the worker's slots: another receiver's
 * deliveries still go out while the slow one's are in flight.
 */
import { auth, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { startReceiver, type Receiver } from './receiver';

describeEachDatabase(
  'notification slots shared between receivers',
  (ctx) => {
    let slow: Receiver;
    let fast: Receiver;
    beforeAll(async () => {
      slow = await startReceiver();
      fast = await startReceiver();
    });
    afterAll(async () => {
      await slow?.close();
      await fast?.close();
    });

    it('keeps a slot for the other receivers while a slow one has a backlog', async () => {
      const { org, token } = await ctx().givenAdmin();
      const worker = ctx().services.notificationWorker;
      const service = (r: Receiver) =>
        ctx()
          .http()
          .post(`/v2/organizations/${org.slug}/services`)
          .set(auth(token))
          .send({ provider: 'webhook', description: 'fair', settings: { url: r.url, events: ['build.scheduled'] } })
          .expect(201);
      await service(slow);
      await worker.settle();
      // What happened in which order: the slow receiver answers 400 ms after each request.
      const order: string[] = [];
      slow.answer = () => {
        setTimeout(() => order.push('slow answered'), 400).unref();
        return { status: 200, delayMs: 400 };
      };
      fast.answer = (_i, r) => {
        order.push(`fast received ${String(r.headers['x-buildkite-event'] ?? r.body.event ?? '')}`);
        return { status: 200 };
      };
      const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: one\n');
      // The slow receiver's backlog first: three builds fanned out before the fast receiver exists.
      for (let i = 0; i < 3; i++) await givenBuild(ctx(), org, p, token);
      while (await ctx().services.notifications.fanOut());
      await service(fast);
      await new Promise((r) => setTimeout(r, 5));
      await givenBuild(ctx(), org, p, token);
      await worker.tick();
      // Of the two slots, one is the slow receiver's (the ping of the fast one is in the other); then the fast one's build.
      const t0 = Date.now();
      while (fast.events().filter((e) => e === 'build.scheduled').length < 1 && Date.now() - t0 < 5_000) {
        await worker.tick();
        await new Promise((r) => setTimeout(r, 5));
      }
      expect(slow.events().filter((e) => e === 'build.scheduled')).toHaveLength(1);
      expect(fast.events().filter((e) => e === 'build.scheduled')).toHaveLength(1);
      // The fast receiver's build went out while the slow one's first was still unanswered.
      expect(order.indexOf('fast received build.scheduled')).toBeGreaterThanOrEqual(0);
      expect(order.slice(0, order.indexOf('fast received build.scheduled'))).not.toContain('slow answered');
      await worker.settle();
      expect(slow.events().filter((e) => e === 'build.scheduled')).toHaveLength(4);
      expect(fast.events().filter((e) => e === 'build.scheduled')).toHaveLength(1);
    });
  },
  { notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 4, concurrency: 2 } },
);
