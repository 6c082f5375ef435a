import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import request from 'supertest';
import { failure } from '../../src/cli/main';
import { loadConfig } from '../../src/config';
import { SCOPES } from '../../src/core/identity';
import { createLogger } from '../../src/http/middleware/logger';
import { startServer } from '../../src/server';
import { servicesFromConfig } from '../../src/services';
import { describeEachDatabase } from '../support/context';
import { moveDateOn, PAST_CACHE_WINDOW_MS } from '../support/date';
import { run, withStore } from './support';

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

    // Kept, readable by its owner only, for a restart to point to.
    const file = path.join(dir, 'first-start-token.txt');
    expect(fs.readFileSync(file, 'utf8')).toBe(`${token}\n`);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);

    const second = capture();
    const s2 = await startServer(loadConfig(), second.out);
    expect(second.text()).toBe(`Windsock is listening on ${s2.url}. The token made on first start is in ${file}\n`);
    // Same secret on restart: the first token still works.
    await request(s2.url).get('/v2/access-token').set('Authorization', `Bearer ${token}`).expect(200);
    await s2.close();
  });

  it('manages teams and their members through the same service as the REST API', async () => {
    expect((await run('org', 'create', '--name', 'Team Co', '--teams')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Tess', '--email', 'tess@example.com', '--org', 'team-co', '--role', 'admin')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Theo', '--email', 'theo@example.com', '--org', 'team-co')).code).toBe(0);
    expect((await run('team', 'create', '--org', 'team-co', '--name', 'Platform', '--privacy', 'secret', '--description', 'Infra')).text).toMatch(
      /created team platform \([0-9a-f-]{36}\) in team-co/,
    );
    expect((await run('team', 'add-member', '--org', 'team-co', '--team', 'platform', '--email', 'theo@example.com', '--role', 'maintainer')).text).toMatch(
      /added theo@example.com to team platform as maintainer/,
    );
    // A second add, and a stranger, are refused with the service's reasons.
    const again = await run('team', 'add-member', '--org', 'team-co', '--team', 'platform', '--email', 'theo@example.com');
    expect(again).toEqual({ code: 1, text: 'windsock: email is already a member of this team\n' });
    expect((await run('user', 'create', '--name', 'Out', '--email', 'out@example.com')).code).toBe(0);
    expect((await run('team', 'add-member', '--org', 'team-co', '--team', 'platform', '--email', 'out@example.com')).text).toMatch(
      /is not a member of this organization/,
    );
    expect((await run('team', 'set-role', '--org', 'team-co', '--team', 'platform', '--email', 'theo@example.com', '--role', 'member')).text).toMatch(
      /theo@example.com is now member of team platform/,
    );
    expect((await run('team', 'set-role', '--org', 'team-co', '--team', 'platform', '--email', 'theo@example.com', '--role', 'owner')).code).toBe(2);
    const list = await run('team', 'list', '--org', 'team-co');
    expect(list.text).toMatch(/^platform\t[0-9a-f-]{36}\tsecret\tPlatform$/m);

    // The REST API sees what the command line made.
    const token = (await run('token', 'create', '--email', 'tess@example.com', '--org', 'team-co')).text.trim().split('\n').at(-1)!;
    const s = await startServer(loadConfig(), capture().out);
    const teams = await request(s.url).get('/v2/organizations/team-co/teams').set('Authorization', `Bearer ${token}`).expect(200);
    expect(teams.body).toEqual([expect.objectContaining({ slug: 'platform', privacy: 'secret', description: 'Infra', created_by: null })]);
    const members = await request(s.url).get(`/v2/organizations/team-co/teams/${teams.body[0].id}/members`).set('Authorization', `Bearer ${token}`).expect(200);
    expect(members.body).toEqual([expect.objectContaining({ user_name: 'Theo', role: 'member' })]);
    await s.close();

    expect((await run('team', 'remove-member', '--org', 'team-co', '--team', 'platform', '--email', 'theo@example.com')).text).toMatch(
      /removed theo@example.com/,
    );
    expect((await run('team', 'remove-member', '--org', 'team-co', '--team', 'platform', '--email', 'theo@example.com')).text).toMatch(/No team member found/);
    expect((await run('team', 'delete', '--org', 'team-co', '--team', 'platform')).text).toMatch(/deleted team platform from team-co/);
    expect((await run('team', 'list', '--org', 'team-co')).text).toBe('');
    expect((await run('team', 'delete', '--org', 'team-co', '--team', 'platform')).text).toMatch(/No team found/);
  });

  it('creates users, teams and tokens, and revokes tokens', async () => {
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
    // Revoked by another process: the server notices once its token cache window (1 s of real
    // time) ends. The process's Date moves 1.1 s on (running on from there) instead of the test
    // waiting; its timers stay real.
    moveDateOn(PAST_CACHE_WINDOW_MS);
    try {
      await request(s.url).get('/v2/access-token').set('Authorization', `Bearer ${jwt}`).expect(401);
    } finally {
      jest.useRealTimers();
    }
    await s.close();
  });

  it('creates an agent registration token that agents register with', async () => {
    const c = await run('agent-token', 'create', '--org', 'acme-inc', '--description', 'fleet');
    expect(c.code).toBe(0);
    expect(c.text).toMatch(/created agent registration token [0-9a-f-]{36} for acme-inc; it is shown once:/);
    const token = c.text.trim().split('\n').at(-1)!;
    const s = await startServer(loadConfig(), capture().out);
    const res = await request(s.url).post('/v3/register').set('Authorization', `Token ${token}`).send({ name: 'cli-agent' }).expect(201);
    expect(res.body).toMatchObject({ name: 'cli-agent', meta_data: [] });
    await request(s.url).post('/v3/register').set('Authorization', `Token ${token}x`).send({ name: 'cli-agent' }).expect(401);
    await s.close();
    expect(await run('agent-token', 'create', '--org', 'nope')).toEqual({ code: 1, text: 'windsock: no organization with slug "nope"\n' });
  });

  it('refuses unknown scopes and missing options, naming the option and the valid values', async () => {
    const scopes = await run('token', 'create', '--email', 'ann@example.com', '--org', 'acme-inc', '--scopes', 'read_builds,everything');
    expect(scopes.code).toBe(2);
    expect(scopes.text).toMatch(
      // Every scope named, in the order the token service knows them.
      `windsock: option '--scopes <all|SCOPE,...>' argument 'read_builds,everything' is invalid. unknown scope(s): everything. Valid: all, or any of ${SCOPES.join(', ')}\n`,
    );
    expect(await run('user', 'create', '--name', 'x')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: required option '--email <EMAIL>' not specified\n/),
    });
    expect(await run('agent', '--token', 'x')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: required option '--endpoint <URL>' not specified\n/),
    });
    expect(await run('agent', '--endpoint', 'http://127.0.0.1:1', '--token', 'x', '--spawn', '0')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: option '--spawn <N>' argument '0' is invalid\. must be a whole number from 1 to 64\n/),
    });
  });
});

