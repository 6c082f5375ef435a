/**
 * A failing receiver is tried once per back-off, not once per delivery waiting for it: after a
 * failure its backlog costs one attempt (a probe) at a time, and an answer it takes opens it to
 * all its deliveries again.
 */
import { clock } from '../../src/core/clock';
import { auth, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { startReceiver, type Receiver } from './receiver';

describeEachDatabase(
  'a failing receiver rests',
  (ctx) => {
    let receiver: Receiver;
    beforeAll(async () => {
      receiver = await startReceiver();
    });
    afterAll(async () => {
      clock.set({ kind: 'real' });
      await receiver?.close();
    });

    it('probes it with one delivery per back-off, then delivers the backlog once it answers', async () => {
      const { org, token } = await ctx().givenAdmin();
      const worker = ctx().services.notificationWorker;
      const res = await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/services`)
        .set(auth(token))
        .send({ provider: 'webhook', settings: { url: receiver.url, events: ['build.scheduled'] } })
        .expect(201);
      receiver.answer = () => ({ status: 503 });
      const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: one\n');
      for (let i = 0; i < 6; i++) await givenBuild(ctx(), org, p, token);
      // The service's clock stands still from here and moves only when the test says: the rests
      // below are measured by it, not by how long the passes take on a loaded machine.
      clock.set({ kind: 'frozen', at: new Date(clock.nowMs()) });
      // The first pass tries every delivery (nothing has failed yet); then the target rests.
      await worker.tick();
      await worker.drain();
      expect(receiver.received).toHaveLength(7);
      for (let i = 0; i < 5; i++) {
        await worker.tick();
        await worker.drain();
      }
      expect(receiver.received).toHaveLength(7);
      // After the back-off (300 ms by the service's clock), one delivery probes it (and fails again: the target rests again).
      clock.advance(400);
      for (let i = 0; i < 3; i++) {
        await worker.tick();
        await worker.drain();
      }
      expect(receiver.received).toHaveLength(8);
      receiver.answer = () => ({ status: 200 });
      const before = receiver.received.length;
      // The probe's rest over, by the service's clock.
      clock.advance(400);
      await worker.settle(2_000);
      // Each waiting delivery once, when the receiver answers again.
      expect(receiver.events().slice(before).sort()).toEqual([...Array(6).fill('build.scheduled'), 'ping']);
      const list = await ctx().http().get(`/v2/organizations/${org.slug}/services/${res.body.id}/deliveries?per_page=100`).set(auth(token)).expect(200);
      expect(list.body.map((d: { state: string }) => d.state)).toEqual(Array(7).fill('delivered'));
    });
  },
  { notifications: { retryBaseMs: 300, retryCapMs: 300, maxAttempts: 10 } },
);
