/**
 * Notification services (the Buildkite "Notification services API"): the documented
 * representation (checked against the documentation's samples), CRUD, cursor pagination, the
 * secret settings (sealed at rest, never answered but a webhook's token as the docs say, kept
 * when an update leaves them out or sends a masked value back), enable and disable, the 422s
 * (refused and unknown providers, bad settings, scope_uuids of another organization), the
 * admin rule and the scopes, and what the delivery side reads (`activeFor`, `findForDelivery`,
 * the `onChanged` callback, a ping's cue).
 */
import dataModelSample from '../fixtures/samples/notification_services__01_notification-service-data-model.json';
import listSample from '../fixtures/samples/notification_services__02_list-notification-services.json';
import createRequestSample from '../fixtures/samples/notification_services__03_create-a-notification-service.request.json';
import updateRequestSample from '../fixtures/samples/notification_services__04_update-a-notification-service.request.json';
import { NotificationServiceRepository } from '../../src/notification-services/repository';
import { NotificationServiceService, type ActiveNotificationService } from '../../src/notification-services/service';
import { SCOPES } from '../../src/core/identity';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { givenPipeline } from '../support/given';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** The same keys as the sample, each with the same JSON type unless one of the two is null. */
function expectShape(ours: Record<string, unknown>, sample: Record<string, unknown>) {
  expect(Object.keys(ours).sort()).toEqual(Object.keys(sample).sort());
  for (const [k, v] of Object.entries(sample)) if (v !== null && ours[k] !== null) expect([k, kind(ours[k])]).toEqual([k, kind(v)]);
}

const base = (org: { slug: string }) => `/v2/organizations/${org.slug}/services`;