describeEachDatabase('users in several organizations from the CLI', null, (_get, kind) => {
  withStore(kind, 'windsock-cli-users-');

  /** What the CLI prints for a command that fails, and its exit code. */
  const fail = async (...args: string[]) => {
    const r = await run(...args);
    expect(r.code).not.toBe(0);
    return r;
  };
  const membershipsOf = async (email: string) => {
    const s = servicesFromConfig(loadConfig(), createLogger('silent'));
    try {
      const user = await s.users.findByEmail(email);
      const byId = await s.orgs.membershipsOf(user!.id);
      const slugs: Record<string, string> = {};
      for (const slug of ['alpha', 'beta']) {
        const role = byId.get((await s.orgs.findBySlug(slug))!.id);
        if (role) slugs[slug] = role;
      }
      return { name: user!.name, memberships: slugs };
    } finally {
      await s.db.destroy();
    }
  };

  it('refuses an existing email with a clear message naming the command that adds the user to another organization', async () => {
    expect((await run('org', 'create', '--name', 'Alpha')).code).toBe(0);
    expect((await run('org', 'create', '--name', 'Beta')).code).toBe(0);
    expect((await run('user', 'create', '--name', 'Ann', '--email', 'ann@example.com', '--org', 'alpha', '--role', 'admin')).text).toMatch(
      /^created user ann@example.com .* as admin of alpha\n$/,
    );

    const again = await fail('user', 'create', '--name', 'Ann Again', '--email', 'ANN@example.com', '--org', 'beta');
    expect(again.code).toBe(1);
    expect(again.text).toBe(
      'windsock: a user with email "ann@example.com" already exists; to make them a member of an organization: windsock user add-to-org --email ANN@example.com --org beta --role admin|member\n',
    );
    expect(await membershipsOf('ann@example.com')).toEqual({ name: 'Ann', memberships: { alpha: 'admin' } });
  });

  it('user add-to-org adds an existing user to another organization, or changes their role there', async () => {
    expect((await run('user', 'add-to-org', '--email', 'ann@example.com', '--org', 'beta')).text).toBe('added ann@example.com to beta as member\n');
    expect((await run('user', 'add-to-org', '--email', 'Ann@Example.com', '--org', 'beta', '--role', 'member')).text).toBe(
      'ann@example.com is already member of beta\n',
    );
    expect((await run('user', 'add-to-org', '--email', 'ann@example.com', '--org', 'beta', '--role', 'admin')).text).toBe(
      'ann@example.com was member of beta, now admin\n',
    );
    expect(await membershipsOf('ann@example.com')).toEqual({ name: 'Ann', memberships: { alpha: 'admin', beta: 'admin' } });
    // A token for both organizations can now be made.
    expect((await run('token', 'create', '--email', 'ann@example.com', '--org', 'alpha,beta', '--scopes', 'read_pipelines')).code).toBe(0);

    expect(await fail('user', 'add-to-org', '--email', 'nobody@example.com', '--org', 'beta')).toMatchObject({
      code: 1,
      text: expect.stringMatching(/^windsock: no user with email "nobody@example.com"\n/),
    });
    expect(await fail('user', 'add-to-org', '--email', 'ann@example.com', '--org', 'gamma')).toMatchObject({
      code: 1,
      text: expect.stringMatching(/^windsock: no organization with slug "gamma"\n/),
    });
    expect(await fail('user', 'add-to-org', '--email', 'ann@example.com', '--org', 'beta', '--role', 'owner')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: option '--role <ROLE>' argument 'owner' is invalid\. Allowed choices are admin, member\.\n/),
    });
    expect(await fail('user', 'add-to-org', '--org', 'beta')).toMatchObject({
      code: 2,
      text: expect.stringMatching(/^windsock: required option '--email <EMAIL>' not specified\n/),
    });
  });

  it('a unique key the database refuses is printed without the statement or its values', async () => {
    expect(await fail('org', 'create', '--name', 'Alpha')).toEqual({
      code: 1,
      text: 'windsock: an organization with slug "alpha" already exists (windsock org list shows them)\n',
    });
    const s = servicesFromConfig(loadConfig(), createLogger('silent'));
    try {
      const err = await s.users.create({ name: 'Twin', email: 'ann@example.com' }).then(
        () => undefined,
        (e: unknown) => e,
      );
      const { text, code } = failure(err);
      expect(code).toBe(1);
      expect(text).toMatch(/^windsock: that already exists \(.*email.*\)\n$/);
      expect(text).not.toMatch(/insert|Twin/i);
    } finally {
      await s.db.destroy();
    }
  });
});
