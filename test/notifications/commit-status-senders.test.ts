/**
 * The senders against a stand-in service on 127.0.0.1: each provider's path, headers and JSON
 * body, GitHub's through octokit for real, and what each answer comes to as an attempt result.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  bitbucketKey,
  commitStatusConfig,
  enabledProviders,
  sendStatus,
  type CommitStatusConfig,
  type HttpSend,
  type StatusUpdate,
} from '../../src/notifications/commit-status';

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
}

let server: http.Server;
let base: string;
const seen: Seen[] = [];
let answer: { status: number; body: string; headers?: Record<string, string> } = { status: 201, body: '{"id":1}' };

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers });
      res.end(answer.body);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  await new Promise<void>((resolve) => server.close(() => resolve()));
});

beforeEach(() => {
  seen.length = 0;
  answer = { status: 201, body: '{"id":1}' };
});

/** A tiny HttpSend over node:http (not fetch, so a stray use of the global fetch would show). */
const calls: string[] = [];
const send: HttpSend = (req) =>
  new Promise((resolve, reject) => {
    calls.push(`${req.method} ${req.url}`);
    const r = http.request(req.url, { method: req.method, headers: req.headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const headers: Record<string, string> = {};
        for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) headers[k] = Array.isArray(v) ? v.join(', ') : v;
        resolve({ status: res.statusCode ?? 0, headers, body: Buffer.concat(chunks) });
      });
    });
    r.on('error', reject);
    if (req.body !== undefined) r.write(req.body);
    r.end();
  });

const SHA = '0123456789abcdef0123456789abcdef01234567';

function update(over: Partial<StatusUpdate> = {}): StatusUpdate {
  return {
    provider: 'github',
    repository: 'acme/web-app',
    sha: SHA,
    state: 'success',
    context: 'buildkite/web-app',
    description: 'Build #12 passed (3 minutes, 2 seconds)',
    targetUrl: 'https://windsock.example/acme/web-app/builds/12',
    subject: { kind: 'build', buildId: 'b1' },
    ...over,
  };
}

const config = (): CommitStatusConfig => ({
  github: { apiUrl: base, token: 'ghp_secret_token' },
  github_enterprise: { apiUrl: `${base}/api/v3/`, token: 'ghe_secret_token' },
  gitlab: { apiUrl: `${base}/api/v4`, token: 'glpat-secret' },
  bitbucket: { apiUrl: `${base}/2.0`, token: 'bb_secret_token' },
});

describe('GitHub through octokit', () => {
  it('POSTs /repos/{owner}/{repo}/statuses/{sha} with the token, all of it through the HTTP function', async () => {
    const fetchSpy = jest.spyOn(globalThis, 'fetch');
    calls.length = 0;
    const result = await sendStatus(update(), config(), send);
    expect(result).toEqual({ ok: true, status: 201, excerpt: '{"id":1}' });
    expect(fetchSpy).not.toHaveBeenCalled();
    fetchSpy.mockRestore();
    expect(calls).toEqual([`POST ${base}/repos/acme/web-app/statuses/${SHA}`]);
    expect(seen).toHaveLength(1);
    const [req] = seen;
    expect(req).toMatchObject({ method: 'POST', url: `/repos/acme/web-app/statuses/${SHA}` });
    expect(req!.headers.authorization).toBe('token ghp_secret_token');
    expect(req!.headers['content-type']).toMatch(/^application\/json/);
    expect(req!.headers.accept).toMatch(/application\/vnd\.github/);
    expect(req!.headers['x-github-api-version']).toBe('2022-11-28');
    expect(req!.headers['user-agent']).toMatch(/^windsock/);
    expect(JSON.parse(req!.body)).toEqual({
      state: 'success',
      context: 'buildkite/web-app',
      description: 'Build #12 passed (3 minutes, 2 seconds)',
      target_url: 'https://windsock.example/acme/web-app/builds/12',
    });
  });

  it('GitHub Enterprise: the same under its API URL with its own token', async () => {
    await sendStatus(update({ provider: 'github_enterprise' }), config(), send);
    expect(seen[0]).toMatchObject({ url: `/api/v3/repos/acme/web-app/statuses/${SHA}` });
    expect(seen[0]!.headers.authorization).toBe('token ghe_secret_token');
  });

  it.each([
    ['pending', 'pending'],
    ['running', 'pending'],
    ['success', 'success'],
    ['failure', 'failure'],
    ['canceled', 'error'],
    ['error', 'error'],
  ] as const)('sends %s as %s, and leaves out an empty link', async (state, expected) => {
    await sendStatus(update({ state, targetUrl: '' }), config(), send);
    const body = JSON.parse(seen[0]!.body);
    expect(body.state).toBe(expected);
    expect(body).not.toHaveProperty('target_url');
  });

  it('encodes owner and repository names', async () => {
    await sendStatus(update({ repository: 'a b/c#d' }), config(), send);
    expect(seen[0]!.url).toBe(`/repos/a%20b/c%23d/statuses/${SHA}`);
  });

  it.each([
    [422, false, true],
    [404, false, true],
    [401, false, true],
    [408, false, undefined],
    [429, false, undefined],
    [500, false, undefined],
    [503, false, undefined],
    [200, true, undefined],
  ])('an answer %d: ok %p, final %p, with the answer as the excerpt', async (status, ok, final) => {
    answer = { status, body: `{"message":"answer ${status}"}` };
    const result = await sendStatus(update(), config(), send);
    expect(result).toEqual({ ok, status, excerpt: `{"message":"answer ${status}"}`, ...(final ? { final } : {}) });
  });

  it('no answer is status null and retried; an unsafe address (final) is not', async () => {
    const refused: HttpSend = () => Promise.reject(new Error('connect ECONNREFUSED'));
    expect(await sendStatus(update(), config(), refused)).toEqual({ ok: false, status: null, excerpt: 'connect ECONNREFUSED' });
    const unsafe: HttpSend = () => Promise.reject(Object.assign(new Error('address 10.0.0.1 is not allowed'), { final: true }));
    expect(await sendStatus(update(), config(), unsafe)).toEqual({ ok: false, status: null, excerpt: 'address 10.0.0.1 is not allowed', final: true });
  });

  it('never records the token, even when the service echoes it', async () => {
    answer = { status: 401, body: '{"message":"Bad credentials ghp_secret_token"}' };
    const result = await sendStatus(update(), config(), send);
    expect(result.excerpt).not.toContain('ghp_secret_token');
    expect(result.excerpt).toContain('[redacted]');
  });

  it('a 204 answer with no body is fine', async () => {
    answer = { status: 204, body: '' };
    expect(await sendStatus(update(), config(), send)).toEqual({ ok: true, status: 204, excerpt: '' });
  });
});

