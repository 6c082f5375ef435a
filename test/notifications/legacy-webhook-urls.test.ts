/**
 * Webhook URLs stored before their credentials were secrets (the whole URL in the plain
 * settings, as the old code wrote it) are sealed by the start-up step: the stored row no longer
 * holds the credentials, the answer masks them, a delivery still goes to the full URL (userinfo
 * and query), and a second run changes nothing. The server runs the step at start.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loadConfig } from '../../src/config';
import { createKnex } from '../../src/db/knex';
import { startServer } from '../../src/server';
import { auth, type TestContext, describeEachDatabase } from '../support/context';
import { givenAgent, givenRegistrationToken, runNextJob } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { startReceiver, type Receiver } from './receiver';
import { existing } from '../support/rows';

const ADMIN = 'legacy-admin-0123456789-abcdefghijklmnop';
const silent = new Writable({ write: (_c, _e, cb) => cb() });

describeEachDatabase('legacy webhook URLs', { notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 2 } }, (get) => {
  let ctx: TestContext;
  let receiver: Receiver;
  beforeAll(async () => {
    ctx = get();
    receiver = await startReceiver();
  });
  afterAll(async () => {
    await receiver?.close();
  });

  const settle = () => ctx.services.notificationWorker.settle();
  const rowOf = async (id: string) =>
    existing(await ctx.services.db('notification_services').where({ id }).first('settings', 'secrets_sealed', 'updated_at'), `service ${id}`);

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
    expect(new Date(sealed.updated_at).getTime()).toBe(new Date(before.updated_at).getTime());
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

describe('legacy webhook URLs at start (windsock serve, SQLite file)', () => {
  it('are sealed by the start after migrations, and a restart leaves the row as it is', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-legacy-urls-'));
    const config = loadConfig({ PORT: '0', HOST: '127.0.0.1', DATA_DIR: dir, LOG_LEVEL: 'silent', WINDSOCK_ADMIN_TOKEN: ADMIN });
    const file = path.join(dir, 'windsock.sqlite3');
    const headers = { Authorization: `Bearer ${ADMIN}`, 'Content-Type': 'application/json' };
    const stored = async () => {
      const db = createKnex({ kind: 'sqlite', url: file });
      try {
        return (await db('notification_services').first('id', 'settings', 'secrets_sealed')) as { id: string; settings: string; secrets_sealed: string };
      } finally {
        await db.destroy();
      }
    };
    try {
      let running = await startServer(config, silent);
      try {
        const res = await fetch(`${running.url}/v2/organizations/default/services`, {
          method: 'POST',
          headers,
          body: JSON.stringify({ provider: 'webhook', settings: { url: 'https://hooks.example.com/in' } }),
        });
        expect(res.status).toBe(201);
      } finally {
        await running.close();
      }
      // As the old code stored it: the credentials in the plain settings.
      const secret = `key-${crypto.randomUUID()}`;
      const row = await stored();
      const db = createKnex({ kind: 'sqlite', url: file });
      await db('notification_services')
        .where({ id: row.id })
        .update({ settings: JSON.stringify({ ...JSON.parse(row.settings), url: `https://hooks.example.com/in?token=${secret}` }) });
      await db.destroy();
      expect(JSON.stringify(await stored())).toContain(secret);

      running = await startServer(config, silent);
      await running.close();
      const sealed = await stored();
      expect(JSON.stringify(sealed)).not.toContain(secret);
      expect(JSON.parse(sealed.settings).url).toMatch(/^https:\/\/hooks\.example\.com\/in\?token=X+.{4}$/);

      running = await startServer(config, silent);
      await running.close();
      expect(await stored()).toEqual(sealed);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