async function create(ctx: TestContext, org: { slug: string }, token: string, body: Record<string, unknown>, status = 201) {
  const res = await ctx.http().post(base(org)).set(auth(token)).send(body);
  if (res.status !== status) throw new Error(`create: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

const webhook = (extra: Record<string, unknown> = {}) => ({ provider: 'webhook', settings: { url: 'https://example.com/hook', ...extra } });

describeEachDatabase('notification services', (ctx) => {
  it('are created, read, listed, updated and deleted in the documented representation', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const created = await create(ctx(), org, token, createRequestSample);
    expectShape(created, dataModelSample);
    expectShape(created.settings, dataModelSample.settings);
    expectShape(created.build_states, dataModelSample.build_states);
    expectShape(created.provider, dataModelSample.provider);
    expectShape(created.created_by, dataModelSample.created_by);
    const id = created.id as string;
    expect(created).toEqual({
      id,
      graphql_id: Buffer.from(`NotificationServiceWebhook---${id}`).toString('base64'),
      url: `http://windsock.test/v2/organizations/${org.slug}/services/${id}`,
      provider: { id: 'webhook', name: 'Webhook' },
      description: 'Deploy notifications',
      enabled: true,
      scope: 'all',
      scope_uuids: [],
      branch_configuration: '',
      build_states: dataModelSample.build_states,
      // The docs: a webhook's token is returned in full.
      settings: { ...dataModelSample.settings, url: 'https://example.com/buildkite-webhook', token: 'xxx-yyy-zzz' },
      created_at: expect.stringMatching(ISO),
      created_by: expect.objectContaining({ id: user.id, name: user.name, email: user.email }),
    });

    const got = await ctx()
      .http()
      .get(`${base(org)}/${id}`)
      .set(auth(token))
      .expect(200);
    expect(got.body).toEqual(created);
    // The id is read case-insensitively; something else is a 404.
    await ctx()
      .http()
      .get(`${base(org)}/${id.toUpperCase()}`)
      .set(auth(token))
      .expect(200);
    await ctx()
      .http()
      .get(`${base(org)}/${crypto.randomUUID()}`)
      .set(auth(token))
      .expect(404);

    const list = await ctx().http().get(base(org)).set(auth(token)).expect(200);
    expect(Object.keys(list.body).sort()).toEqual(Object.keys(listSample).sort());
    expect(list.body.items).toEqual([created]);
    const { settings: _s, ...sampleItem } = listSample.items[0]!;
    const { settings: _o, ...ourItem } = list.body.items[0];
    expectShape(ourItem, sampleItem);
    expect(list.body.links).toEqual({ self: `http://windsock.test${base(org)}` });

    // The documented update, aimed at a pipeline of this organization.
    const p = await givenPipeline(ctx(), org, token);
    const updated = await ctx()
      .http()
      .patch(`${base(org)}/${id}`)
      .set(auth(token))
      .send({ ...updateRequestSample, scope_uuids: [p.id] })
      .expect(200);
    expect(updated.body).toMatchObject({
      description: 'Production deploy notifications',
      scope: 'some_projects',
      scope_uuids: [p.id],
      build_states: { ...dataModelSample.build_states, build_failed: true, build_fixed: true },
      settings: created.settings,
      created_at: created.created_at,
    });

    await ctx()
      .http()
      .delete(`${base(org)}/${id}`)
      .set(auth(token))
      .expect(204);
    await ctx()
      .http()
      .get(`${base(org)}/${id}`)
      .set(auth(token))
      .expect(404);
    await ctx()
      .http()
      .delete(`${base(org)}/${id}`)
      .set(auth(token))
      .expect(404);
  });

  it('take defaults: a token of their own, every event, token mode, the latest version, TLS verified, all pipelines', async () => {
    const { org, token } = await ctx().givenAdmin();
    const s = await create(ctx(), org, token, webhook());
    expect(s).toMatchObject({ description: '', scope: 'all', scope_uuids: [], branch_configuration: '', enabled: true });
    expect(Object.values(s.build_states)).toEqual(Array(7).fill(false));
    // The docs' webhook token: "By default, Buildkite will send a token with each webhook".
    expect(s.settings).toEqual({
      url: 'https://example.com/hook',
      version: 3,
      token: expect.stringMatching(/^[0-9a-f]{32}$/),
      token_mode: 'token',
      events: expect.arrayContaining(['build.finished', 'job.started', 'agent.connected']),
      tls_verify: true,
    });
    const slack = await create(ctx(), org, token, {
      provider: 'slack',
      settings: { url: 'https://hooks.slack.com/services/T0/B0/x' },
      branch_configuration: 'main release/*',
    });
    expect(slack).toMatchObject({ provider: { id: 'slack', name: 'Slack' }, settings: { theme: 'text' }, branch_configuration: 'main release/*' });
    const otel = await create(ctx(), org, token, { provider: 'open_telemetry_tracing', settings: { endpoint: 'https://otel.example.com/v1/traces' } });
    expect(otel.settings).toEqual({ endpoint: 'https://otel.example.com/v1/traces', service_name: 'buildkite', resource_attributes: {}, tracestate: {} });
  });

  it('are paginated by cursor, oldest first', async () => {
    const { org, token } = await ctx().givenAdmin();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await create(ctx(), org, token, { ...webhook(), description: `n${i}` })).id);
    const seen: string[] = [];
    let url: string | undefined = `${base(org)}?per_page=2`;
    let pages = 0;
    while (url) {
      const res: { body: { items: { id: string }[]; links: { self: string; next?: string } } } = await ctx()
        .http()
        .get(url.replace('http://windsock.test', ''))
        .set(auth(token))
        .expect(200);
      pages++;
      expect(res.body.items.length).toBeLessThanOrEqual(2);
      seen.push(...res.body.items.map((s: { id: string }) => s.id));
      expect(res.body.links.self).toBe(`http://windsock.test${url.replace('http://windsock.test', '')}`);
      url = res.body.links.next;
      if (url) expect(url).toMatch(/[?&]after=[^&]+/);
    }
    expect(pages).toBe(3);
    expect(seen).toEqual(ids);

    // Back from the fourth: the two before it, still oldest first, with a next link to the rest.
    const page1 = (
      await ctx()
        .http()
        .get(`${base(org)}?per_page=2`)
        .set(auth(token))
    ).body.links.next as string;
    const page2 = (
      await ctx()
        .http()
        .get(new URL(page1).pathname + new URL(page1).search)
        .set(auth(token))
    ).body.links.next as string;
    const cursor = new URL(page2).searchParams.get('after')!;
    const before = await ctx()
      .http()
      .get(`${base(org)}?per_page=2&before=${cursor}`)
      .set(auth(token))
      .expect(200);
    expect(before.body.items.map((s: { id: string }) => s.id)).toEqual(ids.slice(1, 3));
    expect(new URL(before.body.links.next).searchParams.get('before')).toBeNull();

    expect(
      (
        await ctx()
          .http()
          .get(`${base(org)}?after=nonsense`)
          .set(auth(token))
          .expect(400)
      ).body.message,
    ).toMatch(/after/);
    await ctx()
      .http()
      .get(`${base(org)}?after=${cursor}&before=${cursor}`)
      .set(auth(token))
      .expect(400);
    await ctx()
      .http()
      .get(`${base(org)}?per_page=101`)
      .set(auth(token))
      .expect(400);
  });

  it('keep secret settings sealed, unanswered, and unchanged unless replaced', async () => {
    const { org, token } = await ctx().givenAdmin();
    const slackUrl = `https://hooks.slack.com/services/T0/B0/${crypto.randomUUID()}`;
    const header = `Bearer otel-${crypto.randomUUID()}`;
    const hookToken = `tok-${crypto.randomUUID()}`;
    const slack = await create(ctx(), org, token, { provider: 'slack', settings: { url: slackUrl, theme: 'emoji' } });
    const otel = await create(ctx(), org, token, {
      provider: 'open_telemetry_tracing',
      settings: { endpoint: 'https://otel.example.com', headers: { Authorization: header }, resource_attributes: { env: 'prod' } },
    });
    const hook = await create(ctx(), org, token, webhook({ token: hookToken, token_mode: 'signature' }));
    const answers = JSON.stringify([slack, otel, hook, (await ctx().http().get(base(org)).set(auth(token))).body]);
    expect(answers).not.toContain(slackUrl);
    expect(answers).not.toContain(header);
    expect(slack.settings).toEqual({ theme: 'emoji' });
    expect(otel.settings).toEqual({ endpoint: 'https://otel.example.com', service_name: 'buildkite', resource_attributes: { env: 'prod' }, tracestate: {} });

    // At rest: no secret in the clear.
    const rows = JSON.stringify(await ctx().services.db('notification_services').select('*'));
    for (const secret of [slackUrl, header, hookToken]) expect(rows).not.toContain(secret);

    // Partial updates: what is not sent stays, secrets included; a get-update round trip keeps them.
    await ctx()
      .http()
      .patch(`${base(org)}/${slack.id}`)
      .set(auth(token))
      .send({ description: 'builds', settings: { theme: 'text' } })
      .expect(200);
    const got = (
      await ctx()
        .http()
        .get(`${base(org)}/${otel.id}`)
        .set(auth(token))
    ).body;
    const { description, scope, scope_uuids, branch_configuration, build_states, settings } = got;
    await ctx()
      .http()
      .patch(`${base(org)}/${otel.id}`)
      .set(auth(token))
      .send({ provider: got.provider.id, description, scope, scope_uuids, branch_configuration, build_states, settings })
      .expect(200);
    // A header value sent back masked keeps the stored one; a new one replaces it.
    const masked = 'X'.repeat(header.length - 4) + header.slice(-4);
    await ctx()
      .http()
      .patch(`${base(org)}/${otel.id}`)
      .set(auth(token))
      .send({ settings: { headers: { Authorization: masked, 'X-Extra': 'one' } } })
      .expect(200);
    const hookGot = (
      await ctx()
        .http()
        .get(`${base(org)}/${hook.id}`)
        .set(auth(token))
    ).body;
    await ctx()
      .http()
      .patch(`${base(org)}/${hook.id}`)
      .set(auth(token))
      .send({ settings: hookGot.settings })
      .expect(200);
    await ctx()
      .http()
      .patch(`${base(org)}/${hook.id}`)
      .set(auth(token))
      .send({ settings: { token: 'X'.repeat(hookToken.length - 4) + hookToken.slice(-4) } })
      .expect(200);

    const active = new Map((await ctx().services.notificationServices.activeFor(org.id)).map((s) => [s.id, s]));
    expect(active.get(slack.id)).toEqual({
      id: slack.id,
      organizationId: org.id,
      provider: 'slack',
      scope: 'all',
      scopeUuids: [],
      branchConfiguration: '',
      buildStates: expect.objectContaining({ build_failed: false }),
      settings: { url: slackUrl, theme: 'text' },
      // The docs' webhook `sender`: the user who created it.
      creator: { id: expect.any(String), name: expect.any(String) },
    });
    expect(active.get(otel.id)!.settings).toMatchObject({ headers: { Authorization: header, 'X-Extra': 'one' }, resource_attributes: { env: 'prod' } });
    expect(active.get(hook.id)!.settings).toMatchObject({ token: hookToken, token_mode: 'signature', url: 'https://example.com/hook' });

    // A new value replaces the secret.
    await ctx()
      .http()
      .patch(`${base(org)}/${slack.id}`)
      .set(auth(token))
      .send({ settings: { url: 'https://chat.example.com/hook' } })
      .expect(200);
    expect((await ctx().services.notificationServices.findForDelivery(org.id, slack.id))!.settings.url).toBe('https://chat.example.com/hook');
  });

  it("treat a webhook URL's credentials (userinfo, token/key/secret query parameters) as secrets: sealed, answered masked, kept by the mask", async () => {
    const { org, token } = await ctx().givenAdmin();
    const password = `pw-${crypto.randomUUID()}`;
    const apiKey = `key-${crypto.randomUUID()}`;
    const sig = `sig-${crypto.randomUUID()}`;
    const url = `https://ci-user:${password}@hooks.example.com/in?api_key=${apiKey}&signature=${sig}&team=web`;
    const hook = await create(ctx(), org, token, webhook({ url }));
    const answers = JSON.stringify([
      hook,
      (await ctx().http().get(base(org)).set(auth(token))).body,
      (
        await ctx()
          .http()
          .get(`${base(org)}/${hook.id}`)
          .set(auth(token))
      ).body,
    ]);
    for (const secret of [password, apiKey, sig]) expect(answers).not.toContain(secret);
    const shown = new URL(hook.settings.url as string);
    expect(shown.hostname).toBe('hooks.example.com');
    expect(shown.username).toBe('XXXXser');
    expect(shown.password).toMatch(/^X+.{4}$/);
    expect(shown.searchParams.get('api_key')).toMatch(/^X+.{4}$/);
    expect(shown.searchParams.get('team')).toBe('web');
    // At rest: sealed, not in the clear.
    const rows = JSON.stringify(await ctx().services.db('notification_services').select('*'));
    for (const secret of [password, apiKey, sig]) expect(rows).not.toContain(secret);
    // The delivery side reads the whole URL; the mask sent back keeps it; a new URL replaces it.
    expect((await ctx().services.notificationServices.findForDelivery(org.id, hook.id))!.settings.url).toBe(url);
    await ctx()
      .http()
      .patch(`${base(org)}/${hook.id}`)
      .set(auth(token))
      .send({ settings: { url: hook.settings.url } })
      .expect(200);
    expect((await ctx().services.notificationServices.findForDelivery(org.id, hook.id))!.settings.url).toBe(url);
    await ctx()
      .http()
      .patch(`${base(org)}/${hook.id}`)
      .set(auth(token))
      .send({ settings: { url: 'https://hooks.example.com/plain' } })
      .expect(200);
    expect((await ctx().services.notificationServices.findForDelivery(org.id, hook.id))!.settings.url).toBe('https://hooks.example.com/plain');
    expect(
      (
        await ctx()
          .http()
          .get(`${base(org)}/${hook.id}`)
          .set(auth(token))
      ).body.settings.url,
    ).toBe('https://hooks.example.com/plain');
  });

  it('are enabled and disabled; the delivery side reads only enabled ones, or one by id', async () => {
    const { org, token } = await ctx().givenAdmin();
    const s = await create(ctx(), org, token, webhook());
    const off = await ctx()
      .http()
      .put(`${base(org)}/${s.id}/disable`)
      .set(auth(token))
      .expect(200);
    expect(off.body).toEqual({ ...s, enabled: false });
    expect(await ctx().services.notificationServices.activeFor(org.id)).toEqual([]);
    expect(await ctx().services.notificationServices.findForDelivery(org.id, s.id)).toMatchObject({ id: s.id, provider: 'webhook' });
    const on = await ctx()
      .http()
      .put(`${base(org)}/${s.id}/enable`)
      .set(auth(token))
      .expect(200);
    expect(on.body.enabled).toBe(true);
    expect((await ctx().services.notificationServices.activeFor(org.id)).map((a) => a.id)).toEqual([s.id]);
    await ctx()
      .http()
      .put(`${base(org)}/${crypto.randomUUID()}/enable`)
      .set(auth(token))
      .expect(404);
    const other = await ctx().givenOrg();
    expect(await ctx().services.notificationServices.findForDelivery(other.id, s.id)).toBeNull();
  });

  it('refuse providers this server cannot serve, unknown ones and bad settings with 422s naming the field', async () => {
    const { org, token } = await ctx().givenAdmin();
    const refused = await ctx()
      .http()
      .post(base(org))
      .set(auth(token))
      .send({ provider: 'aws_event_bridge', settings: { aws_region: 'us-east-1', aws_account_id: '123456789012' } })
      .expect(422);
    expect(refused.body.message).toMatch(/aws_event_bridge.*Amazon EventBridge/);
    expect(refused.body.errors).toEqual([{ field: 'provider', code: expect.stringMatching(/EventBridge/) }]);
    expect(
      (
        await ctx()
          .http()
          .post(base(org))
          .set(auth(token))
          .send({ provider: 'datadog_pipeline_visibility', settings: { api_key: 'k' } })
          .expect(422)
      ).body.message,
    ).toMatch(/Datadog/);
    expect((await ctx().http().post(base(org)).set(auth(token)).send({ provider: 'pager' }).expect(422)).body.errors[0].field).toBe('provider');
    await ctx().http().post(base(org)).set(auth(token)).send({ description: 'no provider' }).expect(422);

    const fieldsOf = async (body: Record<string, unknown>) =>
      ((await ctx().http().post(base(org)).set(auth(token)).send(body).expect(422)).body.errors as { field: string }[]).map((e) => e.field).sort();
    expect(await fieldsOf({ provider: 'webhook', settings: {} })).toEqual(['settings.url']);
    // Unknown and read-only fields, each named (the docs' 422 for both), on create and on update.
    const unknown = await ctx()
      .http()
      .post(base(org))
      .set(auth(token))
      .send({ ...webhook(), colour: 'blue', enabled: false, id: 'x' })
      .expect(422);
    expect(unknown.body.errors).toEqual([
      { field: 'colour', code: expect.stringContaining('is not a notification service property') },
      { field: 'enabled', code: 'is read-only (use the enable and disable operations)' },
      { field: 'id', code: 'is read-only' },
    ]);
    const made = await create(ctx(), org, token, webhook());
    const patched = await ctx()
      .http()
      .patch(`${base(org)}/${made.id}`)
      .set(auth(token))
      .send({ colour: 'red' })
      .expect(422);
    expect(patched.body.errors).toEqual([{ field: 'colour', code: expect.stringContaining('is not a notification service property') }]);
    expect(await fieldsOf(webhook({ url: 'ftp://example.com/x' }))).toEqual(['settings.url']);
    expect(await fieldsOf({ provider: 'webhook', settings: { url: 'javascript:alert(1)' } })).toEqual(['settings.url']);
    expect(await fieldsOf(webhook({ token_mode: 'hmac' }))).toEqual(['settings.token_mode']);
    // Signature mode needs a token: one given, or the one a new service gets; cleared later, a 422.
    const signed = await create(ctx(), org, token, webhook({ token_mode: 'signature' }));
    expect(signed.settings).toMatchObject({ token_mode: 'signature', token: expect.stringMatching(/^[0-9a-f]{32}$/) });
    const cleared = await ctx()
      .http()
      .patch(`${base(org)}/${signed.id}`)
      .set(auth(token))
      .send({ settings: { token: null } })
      .expect(422);
    expect(cleared.body.errors.map((e: { field: string }) => e.field)).toEqual(['settings.token']);
    expect(await fieldsOf(webhook({ events: ['build.finished', 'build.exploded'] }))).toEqual(['settings.events']);
    expect(await fieldsOf(webhook({ version: 9 }))).toEqual(['settings.version']);
    expect(await fieldsOf(webhook({ tls_verify: 'yes' }))).toEqual(['settings.tls_verify']);
    expect(await fieldsOf(webhook({ colour: 'red' }))).toEqual(['settings.colour']);
    expect(await fieldsOf({ provider: 'slack', settings: { url: 'https://hooks.slack.com/x', theme: 'loud' } })).toEqual(['settings.theme']);
    expect(await fieldsOf({ provider: 'open_telemetry_tracing', settings: { endpoint: 'https://o.example.com', headers: { A: 1 } } })).toEqual([
      'settings.headers.A',
    ]);
    expect(await fieldsOf({ provider: 'open_telemetry_tracing', settings: { headers: [] } })).toEqual(['settings.endpoint', 'settings.headers']);
    expect(await fieldsOf({ ...webhook(), build_states: { build_exploded: true } })).toEqual(['build_states.build_exploded']);
    expect(await fieldsOf({ ...webhook(), scope: 'some_projects' })).toEqual(['scope_uuids']);
    expect(await fieldsOf({ ...webhook(), scope: 'everything' })).toEqual(['scope']);
    expect(await fieldsOf({ ...webhook(), scope: 'all', scope_uuids: [crypto.randomUUID()] })).toEqual(['scope_uuids']);

    // Updates: the provider cannot change, the webhook version cannot go down.
    const s = await create(ctx(), org, token, webhook());
    const patchFields = async (body: Record<string, unknown>) =>
      (
        (
          await ctx()
            .http()
            .patch(`${base(org)}/${s.id}`)
            .set(auth(token))
            .send(body)
            .expect(422)
        ).body.errors as { field: string }[]
      ).map((e) => e.field);
    expect(await patchFields({ provider: 'slack' })).toEqual(['provider']);
    expect(await patchFields({ settings: { version: 2 } })).toEqual(['settings.version']);
    expect(await patchFields({ settings: { url: '' } })).toEqual(['settings.url']);
    await ctx()
      .http()
      .patch(`${base(org)}/${s.id}`)
      .set(auth(token))
      .send({ provider: 'webhook', settings: { version: 3 } })
      .expect(200);
  });

  it("check a Slack service's settings as the API receives them: an http(s) url, a text or emoji theme, an object", async () => {
    const { org, token } = await ctx().givenAdmin();
    const ok = await create(ctx(), org, token, { provider: 'slack', settings: { url: 'https://hooks.slack.com/services/T/B/x', theme: 'emoji' } });
    expect(ok.settings).toEqual({ theme: 'emoji' });
    const errorsOf = async (settings: unknown) =>
      (await ctx().http().post(base(org)).set(auth(token)).send({ provider: 'slack', settings }).expect(422)).body.errors as { field: string; code: string }[];
    expect(await errorsOf({ theme: 'text' })).toEqual([{ field: 'settings.url', code: "can't be blank" }]);
    expect(await errorsOf({ url: 'ftp://hooks.example.com/x' })).toEqual([{ field: 'settings.url', code: 'must be an http or https URL' }]);
    expect(await errorsOf({ url: 'https://hooks.example.com/x', theme: 'loud' })).toEqual([{ field: 'settings.theme', code: 'must be text or emoji' }]);
    expect(await errorsOf('x')).toEqual([{ field: 'settings', code: expect.stringMatching(/object/) }]);
  });

  it("check an OpenTelemetry service's settings as the API receives them: an endpoint without credentials, maps of strings, header names", async () => {
    const { org, token } = await ctx().givenAdmin();
    const ok = await create(ctx(), org, token, {
      provider: 'open_telemetry_tracing',
      settings: { endpoint: 'https://otlp.example.com', headers: { Authorization: 'Bearer x' } },
    });
    expect(ok.settings).toMatchObject({ endpoint: 'https://otlp.example.com', service_name: 'buildkite' });
    const errorsOf = async (settings: unknown) =>
      (await ctx().http().post(base(org)).set(auth(token)).send({ provider: 'open_telemetry_tracing', settings }).expect(422)).body.errors as {
        field: string;
        code: string;
      }[];
    expect(await errorsOf({})).toEqual([{ field: 'settings.endpoint', code: "can't be blank" }]);
    expect(await errorsOf({ endpoint: 'not a url' })).toEqual([{ field: 'settings.endpoint', code: 'must be an http or https URL' }]);
    expect(await errorsOf({ endpoint: 'https://user:pass@otlp.example.com' })).toEqual([
      { field: 'settings.endpoint', code: 'must not carry credentials (send them in headers)' },
    ]);
    expect(await errorsOf({ endpoint: 'https://x.example', headers: { a: 1 } })).toEqual([{ field: 'settings.headers.a', code: 'must be a string' }]);
    expect(await errorsOf({ endpoint: 'https://x.example', headers: { 'bad name': 'v' } })).toEqual([
      { field: 'settings.headers', code: 'has a name that is not an HTTP header name' },
    ]);
    expect(await errorsOf({ endpoint: 'https://x.example', resource_attributes: { 'any name': 'v' }, service_name: 3 })).toEqual([
      { field: 'settings.service_name', code: 'must be a string' },
    ]);
    expect(await errorsOf({ endpoint: 'https://x.example', tracestate: ['a'] })).toEqual([
      { field: 'settings.tracestate', code: 'must be an object of strings' },
    ]);
  });

  it('take scope_uuids naming pipelines, teams or clusters of the same organization only', async () => {
    const { org, user, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const other = await ctx().givenAdmin({ teamsEnabled: true });
    const p = await givenPipeline(ctx(), org, token);
    const foreignPipeline = await givenPipeline(ctx(), other.org, other.token);
    const team = await ctx().givenTeam(org, [user]);
    const foreignTeam = await ctx().givenTeam(other.org, [other.user]);
    const cluster = (await ctx().http().post(`/v2/organizations/${org.slug}/clusters`).set(auth(token)).send({ name: 'Mine' }).expect(201)).body;
    const foreignCluster = (await ctx().http().post(`/v2/organizations/${other.org.slug}/clusters`).set(auth(other.token)).send({ name: 'Theirs' }).expect(201))
      .body;

    for (const [scope, mine, theirs] of [
      ['some_projects', p.id, foreignPipeline.id],
      ['some_teams', team.id, foreignTeam.id],
      ['some_clusters', cluster.id, foreignCluster.id],
    ] as const) {
      const ok = await create(ctx(), org, token, { ...webhook(), scope, scope_uuids: [mine.toUpperCase()] });
      expect(ok).toMatchObject({ scope, scope_uuids: [mine] });
      const bad = await ctx()
        .http()
        .post(base(org))
        .set(auth(token))
        .send({ ...webhook(), scope, scope_uuids: [mine, theirs] })
        .expect(422);
      expect(bad.body.errors).toEqual([{ field: 'scope_uuids', code: expect.stringContaining(theirs) }]);
      expect(JSON.stringify(bad.body)).not.toContain(mine);
      await ctx()
        .http()
        .patch(`${base(org)}/${ok.id}`)
        .set(auth(token))
        .send({ scope_uuids: [theirs] })
        .expect(422);
      await ctx()
        .http()
        .post(base(org))
        .set(auth(token))
        .send({ ...webhook(), scope, scope_uuids: ['not-a-uuid'] })
        .expect(422);
    }
    // A change of scope kind needs its own uuids.
    const s = await create(ctx(), org, token, { ...webhook(), scope: 'some_projects', scope_uuids: [p.id] });
    await ctx()
      .http()
      .patch(`${base(org)}/${s.id}`)
      .set(auth(token))
      .send({ scope: 'some_teams' })
      .expect(422);
    const all = await ctx()
      .http()
      .patch(`${base(org)}/${s.id}`)
      .set(auth(token))
      .send({ scope: 'all' })
      .expect(200);
    expect(all.body).toMatchObject({ scope: 'all', scope_uuids: [] });
  });

  it('are for administrators, with read_notification_services and write_notification_services', async () => {
    const { org, token } = await ctx().givenAdmin();
    const s = await create(ctx(), org, token, webhook());
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    await ctx().http().get(base(org)).set(auth(memberToken)).expect(403);
    await ctx()
      .http()
      .get(`${base(org)}/${s.id}`)
      .set(auth(memberToken))
      .expect(403);
    await ctx().http().post(base(org)).set(auth(memberToken)).send(webhook()).expect(403);
    await ctx()
      .http()
      .put(`${base(org)}/${s.id}/disable`)
      .set(auth(memberToken))
      .expect(403);

    const admin = await ctx().givenUser(org, 'admin');
    const readOnly = await ctx().givenToken(
      admin,
      [org],
      SCOPES.filter((x) => x !== 'write_notification_services'),
    );
    await ctx().http().get(base(org)).set(auth(readOnly)).expect(200);
    const refused = await ctx().http().post(base(org)).set(auth(readOnly)).send(webhook()).expect(403);
    expect(refused.body.message).toMatch(/write_notification_services/);
    await ctx()
      .http()
      .delete(`${base(org)}/${s.id}`)
      .set(auth(readOnly))
      .expect(403);
    const noRead = await ctx().givenToken(
      admin,
      [org],
      SCOPES.filter((x) => x !== 'read_notification_services'),
    );
    expect(
      (
        await ctx()
          .http()
          .get(`${base(org)}/${s.id}`)
          .set(auth(noRead))
          .expect(403)
      ).body.message,
    ).toMatch(/read_notification_services/);

    // Another organization's admin sees none of them.
    const other = await ctx().givenAdmin();
    await ctx()
      .http()
      .get(`${base(other.org)}/${s.id}`)
      .set(auth(other.token))
      .expect(404);
    expect((await ctx().http().get(base(other.org)).set(auth(other.token)).expect(200)).body.items).toEqual([]);
  });

  it('tell the onChanged callback of each new service, and of each change of one, after it is stored, decrypted; its failure fails neither', async () => {
    const { org } = await ctx().givenAdmin();
    const seen: ActiveNotificationService[] = [];
    const svc = ctx().services;
    const make = (cb: (s: ActiveNotificationService) => Promise<void>) =>
      new NotificationServiceService(
        new NotificationServiceRepository(svc.db),
        { pipelines: svc.pipelines, teams: svc.teams, clusters: svc.clusters },
        svc.keys,
        cb,
      );
    const operator = { operator: true as const, organization: org };
    const created = await make(async (s) => {
      expect(await svc.notificationServices.findForDelivery(org.id, s.id)).not.toBeNull();
      seen.push(s);
    }).create(operator, { provider: 'webhook', settings: { url: 'https://example.com/h', token: 'secret-token' } });
    expect(seen).toEqual([expect.objectContaining({ id: created.id, organizationId: org.id, settings: expect.objectContaining({ token: 'secret-token' }) })]);
    expect(created.createdBy).toBeNull();
    // The docs' ping: 'Webhook notification settings have changed'. A change is told; sending nothing is none.
    const watching = make(async (s) => {
      seen.push(s);
    });
    await watching.update(operator, created.id, { description: 'Renamed' });
    await watching.update(operator, created.id, {});
    expect(seen.map((s) => s.id)).toEqual([created.id, created.id]);
    const failing = make(async () => {
      throw new Error('ping failed');
    });
    const made = await failing.create(operator, { provider: 'webhook', settings: { url: 'https://example.com/h' } });
    await failing.update(operator, made.id, { description: 'Still saved' });
    expect(await svc.notificationServices.findForDelivery(org.id, made.id)).not.toBeNull();
  });
});
