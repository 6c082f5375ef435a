import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { exportOpenTelemetry, openTelemetryTargets, traceIdFor, tracesUrl } from '../../src/notifications/providers/open-telemetry';
import { Outbound, outboundSender, type OutboundSettings } from '../../src/security/outbound';
import { BUILD_ID, buildEvent, buildRepresentation, scriptJob } from './provider-fixtures';

/** Loopback receivers are allowed here; the refusals are test/security's. */
const PRIVATE: OutboundSettings = { allowPrivate: true, timeoutMs: 5_000, maxResponseBytes: 65_536 };
const send = outboundSender(new Outbound(PRIVATE));

interface Received {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
}

/** A stand-in OTLP/HTTP receiver on a free local port. */
async function receiver(answer: (req: Received) => { status: number; headers?: Record<string, string>; body?: string } = () => ({ status: 200 })) {
  const received: Received[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const r = { method: req.method ?? '', url: req.url ?? '', headers: req.headers, body: Buffer.concat(chunks) };
      received.push(r);
      const a = answer(r);
      res.writeHead(a.status, { 'content-type': 'application/json', ...(a.headers ?? {}) });
      res.end(a.body ?? '{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return { received, base: `http://127.0.0.1:${port}`, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

type AnyValue = { stringValue?: string; intValue?: number | string; boolValue?: boolean; arrayValue?: { values?: AnyValue[] } };
type KeyValue = { key: string; value: AnyValue };
interface JsonSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  traceState?: string;
  name: string;
  startTimeUnixNano: string | number;
  endTimeUnixNano: string | number;
  attributes: KeyValue[];
  status?: { code?: number; message?: string };
}

function value(v: AnyValue): unknown {
  if (v.stringValue !== undefined) return v.stringValue;
  if (v.intValue !== undefined) return Number(v.intValue);
  if (v.boolValue !== undefined) return v.boolValue;
  if (v.arrayValue) return (v.arrayValue.values ?? []).map(value);
  return undefined;
}
const attrs = (kvs: KeyValue[] = []) => Object.fromEntries(kvs.map((kv) => [kv.key, value(kv.value)]));

function decode(body: Buffer) {
  const json = JSON.parse(body.toString('utf8')) as {
    resourceSpans: { resource: { attributes: KeyValue[] }; scopeSpans: { spans: JsonSpan[] }[] }[];
  };
  expect(json.resourceSpans).toHaveLength(1);
  const rs = json.resourceSpans[0]!;
  return { resource: attrs(rs.resource.attributes), spans: rs.scopeSpans.flatMap((s) => s.spans) };
}

const nanos = (iso: string) => (BigInt(Date.parse(iso)) * 1_000_000n).toString();

describe('open_telemetry_tracing provider', () => {
  const savedHeaders = process.env.OTEL_EXPORTER_OTLP_HEADERS;
  beforeAll(() => {
    // The server's own collector settings must never reach an organization's endpoint.
    process.env.OTEL_EXPORTER_OTLP_HEADERS = 'x-server-secret=do-not-send';
  });
  afterAll(() => {
    if (savedHeaders === undefined) delete process.env.OTEL_EXPORTER_OTLP_HEADERS;
    else process.env.OTEL_EXPORTER_OTLP_HEADERS = savedHeaders;
  });

  it('appends /v1/traces to the endpoint and names it as the one target', () => {
    expect(tracesUrl('https://api.honeycomb.io')).toBe('https://api.honeycomb.io/v1/traces');
    expect(tracesUrl('https://collector.example.com:4318/otlp/')).toBe('https://collector.example.com:4318/otlp/v1/traces');
    expect(tracesUrl('ftp://example.com')).toBeNull();
    expect(tracesUrl('not a url')).toBeNull();
    expect(openTelemetryTargets({ endpoint: 'http://127.0.0.1:4318' })).toEqual(['http://127.0.0.1:4318/v1/traces']);
    expect(openTelemetryTargets({ endpoint: 'nope' })).toEqual([]);
  });

  it('exports the build as one trace: build > stage > step > job, with the documented attributes, times and headers', async () => {
    const r = await receiver();
    try {
      const result = await exportOpenTelemetry(
        buildEvent(),
        { endpoint: `${r.base}/otlp/`, headers: { Authorization: 'Bearer t0ken', 'x-honeycomb-team': 'team-key' } },
        { send, encoding: 'json' },
      );
      expect(result).toMatchObject({ ok: true, status: 200 });
      expect(r.received).toHaveLength(1);
      const req = r.received[0]!;
      expect(req.method).toBe('POST');
      expect(req.url).toBe('/otlp/v1/traces');
      expect(req.headers.authorization).toBe('Bearer t0ken');
      expect(req.headers['x-honeycomb-team']).toBe('team-key');
      expect(req.headers['content-type']).toBe('application/json');
      expect(req.headers['x-server-secret']).toBeUndefined();

      const { resource, spans } = decode(req.body);
      expect(resource).toMatchObject({
        'service.name': 'buildkite',
        'buildkite.organization.slug': 'acme',
        'buildkite.organization.id': 'org-1',
        'buildkite.pipeline.slug': 'web',
        'buildkite.pipeline.name': 'Web',
        'buildkite.pipeline.id': 'pipeline-1',
        'buildkite.pipeline.repo': 'git@example.com:acme/web.git',
        'buildkite.pipeline.web_url': 'http://windsock.test/acme/web',
      });
      expect(spans.map((s) => s.name).sort()).toEqual([
        'buildkite.build',
        'buildkite.build.stage',
        'buildkite.job',
        'buildkite.job',
        'buildkite.step',
        'buildkite.step',
      ]);
      const traceId = traceIdFor(BUILD_ID);
      expect(traceId).toMatch(/^[0-9a-f]{32}$/);
      for (const s of spans) expect(s.traceId).toBe(traceId);
      const one = (name: string, pick: (s: JsonSpan) => boolean = () => true) => spans.filter((s) => s.name === name && pick(s))[0]!;
      const build = one('buildkite.build');
      const stage = one('buildkite.build.stage');
      const job1 = one('buildkite.job', (s) => attrs(s.attributes)['buildkite.job.id'] === 'job-1');
      const job2 = one('buildkite.job', (s) => attrs(s.attributes)['buildkite.job.id'] === 'job-2');
      const step1 = one('buildkite.step', (s) => attrs(s.attributes)['buildkite.step.key'] === 'tests');
      const step2 = one('buildkite.step', (s) => attrs(s.attributes)['buildkite.step.key'] === 'lint');

      expect(build.parentSpanId ?? '').toBe('');
      expect(stage.parentSpanId).toBe(build.spanId);
      expect(step1.parentSpanId).toBe(stage.spanId);
      expect(step2.parentSpanId).toBe(stage.spanId);
      expect(job1.parentSpanId).toBe(step1.spanId);
      expect(job2.parentSpanId).toBe(step2.spanId);

      expect(String(build.startTimeUnixNano)).toBe(nanos('2026-01-02T10:00:00.000Z'));
      expect(String(build.endTimeUnixNano)).toBe(nanos('2026-01-02T10:02:00.000Z'));
      expect(String(job1.startTimeUnixNano)).toBe(nanos('2026-01-02T10:00:03.000Z'));
      expect(String(job1.endTimeUnixNano)).toBe(nanos('2026-01-02T10:01:03.000Z'));
      expect(String(step2.startTimeUnixNano)).toBe(nanos('2026-01-02T10:00:05.000Z'));

      expect(attrs(build.attributes)).toMatchObject({
        'buildkite.build.number': 42,
        'buildkite.build.state': 'passed',
        'buildkite.build.branch': 'main',
        'buildkite.build.commit': 'a1b2c3d4e5f6a7b8c9d0a1b2c3d4e5f6a7b8c9d0',
        'buildkite.build.message': 'Fix <the> build & ship',
        'buildkite.build.source': 'api',
        'buildkite.build.web_url': 'http://windsock.test/acme/web/builds/42',
        'buildkite.build.creator.name': 'Keith Pitt',
        'buildkite.build.creator.email': 'keith@example.com',
      });
      expect(build.status?.code).toBe(1);
      expect(attrs(stage.attributes)['buildkite.build.stage']).toBe(1);
      expect(attrs(job1.attributes)).toMatchObject({
        'buildkite.build.number': 42,
        'buildkite.job.id': 'job-1',
        'buildkite.job.type': 'script',
        'buildkite.job.label': ':jest: Tests',
        'buildkite.job.state': 'passed',
        'buildkite.job.passed': true,
        'buildkite.job.exit_status': 0,
        'buildkite.job.command': 'npm test',
        'buildkite.job.wait_time_ms': 2000,
        'buildkite.job.agent_query_rules': ['queue=linux'],
        'buildkite.step.id': 'step-job-1',
        'buildkite.step.key': 'tests',
        'buildkite.agent.name': 'builder-1',
        'buildkite.agent.id': 'agent-1',
        'buildkite.agent.queue': 'linux',
      });
      expect(job1.status?.code).toBe(1);
      expect(attrs(job2.attributes)).toMatchObject({ 'buildkite.job.state': 'failed', 'buildkite.job.exit_status': 2, 'error.type': 'failed' });
      expect(job2.status?.code).toBe(2);
      expect(step2.status?.code).toBe(2);
    } finally {
      await r.close();
    }
  });

  it('exports the same trace and span ids when the same build is delivered again', async () => {
    const r = await receiver();
    try {
      const settings = { endpoint: r.base, service_name: 'ci', resource_attributes: { 'deployment.environment': 'prod' } };
      expect((await exportOpenTelemetry(buildEvent(), settings, { send, encoding: 'json' })).ok).toBe(true);
      expect((await exportOpenTelemetry(buildEvent(), settings, { send, encoding: 'json' })).ok).toBe(true);
      const [a, b] = r.received.map((req) => decode(req.body));
      const ids = (d: ReturnType<typeof decode>) => d.spans.map((s) => `${s.name} ${s.traceId} ${s.spanId} ${s.parentSpanId ?? ''}`).sort();
      expect(ids(a!)).toEqual(ids(b!));
      expect(a!.resource).toMatchObject({ 'service.name': 'ci', 'deployment.environment': 'prod' });
      // Another build has another trace.
      const other = await exportOpenTelemetry(buildEvent('build.finished', buildRepresentation({ id: 'another-build' })), settings, { send, encoding: 'json' });
      expect(other.ok).toBe(true);
      expect(decode(r.received[2]!.body).spans[0]!.traceId).not.toBe(a!.spans[0]!.traceId);
    } finally {
      await r.close();
    }
  });

  it('sends binary protobuf by default, as the real service does', async () => {
    const r = await receiver();
    try {
      const result = await exportOpenTelemetry(buildEvent(), { endpoint: r.base, tracestate: 'windsock=1' }, { send });
      expect(result.ok).toBe(true);
      const req = r.received[0]!;
      expect(req.headers['content-type']).toBe('application/x-protobuf');
      expect(req.body.includes(Buffer.from(traceIdFor(BUILD_ID), 'hex'))).toBe(true);
      expect(req.body.includes(Buffer.from('buildkite.build.stage'))).toBe(true);
      expect(req.body.includes(Buffer.from('windsock=1'))).toBe(true);
    } finally {
      await r.close();
    }
  });

  it('gives every span the configured tracestate', async () => {
    const r = await receiver();
    try {
      await exportOpenTelemetry(buildEvent(), { endpoint: r.base, tracestate: 'vendor=abc' }, { send, encoding: 'json' });
      for (const s of decode(r.received[0]!.body).spans) expect(s.traceState).toBe('vendor=abc');
    } finally {
      await r.close();
    }
  });

  it('exports a skipped build as a build span from its creation', async () => {
    const r = await receiver();
    try {
      const skipped = buildRepresentation({ state: 'skipped', started_at: null, finished_at: '2026-01-02T10:00:10.000Z', jobs: [] });
      const result = await exportOpenTelemetry(buildEvent('build.skipped', skipped), { endpoint: r.base }, { send, encoding: 'json' });
      expect(result.ok).toBe(true);
      const spans = decode(r.received[0]!.body).spans;
      const build = spans.find((s) => s.name === 'buildkite.build')!;
      expect(String(build.startTimeUnixNano)).toBe(nanos('2026-01-02T09:59:58.000Z'));
      expect(attrs(build.attributes)['buildkite.build.state']).toBe('skipped');
    } finally {
      await r.close();
    }
  });

  it('puts the steps of a group under a buildkite.step.group span', async () => {
    const r = await receiver();
    try {
      const grouped = buildRepresentation({
        jobs: [scriptJob('job-a', { group_key: 'checks' }), scriptJob('job-b', { group_key: 'checks', step_key: 'lint', step: { id: 'step-lint' } })],
      });
      expect((await exportOpenTelemetry(buildEvent('build.finished', grouped), { endpoint: r.base }, { send, encoding: 'json' })).ok).toBe(true);
      const spans = decode(r.received[0]!.body).spans;
      const stage = spans.find((s) => s.name === 'buildkite.build.stage')!;
      const group = spans.find((s) => s.name === 'buildkite.step.group')!;
      expect(group.parentSpanId).toBe(stage.spanId);
      expect(attrs(group.attributes)).toMatchObject({ 'buildkite.step.group.key': 'checks', 'buildkite.step.type': 'group' });
      const steps = spans.filter((s) => s.name === 'buildkite.step');
      expect(steps).toHaveLength(2);
      for (const step of steps) expect(step.parentSpanId).toBe(group.spanId);
    } finally {
      await r.close();
    }
  });

  it('goes out through the transport it is given: the checked address, the host named in Host', async () => {
    const r = await receiver();
    try {
      const port = new URL(r.base).port;
      const looked: string[] = [];
      const resolving = new Outbound(PRIVATE, async (hostname) => {
        looked.push(hostname);
        return [{ address: '127.0.0.1', family: 4 }];
      });
      const result = await exportOpenTelemetry(buildEvent(), { endpoint: `http://collector.invalid:${port}` }, { send: outboundSender(resolving) });
      expect(result).toMatchObject({ ok: true, status: 200 });
      expect(looked).toEqual(['collector.invalid']);
      expect(r.received[0]!.headers.host).toBe(`collector.invalid:${port}`);
    } finally {
      await r.close();
    }
  });

  it('reports a 500 with its status and body, to be retried', async () => {
    const r = await receiver(() => ({ status: 500, body: '{"message":"collector down"}' }));
    try {
      const result = await exportOpenTelemetry(buildEvent(), { endpoint: r.base }, { send, encoding: 'json' });
      expect(result).toEqual({ ok: false, status: 500, excerpt: '{"message":"collector down"}' });
      expect(r.received).toHaveLength(1);
    } finally {
      await r.close();
    }
  });

  it('gives up at once on a 401', async () => {
    const r = await receiver(() => ({ status: 401, body: 'bad key' }));
    try {
      expect(await exportOpenTelemetry(buildEvent(), { endpoint: r.base }, { send })).toEqual({ ok: false, status: 401, excerpt: 'bad key', final: true });
    } finally {
      await r.close();
    }
  });

  it('reports a 503 with its status and leaves the retry to the outbox (no retry of its own)', async () => {
    const r = await receiver(() => ({ status: 503, headers: { 'retry-after': '3600' } }));
    try {
      const result = await exportOpenTelemetry(buildEvent(), { endpoint: r.base }, { send, timeoutMillis: 2000 });
      expect(result.ok).toBe(false);
      expect(result.status).toBe(503);
      expect(result.final).toBeUndefined();
      expect(r.received).toHaveLength(1);
    } finally {
      await r.close();
    }
  });

  it('reports a refused connection without a status', async () => {
    const r = await receiver();
    const base = r.base;
    await r.close();
    const result = await exportOpenTelemetry(buildEvent(), { endpoint: base }, { send, timeoutMillis: 1500 });
    expect(result.ok).toBe(false);
    expect(result.status).toBeNull();
  });

  it('sends nothing for events other than a finished or skipped build, and refuses an endpoint that is no URL', async () => {
    expect(await exportOpenTelemetry(buildEvent('build.running'), { endpoint: 'http://127.0.0.1:9' }, { send })).toEqual({
      ok: true,
      status: null,
      excerpt: 'nothing to export for build.running',
    });
    expect(await exportOpenTelemetry(buildEvent(), { endpoint: 'file:///etc/passwd' }, { send })).toMatchObject({ ok: false, status: null, final: true });
  });
});
