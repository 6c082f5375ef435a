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
      // The slow receiver holds every answer until the test lets it go: while it holds its first
      // build, the fast receiver's build must still go out, in the slot kept for the others.
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      const order: string[] = [];
      let fastBuildReceived!: () => void;
      const fastBuild = new Promise<void>((resolve) => (fastBuildReceived = resolve));
      slow.answer = () => ({ status: 200, until: released.then(() => void order.push('slow answered')) });
      fast.answer = (_i, r) => {
        const event = String(r.headers['x-buildkite-event'] ?? r.body.event ?? '');
        order.push(`fast received ${event}`);
        if (event === 'build.scheduled') fastBuildReceived();
        return { status: 200 };
      };
      const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: one\n');
      // The slow receiver's backlog first: three builds fanned out before the fast receiver exists.
      for (let i = 0; i < 3; i++) await givenBuild(ctx(), org, p, token);
      while (await ctx().services.notifications.fanOut());
      await service(fast);
      await givenBuild(ctx(), org, p, token);
      // Of the two slots, one is the slow receiver's (the ping of the fast one is in the other); then the fast one's build.
      // Waits on the fast receiver's build, a bounded number of passes: without a kept slot it never comes.
      for (let pass = 0; pass < 250 && !order.includes('fast received build.scheduled'); pass++) {
        await worker.tick();
        await Promise.race([fastBuild, new Promise((r) => setTimeout(r, 20))]);
      }
      expect(slow.events().filter((e) => e === 'build.scheduled')).toHaveLength(1);
      expect(fast.events().filter((e) => e === 'build.scheduled')).toHaveLength(1);
      // The fast receiver's build went out while the slow one's first was still unanswered.
      expect(order).toContain('fast received build.scheduled');
      expect(order).not.toContain('slow answered');
      release();
      await worker.settle();
      expect(slow.events().filter((e) => e === 'build.scheduled')).toHaveLength(4);
      expect(fast.events().filter((e) => e === 'build.scheduled')).toHaveLength(1);
    });
  },
  { notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 4, concurrency: 2 } },
);
