/**
 * Query and path parameters as clients send them (issue 12 items 2 and 6, issue 13 item 5): form
 * encoding (`+` is a space), reserved characters unescaped, bracket arrays; integers only in
 * decimal and within range, dates only real ones; the validator's wording replaced by ours. The
 * operations and parameters come from the parsed spec, so a new operation is covered too.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { listen, stop } from '../support/agents';
import { EXAMPLE_PAGES } from '../docs/examples';
import { check, deref, fillPath, givenTenant, specDoc, specOperations, type Schema, type Tenant, TENANT_SETUP_MS } from '../reliability/spec-operations';

interface Param {
  name: string;
  in: string;
  allowReserved?: boolean;
  schema: Schema;
}

const operations = specOperations();

function parametersOf(opPath: string, method: string): Param[] {
  const item = specDoc().paths[opPath]!;
  const op = item[method] as { parameters?: unknown[] };
  return [...((item.parameters as unknown[]) ?? []), ...(op.parameters ?? [])].map((p) => deref(p) as unknown as Param);
}

/** A parameter's scalar schemas (its oneOf branches, array items included). */
function scalars(p: Param): Schema[] {
  const all = (s: Schema): Schema[] => {
    const d = deref(s);
    const alts = (d.oneOf ?? d.anyOf) as Schema[] | undefined;
    if (alts) return alts.flatMap(all);
    return ([] as unknown[]).concat(d.type).includes('array') ? all(d.items as Schema) : [d];
  };
  return all(p.schema);
}

const queryParams = operations.flatMap((op) =>
  parametersOf(op.path, op.method)
    .filter((p) => p.in === 'query')
    .map((p) => ({ op, p })),
);
const listOps = operations.filter((op) => op.method === 'get' && parametersOf(op.path, op.method).some((p) => p.name === 'per_page'));
const integerPathOps = operations.flatMap((op) =>
  parametersOf(op.path, op.method)
    .filter((p) => p.in === 'path' && scalars(p).every((s) => s.type === 'integer'))
    .map((p) => ({ op, p })),
);
const dateParams = queryParams.filter(({ p }) => scalars(p).every((s) => s.format === 'date-time'));
/** Free-text query parameters: no format, no enum, a string. */
// `tags` (the Test Engine lists) is a list of `key:value` pairs, not free text: a pair without a
// colon is a 422 (test/suites/tests.test.ts). `after` and `before` (notification services) are
// cursors this server made: anything else is a 400 (test/notification-services). `include` (a
// build's tests) names what to add, `executions` or `latest_fail`: another value is a 422
// (test/suites/build-tests.test.ts). `state` (the artifact lists) names one of five states: another
// value is the docs' 422 (test/artifacts/rest.test.ts).
const STRUCTURED = new Set(['tags', 'after', 'before', 'include', 'state']);
const textParams = queryParams.filter(({ p }) => !STRUCTURED.has(p.name) && scalars(p).every((s) => s.type === 'string' && !s.format && !s.enum && !s.pattern));

describe('the spec', () => {
  it('lets every query parameter carry reserved characters unescaped', () => {
    expect(queryParams.length).toBeGreaterThan(20);
    expect(queryParams.filter(({ p }) => p.allowReserved !== true).map(({ op, p }) => `${op.operationId}.${p.name}`)).toEqual([]);
  });

  it('has list operations, integer path parameters and date parameters for the cases below', () => {
    expect(listOps.map((o) => o.operationId)).toEqual(
      expect.arrayContaining(['listAllBuilds', 'listOrganizationBuilds', 'listPipelineBuilds', 'listPipelines', 'listRuns']),
    );
    expect(integerPathOps.map(({ op }) => op.operationId)).toEqual(expect.arrayContaining(['getBuild', 'cancelBuild', 'rebuildBuild', 'retryJob']));
    expect(dateParams.map(({ p }) => p.name)).toEqual(expect.arrayContaining(['created_from', 'created_to', 'finished_from']));
  });
});

