/**
 * Secrets (issue 7, item 5). Every credential the service hands out or holds is captured: access
 * tokens (and their signatures), a suite's upload token, a pipeline's webhook token and the
 * webhook secret it registers on GitHub (and the one a rotation replaces it with), the root secret and the GitHub API token (canaries we
 * choose). Then every operation of the spec is sent as principals without permission (a member
 * whose team may only read the pipeline; an admin token without write_pipelines), and the
 * answers (bodies and headers), every log line (at `trace`) and the raw database (the SQLite
 * file's bytes, every Postgres row as text) are scanned: no plain secret anywhere it does not
 * belong. Agent registration tokens and agents' access tokens are among them.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { createLogger } from '../../src/http/middleware/logger';
import { auth, describeEachDatabase, type ContextOptions } from '../support/context';
import { BODIES, check, fillPath, givenTenant, send, specOperations, suiteAuth, tableNames, type Tenant, TENANT_SETUP_MS } from './spec-operations';
import { SCOPES } from '../../src/core/identity';

/** The root secret createTestContext gives its services (test/support/context.ts). */
const ROOT_SECRET = 'test-secret-test-secret-test-secret-0123456789';
const GITHUB_TOKEN = `ghp_canary${crypto.randomBytes(12).toString('hex')}`;

const lines: string[] = [];
const sqliteFile = path.join(os.tmpdir(), `windsock-secrets-${crypto.randomBytes(6).toString('hex')}.sqlite3`);
const opts: ContextOptions = {
  sqliteFile,
  logger: createLogger('trace', {
    write: (chunk: string) => {
      lines.push(String(chunk));
    },
  }),
};

/** A stand-in for the GitHub REST API: records the hooks Windsock registers. */
const hooks: { url: string; secret: string; authorization: string | undefined }[] = [];
let github: http.Server;
beforeAll(async () => {
  github = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      // A repository connection's repositories (GET /user/repos with the token): one page.
      if (req.method === 'GET' && req.url?.startsWith('/user/repos')) {
        res
          .writeHead(200, {
            'content-type': 'application/json',
            'x-ratelimit-limit': '5000',
            'x-ratelimit-remaining': '4999',
            'x-ratelimit-reset': '1795000000',
          })
          .end('[{"full_name":"acme/app","html_url":"https://github.com/acme/app","clone_url":"https://github.com/acme/app.git","default_branch":"main"}]');
        return;
      }
      const hook = JSON.parse(body).config;
      // Like GitHub: a second hook for the same URL is a 422, which Windsock logs as a warning.
      const exists = hooks.some((h) => h.url === hook.url);
      hooks.push({ url: hook.url, secret: hook.secret, authorization: req.headers.authorization });
      if (exists)
        res
          .writeHead(422, { 'content-type': 'application/json' })
          .end('{"message":"Validation Failed","errors":[{"message":"Hook already exists on this repository"}]}');
      else res.writeHead(201, { 'content-type': 'application/json' }).end('{"id":1}');
    });
  });
  await new Promise<void>((resolve) => github.listen(0, '127.0.0.1', resolve));
  opts.github = { apiUrl: `http://127.0.0.1:${(github.address() as AddressInfo).port}`, token: GITHUB_TOKEN };
});
afterAll(async () => {
  await new Promise((resolve) => github.close(resolve));
  for (const suffix of ['', '-wal', '-shm']) fs.rmSync(sqliteFile + suffix, { force: true });
});

const operations = specOperations();
const PING = JSON.stringify({ zen: 'Design for failure.', hook_id: 7 });

