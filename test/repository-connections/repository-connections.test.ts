import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { auth, createTestContext, describeEachDatabase, PUBLIC_URL, type TestContext } from '../support/context';

const CONFIG = 'steps:\n  - command: "make test"\n';
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let seq = 0;
async function pipeline(ctx: TestContext, org: { slug: string }, token: string, repository: string, extra: Record<string, unknown> = {}) {
  seq += 1;
  const res = await ctx
    .http()
    .post(`/v2/organizations/${org.slug}/pipelines`)
    .set(auth(token))
    .send({ name: `Pipeline ${seq}`, repository, configuration: CONFIG, ...extra });
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
}

const base = (org: { slug: string }) => `/v2/organizations/${org.slug}/repository_connections`;

describeEachDatabase(
  'repository connections',
  (ctx) => {
    it('lists one connection per configured provider, with stable ids of the organization', async () => {
      const { org, token } = await ctx().givenAdmin();
      const res = await ctx().http().get(base(org)).set(auth(token)).expect(200);
      expect(res.body.map((c: { type: string }) => c.type)).toEqual(['github_app', 'gitlab_self_managed', 'bitbucket_server']);
      expect(res.body.map((c: { display_name: string }) => c.display_name)).toEqual([
        'GitHub (github.com)',
        'GitLab (gitlab.example.com)',
        'Bitbucket (bitbucket.org)',
      ]);
      for (const c of res.body) {
        expect(c.id).toMatch(UUID);
        expect(c.url).toBe(`${PUBLIC_URL}${base(org)}/${c.id}`);
        expect(Object.keys(c).sort()).toEqual(['display_name', 'id', 'type', 'url']);
      }
      // Stable: the same ids on every read; another organization's are its own.
      const again = await ctx().http().get(base(org)).set(auth(token)).expect(200);
      expect(again.body).toEqual(res.body);
      const other = await ctx().givenAdmin();
      const theirs = await ctx().http().get(base(other.org)).set(auth(other.token)).expect(200);
      expect(theirs.body.map((c: { id: string }) => c.id)).not.toContain(res.body[0].id);
      // No credential anywhere.
      expect(JSON.stringify(res.body)).not.toContain('glpat-secret');
      expect(JSON.stringify(res.body)).not.toContain('bb-secret');
    });

    it('gets a connection with its host; 404 for an unknown or another organization’s id, 400 for a malformed one', async () => {
      const { org, token } = await ctx().givenAdmin();
      const [github, gitlab] = (await ctx().http().get(base(org)).set(auth(token)).expect(200)).body;
      const res = await ctx()
        .http()
        .get(`${base(org)}/${github.id}`)
        .set(auth(token))
        .expect(200);
      expect(res.body).toEqual({
        ...github,
        service_account: null,
        host: { type: 'github', url: 'https://github.com' },
        rate_limit: null,
      });
      const gl = await ctx()
        .http()
        .get(`${base(org)}/${gitlab.id.toUpperCase()}`)
        .set(auth(token))
        .expect(200);
      expect(gl.body.host).toEqual({ type: 'gitlab', url: 'https://gitlab.example.com' });
      expect(JSON.stringify(gl.body)).not.toContain('glpat-secret');

      const other = await ctx().givenAdmin();
      const missing = await ctx()
        .http()
        .get(`${base(other.org)}/${github.id}`)
        .set(auth(other.token))
        .expect(404);
      expect(missing.body).toEqual({ message: 'No repository connection found' });
      await ctx()
        .http()
        .get(`${base(org)}/7d1c9a4e-2b3f-5c6d-8e9f-0a1b2c3d4e5f`)
        .set(auth(token))
        .expect(404);
      const bad = await ctx()
        .http()
        .get(`${base(org)}/not-a-uuid`)
        .set(auth(token))
        .expect(400);
      expect(bad.body).toEqual({ message: 'Invalid parameter connection_id: must be a UUID' });
      await ctx()
        .http()
        .get(`${base(org)}/not-a-uuid/repositories`)
        .set(auth(token))
        .expect(400);
    });

    it('is for administrators with the read_organization_repository_connections scope', async () => {
      const { org, token, user } = await ctx().givenAdmin();
      const [github] = (await ctx().http().get(base(org)).set(auth(token)).expect(200)).body;
      const member = await ctx().givenUser(org, 'member');
      const memberToken = await ctx().givenToken(member, [org]);
      for (const path of [base(org), `${base(org)}/${github.id}`, `${base(org)}/${github.id}/repositories`]) {
        await ctx().http().get(path).set(auth(memberToken)).expect(403);
      }
      const narrow = await ctx().givenToken(user, [org], ['read_organizations']);
      const res = await ctx().http().get(base(org)).set(auth(narrow)).expect(403);
      expect(res.body.message).toContain('read_organization_repository_connections');
      const scoped = await ctx().givenToken(user, [org], ['read_organization_repository_connections']);
      await ctx()
        .http()
        .get(`${base(org)}/${github.id}`)
        .set(auth(scoped))
        .expect(200);
    });

    it('without a GitHub token, lists the repositories of the organization’s GitHub pipelines, once each, filtered by repository', async () => {
      const { org, token } = await ctx().givenAdmin();
      await pipeline(ctx(), org, token, 'git@github.com:acme-inc/widgets.git', { default_branch: 'trunk' });
      await pipeline(ctx(), org, token, 'https://github.com/acme-inc/widgets.git', { default_branch: 'trunk' });
      await pipeline(ctx(), org, token, 'https://github.com/Acme-Inc/Gadgets');
      await pipeline(ctx(), org, token, 'git@gitlab.example.com:acme-inc/elsewhere.git');
      const other = await ctx().givenAdmin();
      await pipeline(ctx(), other.org, other.token, 'git@github.com:someone-else/secret.git');
      const [github, gitlab] = (await ctx().http().get(base(org)).set(auth(token)).expect(200)).body;

      const res = await ctx()
        .http()
        .get(`${base(org)}/${github.id}/repositories`)
        .set(auth(token))
        .expect(200);
      expect(res.body).toEqual([
        {
          full_name: 'Acme-Inc/Gadgets',
          html_url: 'https://github.com/Acme-Inc/Gadgets',
          clone_url: 'https://github.com/Acme-Inc/Gadgets.git',
          default_branch: 'main',
        },
        {
          full_name: 'acme-inc/widgets',
          html_url: 'https://github.com/acme-inc/widgets',
          clone_url: 'https://github.com/acme-inc/widgets.git',
          default_branch: 'trunk',
        },
      ]);
      const one = await ctx()
        .http()
        .get(`${base(org)}/${github.id}/repositories`)
        .query({ repository: 'acme-inc/gadgets' })
        .set(auth(token))
        .expect(200);
      expect(one.body.map((r: { full_name: string }) => r.full_name)).toEqual(['Acme-Inc/Gadgets']);
      const none = await ctx()
        .http()
        .get(`${base(org)}/${github.id}/repositories`)
        .query({ repository: 'acme-inc' })
        .set(auth(token))
        .expect(200);
      expect(none.body).toEqual([]);

      // GitLab and Bitbucket connections cannot list repositories, as the real API's.
      const refused = await ctx()
        .http()
        .get(`${base(org)}/${gitlab.id}/repositories`)
        .set(auth(token))
        .expect(422);
      expect(refused.body).toEqual({ message: 'Listing repositories is not supported for this repository connection type' });
    });
  },
  {
    commitStatuses: {
      gitlab: { apiUrl: 'https://gitlab.example.com/api/v4', token: 'glpat-secret' },
      bitbucket: { apiUrl: 'https://api.bitbucket.org/2.0', token: 'bb-secret', username: undefined, appPassword: undefined },
    },
  },
);

