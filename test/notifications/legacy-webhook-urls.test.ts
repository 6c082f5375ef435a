/**
 * Webhook URLs stored before their credentials were secrets (the whole URL in the plain
 * settings, as the old code wrote it) are sealed by the start-up step: the stored row no longer
 * holds the credentials, the answer masks them, a delivery still goes to the full URL (userinfo
 * and query), and a second run changes nothing.
 */
import crypto from 'node:crypto';
import { auth, createTestContext, databases, type TestContext } from '../support/context';
import { givenAgent, givenRegistrationToken, runNextJob } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { startReceiver, type Receiver } from './receiver';

describe.each(databases)('legacy webhook URLs [%s]', (kind) => {
  let ctx: TestContext;
  let receiver: Receiver;
  beforeAll(async () => {
    ctx = await createTestContext(kind, { notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 2 } });
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
    await ctx?.close();
  });

  const settle = () => ctx.services.notificationWorker.settle();
  const rowOf = (id: string) => ctx.services.db('notification_services').where({ id }).first('settings', 'secrets_sealed', 'updated_at');

  it('are sealed at start, still delivered to in full, and a second run changes nothing', async () => {
    const { org, token } = await ctx.givenAdmin();
    const created = await ctx
      .http()
      .post(`/v2/organizations/${org.slug}/services`)
      .set(auth(token))
      .send({ provider: 'webhook', settings: { url: receiver.url, token: 'tok-legacy' } })
      .expect(201);
    const id = created.body.id as string;
    await settle(); // the ping
    // As the old code stored it: the whole URL, credentials included, in the plain settings.
    const password = `pw-${crypto.randomUUID()}`;
    const apiKey = `key-${crypto.randomUUID()}`;
    const full = new URL(receiver.url);
    full.username = 'ci-user';
    full.password = password;
    full.search = `api_key=${apiKey}&team=web`;
    const legacyUrl = full.toString();
    const before = await rowOf(id);
    const plain = { ...(typeof before.settings === 'string' ? JSON.parse(before.settings) : before.settings), url: legacyUrl };
    await ctx.services
      .db('notification_services')
      .where({ id })
      .update({ settings: JSON.stringify(plain) });
    expect(JSON.stringify(await rowOf(id))).toContain(password);

    expect(await ctx.services.notificationServices.sealLegacyWebhookUrls()).toEqual({ sealed: 1, unreadable: 0 });
    const sealed = await rowOf(id);
    for (const secret of [password, apiKey]) expect(JSON.stringify(sealed)).not.toContain(secret);
    expect(new Date(sealed.updated_at as string).getTime()).toBe(new Date(before.updated_at as string).getTime());
    const shown = await ctx.http().get(`/v2/organizations/${org.slug}/services/${id}`).set(auth(token)).expect(200);
    expect(shown.body.settings.token).toBe('tok-legacy');
    expect(new URL(shown.body.settings.url as string).password).toMatch(/^X+.{4}$/);

    // A build finishing is delivered to the whole URL: userinfo as basic auth, the query as stored.
    receiver.received.length = 0;
    const reg = await givenRegistrationToken(ctx, org.slug, token);
    const p = await givenPipeline(ctx, org, token, 'steps:\n  - command: one\n');
    await givenBuild(ctx, org, p, token);
    const agent = await givenAgent(ctx, reg, 'runner');
    await runNextJob(ctx, agent, 0);
    await settle();
    const finished = receiver.received.find((r) => r.headers['x-buildkite-event'] === 'build.finished');
    expect(finished).toBeDefined();
    expect(finished!.path).toBe(`/hook?api_key=${apiKey}&team=web`);
    expect(finished!.headers.authorization).toBe(`Basic ${Buffer.from(`ci-user:${password}`).toString('base64')}`);
    expect(finished!.headers['x-buildkite-token']).toBe('tok-legacy');

    // Idempotent: nothing left to seal, the row is byte for byte the same.
    expect(await ctx.services.notificationServices.sealLegacyWebhookUrls()).toEqual({ sealed: 0, unreadable: 0 });
    expect(await rowOf(id)).toEqual(sealed);
  });
});