/** GET `target` exactly as written (no client re-encoding), from the app on loopback. */
function rawGet(endpoint: string, target: string, token: string): Promise<{ status: number; body: { message?: string } }> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${endpoint}${target.startsWith('/') ? '' : '/'}`, { method: 'GET', path: target, headers: auth(token) }, (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? (JSON.parse(text) as { message?: string }) : {} }));
    });
    req.on('error', reject);
    req.end();
  });
}

describeEachDatabase('query and path parameters', (ctx) => {
  let t: Tenant;
  let server: http.Server;
  let endpoint: string;

  beforeAll(async () => {
    t = await givenTenant(ctx(), 'params');
    ({ server, endpoint } = await listen(ctx().app));
  }, TENANT_SETUP_MS);
  afterAll(async () => {
    await stop(server);
  });

  const get = (c: TestContext, target: string) => c.http().get(target).set(auth(t.token));

  describe('form encoding and reserved characters', () => {
    it('sends each GET example of the README and its docs/ pages exactly as written', async () => {
      const readme = EXAMPLE_PAGES.map((page) => fs.readFileSync(path.join(__dirname, '..', '..', page), 'utf8')).join('\n');
      // The pages' own objects: a pipeline `my-pipeline` with build 1, suites `jest` and `unit`.
      const { org, token } = await ctx().givenAdmin();
      const p = await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(token))
        .send({ name: 'My Pipeline', repository: 'git@github.com:acme-inc/my-pipeline.git', configuration: 'steps:\n  - command: make\n' });
      check(p, 201, 'pipeline');
      check(
        await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/my-pipeline/builds`).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }),
        201,
        'build',
      );
      check(await ctx().http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name: 'Jest' }), 201, 'suite');
      // docs/test-collectors.md's suite.
      check(await ctx().http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name: 'Unit' }), 201, 'suite');
      const targets = [...readme.matchAll(/^curl -s(?:g)? "?(\S+?)"? -H "Authorization: Bearer \$TOKEN"/gm)].map((m) =>
        m[1]!
          .replace('http://127.0.0.1:8080', '')
          .replace('$ANALYTICS', `/v2/analytics/organizations/${org.slug}`)
          .replace('$API', `/v2/organizations/${org.slug}`),
      );
      expect(targets.length).toBeGreaterThanOrEqual(10);
      expect(targets.filter((x) => x.includes('?')).length).toBeGreaterThanOrEqual(6);
      for (const target of targets) {
        const res = await rawGet(
          endpoint,
          target
            .replace('$RUN_ID', crypto.randomUUID())
            .replace('$TEST_ID', crypto.randomUUID())
            .replace('$BUILD_ID', crypto.randomUUID())
            .replace('$JOB_ID', crypto.randomUUID())
            .replace('$UPLOAD_ID', crypto.randomUUID()),
          token,
        );
        // The run, test, build, job and step upload ids are the reader's own: in a path they name
        // nothing (404), which is past parsing; in a list's filter (`runs?build_id=`) they match nothing (200).
        const expected = /\$(RUN|TEST|BUILD|JOB|UPLOAD)_ID/.test(target.split('?')[0]!) ? 404 : 200;
        expect({ target, status: res.status }).toEqual({ target, status: expected });
        if (expected === 404) expect(res.body.message).toMatch(/^No (run|test|build|job|step upload) found$/);
      }
      // Some forty pages of examples, each path validated on its first call.
    }, 180_000);

    it('reads `+` and `%20` as a space and takes : / @ , ; $ unescaped', async () => {
      const { org, token } = await ctx().givenAdmin();
      const base = `/v2/organizations/${org.slug}`;
      check(
        await ctx()
          .http()
          .post(`${base}/pipelines`)
          .set(auth(token))
          .send({ name: 'Go Page', repository: 'git@github.com:acme/a.git', configuration: 'steps:\n  - command: make\n' }),
        201,
        'pipeline',
      );
      check(
        await ctx()
          .http()
          .post(`${base}/pipelines`)
          .set(auth(token))
          .send({ name: 'Other', repository: 'https://example.com/b.git', configuration: 'steps:\n  - command: make\n' }),
        201,
        'pipeline',
      );
      const builds = `${base}/pipelines/go-page/builds`;
      check(await ctx().http().post(builds).set(auth(token)).send({ commit: 'abc/def', branch: 'release/v1' }), 201, 'build');
      check(await ctx().http().post(builds).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }), 201, 'build');
      const names = async (target: string) => {
        const res = await rawGet(endpoint, target, token);
        expect({ target, status: res.status }).toEqual({ target, status: 200 });
        return (res.body as unknown as { name?: string; branch?: string; commit?: string }[]).map((x) => x.name ?? `${x.branch}@${x.commit}`);
      };
      expect(await names(`${base}/pipelines?name=go+page`)).toEqual(['Go Page']);
      expect(await names(`${base}/pipelines?name=go%20page`)).toEqual(['Go Page']);
      expect(await names(`${base}/pipelines?repository=git@github.com:acme/a.git`)).toEqual(['Go Page']);
      expect(await names(`${builds}?branch=release/v1`)).toEqual(['release/v1@abc/def']);
      expect(await names(`${builds}?commit=abc/def`)).toEqual(['release/v1@abc/def']);
      expect(await names(`${builds}?branch[]=release/v1&branch[]=main`)).toHaveLength(2);
      expect(await names(`${builds}?branch%5B%5D=release%2Fv1`)).toEqual(['release/v1@abc/def']);
      expect(await names(`/v2/builds?created_from=2026-01-01T00:00:00Z&branch=release/v1`)).toEqual(['release/v1@abc/def']);
      // An unencoded `+` before a UTC offset arrives as a space; it is read as the `+` it was.
      expect(await names(`${builds}?created_from=2000-01-01T02:00:00+02:00&branch=main`)).toEqual(['main@HEAD']);
      expect(await names(`${builds}?created_to=2000-01-01T02:00:00%2B02:00`)).toEqual([]);
    });

    it('takes reserved characters in every free-text query parameter of every operation', async () => {
      expect(textParams.length).toBeGreaterThan(8);
      for (const { op, p } of textParams) {
        // A signed URL (artifact content) and the agent API have credentials of their own; test/artifacts covers theirs.
        if (op.auth !== 'bearer') continue;
        const res = await rawGet(endpoint, `${fillPath(op, t.params)}?${p.name}=a/b:c@d,e;f$g+h!*'()`, t.token);
        expect({ op: op.operationId, param: p.name, status: res.status }).toEqual({ op: op.operationId, param: p.name, status: 200 });
      }
    });
  });

  describe('readable refusals', () => {
    it('lists the allowed states for `state=bogus` and `state[]=bogus` alike', async () => {
      const single = await get(ctx(), '/v2/builds?state=bogus').expect(400);
      const bracket = await get(ctx(), '/v2/builds?state[]=passed&state[]=bogus').expect(400);
      expect(single.body.message).toBe(
        'Invalid parameter state: must be one of creating, scheduled, running, passed, failing, failed, blocked, canceling, canceled, skipped, not_run, finished',
      );
      expect(bracket.body.message).toBe(single.body.message);
    });

    it('words the rest in its own terms', async () => {
      const cases: [string, string][] = [
        ['/v2/builds?include_retried_jobs=yes', 'Invalid parameter include_retried_jobs: must be true, false, 1 or 0'],
        ['/v2/builds?creator=someone', 'Invalid parameter creator: must be a UUID'],
        [`/v2/builds?branch=${'a'.repeat(256)}`, 'Invalid parameter branch: is too long (maximum is 255 characters)'],
        ['/v2/builds?per_page[]=3', 'Invalid parameter per_page: must be a single value'],
        [
          `/v2/analytics/organizations/${t.org.slug}/suites/${t.suite.slug}/flaky-tests?period=1year`,
          'Invalid parameter period: must be one of 1hour, 4hours, 1day, 7days, 14days, 28days',
        ],
      ];
      for (const [target, message] of cases) {
        const res = await get(ctx(), target);
        expect({ target, status: res.status, message: res.body.message }).toEqual({ target, status: 400, message });
      }
    });
  });

  describe('whole numbers', () => {
    const malformed = ['Infinity', '-Infinity', 'NaN', '1e3', '1e1', '0x1', '0x10', '1.0', '0.5', '0', '-1', '101', ' 5', '5 ', '', '99999999999999999999'];

    it('refuses a malformed or out-of-range page or per_page on every list operation with a 400', async () => {
      expect(listOps.length).toBeGreaterThanOrEqual(8);
      for (const op of listOps) {
        const target = fillPath(op, t.params);
        const ok = await get(ctx(), `${target}?page=1&per_page=2`);
        expect({ op: op.operationId, status: ok.status }).toEqual({ op: op.operationId, status: 200 });
        // A list paginated by cursor (notification services: `after`/`before`) has no `page`.
        const paged = parametersOf(op.path, op.method).some((p) => p.name === 'page');
        for (const [name, values] of [
          ['per_page', malformed],
          // `page=0` is page 1 (pybuildkite's default; see below).
          ...(paged ? [['page', malformed.filter((v) => v !== '101' && v !== '0').concat('1000001')] as const] : []),
        ] as const) {
          for (const v of values) {
            const res = await get(ctx(), `${target}?${name}=${encodeURIComponent(v)}`);
            expect({ op: op.operationId, name, v, status: res.status, message: res.body.message }).toEqual({
              op: op.operationId,
              name,
              v,
              status: 400,
              message:
                name === 'per_page'
                  ? 'Invalid parameter per_page: must be a whole number from 1 to 100'
                  : 'Invalid parameter page: must be a whole number from 0 to 1000000',
            });
          }
        }
      }
      // About 700 requests over every list: a loaded machine (2 cores shared) needs more than 30 s.
    }, 120_000);

    it('reads page=0 as page 1 on every list paginated by page (pybuildkite sends it by default)', async () => {
      const paged = listOps.filter((op) => parametersOf(op.path, op.method).some((p) => p.name === 'page'));
      expect(paged.length).toBeGreaterThanOrEqual(8);
      for (const op of paged) {
        const target = fillPath(op, t.params);
        const first = await get(ctx(), `${target}?page=1&per_page=1`);
        const zero = await get(ctx(), `${target}?page=0&per_page=1`);
        expect({ op: op.operationId, status: zero.status, body: zero.body }).toEqual({ op: op.operationId, status: 200, body: first.body });
        // Links name real pages: page 0 has no `prev`, and its `next` is page 2.
        expect({ op: op.operationId, link: zero.headers.link }).toEqual({ op: op.operationId, link: first.headers.link });
      }
    });

    it('never answers more than a page: per_page=Infinity is refused on the builds, pipelines and runs lists', async () => {
      for (const target of [
        '/v2/builds',
        `/v2/organizations/${t.org.slug}/builds`,
        `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/builds`,
        `/v2/organizations/${t.org.slug}/pipelines`,
        `/v2/analytics/organizations/${t.org.slug}/suites/${t.suite.slug}/runs`,
      ]) {
        await get(ctx(), `${target}?per_page=Infinity`).expect(400);
        await get(ctx(), `${target}?per_page=1`).expect(200);
      }
    });

    it('answers 404 for an integer path parameter that is not a decimal number in range, in every operation', async () => {
      for (const { op, p } of integerPathOps) {
        const good = fillPath(op, t.params);
        if (op.method === 'get') {
          const res = await get(ctx(), good);
          // A download answers a 302 to the content.
          expect({ op: op.operationId, status: res.status }).toEqual({ op: op.operationId, status: op.operationId.startsWith('downloadArtifact') ? 302 : 200 });
        }
        for (const v of ['0x1', '1e0', '1.0', 'Infinity', '0', '-1', '2147483648', '+1', ' 1']) {
          const target = fillPath(op, { ...t.params, [p.name]: v });
          const res = await ctx().http()[op.method](target).set(auth(t.token));
          expect({ op: op.operationId, v, status: res.status, message: res.body.message }).toEqual({
            op: op.operationId,
            v,
            status: 404,
            message: 'No build found',
          });
        }
      }
    });
  });

  describe('booleans', () => {
    const booleanParams = queryParams.filter(({ p }) => scalars(p).every((s) => s.type === 'boolean'));

    it('takes true/false in any case and 1/0 in every boolean query parameter of every operation', async () => {
      expect(booleanParams.map(({ p }) => p.name)).toEqual(expect.arrayContaining(['exclude_jobs', 'include_retried_jobs']));
      for (const { op, p } of booleanParams) {
        if (op.method !== 'get' || op.path.startsWith('/v3/')) continue;
        const target = fillPath(op, t.params);
        for (const v of ['true', 'True', 'TRUE', 'false', 'False', '1', '0']) {
          const res = await get(ctx(), `${target}?${p.name}=${v}`);
          expect({ op: op.operationId, p: p.name, v, status: res.status }).toEqual({ op: op.operationId, p: p.name, v, status: 200 });
        }
        for (const v of ['yes', '2', 'tru', '']) {
          const res = await get(ctx(), `${target}?${p.name}=${v}`);
          expect({ op: op.operationId, p: p.name, v, status: res.status, message: res.body.message }).toEqual({
            op: op.operationId,
            p: p.name,
            v,
            status: 400,
            message: `Invalid parameter ${p.name}: must be true, false, 1 or 0`,
          });
        }
      }
    });

    it('reads True and 1 as true, False and 0 as false', async () => {
      const builds = `/v2/organizations/${t.org.slug}/builds`;
      for (const v of ['True', '1', 'TRUE']) {
        const res = await get(ctx(), `${builds}?exclude_jobs=${v}`).expect(200);
        expect(res.body.length).toBeGreaterThan(0);
        expect(res.body.every((b: object) => !('jobs' in b))).toBe(true);
      }
      for (const v of ['False', '0']) {
        const res = await get(ctx(), `${builds}?exclude_jobs=${v}`).expect(200);
        expect(res.body.every((b: object) => 'jobs' in b)).toBe(true);
      }
    });
  });

  describe('dates', () => {
    it('reads a time without a zone as UTC and a date alone as its midnight UTC', async () => {
      const builds = `/v2/organizations/${t.org.slug}/builds`;
      const all = await get(ctx(), builds).expect(200);
      const created = new Date(all.body[0].created_at as string);
      const day = created.toISOString().slice(0, 10);
      const nextDay = new Date(Date.parse(`${day}T00:00:00Z`) + 86_400_000).toISOString().slice(0, 10);
      const ids = async (q: string) => ((await get(ctx(), `${builds}?${q}`).expect(200)).body as { id: string }[]).map((b) => b.id);
      const id = all.body[0].id as string;
      expect(await ids(`created_from=${day}`)).toContain(id);
      expect(await ids(`created_to=${day}`)).not.toContain(id);
      expect(await ids(`created_to=${nextDay}`)).toContain(id);
      // One millisecond after its creation, without a zone: UTC, so the build is before it.
      const after = new Date(created.getTime() + 1).toISOString().replace('Z', '');
      expect(await ids(`created_to=${encodeURIComponent(after)}`)).toContain(id);
      expect(await ids(`created_from=${encodeURIComponent(after)}`)).not.toContain(id);
      expect(await ids(`created_from=${encodeURIComponent(after.replace('T', ' '))}`)).not.toContain(id);
    });

    it('takes only real calendar dates in every date parameter of every operation', async () => {
      for (const { op, p } of dateParams) {
        const target = fillPath(op, t.params);
        // A time without a zone is UTC, a date alone its midnight UTC (Python's isoformat()).
        for (const v of [
          '2024-02-29T00:00:00Z',
          '2026-01-01T00:00:00.123Z',
          '2026-12-31T23:59:59+13:00',
          '2026-11-27T02:51:16.889401',
          '2026-11-27 02:51:16',
          '2026-11-26',
        ]) {
          const res = await get(ctx(), `${target}?${p.name}=${encodeURIComponent(v)}`);
          expect({ op: op.operationId, p: p.name, v, status: res.status }).toEqual({ op: op.operationId, p: p.name, v, status: 200 });
        }
        for (const v of [
          '2026-02-30T00:00:00Z',
          '2025-02-29T00:00:00Z',
          '2026-04-31T00:00:00Z',
          '2026-13-01T00:00:00Z',
          '2026-01-01T24:00:00Z',
          '2026-01-01T00:60:00Z',
          '2026-01-01T00:00:00+25:00',
          'yesterday',
          '2026-02-30',
          '2026-01-01T00:00',
          '2026-01-01T25:00:00',
        ]) {
          const res = await get(ctx(), `${target}?${p.name}=${encodeURIComponent(v)}`);
          expect({ op: op.operationId, p: p.name, v, status: res.status, message: res.body.message }).toEqual({
            op: op.operationId,
            p: p.name,
            v,
            status: 400,
            message: `Invalid parameter ${p.name}: must be an ISO 8601 date and time that exists, such as 2026-01-01T00:00:00Z`,
          });
        }
      }
    });
  });
});
