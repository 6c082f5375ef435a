/**
 * Pipeline triggers: their CRUD (the docs' representation; the endpoint URL with its token in
 * the create answer only), the incoming call that creates a build with the trigger's settings
 * (the docs' errors for a malformed, unknown or disabled token; HMAC verification for github
 * triggers), and the deliveries it records, listed by cursor, with their requests redacted.
 */
import crypto from 'node:crypto';
import { auth, describeEachDatabase } from '../support/context';
import { givenPipeline } from '../support/given';

describeEachDatabase('pipeline triggers', (ctx) => {
  async function setup(pipelineFields: Record<string, unknown> = {}) {
    const { org, user, token } = await ctx().givenAdmin();
    const p = await givenPipeline(ctx(), org, token, { name: 'app', configuration: 'steps:\n  - command: make\n', default_branch: 'trunk', ...pipelineFields });
    const base = `/v2/organizations/${org.slug}/pipelines/${p.slug}/triggers`;
    const create = (body: Record<string, unknown>) => ctx().http().post(base).set(auth(token)).send(body);
    const deliver = (endpoint: string, body: unknown = { hello: 'world' }) =>
      ctx()
        .http()
        .post(new URL(endpoint).pathname)
        .send(body as object);
    return { org, user, token, p, base, create, deliver };
  }

  it('creates a trigger whose endpoint URL is shown once, and reads it back without it', async () => {
    const s = await setup();
    const res = await s.create({
      type: 'webhook',
      label: 'Deploy production',
      build: { message: 'Deploying', branch: 'main', environment: { DEPLOY_ENV: 'value-of-deploy-env' } },
    });
    expect(res.status).toBe(201);
    const t = res.body;
    expect(t).toMatchObject({
      url: `http://windsock.test${s.base}/${t.id}`,
      type: 'webhook',
      label: 'Deploy production',
      enabled: true,
      build: { message: 'Deploying', commit: null, branch: 'main', environment_variables: ['DEPLOY_ENV'] },
      filter: null,
      verification: null,
      created_by: { id: s.user.id },
      updated_by: { id: s.user.id },
      pipeline: { id: s.p.id, slug: s.p.slug },
    });
    expect(t.endpoint_url).toMatch(/^http:\/\/windsock\.test\/deliver\/bktr_[A-Za-z0-9]{40}$/);
    expect(t.endpoint_url_hint).toBe(`http://windsock.test/deliver/bktr_${'X'.repeat(20)}${t.endpoint_url.slice(-2)}`);
    const token = t.endpoint_url.split('/').pop();

    const got = await ctx().http().get(`${s.base}/${t.id}`).set(auth(s.token)).expect(200);
    expect(got.body).not.toHaveProperty('endpoint_url');
    expect(got.text).not.toContain(token);
    expect(got.text).not.toContain('value-of-deploy-env');
    const { endpoint_url: _e, ...rest } = t;
    expect(got.body).toEqual(rest);
    const list = await ctx().http().get(s.base).set(auth(s.token)).expect(200);
    expect(list.body).toEqual({ items: [rest], links: { self: `http://windsock.test${s.base}` } });
    expect(list.text).not.toContain(token);
    // The token is stored hashed: nothing in the table holds it.
    const rows = await ctx().services.db('pipeline_triggers').select('*');
    expect(JSON.stringify(rows)).not.toContain(token);
  });

  it('creates a build on an incoming call, with the trigger settings and the payload as buildkite:webhook', async () => {
    const s = await setup();
    const t = (await s.create({ type: 'webhook', label: 'Deploy', build: { environment: { TARGET: 'prod' } } }).expect(201)).body;
    const payload = { id: 'P2LA89X', incident: { id: 'PGR0VU2' } };
    const res = await s.deliver(t.endpoint_url, payload).set('X-Github-Delivery', 'abc-123').set('Authorization', 'Bearer secret-thing');
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ id: expect.any(String), message: 'Build created', builds: [{ number: 1 }] });
    const build = (await ctx().http().get(`/v2/organizations/${s.org.slug}/pipelines/${s.p.slug}/builds/1`).set(auth(s.token)).expect(200)).body;
    expect(build).toMatchObject({ commit: 'HEAD', branch: 'trunk', message: 'Triggered build', source: 'webhook', env: { TARGET: 'prod' } });
    expect(JSON.parse(build.meta_data['buildkite:webhook'])).toEqual(payload);

    const deliveries = (await ctx().http().get(`${s.base}/${t.id}/deliveries`).set(auth(s.token)).expect(200)).body;
    expect(deliveries.items).toHaveLength(1);
    const d = deliveries.items[0];
    expect(d).toMatchObject({
      id: res.body.id,
      url: `http://windsock.test${s.base}/${t.id}/deliveries/${res.body.id}`,
      request_url: `http://windsock.test${s.base}/${t.id}/deliveries/${res.body.id}/request`,
      content_type: 'application/json',
      external_id: 'abc-123',
      status: 'build_created',
      reason: null,
      builds: [{ id: build.id, number: 1, url: `http://windsock.test/v2/organizations/${s.org.slug}/pipelines/${s.p.slug}/builds/1` }],
    });
    expect((await ctx().http().get(`${s.base}/${t.id}/deliveries/${d.id}`).set(auth(s.token)).expect(200)).body).toEqual(d);
    const request = await ctx().http().get(`${s.base}/${t.id}/deliveries/${d.id}/request`).set(auth(s.token)).expect(200);
    expect(request.headers['cache-control']).toBe('private, no-store');
    expect(request.body.payload).toEqual(payload);
    expect(request.body.headers).toContainEqual({ name: 'x-github-delivery', value: 'abc-123', redacted: false });
    expect(request.body.headers).toContainEqual({ name: 'authorization', value: null, redacted: true });
    expect(request.text).not.toContain('secret-thing');
  });

  it("answers the docs' errors for malformed, unknown and disabled tokens; an update restores defaults; delete stops the endpoint", async () => {
    const s = await setup({ branch_configuration: 'main release' });
    const t = (await s.create({ type: 'webhook', label: 'Deploy', build: { branch: 'release', commit: 'abc123' } }).expect(201)).body;
    expect((await ctx().http().post('/deliver/bktr_short').send({})).body).toEqual({ message: 'Invalid pipeline trigger token' });
    const unknown = await ctx()
      .http()
      .post(`/deliver/bktr_${'a'.repeat(40)}`)
      .send({});
    expect([unknown.status, unknown.body]).toEqual([404, { message: 'Pipeline trigger not found' }]);

    const updated = await ctx()
      .http()
      .patch(`${s.base}/${t.id}`)
      .set(auth(s.token))
      .send({ label: 'Renamed', enabled: false, build: { branch: null } })
      .expect(200);
    expect(updated.body).toMatchObject({ label: 'Renamed', enabled: false, build: { branch: null, commit: 'abc123' } });
    const disabled = await s.deliver(t.endpoint_url);
    expect([disabled.status, disabled.body]).toEqual([403, { message: 'Pipeline trigger is disabled' }]);

    // Enabled again, the default branch (trunk) is outside the branch filter: not run, recorded.
    await ctx().http().patch(`${s.base}/${t.id}`).set(auth(s.token)).send({ enabled: true }).expect(200);
    const skipped = await s.deliver(t.endpoint_url);
    expect(skipped.status).toBe(200);
    const [d] = (await ctx().http().get(`${s.base}/${t.id}/deliveries`).set(auth(s.token)).expect(200)).body.items;
    expect(d).toMatchObject({ id: skipped.body.id, status: 'not_run', reason: 'branch_mismatch', builds: [] });
    // A body that is not a JSON object is refused as the contract says (422), never a 5xx.
    expect((await s.deliver(t.endpoint_url, [1, 2])).status).toBe(422);

    await ctx().http().delete(`${s.base}/${t.id}`).set(auth(s.token)).expect(204);
    expect((await s.deliver(t.endpoint_url)).status).toBe(404);
    await ctx().http().get(`${s.base}/${t.id}`).set(auth(s.token)).expect(404);
  });

  it('verifies a github trigger’s HMAC signature, keeps its secret out of every answer, and refuses what the docs refuse', async () => {
    const s = await setup();
    const secret = 'my-signing-secret-xy';
    const t = (await s.create({ type: 'github', label: 'PRs', verification: { strategy: 'hmac', secret } }).expect(201)).body;
    expect(t.verification).toEqual({ strategy: 'hmac', secret_hint: `${'X'.repeat(20)}xy` });
    expect(JSON.stringify(t)).not.toContain(secret);
    const body = JSON.stringify({ action: 'opened' });
    const sign = (key: string) => `sha256=${crypto.createHmac('sha256', key).update(body).digest('hex')}`;
    const path = new URL(t.endpoint_url).pathname;
    const post = (sig?: string) => {
      const r = ctx().http().post(path).set('Content-Type', 'application/json').set('X-GitHub-Event', 'pull_request');
      return (sig ? r.set('X-Hub-Signature-256', sig) : r).send(body);
    };
    expect((await post()).status).toBe(401);
    expect((await post(sign('wrong'))).status).toBe(401);
    expect((await post(sign(secret))).status).toBe(201);
    const rows = await ctx().services.db('pipeline_triggers').select('*');
    expect(JSON.stringify(rows)).not.toContain(secret);

    const cases: [Record<string, unknown>, string][] = [
      [{ type: 'webhook', label: 'x', verification: { strategy: 'hmac', secret: 's' } }, 'verification'],
      [{ type: 'webhook', label: 'x', filter: { expression: 'webhook.payload.action == "opened"' } }, 'filter'],
      [{ type: 'github', label: 'x', verification: { strategy: 'hmac' } }, 'verification.secret'],
      [{ type: 'webhook', label: '   ' }, 'label'],
      [{ type: 'jira', label: 'x' }, 'type'],
      [{ label: 'x' }, 'type'],
    ];
    for (const [b, field] of cases) {
      const res = await s.create(b);
      expect([res.status, b]).toEqual([422, b]);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    }
  });

  it('pages triggers and deliveries newest first by cursor, and keeps other organizations and tokens without write_pipelines out', async () => {
    const s = await setup();
    const ids: string[] = [];
    for (const label of ['a', 'b', 'c']) ids.push((await s.create({ type: 'webhook', label }).expect(201)).body.id);
    const first = (await ctx().http().get(`${s.base}?per_page=2`).set(auth(s.token)).expect(200)).body;
    expect(first.items.map((t: { label: string }) => t.label)).toEqual(['c', 'b']);
    const second = (
      await ctx()
        .http()
        .get(new URL(first.links.next).pathname + new URL(first.links.next).search)
        .set(auth(s.token))
        .expect(200)
    ).body;
    expect(second.items.map((t: { label: string }) => t.label)).toEqual(['a']);
    expect(second.links.next).toBeUndefined();
    expect((await ctx().http().get(`${s.base}?after=nonsense`).set(auth(s.token))).status).toBe(400);
    expect(
      (
        await ctx()
          .http()
          .get(`${s.base}?after=${new URL(first.links.next).searchParams.get('after')}&before=x`)
          .set(auth(s.token))
      ).status,
    ).toBe(400);

    // Another organization's token sees nothing of it.
    const other = await ctx().givenAdmin();
    expect((await ctx().http().get(s.base.replace(s.org.slug, other.org.slug)).set(auth(other.token))).status).toBe(404);
    expect((await ctx().http().get(`${s.base}/${ids[0]}`).set(auth(other.token))).status).toBe(404);
    const readOnly = await ctx().givenToken(s.user, [s.org], ['read_pipelines']);
    expect((await s.create({ type: 'webhook', label: 'x' }).set(auth(readOnly))).status).toBe(403);
  });
});
