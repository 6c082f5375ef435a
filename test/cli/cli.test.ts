import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { main } from '../../src/cli/main';
import { loadConfig } from '../../src/config';
import { startServer } from '../../src/server';

function capture() {
  const out = new PassThrough();
  let text = '';
  out.on('data', (c) => (text += c));
  return { out, text: () => text };
}

describe('first start and the CLI (embedded SQLite in a temp data dir)', () => {
  let dir: string;
  const saved = { ...process.env };

  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-cli-'));
    process.env.DATA_DIR = dir;
    delete process.env.DATABASE_URL;
    delete process.env.JWT_SECRET;
    process.env.LOG_LEVEL = 'silent';
    process.env.PORT = '0';
  });
  afterAll(() => {
    process.env = saved;
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('prints a working token once on first start, never again, and keeps the secret 0600', async () => {
    const first = capture();
    const s1 = await startServer(loadConfig(), first.out);
    const token = /^ {2}(eyJ\S+)$/m.exec(first.text())?.[1];
    expect(token).toBeDefined();
    expect(first.text()).toContain(`curl -H "Authorization: Bearer ${token}"`);
    await request(s1.url).get('/v2/organizations/default/pipelines').set('Authorization', `Bearer ${token}`).expect(200);
    await s1.close();
    expect(fs.statSync(path.join(dir, 'jwt-secret')).mode & 0o777).toBe(0o600);

    const second = capture();
    const s2 = await startServer(loadConfig(), second.out);
    expect(second.text()).toBe('');
    // Same secret on restart: the first token still works.
    await request(s2.url).get('/v2/access-token').set('Authorization', `Bearer ${token}`).expect(200);
    await s2.close();
  });

  it('creates users, teams and tokens, and revokes tokens', async () => {
    const run = async (...args: string[]) => {
      const c = capture();
      const code = await main(args, c.out);
      return { code, text: c.text() };
    };
    expect((await run('org', 'create', '--name', 'Acme Inc', '--teams')).text).toMatch(/created organization acme-inc .* with teams enabled/);
    expect((await run('user', 'create', '--name', 'Ann', '--email', 'ann@example.com', '--org', 'acme-inc', '--role', 'admin')).code).toBe(0);
    expect((await run('team', 'create', '--org', 'acme-inc', '--name', 'Core')).text).toMatch(/created team core/);
    expect((await run('team', 'add-member', '--org', 'acme-inc', '--team', 'core', '--email', 'ann@example.com')).text).toMatch(/added/);
    const created = await run('token', 'create', '--email', 'ann@example.com', '--org', 'acme-inc', '--scopes', 'read_pipelines', '--description', 'ci');
    const jwt = created.text.trim().split('\n').at(-1)!;
    const id = /created token ([0-9a-f-]{36})/.exec(created.text)![1]!;

    const s = await startServer(loadConfig(), capture().out);
    const res = await request(s.url).get('/v2/access-token').set('Authorization', `Bearer ${jwt}`).expect(200);
    expect(res.body).toMatchObject({ uuid: id, scopes: ['read_pipelines'], description: 'ci', user: { name: 'Ann', email: 'ann@example.com' } });
    await request(s.url).get('/v2/organizations/acme-inc/pipelines').set('Authorization', `Bearer ${jwt}`).expect(200);
    await request(s.url).get('/v2/organizations/default/pipelines').set('Authorization', `Bearer ${jwt}`).expect(404);
    expect((await run('token', 'revoke', '--id', id)).code).toBe(0);
    // Revoked by another process: the server notices once its token cache window (1 s) ends.
    await new Promise((r) => setTimeout(r, 1100));
    await request(s.url).get('/v2/access-token').set('Authorization', `Bearer ${jwt}`).expect(401);
    await s.close();
  });

  it('creates an agent registration token that agents register with', async () => {
    const c = capture();
    expect(await main(['agent-token', 'create', '--org', 'acme-inc', '--description', 'fleet'], c.out)).toBe(0);
    expect(c.text()).toMatch(/created agent registration token [0-9a-f-]{36} for acme-inc; it is shown once:/);
    const token = c.text().trim().split('\n').at(-1)!;
    const s = await startServer(loadConfig(), capture().out);
    const res = await request(s.url).post('/v3/register').set('Authorization', `Token ${token}`).send({ name: 'cli-agent' }).expect(201);
    expect(res.body).toMatchObject({ name: 'cli-agent', meta_data: [] });
    await request(s.url).post('/v3/register').set('Authorization', `Token ${token}x`).send({ name: 'cli-agent' }).expect(401);
    await s.close();
    await expect(main(['agent-token', 'create', '--org', 'nope'], capture().out)).rejects.toThrow(/no organization with slug "nope"/);
  });

  it('refuses unknown scopes and missing options', async () => {
    await expect(main(['token', 'create', '--email', 'ann@example.com', '--org', 'acme-inc', '--scopes', 'everything'], capture().out)).rejects.toMatchObject({
      errors: [{ field: 'scopes', code: 'unknown scope(s): everything' }],
    });
    await expect(main(['user', 'create', '--name', 'x'], capture().out)).rejects.toThrow(/--email is required/);
    await expect(main(['agent', '--token', 'x'], capture().out)).rejects.toThrow(/--endpoint is required/);
    await expect(main(['agent', '--endpoint', 'http://127.0.0.1:1', '--token', 'x', '--spawn', '0'], capture().out)).rejects.toThrow(/--spawn must be/);
  });
});
