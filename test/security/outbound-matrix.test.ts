/**
 * No provider can be pointed at the server's own network (issue 26, section 1): 38 forms of
 * addresses that are not public (loopback in every spelling, IPv6 forms that carry an IPv4
 * address, the cloud metadata address, private, link-local, reserved ranges) are given to every
 * provider that sends: the webhook, Slack and OpenTelemetry notification services end to end
 * (made through the REST API, a build finished by an agent, the worker delivering), commit
 * statuses to GitHub, GitLab and Bitbucket, and the registration of a pipeline's GitHub webhook.
 *
 * The loopback forms point at a live listener (127.0.0.1 and ::1, one port) that counts every
 * connection and would answer with a marker: each is refused with a delivery error naming the
 * refusal, no excerpt carries the marker, and the listener is never connected to. A control run
 * with private destinations allowed proves the forms do reach it.
 */
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { createLogger } from '../../src/http/middleware/logger';
import { sendStatus } from '../../src/notifications/commit-status/send';
import type { CommitStatusConfig, StatusProvider, StatusUpdate } from '../../src/notifications/commit-status/types';
import { outboundSend } from '../../src/notifications/http';
import { gitHubHooks } from '../../src/pipelines/github-hooks';
import { Outbound, outboundSender, type OutboundSettings } from '../../src/security/outbound';
import { givenAgent, givenRegistrationToken, runNextJob } from '../support/agents';
import { auth, type TestContext, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';

const REFUSING: OutboundSettings = { allowPrivate: false, timeoutMs: 3_000, maxResponseBytes: 65_536 };
const MARKER = 'INTERNAL-ANSWER-0f3c';

/** A listener on 127.0.0.1 and (when the host has it) ::1, on one port: counts connections, answers the marker. */
async function startListener() {
  let connections = 0;
  const servers: net.Server[] = [];
  const make = () =>
    net.createServer((socket) => {
      connections++;
      socket.on('error', () => {});
      socket.once('data', () =>
        socket.end(`HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: ${MARKER.length}\r\nConnection: close\r\n\r\n${MARKER}`),
      );
    });
  const v4 = make();
  await new Promise<void>((resolve) => v4.listen(0, '127.0.0.1', resolve));
  servers.push(v4);
  const port = (v4.address() as AddressInfo).port;
  const v6 = make();
  const hasV6 = await new Promise<boolean>((resolve) => {
    v6.once('error', () => resolve(false));
    v6.listen(port, '::1', () => resolve(true));
  });
  if (hasV6) servers.push(v6);
  return {
    port,
    hasV6,
    connections: () => connections,
    close: () => Promise.all(servers.map((s) => new Promise<void>((resolve) => s.close(() => resolve())))),
  };
}

/** Every form, as the authority of a URL (host and port). `loopback`: the control run reaches the listener with it. */
function forms(port: number, hasV6: boolean): { host: string; loopback: boolean }[] {
  const lo = (host: string, v6 = false) => ({ host: `${host}:${port}`, loopback: !v6 || hasV6 });
  const other = (host: string) => ({ host: `${host}:${port}`, loopback: false });
  return [
    lo('127.0.0.1'),
    lo('127.1'), // shortened
    lo('127.0.1'),
    lo('2130706433'), // decimal
    lo('0x7f000001'), // hex
    lo('0x7f.0.0.1'),
    lo('0177.0.0.1'), // octal
    lo('017700000001'),
    lo('127.000.000.001'),
    other('127.255.255.254'),
    lo('localhost'), // a name that resolves to loopback
    lo('127.0.0.1.'), // a trailing dot
    lo('0.0.0.0'), // unspecified: Linux connects it to loopback
    lo('0'),
    lo('[::1]', true),
    lo('[0:0:0:0:0:0:0:1]', true),
    lo('[::ffff:127.0.0.1]'), // IPv4-mapped
    lo('[::ffff:7f00:1]'),
    lo('[0:0:0:0:0:ffff:127.0.0.1]'),
    other('[::127.0.0.1]'), // IPv4-compatible
    other('[::ffff:0:127.0.0.1]'), // SIIT
    other('[64:ff9b::127.0.0.1]'), // NAT64
    other('[64:ff9b::169.254.169.254]'),
    other('[2002:7f00:1::]'), // 6to4 of 127.0.0.1
    other('[::]'),
    other('169.254.169.254'), // cloud metadata
    other('[::ffff:169.254.169.254]'),
    other('[fd00:ec2::254]'), // AWS metadata over IPv6 (unique local)
    other('10.0.0.1'),
    other('172.16.0.1'),
    other('192.168.1.1'),
    other('100.64.0.1'), // carrier-grade NAT
    other('[fe80::1]'),
    other('[fc00::1]'),
    other('224.0.0.1'),
    other('255.255.255.255'),
    other('198.18.0.1'),
    other('192.0.0.8'),
  ];
}

/** The refusal as the delivery records it: the transport's words, nothing of the listener's. */
function expectRefused(excerpt: string | null | undefined) {
  expect(excerpt).toMatch(/not a public address \(.+\): refused/);
  expect(excerpt).not.toContain(MARKER);
}

let listener: Awaited<ReturnType<typeof startListener>>;
beforeAll(async () => {
  listener = await startListener();
});
afterAll(async () => {
  await listener?.close();
});

it('has at least 30 forms, and the loopback ones reach the listener when private destinations are allowed (the control)', async () => {
  const all = forms(listener.port, listener.hasV6);
  expect(all.length).toBeGreaterThanOrEqual(30);
  const allowing = new Outbound({ ...REFUSING, allowPrivate: true });
  const live = all.filter((f) => f.loopback);
  for (const f of live) {
    const before = listener.connections();
    const res = await allowing.request({ method: 'POST', url: `http://${f.host}/hook`, headers: {}, body: '{}' });
    expect({ form: f.host, body: res.body.toString() }).toEqual({ form: f.host, body: MARKER });
    expect(listener.connections()).toBe(before + 1);
  }
  expect(live.length).toBeGreaterThanOrEqual(16);
});

describe('commit statuses and the registration of provider webhooks', () => {
  const send = outboundSend(new Outbound(REFUSING));
  const update = (provider: StatusProvider): StatusUpdate => ({
    provider,
    repository: provider === 'gitlab' ? 'acme/group/web-app' : 'acme/web-app',
    sha: '0123456789abcdef0123456789abcdef01234567',
    state: 'success',
    context: 'buildkite/web-app',
    description: 'Build #1 passed',
    targetUrl: 'https://windsock.example/acme/web-app/builds/1',
    subject: { kind: 'build', buildId: 'b1' },
  });

  it.each(['github', 'gitlab', 'bitbucket'] as const)('refuses every form as the %s API, without connecting', async (provider) => {
    const before = listener.connections();
    for (const f of forms(listener.port, listener.hasV6)) {
      const base = `http://${f.host}`;
      const config: CommitStatusConfig = {
        github: { apiUrl: base, token: 'ghp_secret' },
        github_enterprise: { apiUrl: base, token: 'ghe_secret' },
        gitlab: { apiUrl: `${base}/api/v4`, token: 'glpat-secret' },
        bitbucket: { apiUrl: `${base}/2.0`, token: 'bb_secret' },
      };
      const result = await sendStatus(update(provider), config, send);
      expect({ form: f.host, ok: result.ok, status: result.status, final: result.final }).toEqual({ form: f.host, ok: false, status: null, final: true });
      expectRefused(result.excerpt);
    }
    expect(listener.connections()).toBe(before);
  });

  it("refuses every form as the GitHub API a pipeline's webhook is registered with, without connecting", async () => {
    const before = listener.connections();
    const warnings: string[] = [];
    const logger = createLogger('warn', { write: (line: string) => void warnings.push(line) });
    for (const f of forms(listener.port, listener.hasV6)) {
      const api = { apiUrl: `http://${f.host}`, token: 'ghp_secret' };
      const hooks = gitHubHooks({ github: api, github_enterprise: api }, logger, outboundSender(new Outbound(REFUSING)));
      expect(await hooks.createHook('github', 'acme/web-app', { url: 'https://windsock.example/hook', secret: 's', events: ['push'] })).toBe(false);
    }
    expect(listener.connections()).toBe(before);
    expect(warnings.length).toBe(forms(listener.port, listener.hasV6).length);
    for (const w of warnings) expect(w).toMatch(/not a public address \(.+\): refused/);
    expect(warnings.join('\n')).not.toContain('ghp_secret');
  });
});

describeEachDatabase(
  'notification services end to end',
  { outbound: REFUSING, notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 3, concurrency: 16 } },
  (get) => {
    let ctx: TestContext;
    beforeAll(() => {
      ctx = get();
    });

    it('refuses every form for the webhook, Slack and OpenTelemetry providers: failed deliveries naming the refusal, no connection', async () => {
      const { org, token } = await ctx.givenAdmin();
      const reg = await givenRegistrationToken(ctx, org.slug, token);
      const agent = await givenAgent(ctx, reg, 'runner');
      const pipeline = await givenPipeline(ctx, org, token, 'steps:\n  - command: one\n');
      const all = forms(listener.port, listener.hasV6);
      const made: { id: string; provider: string; form: string }[] = [];
      for (const f of all) {
        const bodies = [
          { provider: 'webhook', settings: { url: `http://${f.host}/hook`, events: ['build.finished'] } },
          { provider: 'slack', build_states: { build_passed: true }, settings: { url: `http://${f.host}/services/T0/B0/secret` } },
          { provider: 'open_telemetry_tracing', settings: { endpoint: `http://${f.host}/otlp`, headers: { 'X-Api-Key': 'otel-secret' } } },
        ];
        for (const body of bodies) {
          const res = await ctx.http().post(`/v2/organizations/${org.slug}/services`).set(auth(token)).send(body);
          expect(res.status).toBe(201);
          made.push({ id: (res.body as { id: string }).id, provider: body.provider, form: f.host });
        }
      }
      const before = listener.connections();
      await givenBuild(ctx, org, pipeline, token);
      await runNextJob(ctx, agent, 0);
      await ctx.services.notificationWorker.settle();

      const seen: Record<string, number> = {};
      for (const m of made) {
        const res = await ctx.http().get(`/v2/organizations/${org.slug}/services/${m.id}/deliveries`).set(auth(token)).expect(200);
        const ds = res.body as { event: string; state: string; attempts: { status: number | null; ok: boolean; response_excerpt: string }[] }[];
        expect({ ...m, finished: ds.filter((d) => d.event === 'build.finished').length }).toEqual({ ...m, finished: 1 });
        for (const d of ds) {
          // Final at once (a webhook's ping too): one attempt, no status, the refusal in its own words.
          expect({ ...m, event: d.event, state: d.state, attempts: d.attempts.length }).toEqual({ ...m, event: d.event, state: 'failed', attempts: 1 });
          expect(d.attempts[0]!.status).toBeNull();
          expectRefused(d.attempts[0]!.response_excerpt);
        }
        seen[m.provider] = (seen[m.provider] ?? 0) + 1;
      }
      expect(seen).toEqual({ webhook: all.length, slack: all.length, open_telemetry_tracing: all.length });
      expect(listener.connections()).toBe(before);
    }, 120_000);
  },
);
