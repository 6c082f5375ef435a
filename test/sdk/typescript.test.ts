/**
 * The TypeScript SDK (clients/typescript) against a real server listening on loopback, on each
 * store: typed calls with the token, `paginate` following `Link` page after page, a thrown
 * `WindsockApiError` with the service's message and field errors, back-off on 429, and the Test
 * Engine's flaky tests (uploaded with the suite's token through the same client).
 */
import { createWindsockClient, nextLink, ok, paginate, retryDelayMs, WindsockApiError, type WindsockClientOptions } from '../../clients/typescript/src';
import { describeEachDatabase } from '../support/context';
import { onLoopback } from '../support/agents';
import { result } from '../uploads/helpers';

/** What the client sent, in order (`METHOD path?query`), through its `fetch` option. */
function recordingFetch() {
  const sent: string[] = [];
  const fetchAndRecord = (request: Request) => {
    const url = new URL(request.url);
    sent.push(`${request.method} ${url.pathname}${url.search}`);
    return fetch(request);
  };
  return { sent, fetch: fetchAndRecord };
}

/** Fails the test if a promise resolves; else its rejection, for assertions. */
async function rejection(promise: Promise<unknown>): Promise<WindsockApiError> {
  const err = await promise.then(
    () => new Error('expected the call to fail'),
    (e: unknown) => e,
  );
  if (!(err instanceof WindsockApiError)) throw err;
  return err;
}