describe('GitLab', () => {
  it('POSTs /projects/{encoded path}/statuses/{sha} with PRIVATE-TOKEN and name, state, link, description', async () => {
    const result = await sendStatus(update({ provider: 'gitlab', repository: 'acme/platform/web-app', state: 'running' }), config(), send);
    expect(result).toEqual({ ok: true, status: 201, excerpt: '{"id":1}' });
    expect(seen[0]).toMatchObject({ method: 'POST', url: `/api/v4/projects/acme%2Fplatform%2Fweb-app/statuses/${SHA}` });
    expect(seen[0]!.headers['private-token']).toBe('glpat-secret');
    expect(seen[0]!.headers.authorization).toBeUndefined();
    expect(seen[0]!.headers['content-type']).toBe('application/json');
    expect(JSON.parse(seen[0]!.body)).toEqual({
      state: 'running',
      name: 'buildkite/web-app',
      description: 'Build #12 passed (3 minutes, 2 seconds)',
      target_url: 'https://windsock.example/acme/web-app/builds/12',
    });
  });

  it.each([
    ['pending', 'pending'],
    ['running', 'running'],
    ['success', 'success'],
    ['failure', 'failed'],
    ['canceled', 'canceled'],
    ['error', 'canceled'],
  ] as const)('sends %s as %s', async (state, expected) => {
    await sendStatus(update({ provider: 'gitlab', state }), config(), send);
    expect(JSON.parse(seen[0]!.body).state).toBe(expected);
  });

  it('takes "Cannot transition status" (the status is already in that state) as delivered', async () => {
    answer = { status: 400, body: '{"message":"Cannot transition status via :run from :running"}' };
    expect(await sendStatus(update({ provider: 'gitlab', state: 'running' }), config(), send)).toEqual({
      ok: true,
      status: 400,
      excerpt: '{"message":"Cannot transition status via :run from :running"}',
    });
  });

  it('a 4xx is final, a 429 is not, no answer is null', async () => {
    answer = { status: 404, body: '{"message":"404 Project Not Found"}' };
    expect(await sendStatus(update({ provider: 'gitlab' }), config(), send)).toMatchObject({ ok: false, status: 404, final: true });
    answer = { status: 429, body: 'slow down' };
    expect(await sendStatus(update({ provider: 'gitlab' }), config(), send)).toEqual({ ok: false, status: 429, excerpt: 'slow down' });
    expect(await sendStatus(update({ provider: 'gitlab' }), config(), () => Promise.reject(new Error('timed out')))).toEqual({
      ok: false,
      status: null,
      excerpt: 'timed out',
    });
  });
});

