/**
 * Webhook notification services end to end: a service created through the documented API, a
 * receiver on loopback, builds and agents moving through the API and the agent API, and the
 * worker driven by the test (`settle`: fan out, deliver, until nothing is left). What arrives is
 * the documented body with the documented headers, in order per build; failures are retried
 * with back-off and recorded; the history and redelivery work; scope, branch filter, events
 * and the enabled switch decide who hears what.
 */
import crypto from 'node:crypto';
import { auth, type TestContext, describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken, runNextJob, takeNextJob } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { receiverForEachTest, startReceiver } from './receiver';

describeEachDatabase('webhook notifications', { notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 4 } }, (ctx) => {
  const receiver = receiverForEachTest();

  const settle = () => ctx().services.notificationWorker.settle();
  const servicesPath = (org: { slug: string }) => `/v2/organizations/${org.slug}/services`;

  async function givenService(org: { slug: string }, token: string, body: Record<string, unknown> = {}) {
    const { settings, ...rest } = body as { settings?: Record<string, unknown> };
    const res = await ctx()
      .http()
      .post(servicesPath(org))
      .set(auth(token))
      .send({ provider: 'webhook', description: 'test', ...rest, settings: { url: receiver().url, token: 'tok-123', ...settings } });
    expect(res.status).toBe(201);
    await settle(); // the ping
    return res.body as { id: string };
  }

  it("tells a job's promised failure with its reason, before the build.failing it causes and the job.finished", async () => {
    const { org, token } = await ctx().givenAdmin();
    await givenService(org, token, { settings: { events: ['build.failing', 'job.promised_exit_status', 'job.finished'] } });
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - { command: tests.sh, parallelism: 2 }\n');
    await givenBuild(ctx(), org, p, token);
    const [first, second] = [await givenAgent(ctx(), reg, 'first'), await givenAgent(ctx(), reg, 'second')];
    const jobs = [await takeNextJob(ctx(), first), await takeNextJob(ctx(), second)];
    const promise = (agent: { token: string }, jobId: string, body: Record<string, unknown>) =>
      ctx().http().put(`/v3/jobs/${jobId}/promise_failure`).set(agentAuth(agent.token)).send(body).expect(204);
    await promise(first, jobs[0]!.id, { exit_status: 1, reason: 'test_failure (2 failed after retries)' });
    await promise(second, jobs[1]!.id, { exit_status: 3 });
    // The same promise again is recorded once.
    await promise(second, jobs[1]!.id, { exit_status: 3, reason: 'again' });
    await ctx().http().put(`/v3/jobs/${jobs[0]!.id}/finish`).set(agentAuth(first.token)).send({ exit_status: '1' }).expect(200);
    await settle();
    expect(receiver().events()).toEqual(['ping', 'job.promised_exit_status', 'build.failing', 'job.promised_exit_status', 'job.finished']);
    type Body = { event: string; job: Record<string, unknown>; build: Record<string, unknown>; promised_exit_status_reason?: unknown };
    const [one, , two, finished] = receiver()
      .received.slice(1)
      .map((r) => r.body as Body);
    expect(one).toMatchObject({ event: 'job.promised_exit_status', promised_exit_status_reason: 'test_failure (2 failed after retries)' });
    expect(one!.job).toMatchObject({ id: jobs[0]!.id, state: 'running', promised_exit_status: 1, promised_exit_status_at: expect.stringMatching(/Z$/) });
    expect(two).toMatchObject({
      event: 'job.promised_exit_status',
      promised_exit_status_reason: null,
      job: { id: jobs[1]!.id, state: 'running', promised_exit_status: 3 },
    });
    // Only this event has the field.
    expect(finished).toMatchObject({ event: 'job.finished', job: { id: jobs[0]!.id, state: 'failed' } });
    expect(finished).not.toHaveProperty('promised_exit_status_reason');
  });

  it("tells a trigger job's end with its async, and pings a service whose settings change", async () => {
    const { org, token } = await ctx().givenAdmin();
    const s = await givenService(org, token, { settings: { events: ['job.finished', 'build.finished'] } });
    await givenPipeline(ctx(), org, token, { name: 'target', configuration: 'steps:\n  - command: deploy\n' });
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - trigger: target\n    async: true\n');
    await givenBuild(ctx(), org, p, token);
    await settle();
    expect(receiver().events()).toEqual(['ping', 'job.finished', 'build.finished']);
    expect(receiver().received[1]!.body).toMatchObject({ event: 'job.finished', job: { type: 'trigger', state: 'passed', async: true } });
    // The build events page: build.finished has the steps' configuration, a trigger step's async in it.
    expect((receiver().received[2]!.body as { build: { steps: unknown[] } }).build.steps).toEqual([
      expect.objectContaining({ type: 'trigger', pipeline: 'target', async: true }),
    ]);
    // The docs' ping: 'Webhook notification settings have changed'.
    await ctx()
      .http()
      .patch(`${servicesPath(org)}/${s.id}`)
      .set(auth(token))
      .send({ description: 'renamed' })
      .expect(200);
    await settle();
    expect(receiver().events()).toEqual(['ping', 'job.finished', 'build.finished', 'ping']);
  });

  it('names who retried a job in its retry_source: the user for a manual retry, null for an automatic one', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    await givenService(org, token, { settings: { events: ['job.scheduled'] } });
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: flaky\n    retry:\n      automatic: [{ exit_status: 2, limit: 1 }]\n');
    const b = await givenBuild(ctx(), org, p, token);
    const agent = await givenAgent(ctx(), reg, 'runner');
    const first = await runNextJob(ctx(), agent, 2);
    const automatic = await runNextJob(ctx(), agent, 1);
    await ctx().http().put(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds/${b.number}/jobs/${automatic.id}/retry`).set(auth(token)).expect(200);
    await settle();
    const sources = receiver()
      .received.filter((r) => r.headers['x-buildkite-event'] === 'job.scheduled')
      .map((r) => (r.body as { job: { retry_source: unknown } }).job.retry_source);
    expect(sources).toEqual([
      null,
      { job_id: first.id, retry_type: 'automatic', retried_by: null },
      { job_id: automatic.id, retry_type: 'manual', retried_by: { name: user.name, email: user.email } },
    ]);
  });

  it("tells a registration a cluster token refused for its address, to services in the cluster's scope", async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const clusters = `/v2/organizations/${org.slug}/clusters`;
    const cluster = (await ctx().http().post(clusters).set(auth(token)).send({ name: 'Fenced' }).expect(201)).body as { id: string };
    const other = (await ctx().http().post(clusters).set(auth(token)).send({ name: 'Elsewhere' }).expect(201)).body as { id: string };
    const fenced = (
      await ctx()
        .http()
        .post(`${clusters}/${cluster.id}/tokens`)
        .set(auth(token))
        .send({ description: 'fenced', allowed_ip_addresses: '10.1.2.0/24' })
        .expect(201)
    ).body as { id: string; token: string };
    await givenService(org, token, { settings: { events: ['cluster_token.registration_blocked'] } });
    // A service scoped to another cluster hears nothing of it.
    const away = await startReceiver();
    await ctx()
      .http()
      .post(servicesPath(org))
      .set(auth(token))
      .send({
        provider: 'webhook',
        scope: 'some_clusters',
        scope_uuids: [other.id],
        settings: { url: away.url, events: ['cluster_token.registration_blocked'] },
      })
      .expect(201);
    // Refused twice in a row from one address: told once (once a minute per token and address).
    for (let i = 0; i < 2; i++) await ctx().http().post('/v3/register').set(agentAuth(fenced.token)).send({ name: 'outsider', meta_data: [] }).expect(401);
    await settle();
    expect(receiver().events()).toEqual(['ping', 'cluster_token.registration_blocked']);
    // The agent token events page's body: the refused address, the token (its REST shape, no secret), and the webhook's creator.
    expect(receiver().received[1]!.body).toEqual({
      event: 'cluster_token.registration_blocked',
      blocked_ip: expect.stringMatching(/127\.0\.0\.1|::1/),
      cluster_token: expect.objectContaining({ id: fenced.id, description: 'fenced', allowed_ip_addresses: '10.1.2.0/24' }),
      sender: { id: user.id, name: user.name },
    });
    try {
      expect(away.events()).toEqual(['ping']);
    } finally {
      await away.close();
    }
  });

  it('disconnects an agent its cluster token no longer allows, and tells it once as agent.blocked (the agent events page)', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const clusters = `/v2/organizations/${org.slug}/clusters`;
    const cluster = (await ctx().http().post(clusters).set(auth(token)).send({ name: 'Fenced' }).expect(201)).body as { id: string };
    const queue = (await ctx().http().post(`${clusters}/${cluster.id}/queues`).set(auth(token)).send({ key: 'default' }).expect(201)).body as { id: string };
    await ctx().http().put(`${clusters}/${cluster.id}`).set(auth(token)).send({ default_queue_id: queue.id }).expect(200);
    const tokenUrl = `${clusters}/${cluster.id}/tokens`;
    const fenced = (await ctx().http().post(tokenUrl).set(auth(token)).send({ description: 'fenced', allowed_ip_addresses: '127.0.0.0/8' }).expect(201))
      .body as { id: string; token: string };
    const registered = await ctx().http().post('/v3/register').set(agentAuth(fenced.token)).send({ name: 'insider', meta_data: [] }).expect(201);
    const agent = { id: registered.body.id as string, token: registered.body.access_token as string };
    await ctx().http().post('/v3/connect').set(agentAuth(agent.token)).send({}).expect(200);
    await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200);
    await givenService(org, token, { settings: { events: ['agent.disconnected', 'agent.blocked'] } });
    // The token's ranges change: the agent's next calls are refused, and it is disconnected once.
    await ctx().http().put(`${tokenUrl}/${fenced.id}`).set(auth(token)).send({ allowed_ip_addresses: '10.1.2.0/24' }).expect(200);
    for (let i = 0; i < 2; i++) {
      const refused = await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(401);
      expect(refused.body.message).toMatch(/does not allow connections from/);
    }
    const rest = await ctx().http().get(`/v2/organizations/${org.slug}/agents/${agent.id}`).set(auth(token)).expect(200);
    expect(rest.body.connection_state).toBe('disconnected');
    await settle();
    expect(receiver().events()).toEqual(['ping', 'agent.disconnected', 'agent.blocked']);
    expect(receiver().received[2]!.body).toEqual({
      event: 'agent.blocked',
      blocked_ip: expect.stringMatching(/127\.0\.0\.1|::1/),
      agent: expect.objectContaining({ id: agent.id, name: 'insider', connection_state: 'disconnected' }),
      cluster_token: expect.objectContaining({ id: fenced.id, description: 'fenced', allowed_ip_addresses: '10.1.2.0/24' }),
      sender: { id: user.id, name: user.name },
    });
    // Allowed again, the agent calls as before.
    await ctx().http().put(`${tokenUrl}/${fenced.id}`).set(auth(token)).send({ allowed_ip_addresses: '0.0.0.0/0' }).expect(200);
    await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200);
  });

  it('tells nothing of a job pipeline upload --replace removed before its events went out', async () => {
    const { org, token } = await ctx().givenAdmin();
    await givenService(org, token, { settings: { events: ['job.scheduled'] } });
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: upload\n  - command: placeholder\n');
    await givenBuild(ctx(), org, p, token);
    const agent = await givenAgent(ctx(), reg, 'uploader');
    const uploader = await takeNextJob(ctx(), agent);
    expect(uploader.command).toBe('upload');
    await ctx()
      .http()
      .post(`/v3/jobs/${uploader.id}/pipelines`)
      .set(agentAuth(agent.token))
      .send({ pipeline: { steps: [{ command: 'generated' }] }, replace: true })
      .expect(201);
    await settle();
    const commands = receiver()
      .received.filter((r) => r.headers['x-buildkite-event'] === 'job.scheduled')
      .map((r) => (r.body as { job: { command: string } }).job.command);
    expect(commands).toEqual(['upload', 'generated']);
  });

  it('pings a new service with the documented headers', async () => {
    const { org, token } = await ctx().givenAdmin();
    const s = await givenService(org, token);
    expect(receiver().events()).toEqual(['ping']);
    const ping = receiver().received[0]!;
    expect(ping.method).toBe('POST');
    expect(ping.headers['x-buildkite-token']).toBe('tok-123');
    expect(ping.headers['content-type']).toBe('application/json');
    expect(ping.body).toMatchObject({ event: 'ping', service: { id: s.id } });
    // The ping events page: the Organization, as the REST API represents it.
    expect((ping.body as { organization: Record<string, unknown> }).organization).toMatchObject({
      slug: expect.any(String),
      url: expect.stringMatching(/\/v2\/organizations\//),
      graphql_id: expect.any(String),
      pipelines_url: expect.any(String),
    });
  });

  it("tells a build's events in order with the documented body", async () => {
    const { org, user, token } = await ctx().givenAdmin();
    await givenService(org, token, {
      settings: { events: ['build.scheduled', 'build.running', 'build.finished', 'job.scheduled', 'job.started', 'job.finished'] },
    });
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: one\n');
    // Another admin builds: the docs' sender is the user who created the webhook, not the build's.
    const builder = await ctx().givenUser(org, 'admin');
    const b = await givenBuild(ctx(), org, p, await ctx().givenToken(builder, [org]));
    const agent = await givenAgent(ctx(), reg, 'runner');
    await runNextJob(ctx(), agent, 0);
    await settle();
    expect(receiver().events()).toEqual(['ping', 'build.scheduled', 'job.scheduled', 'job.started', 'build.running', 'job.finished', 'build.finished']);
    expect(receiver().received[0]!.body).toMatchObject({ event: 'ping', sender: { id: user.id, name: user.name } });
    const finished = receiver().received.at(-1)!.body as { build: Record<string, unknown>; pipeline: Record<string, unknown>; sender: unknown };
    expect(finished.build).toMatchObject({ id: b.id, number: b.number, state: 'passed' });
    expect(finished.build).not.toHaveProperty('pipeline');
    // The docs: 'When using webhooks, the build object does not contain job data'.
    expect(finished.build).not.toHaveProperty('jobs');
    expect(finished.pipeline).toMatchObject({ id: p.id, slug: p.slug });
    expect((finished.pipeline as { provider: { webhook_url: string } }).provider.webhook_url).toBe('');
    expect(finished.sender).toEqual({ id: user.id, name: user.name });
    const started = receiver().received.find((r) => r.headers['x-buildkite-event'] === 'job.started')!.body as { job: Record<string, unknown> };
    expect(started.job).toMatchObject({ type: 'script', command: 'one' });
  });

  it("sends the token a service was given when it was created without one (the docs' default)", async () => {
    const { org, token } = await ctx().givenAdmin();
    const s = await givenService(org, token, { settings: { token: undefined } });
    const stored = (
      await ctx()
        .http()
        .get(`${servicesPath(org)}/${s.id}`)
        .set(auth(token))
        .expect(200)
    ).body.settings.token as string;
    expect(stored).toMatch(/^[0-9a-f]{32}$/);
    expect(receiver().received[0]!.headers['x-buildkite-token']).toBe(stored);
  });

  it('signs deliveries in signature mode', async () => {
    const { org, token } = await ctx().givenAdmin();
    await givenService(org, token, { settings: { token_mode: 'signature', token: 'sig-secret' } });
    const ping = receiver().received[0]!;
    expect(ping.headers['x-buildkite-token']).toBeUndefined();
    const m = /^timestamp=(\d+),signature=([0-9a-f]{64})$/.exec(String(ping.headers['x-buildkite-signature']));
    expect(m).not.toBeNull();
    const expected = crypto.createHmac('sha256', 'sig-secret').update(`${m![1]}.${ping.raw}`).digest('hex');
    expect(m![2]).toBe(expected);
    expect(Math.abs(Number(m![1]) - Date.now() / 1000)).toBeLessThan(60);
  });

  it('sends only the events a service asks for, in its scope and branch filter, and nothing while disabled', async () => {
    const { org, token } = await ctx().givenAdmin();
    const p1 = await givenPipeline(ctx(), org, token, 'steps:\n  - command: one\n');
    const p2 = await givenPipeline(ctx(), org, token, 'steps:\n  - command: one\n');
    const s = await givenService(org, token, {
      scope: 'some_projects',
      scope_uuids: [p1.id],
      branch_configuration: 'main release/*',
      settings: { events: ['build.scheduled'] },
    });
    const b1 = await givenBuild(ctx(), org, p1, token, { branch: 'main' });
    await givenBuild(ctx(), org, p1, token, { branch: 'feature/x' });
    await givenBuild(ctx(), org, p2, token, { branch: 'main' });
    await settle();
    expect(receiver().events()).toEqual(['ping', 'build.scheduled']);
    expect((receiver().received[1]!.body.build as { id: string }).id).toBe(b1.id);
    await ctx()
      .http()
      .put(`${servicesPath(org)}/${s.id}/disable`)
      .set(auth(token))
      .expect(200);
    await givenBuild(ctx(), org, p1, token, { branch: 'main' });
    await settle();
    expect(receiver().events()).toEqual(['ping', 'build.scheduled']);
  });

  it("tells agents' connection states", async () => {
    const { org, token } = await ctx().givenAdmin();
    await givenService(org, token, { settings: { events: ['agent.connected', 'agent.disconnected'] } });
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const agent = await givenAgent(ctx(), reg, 'watcher');
    await ctx().http().post('/v3/disconnect').set(agentAuth(agent.token)).expect(200);
    await settle();
    expect(receiver().events()).toEqual(['ping', 'agent.connected', 'agent.disconnected']);
    expect(receiver().received[1]!.body.agent).toMatchObject({ id: agent.id, name: 'watcher', job: null });
  });

  it("gives an agent event's agent the job it holds, as the REST agent does", async () => {
    const { org, token } = await ctx().givenAdmin();
    await givenService(org, token, { settings: { events: ['agent.stopping'] } });
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const p = await givenPipeline(ctx(), org, token, 'steps:\n  - command: long\n');
    await givenBuild(ctx(), org, p, token);
    const agent = await givenAgent(ctx(), reg, 'busy');
    const job = await takeNextJob(ctx(), agent);
    await ctx().http().put(`/v2/organizations/${org.slug}/agents/${agent.id}/stop`).set(auth(token)).send({ force: false }).expect(204);
    await settle();
    expect(receiver().events()).toEqual(['ping', 'agent.stopping']);
    expect(receiver().received[1]!.body.agent).toMatchObject({ id: agent.id, job: { id: job.id, type: 'script', command: 'long' } });
  });

  it('retries with back-off, records every attempt, and lists them in the history', async () => {
    const { org, token } = await ctx().givenAdmin();
    receiver().answer = (i) => ({ status: i === 0 || i === 1 ? 503 : 200 });
    const s = await givenService(org, token);
    expect(receiver().events()).toEqual(['ping', 'ping', 'ping']);
    const list = await ctx()
      .http()
      .get(`${servicesPath(org)}/${s.id}/deliveries`)
      .set(auth(token))
      .expect(200);
    expect(list.body).toHaveLength(1);
    const d = list.body[0];
    expect(d).toMatchObject({ event: 'ping', state: 'delivered', attempts_count: 3, next_attempt_at: null, redelivery_of: null });
    expect(d.attempts.map((a: { status: number; ok: boolean }) => [a.status, a.ok])).toEqual([
      [503, false],
      [503, false],
      [200, true],
    ]);
    expect(d.attempts[0].response_excerpt).toBe('answer 503');
    const one = await ctx()
      .http()
      .get(`${servicesPath(org)}/${s.id}/deliveries/${d.id}`)
      .set(auth(token))
      .expect(200);
    expect(one.body).toEqual(d);
  });

  it('names each delivery in X-Buildkite-Request, the same on every retry of it, another for a redelivery', async () => {
    const { org, token } = await ctx().givenAdmin();
    receiver().answer = (i) => ({ status: i === 0 ? 503 : 200 });
    const s = await givenService(org, token);
    const [d] = (
      await ctx()
        .http()
        .get(`${servicesPath(org)}/${s.id}/deliveries`)
        .set(auth(token))
        .expect(200)
    ).body as { id: string }[];
    const ids = receiver().received.map((r) => r.headers['x-buildkite-request']);
    // Two attempts of one delivery (a 503, then taken): one id, the delivery's.
    expect(ids).toEqual([d!.id, d!.id]);
    await ctx()
      .http()
      .post(`${servicesPath(org)}/${s.id}/deliveries/${d!.id}/redeliver`)
      .set(auth(token))
      .expect(201);
    await settle();
    const again = receiver().received[2]!.headers['x-buildkite-request'];
    expect(again).toMatch(/^[0-9a-f-]{36}$/);
    expect(again).not.toBe(d!.id);
  });

  it('gives up after the last attempt, and at once on a 4xx', async () => {
    const { org, token } = await ctx().givenAdmin();
    receiver().answer = () => ({ status: 500 });
    const s = await givenService(org, token);
    expect(receiver().events()).toEqual(['ping', 'ping', 'ping', 'ping']);
    receiver().answer = () => ({ status: 404 });
    const again = await ctx()
      .http()
      .get(`${servicesPath(org)}/${s.id}/deliveries`)
      .set(auth(token))
      .expect(200);
    expect(again.body[0]).toMatchObject({ state: 'failed', attempts_count: 4 });
    const re = await ctx()
      .http()
      .post(`${servicesPath(org)}/${s.id}/deliveries/${again.body[0].id}/redeliver`)
      .set(auth(token))
      .expect(201);
    expect(re.body).toMatchObject({ state: 'pending', redelivery_of: again.body[0].id, attempts_count: 0, event: 'ping' });
    await settle();
    expect(receiver().events()).toHaveLength(5);
    const after = await ctx()
      .http()
      .get(`${servicesPath(org)}/${s.id}/deliveries/${re.body.id}`)
      .set(auth(token))
      .expect(200);
    expect(after.body).toMatchObject({ state: 'failed', attempts_count: 1 });
    expect(after.body.attempts[0].status).toBe(404);
  });

  it("another organization's token sees none of a service's deliveries", async () => {
    const { org, token } = await ctx().givenAdmin();
    const s = await givenService(org, token);
    const other = await ctx().givenAdmin();
    await ctx()
      .http()
      .get(`${servicesPath(org)}/${s.id}/deliveries`)
      .set(auth(other.token))
      .expect(404);
    await ctx()
      .http()
      .get(`${servicesPath(other.org)}/${s.id}/deliveries`)
      .set(auth(other.token))
      .expect(404);
  });
});

describeEachDatabase(
  'webhook notifications without private addresses allowed',
  {
    notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 4 },
    outbound: { allowPrivate: false, timeoutMs: 5_000, maxResponseBytes: 65_536 },
  },
  (get) => {
    let ctx: TestContext;
    beforeAll(() => {
      ctx = get();
    });

    it('refuses a loopback receiver, once, and says why', async () => {
      const receiver = await startReceiver();
      try {
        const { org, token } = await ctx.givenAdmin();
        const res = await ctx
          .http()
          .post(`/v2/organizations/${org.slug}/services`)
          .set(auth(token))
          .send({ provider: 'webhook', settings: { url: receiver.url } });
        expect(res.status).toBe(201);
        await ctx.services.notificationWorker.settle();
        expect(receiver.received).toEqual([]);
        const list = await ctx.http().get(`/v2/organizations/${org.slug}/services/${res.body.id}/deliveries`).set(auth(token)).expect(200);
        expect(list.body[0]).toMatchObject({ state: 'failed', attempts_count: 1 });
        expect(list.body[0].attempts[0].status).toBeNull();
        expect(list.body[0].attempts[0].response_excerpt).toMatch(/private|loopback|refused/i);
      } finally {
        await receiver.close();
      }
    });
  },
);
