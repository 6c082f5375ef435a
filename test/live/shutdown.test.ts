/**
 * The server's graceful shutdown (src/server.ts) with live pages open: their streams never end
 * by themselves, so the drain ends them when the listener closes, and the shutdown finishes well
 * before its deadline (60 s here, beyond the test's own timeout: a drain waiting on the streams
 * fails the test).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import request from 'supertest';
import { loopbackConfig } from '../support/loopback-config';
import { startServer, type RunningServer } from '../../src/server';
import { SCOPES } from '../../src/core/identity';
import { SESSION_COOKIE } from '../../src/web/routes';
import { openStream } from '../support/sse';

describe('shutdown with live streams open', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-live-shutdown-'));
  let running: RunningServer | undefined;

  afterAll(async () => {
    await running?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('ends every open stream when the listener closes, and exits its drain', async () => {
    const config = loopbackConfig(dir, { SHUTDOWN_TIMEOUT_MS: '60000' });
    running = await startServer(config, new Writable({ write: (_c, _e, cb) => cb() }));
    const s = running.services;
    const org = await s.orgs.create({ slug: 'live-org', name: 'Live' });
    const user = await s.users.create({ name: 'Ann', email: 'ann@example.com' });
    await s.orgs.addMember(org.id, user.id, 'admin');
    const { jwt } = await s.tokens.create({ userId: user.id, organizationIds: [org.id], scopes: [...SCOPES], expiresAt: new Date(Date.now() + 86_400_000) });
    const api = request(running.url);
    await api
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set('Authorization', `Bearer ${jwt}`)
      .send({ name: 'app', repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make\n' })
      .expect(201);
    const build = await request(running.url)
      .post(`/v2/organizations/${org.slug}/pipelines/app/builds`)
      .set('Authorization', `Bearer ${jwt}`)
      .send({ commit: 'HEAD', branch: 'main' })
      .expect(201);
    const { sid } = await s.webSessions.create(jwt);
    const url = `${running.url}/${org.slug}/app/builds/${build.body.number}/events`;
    const streams = await Promise.all([openStream(url, { Cookie: `${SESSION_COOKIE}=${sid}` }), openStream(url, { Cookie: `${SESSION_COOKIE}=${sid}` })]);
    for (const stream of streams) {
      expect(stream.status).toBe(200);
      await stream.next((e) => e.event === 'build');
    }
    expect(s.liveStreams.size).toBe(2);
    await Promise.all([running.close(), ...streams.map((stream) => stream.ended)]);
    expect(s.liveStreams.size).toBe(0);
    running = undefined;
  });
});
