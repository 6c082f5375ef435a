/**
 * `windsock pipeline webhook-secret ORG/PIPELINE [--rotate]`: prints the secret the REST API
 * shows (GET .../webhook-secret), and with --rotate replaces it through the same service, after
 * which deliveries signed with the old one are refused. A missing, extra or malformed target: the
 * usage (exit code 2); an unknown one: exit code 1.
 */
import crypto from 'node:crypto';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { loadConfig } from '../../src/config';
import { startServer } from '../../src/server';
import { run, withTempDataDir } from './support';

describe('windsock pipeline webhook-secret (embedded SQLite in a temp data dir)', () => {
  withTempDataDir('windsock-webhook-secret-');

  it('prints the secret the API shows, rotates it, and deliveries follow', async () => {
    expect((await run('org', 'create', '--name', 'Hook Co')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Hana', '--email', 'hana@example.com', '--org', 'hook-co', '--role', 'admin')).code).toBe(0);
    const token = (await run('token', 'create', '--email', 'hana@example.com', '--org', 'hook-co')).text.trim().split('\n').at(-1)!;
    const server = await startServer(loadConfig(), new PassThrough());
    try {
      const api = (req: request.Test) => req.set('Authorization', `Bearer ${token}`);
      const created = await api(request(server.url).post('/v2/organizations/hook-co/pipelines'))
        .send({ name: 'App', repository: 'https://gitlab.com/hook-co/app.git', configuration: 'steps:\n  - command: make\n' })
        .expect(201);
      const deliverTo = new URL(created.body.provider.webhook_url).pathname;
      const secretUrl = '/v2/organizations/hook-co/pipelines/app/webhook-secret';

      const shown = await run('pipeline', 'webhook-secret', 'hook-co/app');
      expect(shown.code).toBe(0);
      const first = shown.text.trim();
      expect(first).toMatch(/^[0-9a-f]{64}$/);
      expect((await api(request(server.url).get(secretUrl)).expect(200)).body).toEqual({ secret: first });

      const rotated = await run('pipeline', 'webhook-secret', 'hook-co/app', '--rotate');
      expect(rotated.code).toBe(0);
      expect(rotated.text).toMatch(
        /^rotated the webhook secret of hook-co\/app; deliveries signed with the old one are refused now\. The new one:\n[0-9a-f]{64}\n$/,
      );
      const second = rotated.text.trim().split('\n').at(-1)!;
      expect(second).not.toBe(first);
      expect((await api(request(server.url).get(secretUrl)).expect(200)).body).toEqual({ secret: second });
      expect((await run('pipeline', 'webhook-secret', 'hook-co/app')).text.trim()).toBe(second);

      const push = { object_kind: 'push', ref: 'refs/heads/main', after: 'b'.repeat(40), checkout_sha: 'b'.repeat(40), commits: [] };
      const deliver = (secret: string) => request(server.url).post(deliverTo).set('X-Gitlab-Event', 'Push Hook').set('X-Gitlab-Token', secret).send(push);
      await deliver(first).expect(401);
      expect((await deliver(second)).status).toBe(201);
    } finally {
      await server.close();
    }
  });

  it('refuses a malformed target with the usage, and an unknown organization or pipeline', async () => {
    // The target missing, more than one, or not ORG/PIPELINE: usage errors, with the command's help.
    for (const args of [[], ['hook-co/app', 'extra'], ['hook-co'], ['hook-co/app/x'], ['/app']]) {
      const res = await run('pipeline', 'webhook-secret', ...args);
      expect({ args, code: res.code }).toEqual({ args, code: 2 });
      expect(res.text).toContain('Usage: windsock pipeline webhook-secret [options] <ORG_SLUG/PIPELINE_SLUG>');
    }
    expect((await run('pipeline', 'webhook-secret', 'hook-co')).text).toMatch(
      /^windsock: command-argument value 'hook-co' is invalid for argument 'ORG_SLUG\/PIPELINE_SLUG'\. must be ORG_SLUG\/PIPELINE_SLUG\n/,
    );
    expect(await run('pipeline', 'webhook-secret', `nope-${crypto.randomBytes(3).toString('hex')}/app`)).toMatchObject({
      code: 1,
      text: expect.stringMatching(/no organization with slug/),
    });
    expect(await run('pipeline', 'webhook-secret', 'hook-co/missing', '--rotate')).toEqual({ code: 1, text: 'windsock: no pipeline "missing" in hook-co\n' });
  });
});