describeEachDatabase(
  'secrets',
  (ctx) => {
    let t: Tenant;
    let memberToken: string;
    let noWriteToken: string;
    let secrets: Record<string, string>;
    let requests = 0;

    /** Which of the secrets (but those allowed) the text holds. */
    const leaked = (text: string, allowed: string[] = []) =>
      Object.entries(secrets)
        .filter(([name, value]) => !allowed.includes(name) && text.includes(value))
        .map(([name]) => name);
    const seen = (res: { text: string; headers: Record<string, unknown> }) => `${res.text}\n${JSON.stringify(res.headers)}`;

    beforeAll(async () => {
      lines.length = 0;
      t = await givenTenant(ctx(), 'sec', { teamsEnabled: true });
      // A member whose team may only read the pipeline and sees the suite.
      const member = await ctx().givenUser(t.org, 'member');
      const readers = await ctx().givenTeam(t.org, [member]);
      await ctx().services.db('pipeline_teams').insert({ pipeline_id: t.pipeline.id, team_id: readers.id, access_level: 'read_only' });
      await ctx().services.db('suite_teams').insert({ suite_id: t.suite.id, team_id: readers.id });
      memberToken = await ctx().givenToken(member, [t.org]);
      noWriteToken = await ctx().givenToken(
        t.admin,
        [t.org],
        SCOPES.filter((s) => s !== 'write_pipelines'),
      );
      const hook = await ctx().http().post(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/webhook`).set(auth(t.token));
      check(hook, 201, 'add webhook');
      expect(hooks.at(-1)!.authorization).toBe(`Bearer ${GITHUB_TOKEN}`);
      secrets = {
        'access token (admin)': t.token,
        'access token signature (admin)': t.token.split('.')[2]!,
        'access token (member)': memberToken,
        'access token (no write_pipelines)': noWriteToken,
        'suite API token': t.suiteToken,
        'agent registration token': t.agentRegistrationToken,
        'agent access token': t.agent.token,
        'cluster agent token': t.cluster.token,
        "cluster agent's access token": t.cluster.agent.token,
        'cluster secret value': t.cluster.secretValue,
        'notification service Slack URL': t.notificationService.slackUrl,
        'webhook token': t.params.token,
        'pipeline trigger token': t.pipelineTriggerToken,
        'webhook secret': hooks.at(-1)!.secret,
        'root secret': ROOT_SECRET,
        'GitHub API token': GITHUB_TOKEN,
      };
      for (const value of Object.values(secrets)) expect(value.length).toBeGreaterThanOrEqual(20);
    }, TENANT_SETUP_MS);

    afterAll(() => {
      process.stdout.write(`secrets [${ctx().kind}]: ${requests} requests, ${lines.length} log lines, ${Object.keys(secrets ?? {}).length} secrets\n`);
    });

    // Deletes and revocations would take the fixtures away; their answers are bodiless 204s or errors.
    const scanned = operations.filter((op) => op.auth === 'bearer' && op.method !== 'delete');

    it.each([
      ['a member whose team may only read the pipeline', () => memberToken],
      ['an admin token without write_pipelines', () => noWriteToken],
    ])(
      '%s sees no secret in any answer',
      async (_who, token) => {
        const found: string[] = [];
        for (const op of scanned) {
          const res = await send(ctx(), op, fillPath(op, t.params), token(), BODIES[op.operationId]?.(t));
          requests++;
          expect(res.status).toBeLessThan(500);
          found.push(...leaked(seen(res)).map((name) => `${op.operationId} ${res.status}: ${name}`));
        }
        expect(found).toEqual([]);
      },
      120_000,
    );

    it('an admin with write_pipelines sees the webhook URL, the webhook secret where asked for, and no other secret', async () => {
      const found: string[] = [];
      const webhookShown: string[] = [];
      const secretShown: string[] = [];
      for (const op of scanned.filter((o) => o.method === 'get')) {
        const res = await send(ctx(), op, fillPath(op, t.params), t.token);
        requests++;
        // A download answers a 302 to the content's signed URL.
        expect(res.status).toBe(op.operationId.startsWith('downloadArtifact') ? 302 : 200);
        if (res.text.includes(secrets['webhook token']!)) webhookShown.push(op.operationId);
        if (res.text.includes(secrets['webhook secret']!)) secretShown.push(op.operationId);
        // The webhook secret's own read (a Windsock extension) is the one answer that holds it.
        const allowed = op.operationId === 'getPipelineWebhookSecret' ? ['webhook token', 'webhook secret'] : ['webhook token'];
        found.push(...leaked(seen(res), allowed).map((name) => `${op.operationId}: ${name}`));
      }
      expect(found).toEqual([]);
      // Pipelines, and builds with their pipeline: the scan does find a secret where one is.
      expect(webhookShown).toEqual(expect.arrayContaining(['listPipelines', 'getPipeline', 'getBuild']));
      expect(secretShown).toEqual(['getPipelineWebhookSecret']);
    });

    it('the upload API and deliveries echo no credential', async () => {
      const answers = [
        await ctx()
          .http()
          .post('/v1/uploads')
          .set(suiteAuth(t.suiteToken))
          .send({ format: 'json', run_env: { key: 'k1' }, data: [{ name: 'x', result: 'passed' }] }),
        await ctx()
          .http()
          .post('/v1/uploads')
          .set(suiteAuth(`${t.suiteToken}x`))
          .send({ format: 'json', run_env: { key: 'k1' }, data: [] }),
        // A body the API refuses: its 422 must not echo the token either.
        await ctx().http().post('/v1/uploads').set(suiteAuth(t.suiteToken)).send({}),
        await ctx()
          .http()
          .post(`/deliver/${t.params.token}`)
          .set('X-GitHub-Event', 'push')
          .send({ ref: 'refs/heads/main', after: 'abc', head_commit: { id: 'abc', message: 'm' } }),
        // A wrong signature (the answer must not tell the right one), and a GitLab token that is not the secret.
        await ctx()
          .http()
          .post(`/deliver/${t.params.token}`)
          .set('X-GitHub-Event', 'ping')
          .set('X-Hub-Signature-256', 'sha256=00')
          .set('Content-Type', 'application/json')
          .send(PING),
        await ctx().http().post(`/deliver/${t.params.token}`).set('X-Gitlab-Event', 'Push Hook').set('X-Gitlab-Token', 'nope').send({ ref: 'refs/heads/main' }),
        await ctx().http().get('/v2/access-token').set(auth(t.token)),
      ];
      // Registering the hook again: GitHub refuses, and Windsock logs why.
      answers.push(await ctx().http().post(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/webhook`).set(auth(t.token)));
      requests += answers.length;
      expect(answers.map((r) => r.status)).toEqual([202, 401, 422, 201, 401, 401, 200, 422]);
      secrets['signature of the ping'] = crypto.createHmac('sha256', secrets['webhook secret']!).update(PING).digest('hex');
      expect(answers.flatMap((r) => leaked(seen(r)))).toEqual([]);
    });

    it('a suite shows its upload token only in the create response that asked for it', async () => {
      const base = `/v2/analytics/organizations/${t.org.slug}/suites`;
      const created = await ctx()
        .http()
        .post(base)
        .set(auth(t.token))
        .send({ name: 'Shown once', show_api_token: true, team_ids: [t.team.id] });
      const quiet = await ctx()
        .http()
        .post(base)
        .set(auth(t.token))
        .send({ name: 'Never shown', team_ids: [t.team.id] });
      const later = [
        await ctx().http().get(`${base}/${created.body.slug}`).set(auth(t.token)),
        await ctx().http().patch(`${base}/${created.body.slug}`).set(auth(t.token)).send({ emoji: ':x:' }),
        await ctx().http().get(base).set(auth(t.token)),
      ];
      requests += 5;
      expect(created.body.api_token).toEqual(expect.any(String));
      expect(quiet.body).not.toHaveProperty('api_token');
      secrets['suite API token (second)'] = created.body.api_token;
      expect(later.flatMap((r) => leaked(seen(r)))).toEqual([]);
    });

    it("a job of the cluster's pipeline reads the cluster secret; only that answer holds its value", async () => {
      const base = `/v2/organizations/${t.org.slug}`;
      const p = await ctx()
        .http()
        .post(`${base}/pipelines`)
        .set(auth(t.token))
        .send({ name: 'Clustered', repository: 'git@github.com:acme/c.git', configuration: 'steps:\n  - command: deploy\n', cluster_id: t.cluster.id });
      check(p, 201, 'create clustered pipeline');
      check(await ctx().http().post(`${base}/pipelines/${p.body.slug}/builds`).set(auth(t.token)).send({ commit: 'HEAD', branch: 'main' }), 201, 'build');
      const agent = { Authorization: `Token ${t.cluster.agent.token}` };
      check(await ctx().http().post('/v3/connect').set(agent), 200, 'connect');
      const job = (await ctx().http().get('/v3/ping').set(agent)).body.job;
      check(await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agent), 200, 'accept');
      check(await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agent), 200, 'start');
      // The scan above may have set a policy (as an admin with write_secrets): one naming another pipeline refuses the job.
      const secretUrl = `${base}/clusters/${t.cluster.id}/secrets/${t.cluster.secretId}`;
      check(await ctx().http().put(secretUrl).set(auth(t.token)).send({ policy: '- pipeline_slug: elsewhere\n' }), 200, 'policy');
      const refused = await ctx().http().get(`/v3/jobs/${job.id}/secrets?key=tenant_secret`).set(agent);
      check(
        await ctx()
          .http()
          .put(secretUrl)
          .set(auth(t.token))
          .send({ policy: `- pipeline_slug: ${p.body.slug}\n  build_branch: main\n` }),
        200,
        'policy',
      );
      const read = await ctx().http().get(`/v3/jobs/${job.id}/secrets?key=tenant_secret`).set(agent);
      const missing = await ctx().http().get(`/v3/jobs/${job.id}/secrets?key=NOPE`).set(agent);
      check(await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agent).send({ exit_status: 0 }), 200, 'finish');
      requests += 12;
      expect(refused.status).toBe(403);
      expect(leaked(seen(refused))).toEqual([]);
      expect(read.status).toBe(200);
      expect(read.body).toEqual({ name: 'TENANT_SECRET', key: 'TENANT_SECRET', value: t.cluster.secretValue, uuid: t.cluster.secretId });
      expect(missing.status).toBe(404);
      const details = await ctx().http().get(`${base}/clusters/${t.cluster.id}/secrets/${t.cluster.secretId}`).set(auth(t.token));
      expect(details.body.last_read_at).toEqual(expect.any(String));
      expect(leaked(seen(details))).toEqual([]);
    });

    it("a rotated webhook secret is in the rotation's answer and the secret's read only, and deliveries signed with it build", async () => {
      const base = `/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}`;
      const rotated = await ctx().http().post(`${base}/webhook-secret/rotate`).set(auth(t.token));
      check(rotated, 200, 'rotate');
      secrets['webhook secret (rotated)'] = rotated.body.secret;
      const read = await ctx().http().get(`${base}/webhook-secret`).set(auth(t.token));
      expect(read.body).toEqual({ secret: secrets['webhook secret (rotated)'] });
      const others = [
        await ctx().http().get(base).set(auth(t.token)),
        await ctx().http().post(`${base}/webhook-secret/rotate`).set(auth(memberToken)),
        await ctx().http().get(`${base}/webhook-secret`).set(auth(noWriteToken)),
        // Signed with the old secret: refused, and the answer tells neither secret.
        await ctx()
          .http()
          .post(`/deliver/${t.params.token}`)
          .set('X-GitHub-Event', 'ping')
          .set('X-Hub-Signature-256', `sha256=${secrets['signature of the ping'] ?? '00'}`)
          .set('Content-Type', 'application/json')
          .send(PING),
        await ctx()
          .http()
          .post(`/deliver/${t.params.token}`)
          .set('X-GitHub-Event', 'ping')
          .set('X-Hub-Signature-256', `sha256=${crypto.createHmac('sha256', secrets['webhook secret (rotated)']!).update(PING).digest('hex')}`)
          .set('Content-Type', 'application/json')
          .send(PING),
      ];
      requests += 2 + others.length;
      expect(others.map((r) => r.status)).toEqual([200, 403, 403, 401, 200]);
      expect(others.flatMap((r) => leaked(seen(r), ['webhook token']))).toEqual([]);
    });

    it('no log line holds a secret', () => {
      expect(lines.length).toBeGreaterThan(50);
      const found = Object.entries(secrets)
        .filter(([, value]) => lines.some((l) => l.includes(value)))
        .map(([name]) => name);
      expect(found).toEqual([]);
    });

    it('the database holds no plain secret', async () => {
      let raw: string;
      if (ctx().kind === 'sqlite') {
        raw = ['', '-wal']
          .filter((s) => fs.existsSync(sqliteFile + s))
          .map((s) => fs.readFileSync(sqliteFile + s).toString('latin1'))
          .join('\n');
      } else {
        const db = ctx().services.db;
        const parts: string[] = [];
        for (const table of await tableNames(ctx())) {
          const rows = await db.raw(`select t::text as row from ${ctx().schema}."${table}" t`);
          parts.push(...rows.rows.map((r: { row: string }) => r.row));
        }
        raw = parts.join('\n');
      }
      // The scan reads the stored data: the organization's slug is in it.
      expect(raw).toContain(t.org.slug);
      expect(leaked(raw)).toEqual([]);
    });
  },
  opts,
);
