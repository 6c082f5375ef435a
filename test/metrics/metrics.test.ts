import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import { givenAgent, givenRegistrationToken } from '../support/agents';
import { auth, createTestContext, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { createLogger } from '../../src/http/middleware/logger';
import { Metrics, queueOf } from '../../src/metrics/registry';
import { loadConfig } from '../../src/config';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format's samples (comments and HELP/TYPE lines skipped). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}

const find = (samples: Sample[], name: string, labels: Record<string, string> = {}) =>
  samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
const value = (samples: Sample[], name: string, labels: Record<string, string> = {}) => find(samples, name, labels).reduce((sum, s) => sum + s.value, 0);

const logLines: Record<string, unknown>[] = [];
const logger = createLogger(
  'info',
  new Writable({
    write(chunk, _enc, done) {
      for (const line of String(chunk).split('\n').filter(Boolean)) logLines.push(JSON.parse(line));
      done();
    },
  }),
);

describeEachDatabase(
  'GET /metrics',
  (ctx) => {
    let samples: Sample[];
    let orgSlug: string;
    beforeAll(async () => {
      const { org, token } = await ctx().givenAdmin();
      orgSlug = org.slug;
      // `deploy` is a queue of the organization's cluster; `chosen-<uuid>` only the pipeline names,
      // and `elsewhere` is another organization's queue: both are `other`.
      const cluster = await ctx().http().post(`/v2/organizations/${org.slug}/clusters`).set(auth(token)).send({ name: 'Metrics' }).expect(201);
      await ctx().http().post(`/v2/organizations/${org.slug}/clusters/${cluster.body.id}/queues`).set(auth(token)).send({ key: 'deploy' }).expect(201);
      const other = await ctx().givenAdmin();
      const theirs = await ctx().http().post(`/v2/organizations/${other.org.slug}/clusters`).set(auth(other.token)).send({ name: 'Theirs' }).expect(201);
      await ctx()
        .http()
        .post(`/v2/organizations/${other.org.slug}/clusters/${theirs.body.id}/queues`)
        .set(auth(other.token))
        .send({ key: 'elsewhere' })
        .expect(201);
      const pipeline = await givenPipeline(
        ctx(),
        org,
        token,
        [
          'steps:',
          '  - command: make test',
          '  - command: deploy',
          '    agents:',
          '      queue: deploy',
          '  - command: one',
          '    agents:',
          `      queue: chosen-${crypto.randomUUID()}`,
          '  - command: two',
          '    agents:',
          `      queue: chosen-${crypto.randomUUID()}`,
          '  - command: three',
          '    agents:',
          '      queue: elsewhere',
          '',
        ].join('\n'),
      );
      await givenBuild(ctx(), org, pipeline, token);
      await ctx().http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).expect(200);
      await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/nope`).set(auth(token)).expect(404);
      await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'metrics-agent');
      const res = await ctx()
        .http()
        .get('/metrics')
        .expect(200)
        .expect('Content-Type', /^text\/plain; version=0\.0\.4/);
      expect(res.headers['cache-control']).toBe('no-store');
      samples = parse(res.text);
    });

    it('counts and times requests by operation id and status, never by path', () => {
      expect(value(samples, 'windsock_http_requests_total', { operation: 'listPipelines', method: 'GET', status: '200' })).toBe(1);
      expect(value(samples, 'windsock_http_requests_total', { operation: 'getPipeline', method: 'GET', status: '404' })).toBe(1);
      expect(value(samples, 'windsock_http_requests_total', { operation: 'createBuild', method: 'POST', status: '201' })).toBe(1);
      expect(value(samples, 'windsock_http_request_duration_seconds_count', { operation: 'listPipelines', status: '200' })).toBe(1);
      const sum = value(samples, 'windsock_http_request_duration_seconds_sum', { operation: 'listPipelines', status: '200' });
      expect(sum).toBeGreaterThan(0);
      expect(sum).toBeLessThan(60);
      expect(value(samples, 'windsock_http_request_duration_seconds_bucket', { operation: 'listPipelines', status: '200', le: '+Inf' })).toBe(1);
      // No label carries what a client chose: slugs, paths, tokens.
      expect(samples.flatMap((s) => Object.values(s.labels)).filter((v) => v.includes(orgSlug) || v.includes('/'))).toEqual([]);
    });

    it('reports the database pool and query timing', () => {
      const pool = find(samples, 'windsock_db_pool_connections');
      expect(pool.map((s) => s.labels.state).sort()).toEqual(['free', 'pending', 'used']);
      expect(
        value(samples, 'windsock_db_pool_connections', { state: 'used' }) + value(samples, 'windsock_db_pool_connections', { state: 'free' }),
      ).toBeGreaterThanOrEqual(1);
      expect(value(samples, 'windsock_db_query_duration_seconds_count', { outcome: 'ok' })).toBeGreaterThan(10);
      expect(value(samples, 'windsock_db_query_duration_seconds_sum', { outcome: 'ok' })).toBeGreaterThan(0);
    });

    it('counts scheduled jobs by queue, connected agents and the notification backlog at scrape time', () => {
      expect(value(samples, 'windsock_jobs', { state: 'scheduled', queue: 'deploy' })).toBe(1);
      expect(value(samples, 'windsock_jobs', { state: 'scheduled', queue: 'default' })).toBe(1);
      // Queues no cluster of the organization has are one label, whatever names pipelines choose.
      expect(value(samples, 'windsock_jobs', { state: 'scheduled', queue: 'other' })).toBe(3);
      expect(
        find(samples, 'windsock_jobs')
          .map((s) => s.labels.queue ?? '')
          .filter((q) => q.startsWith('chosen-') || q === 'elsewhere'),
      ).toEqual([]);
      expect(value(samples, 'windsock_jobs', { state: 'running' })).toBe(0);
      expect(value(samples, 'windsock_agents', { state: 'connected' })).toBe(1);
      // The worker does not run in tests: the build's and the agent's events wait in the outbox.
      expect(value(samples, 'windsock_notification_events_pending')).toBeGreaterThanOrEqual(1);
      expect(find(samples, 'windsock_notification_deliveries_pending')).toHaveLength(1);
      expect(find(samples, 'windsock_http_requests_in_flight', { operation: 'none' }).length).toBe(1);
      expect(find(samples, 'process_cpu_user_seconds_total')).toHaveLength(1);
    });

    it('times queries inside transactions, leaving nothing waiting for an answer', async () => {
      // A context of its own that served no request: the suite's has its rate limiter's counts to
      // write (every 100 ms), a query that would land among the two counted here.
      const own = await createTestContext(ctx().kind);
      try {
        const metrics = new Metrics(own.services.db, own.services.metricsCounts);
        await own.services.db
          .transaction(async (trx) => {
            await trx('pipelines').count({ n: '*' });
            await trx.raw('select no_such_column from pipelines');
          })
          .catch(() => undefined);
        expect(metrics.started.size).toBe(0);
        const text = await metrics.registry.metrics();
        expect(value(parse(text), 'windsock_db_query_duration_seconds_count', { outcome: 'ok' })).toBe(1);
        expect(value(parse(text), 'windsock_db_query_duration_seconds_count', { outcome: 'error' })).toBe(1);
      } finally {
        await own.close();
      }
    });

    it('writes the operation id into each request log line', () => {
      const line = logLines.find((l) => l.msg === 'request' && l.operation === 'listPipelines' && l.org === orgSlug);
      expect(line).toMatchObject({ method: 'GET', status: 200, path: `/v2/organizations/${orgSlug}/pipelines` });
      expect(logLines.some((l) => l.path === '/metrics' && l.operation === undefined)).toBe(true);
    });
  },
  { metrics: { enabled: true, token: undefined }, logger },
);

describeEachDatabase('GET /metrics settings', null, (_get, kind) => {
  it('is a 404 unless enabled', async () => {
    const ctx = await createTestContext(kind);
    try {
      const res = await ctx.http().get('/metrics').expect(404);
      expect(res.body.message).toEqual(expect.any(String));
    } finally {
      await ctx.close();
    }
  });

  it('asks for METRICS_TOKEN as a Bearer token when one is set', async () => {
    const token = 'scrape-token-0123456789';
    const ctx = await createTestContext(kind, { metrics: { enabled: true, token } });
    try {
      const none = await ctx.http().get('/metrics').expect(401);
      expect(none.headers['www-authenticate']).toMatch(/^Bearer/);
      expect(none.body.message).toEqual(expect.any(String));
      await ctx.http().get('/metrics').set('Authorization', 'Bearer wrong-token-0123456789').expect(401);
      const ok = await ctx.http().get('/metrics').set('Authorization', `Bearer ${token}`).expect(200);
      expect(ok.text).not.toContain(token);
      expect(ok.text).toContain('windsock_http_requests_total');
    } finally {
      await ctx.close();
    }
  });
});

describe('queueOf', () => {
  it('reads the queue from agent query rules, default when none is named', () => {
    expect(queueOf('["queue=deploy","os=linux"]')).toBe('deploy');
    expect(queueOf('[]')).toBe('default');
    expect(queueOf('not json')).toBe('default');
  });
});

describe('METRICS_* settings', () => {
  it('are off by default, and a short token is refused', () => {
    expect(loadConfig({}).metrics).toEqual({ enabled: false, token: undefined });
    expect(loadConfig({ METRICS_ENABLED: 'true', METRICS_TOKEN: 'scrape-token-0123456789' }).metrics).toEqual({
      enabled: true,
      token: 'scrape-token-0123456789',
    });
    expect(() => loadConfig({ METRICS_TOKEN: 'short' })).toThrow(/METRICS_TOKEN must be at least 16/);
    expect(() => loadConfig({ METRICS_ENABLED: 'maybe' })).toThrow(/METRICS_ENABLED must be true or false/);
  });
});