describe('Bitbucket', () => {
  it('POSTs /repositories/{workspace}/{repo_slug}/commit/{sha}/statuses/build with a Bearer token', async () => {
    const result = await sendStatus(update({ provider: 'bitbucket', state: 'running' }), config(), send);
    expect(result.ok).toBe(true);
    expect(seen[0]).toMatchObject({ method: 'POST', url: `/2.0/repositories/acme/web-app/commit/${SHA}/statuses/build` });
    expect(seen[0]!.headers.authorization).toBe('Bearer bb_secret_token');
    expect(JSON.parse(seen[0]!.body)).toEqual({
      key: 'buildkite/web-app',
      state: 'INPROGRESS',
      name: 'buildkite/web-app',
      url: 'https://windsock.example/acme/web-app/builds/12',
      description: 'Build #12 passed (3 minutes, 2 seconds)',
    });
  });

  it('authenticates with a username and app password (Basic) instead', async () => {
    const c = { bitbucket: { apiUrl: `${base}/2.0`, username: 'ci-bot', appPassword: 'app-pass' } };
    await sendStatus(update({ provider: 'bitbucket' }), c, send);
    expect(seen[0]!.headers.authorization).toBe(`Basic ${Buffer.from('ci-bot:app-pass').toString('base64')}`);
  });

  it.each([
    ['pending', 'INPROGRESS'],
    ['running', 'INPROGRESS'],
    ['success', 'SUCCESSFUL'],
    ['failure', 'FAILED'],
    ['canceled', 'STOPPED'],
    ['error', 'STOPPED'],
  ] as const)('sends %s as %s', async (state, expected) => {
    await sendStatus(update({ provider: 'bitbucket', state }), config(), send);
    expect(JSON.parse(seen[0]!.body).state).toBe(expected);
  });

  it('keys a long context by a stable 40-character hash, keeping the full name', async () => {
    const context = 'buildkite/web-app/:rspec: RSpec integration tests (2/3)';
    await sendStatus(update({ provider: 'bitbucket', context }), config(), send);
    const body = JSON.parse(seen[0]!.body);
    expect(body.name).toBe(context);
    expect(body.key).toHaveLength(40);
    expect(body.key).toBe(bitbucketKey(context));
    expect(body.key.startsWith('buildkite/web-app/:rspec: RSpec')).toBe(true);
    expect(bitbucketKey(`${context}!`)).not.toBe(body.key);
    expect(bitbucketKey('x'.repeat(40))).toBe('x'.repeat(40));
    // Characters, not UTF-16 units: an emoji is never cut in half.
    expect(Array.from(bitbucketKey('🚀'.repeat(45)))).toHaveLength(40);
    expect(bitbucketKey('🚀'.repeat(40))).toBe('🚀'.repeat(40));
  });

  it('never records the app password', async () => {
    answer = { status: 403, body: 'no access for ci-bot:app-pass' };
    const c = { bitbucket: { apiUrl: `${base}/2.0`, username: 'ci-bot', appPassword: 'app-pass' } };
    const result = await sendStatus(update({ provider: 'bitbucket' }), c, send);
    expect(result).toMatchObject({ ok: false, status: 403, final: true });
    expect(result.excerpt).not.toContain('app-pass');
  });
});

describe('configuration', () => {
  it('a provider without access configured publishes nothing (final)', async () => {
    const result = await sendStatus(update({ provider: 'gitlab' }), { github: config().github }, send);
    expect(result).toEqual({ ok: false, status: null, excerpt: 'commit statuses for gitlab are not configured', final: true });
    expect(seen).toEqual([]);
  });

  it('maps the settings: GitHub by its token (api.github.com by default), Enterprise by URL and token, GitLab and Bitbucket by credentials', () => {
    const none = {
      github: { apiUrl: undefined, token: undefined },
      githubEnterprise: { apiUrl: 'https://ghe.example/api/v3', token: undefined },
      gitlab: { apiUrl: 'https://gitlab.com/api/v4', token: undefined },
      bitbucket: { apiUrl: 'https://api.bitbucket.org/2.0', token: undefined, username: 'me', appPassword: undefined },
    };
    expect(commitStatusConfig(none)).toEqual({});
    expect(enabledProviders(commitStatusConfig(none))).toEqual([]);
    const all = {
      github: { apiUrl: undefined, token: 'g' },
      githubEnterprise: { apiUrl: 'https://ghe.example/api/v3', token: 'e' },
      gitlab: { apiUrl: 'https://gitlab.com/api/v4', token: 'l' },
      bitbucket: { apiUrl: 'https://api.bitbucket.org/2.0', token: undefined, username: 'me', appPassword: 'pw' },
    };
    expect(commitStatusConfig(all)).toEqual({
      github: { apiUrl: 'https://api.github.com', token: 'g' },
      github_enterprise: { apiUrl: 'https://ghe.example/api/v3', token: 'e' },
      gitlab: { apiUrl: 'https://gitlab.com/api/v4', token: 'l' },
      bitbucket: { apiUrl: 'https://api.bitbucket.org/2.0', username: 'me', appPassword: 'pw' },
    });
    expect(enabledProviders(commitStatusConfig(all))).toEqual(['github', 'github_enterprise', 'gitlab', 'bitbucket']);
  });
});