describeEachDatabase('the TypeScript SDK against a listening server', (ctx) => {
  const { endpoint } = onLoopback(ctx);
  const clientAs = (token: string, more: Partial<WindsockClientOptions> = {}) => createWindsockClient({ baseUrl: endpoint(), token, ...more });

  it('lists pipelines, creates a build and pages through builds by following Link rel="next"', async () => {
    const { org, token } = await ctx().givenAdmin();
    const recorder = recordingFetch();
    const client = clientAs(token, { fetch: recorder.fetch });
    const org_slug = org.slug;

    const created = await ok(
      client.POST('/v2/organizations/{org_slug}/pipelines', {
        params: { path: { org_slug } },
        body: { name: 'SDK Pipeline', repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make test\n' },
      }),
    );
    expect(created).toMatchObject({ slug: 'sdk-pipeline', name: 'SDK Pipeline' });
    const pipelines = await ok(client.GET('/v2/organizations/{org_slug}/pipelines', { params: { path: { org_slug } } }));
    expect(pipelines.map((p) => p.slug)).toEqual(['sdk-pipeline']);

    const pipeline_slug = created.slug;
    for (let i = 1; i <= 5; i++) {
      const build = await ok(
        client.POST('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds', {
          params: { path: { org_slug, pipeline_slug } },
          body: { commit: `c${i}`, branch: 'main', message: `Build ${i}` },
        }),
      );
      expect(build).toMatchObject({ number: i, state: 'scheduled', commit: `c${i}`, message: `Build ${i}` });
    }

    recorder.sent.length = 0;
    const numbers: number[] = [];
    for await (const build of paginate(client, '/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds', {
      params: { path: { org_slug, pipeline_slug }, query: { per_page: 2, branch: 'main' } },
    })) {
      numbers.push(build.number);
    }
    expect(numbers).toEqual([5, 4, 3, 2, 1]);
    // Three pages, each asked for with the query its predecessor's Link named, of this client's server.
    const builds = `/v2/organizations/${org_slug}/pipelines/${pipeline_slug}/builds`;
    expect(recorder.sent).toEqual([
      `GET ${builds}?per_page=2&branch=main`,
      `GET ${builds}?per_page=2&branch=main&page=2`,
      `GET ${builds}?per_page=2&branch=main&page=3`,
    ]);
  });

  it('throws a WindsockApiError with the status, the message and the fields at fault', async () => {
    const { org, token } = await ctx().givenAdmin();
    const client = clientAs(token);
    const org_slug = org.slug;

    const missing = await rejection(
      client.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}', { params: { path: { org_slug, pipeline_slug: 'nope' } } }),
    );
    expect(missing).toMatchObject({ name: 'WindsockApiError', status: 404, errors: [] });
    expect(missing.message).toBe('No pipeline found');
    expect(missing.request).toBe(`GET ${endpoint()}/v2/organizations/${org_slug}/pipelines/nope`);
    expect(missing.response.headers.get('content-type')).toMatch(/^application\/json/);

    const invalid = await rejection(
      client.POST('/v2/organizations/{org_slug}/pipelines', {
        params: { path: { org_slug } },
        body: { name: '', repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make test\n' },
      }),
    );
    expect(invalid.status).toBe(422);
    expect(invalid.message).toBe('Validation Failed');
    expect(invalid.errors).toEqual([{ field: 'name', code: expect.any(String) }]);
    expect(invalid.body).toEqual({ message: 'Validation Failed', errors: invalid.errors });

    const stranger = await rejection(clientAs('not-a-token').GET('/v2/organizations/{org_slug}/pipelines', { params: { path: { org_slug } } }));
    expect(stranger.status).toBe(401);
  });

  it("lists a suite's flaky tests, their results uploaded with the suite's token", async () => {
    const { org, token } = await ctx().givenAdmin();
    const client = clientAs(token);
    const org_slug = org.slug;
    const suite = await ok(
      client.POST('/v2/analytics/organizations/{org_slug}/suites', { params: { path: { org_slug } }, body: { name: 'Specs', show_api_token: true } }),
    );
    // The upload API takes the suite's token as `Token token="..."`.
    const collector = clientAs(`token="${suite.api_token}"`, { scheme: 'Token' });
    for (const [key, outcome] of [
      ['r1', 'passed'],
      ['r2', 'failed'],
    ] as const) {
      const data = [result('flips', outcome), result('steady', 'passed')];
      await ok(collector.POST('/v1/uploads', { body: { format: 'json', run_env: { ci: 'generic', key, branch: 'main', commit_sha: 'c1' }, data } }));
    }
    const flaky = await ok(
      client.GET('/v2/analytics/organizations/{org_slug}/suites/{suite_slug}/flaky-tests', { params: { path: { org_slug, suite_slug: suite.slug } } }),
    );
    expect(flaky.map((t) => t.name)).toEqual(['flips']);
  });
});

/** The rate limiter's clock: frozen where a test puts it, else real. */
let frozenMs: number | undefined;

describeEachDatabase(
  'the TypeScript SDK backing off on 429',
  (ctx) => {
    const { endpoint } = onLoopback(ctx);
    afterEach(() => {
      frozenMs = undefined;
    });

    it('waits as long as Retry-After says, then asks again and succeeds; a wait beyond maxDelayMs is not taken', async () => {
      const { org, token } = await ctx().givenAdmin();
      const params = { params: { path: { org_slug: org.slug } } };
      // Half a second before a window ends: a 429 then asks for a 1 s wait (Retry-After rounds up).
      frozenMs = Math.floor(Date.now() / 60_000) * 60_000 + 59_500;
      const impatient = createWindsockClient({ baseUrl: endpoint(), token, retry: { maxDelayMs: 500 } });
      for (let i = 0; i < 3; i++) await ok(impatient.GET('/v2/organizations/{org_slug}/pipelines', params));
      const limited = await rejection(impatient.GET('/v2/organizations/{org_slug}/pipelines', params));
      expect(limited.status).toBe(429);
      expect(limited.message).toMatch(/rate limit/i);
      expect(limited.response.headers.get('retry-after')).toBe('1');

      const waits: { attempt: number; delayMs: number; status: number }[] = [];
      const patient = createWindsockClient({
        baseUrl: endpoint(),
        token,
        retry: {
          onRetry: ({ attempt, delayMs, response }) => {
            waits.push({ attempt, delayMs, status: response.status });
            // The limiter's clock is frozen: move it on by the wait the client is about to take.
            frozenMs! += delayMs;
          },
        },
      });
      expect(await ok(patient.GET('/v2/organizations/{org_slug}/pipelines', params))).toEqual([]);
      expect(waits).toEqual([{ attempt: 1, delayMs: 1000, status: 429 }]);
    });
  },
  { rateLimits: { perOrganization: 3, perUser: 1_000_000_000, failedAuthPerAddress: 1_000_000_000 }, now: () => frozenMs ?? Date.now() },
);

describe('the SDK reading Link and the waits a 429 names', () => {
  it('finds rel="next" among the relations, wherever it is and however it is quoted', () => {
    const link =
      '<http://x.test/v2/builds?page=3>; rel="last", <http://x.test/v2/builds?page=2&per_page=2>; rel="next", <http://x.test/v2/builds?page=1>; rel="first"';
    expect(nextLink(link)?.href).toBe('http://x.test/v2/builds?page=2&per_page=2');
    expect(nextLink('<http://x.test/a?page=2>; rel=next')?.search).toBe('?page=2');
    expect(nextLink('<http://x.test/a?page=2>; rel="prev next"')?.search).toBe('?page=2');
    expect(nextLink('<http://x.test/a?page=1>; rel="prev"')).toBeUndefined();
    expect(nextLink('<http://x.test/a?page=2>; rel="nextish"')).toBeUndefined();
    expect(nextLink(null)).toBeUndefined();
    expect(nextLink('<http://x.test/a?tags=a,b&page=2>; rel="next", <http://x.test/a?page=9>; rel="last"')?.search).toBe('?tags=a,b&page=2');
  });

  it('waits Retry-After (seconds or a date), else RateLimit-Reset, else doubling from 1 s', () => {
    const answer = (headers: Record<string, string>) => new Response(null, { status: 429, headers });
    const now = Date.parse('2026-11-26T10:00:00Z');
    expect(retryDelayMs(answer({ 'Retry-After': '7', 'RateLimit-Reset': '30' }), 1, now)).toBe(7000);
    expect(retryDelayMs(answer({ 'Retry-After': 'Thu, 26 Nov 2026 10:00:05 GMT' }), 1, now)).toBe(5000);
    expect(retryDelayMs(answer({ 'RateLimit-Reset': '30' }), 1, now)).toBe(30_000);
    expect([1, 2, 3].map((attempt) => retryDelayMs(answer({}), attempt, now))).toEqual([1000, 2000, 4000]);
  });
});