interface Seen {
  url: string;
  auth: string | undefined;
}

/** A GitHub REST API stand-in on 127.0.0.1: 250 repositories over pages of 100 with Link headers, or a failure. */
function fakeGitHub(seen: Seen[], state: { fail: number | null }) {
  const repos = Array.from({ length: 250 }, (_, i) => ({
    id: i + 1,
    full_name: `acme-inc/repo-${String(i + 1).padStart(3, '0')}`,
    html_url: `https://github.com/acme-inc/repo-${String(i + 1).padStart(3, '0')}`,
    clone_url: `https://github.com/acme-inc/repo-${String(i + 1).padStart(3, '0')}.git`,
    default_branch: i % 2 ? 'main' : 'trunk',
    private: true,
    owner: { login: 'acme-inc', id: 1 },
  }));
  return http.createServer((req, res) => {
    seen.push({ url: req.url!, auth: req.headers.authorization });
    const rate = { 'x-ratelimit-limit': '5000', 'x-ratelimit-remaining': '4990', 'x-ratelimit-used': '10', 'x-ratelimit-reset': '1795000000' };
    if (state.fail !== null) {
      res.writeHead(state.fail, { 'content-type': 'application/json', 'retry-after': '17', ...rate }).end(JSON.stringify({ message: 'Server Error' }));
      return;
    }
    const u = new URL(req.url!, 'http://x');
    const page = Number(u.searchParams.get('page') ?? '1');
    const perPage = Number(u.searchParams.get('per_page') ?? '30');
    const items = repos.slice((page - 1) * perPage, page * perPage);
    const last = Math.ceil(repos.length / perPage);
    const headers: Record<string, string> = { 'content-type': 'application/json', ...rate };
    if (page < last)
      headers.link = `<https://api.github.com${u.pathname}?per_page=${perPage}&page=${page + 1}>; rel="next", <https://api.github.com${u.pathname}?page=${last}>; rel="last"`;
    if (u.pathname === '/installation/repositories') res.writeHead(200, headers).end(JSON.stringify({ total_count: repos.length, repositories: items }));
    else if (u.pathname === '/user/repos' || u.pathname === '/api/v3/user/repos') res.writeHead(200, headers).end(JSON.stringify(items));
    else res.writeHead(404, headers).end(JSON.stringify({ message: 'Not Found' }));
  });
}

