/**
 * Slack and OpenTelemetry tracing notification services end to end, and the secrets of every
 * kind of service kept out of the logs and the delivery history: services made through the REST
 * API, builds run by an agent through the agent API, the worker driven by the test, receivers on
 * loopback standing in for Slack's incoming webhook and an OTLP/HTTP collector.
 */
import crypto from 'node:crypto';
import { createLogger } from '../../src/http/logger';
import { auth, createTestContext, type TestContext, describeEachDatabase } from '../support/context';
import { givenAgent, givenRegistrationToken, runNextJob } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { startReceiver, type Receiver } from './receiver';

const WEBHOOK_TOKEN = `whtok-${crypto.randomBytes(10).toString('hex')}`;
const SLACK_SECRET = `slacksecret${crypto.randomBytes(10).toString('hex')}`;
const OTEL_HEADER = `otelkey-${crypto.randomBytes(10).toString('hex')}`;

describeEachDatabase('Slack and OpenTelemetry services end to end', null, (_get, kind) => {
  let ctx: TestContext;
  let slack: Receiver;
  let otel: Receiver;
  const lines: string[] = [];
  beforeAll(async () => {
    ctx = await createTestContext(kind, {
      notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 3 },
      logger: createLogger('trace', {
        write: (chunk: string) => {
          lines.push(String(chunk));
        },
      }),
    });
  });
  afterAll(async () => {
    await ctx?.close();
  });
  beforeEach(async () => {
    // Slack's incoming webhook URLs are the secret: its path holds it.
    slack = await startReceiver(`/services/T000/B000/${SLACK_SECRET}`);
    otel = await startReceiver('/otlp');
  });
  afterEach(async () => {
    await slack.close();
    await otel.close();
  });

  const settle = () => ctx.services.notificationWorker.settle();

  async function setup() {
    const { org, token } = await ctx.givenAdmin();
    const reg = await givenRegistrationToken(ctx, org.slug, token);
    const agent = await givenAgent(ctx, reg, 'runner');
    const pipeline = await givenPipeline(ctx, org, token, 'steps:\n  - command: one\n');
    return { org, token, agent, pipeline };
  }

  async function givenService(org: { slug: string }, token: string, body: Record<string, unknown>) {
    const res = await ctx.http().post(`/v2/organizations/${org.slug}/services`).set(auth(token)).send(body);
    expect(res.status).toBe(201);
    return res.body as { id: string };
  }

  async function deliveries(org: { slug: string }, token: string, id: string) {
    const res = await ctx.http().get(`/v2/organizations/${org.slug}/services/${id}/deliveries`).set(auth(token)).expect(200);
    return res.body as { event: string; state: string; payload: unknown }[];
  }

  it('posts to a Slack service for a failed build and not for a passed one', async () => {
    const s = await setup();
    const svc = await givenService(s.org, s.token, { provider: 'slack', build_states: { build_failed: true }, settings: { url: slack.url } });
    await givenBuild(ctx, s.org, s.pipeline, s.token);
    await runNextJob(ctx, s.agent, 0);
    await settle();
    expect(slack.received).toEqual([]);
    const failed = await givenBuild(ctx, s.org, s.pipeline, s.token);
    await runNextJob(ctx, s.agent, 1);
    await settle();
    expect(slack.received).toHaveLength(1);
    const msg = slack.received[0]!;
    expect(msg.method).toBe('POST');
    expect(msg.headers['content-type']).toMatch(/^application\/json/);
    expect(String(msg.body.text)).toContain('failed');
    expect(msg.raw).toContain(`#${failed.number}`);
    const history = await deliveries(s.org, s.token, svc.id);
    expect(history).toHaveLength(1);
    expect(history[0]).toMatchObject({ event: 'build.finished', state: 'delivered' });
    expect(JSON.stringify(history)).not.toContain(SLACK_SECRET);
  });

  it('posts build_fixed when a build passes after a failure on its branch', async () => {
    const s = await setup();
    await givenService(s.org, s.token, { provider: 'slack', build_states: { build_fixed: true }, settings: { url: slack.url } });
    await givenBuild(ctx, s.org, s.pipeline, s.token);
    await runNextJob(ctx, s.agent, 0); // passed: no fix
    await givenBuild(ctx, s.org, s.pipeline, s.token);
    await runNextJob(ctx, s.agent, 1); // failed
    const fixed = await givenBuild(ctx, s.org, s.pipeline, s.token);
    await runNextJob(ctx, s.agent, 0); // fixed
    await settle();
    expect(slack.received).toHaveLength(1);
    expect(String(slack.received[0]!.body.text)).toContain('fixed');
    expect(slack.received[0]!.raw).toContain(`#${fixed.number}`);
  });

  it('exports a trace to an OTLP/HTTP collector when the build finishes', async () => {
    const s = await setup();
    const svc = await givenService(s.org, s.token, {
      provider: 'open_telemetry_tracing',
      settings: { endpoint: otel.url, service_name: 'ci-e2e', headers: { 'X-Api-Key': OTEL_HEADER } },
    });
    await givenBuild(ctx, s.org, s.pipeline, s.token);
    await runNextJob(ctx, s.agent, 0);
    await settle();
    expect(otel.received).toHaveLength(1);
    const r = otel.received[0]!;
    expect(r.method).toBe('POST');
    expect(r.path).toBe('/otlp/v1/traces');
    expect(r.headers['x-api-key']).toBe(OTEL_HEADER);
    expect(r.headers['content-type']).toBe('application/x-protobuf');
    expect(r.raw).toContain('ci-e2e');
    const history = await deliveries(s.org, s.token, svc.id);
    expect(history).toEqual([expect.objectContaining({ event: 'build.finished', state: 'delivered' })]);
    expect(JSON.stringify(history)).not.toContain(OTEL_HEADER);
  });

  it("never logs a service's secrets nor puts them in the delivery history", async () => {
    const hook = await startReceiver();
    try {
      const s = await setup();
      const services = [
        await givenService(s.org, s.token, { provider: 'webhook', settings: { url: hook.url, token: WEBHOOK_TOKEN } }),
        await givenService(s.org, s.token, { provider: 'slack', build_states: { build_failed: true, build_passed: true }, settings: { url: slack.url } }),
        await givenService(s.org, s.token, {
          provider: 'open_telemetry_tracing',
          settings: { endpoint: otel.url, headers: { Authorization: `Bearer ${OTEL_HEADER}` } },
        }),
      ];
      // A failing receiver too: errors are logged, and must not carry the secrets either.
      slack.answer = (i) => ({ status: i === 0 ? 500 : 200 });
      await givenBuild(ctx, s.org, s.pipeline, s.token);
      await runNextJob(ctx, s.agent, 1);
      await settle();
      expect(hook.received.length).toBeGreaterThan(1);
      expect(hook.received[0]!.headers['x-buildkite-token']).toBe(WEBHOOK_TOKEN);
      expect(slack.received).toHaveLength(2);
      expect(otel.received).toHaveLength(1);
      expect(lines.length).toBeGreaterThan(0);
      const logs = lines.join('');
      for (const secret of [WEBHOOK_TOKEN, SLACK_SECRET, OTEL_HEADER]) {
        expect(logs).not.toContain(secret);
        for (const svc of services) expect(JSON.stringify(await deliveries(s.org, s.token, svc.id))).not.toContain(secret);
      }
    } finally {
      await hook.close();
    }
  });
});