describeEachDatabase('repository connections through a local GitHub API stand-in', null, (_get, kind) => {
  const seen: Seen[] = [];
  const state: { fail: number | null } = { fail: null };
  let server: http.Server;
  let port: number;
  const contexts: TestContext[] = [];

  beforeAll(async () => {
    server = fakeGitHub(seen, state);
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    port = (server.address() as AddressInfo).port;
  });
  afterEach(() => {
    state.fail = null;
    seen.length = 0;
  });
  afterAll(async () => {
    for (const c of contexts) await c.close();
    await new Promise((r) => server.close(r));
  });
  async function context(opts: Parameters<typeof createTestContext>[1]) {
    const c = await createTestContext(kind, opts);
    contexts.push(c);
    return c;
  }
  /** An admin of a new organization on `c`, and the organization's connections (GitHub's first). */
  async function givenConnections(c: TestContext) {
    const { org, token } = await c.givenAdmin();
    const connections = (await c.http().get(base(org)).set(auth(token)).expect(200)).body;
    return { org, token, connections };
  }
  /** A connection's repositories, asked for by that admin, answered with `status`. */
  const repositories = (c: TestContext, org: { slug: string }, token: string, connectionId: string, status: number) =>
    c
      .http()
      .get(`${base(org)}/${connectionId}/repositories`)
      .set(auth(token))
      .expect(status);

  it('lists every page of /user/repos with a personal token, and keeps the rate limit it saw', async () => {
    const c = await context({ github: { apiUrl: `http://127.0.0.1:${port}`, token: 'ghp_personal' } });
    const { org, token, connections } = await givenConnections(c);
    const [github] = connections;
    const res = await repositories(c, org, token, github.id, 200);
    expect(res.body).toHaveLength(250);
    expect(res.body[0]).toEqual({
      full_name: 'acme-inc/repo-001',
      html_url: 'https://github.com/acme-inc/repo-001',
      clone_url: 'https://github.com/acme-inc/repo-001.git',
      default_branch: 'trunk',
    });
    expect(res.body[249].full_name).toBe('acme-inc/repo-250');
    expect(seen.map((s) => s.url)).toEqual(['/user/repos?per_page=100&page=1', '/user/repos?per_page=100&page=2', '/user/repos?per_page=100&page=3']);
    expect(seen.every((s) => s.auth === 'Bearer ghp_personal')).toBe(true);

    const got = await c
      .http()
      .get(`${base(org)}/${github.id}`)
      .set(auth(token))
      .expect(200);
    expect(got.body.rate_limit).toEqual({ limit: 5000, used: 10, remaining: 4990, reset_at: '2026-11-18T11:06:40Z' });
    expect(JSON.stringify(got.body)).not.toContain('ghp_personal');

    const one = await c
      .http()
      .get(`${base(org)}/${github.id}/repositories?repository=ACME-INC/REPO-042`)
      .set(auth(token))
      .expect(200);
    expect(one.body.map((r: { full_name: string }) => r.full_name)).toEqual(['acme-inc/repo-042']);
  });

  it('uses /installation/repositories with a GitHub App installation token', async () => {
    const c = await context({ github: { apiUrl: `http://127.0.0.1:${port}/`, token: 'ghs_installation' } });
    const { org, token, connections } = await givenConnections(c);
    const [github] = connections;
    const res = await repositories(c, org, token, github.id, 200);
    expect(res.body).toHaveLength(250);
    expect(seen.map((s) => s.url)).toEqual([
      '/installation/repositories?per_page=100&page=1',
      '/installation/repositories?per_page=100&page=2',
      '/installation/repositories?per_page=100&page=3',
    ]);
  });

  it('lists a GitHub Enterprise connection’s repositories from its API', async () => {
    const c = await context({ githubEnterprise: { apiUrl: `http://127.0.0.1:${port}/api/v3`, token: 'ghe-token' } });
    const { org, token, connections: list } = await givenConnections(c);
    expect(list.map((x: { type: string }) => x.type)).toEqual(['github_app', 'github_enterprise_app']);
    const ghe = list[1];
    const got = await c
      .http()
      .get(`${base(org)}/${ghe.id}`)
      .set(auth(token))
      .expect(200);
    expect(got.body.host).toEqual({ type: 'github_enterprise', url: `http://127.0.0.1:${port}` });
    expect(got.body.display_name).toBe('GitHub Enterprise (127.0.0.1)');
    const res = await repositories(c, org, token, ghe.id, 200);
    expect(res.body).toHaveLength(250);
    expect(seen[0]).toEqual({ url: '/api/v3/user/repos?per_page=100&page=1', auth: 'Bearer ghe-token' });
  });

  it('answers 503 with Retry-After when the provider fails or cannot be reached', async () => {
    const c = await context({ github: { apiUrl: `http://127.0.0.1:${port}`, token: 'ghp_personal' } });
    const { org, token, connections } = await givenConnections(c);
    const [github] = connections;
    state.fail = 502;
    const res = await repositories(c, org, token, github.id, 503);
    expect(res.headers['retry-after']).toBe('17');
    expect(res.body).toEqual({ message: 'The source control provider is temporarily unavailable (it answered 502), please retry' });
    state.fail = 401;
    await repositories(c, org, token, github.id, 503);

    // Nothing listens there: the transport's refusal is a 503 too, never a 500.
    const closed = http.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', r));
    const closedPort = (closed.address() as AddressInfo).port;
    await new Promise((r) => closed.close(r));
    const d = await context({ github: { apiUrl: `http://127.0.0.1:${closedPort}`, token: 'ghp_personal' } });
    const admin = await givenConnections(d);
    const down = await repositories(d, admin.org, admin.token, admin.connections[0].id, 503);
    expect(down.body.message).toBe('The source control provider is temporarily unavailable, please retry');
  });
});
