/**
 * A suite's tests (`GET .../suites/{slug}/tests`) and a test (`GET .../tests/{id}`): the legacy
 * answer without `Buildkite-Version`, the metrics over a time window with it, the filters, the
 * documented errors, pagination, tenancy and scopes.
 */
import getTestSample from '../fixtures/samples/test_engine_tests__02_get-a-test.json';
import listTestsSample from '../fixtures/samples/test_engine_tests__01_list-tests.json';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase, PUBLIC_URL, type TestContext } from '../support/context';
import { givenSuite, postUpload, result, upload, type SuiteFixture } from '../uploads/helpers';

const V = { 'Buildkite-Version': '2026-08-01' };
const LEGACY_KEYS = ['file_name', 'id', 'labels', 'location', 'name', 'scope', 'url', 'web_url'];
const DAY = 86_400_000;

type TestJson = { id: string; name: string } & Record<string, unknown>;

describeEachDatabase('a suite’s tests', (ctx) => {
  const post = (s: SuiteFixture, body: object) => postUpload(ctx(), s, body);
  const d = (seconds: number) => ({ history: { duration: seconds } });
  const get = (s: SuiteFixture, path: string, headers: Record<string, string> = V) => ctx().http().get(`${s.base}${path}`).set(auth(s.token)).set(headers);
  const names = (body: TestJson[]) => body.map((t) => t.name);

  /** Moves a run and its executions `days` into the past. */
  const age = async (c: TestContext, runId: string, days: number) => {
    const when = new Date(Date.now() - days * DAY);
    await c.services.db('test_executions').where({ run_id: runId }).update({ created_at: when });
    await c.services.db('test_runs').where({ id: runId }).update({ created_at: when, updated_at: when });
  };

  /**
   * slow: 2 passed (1s, 3s) on main; flips: passed + failed on one commit (flaky), 0.5s each, on
   * main; todo: skipped; feature: passed 0.1s on feature-x with tag team:web.
   */
  const seed = async () => {
    const s = await givenSuite(ctx());
    await post(
      s,
      upload({ key: 'r1', branch: 'main', commit_sha: 'c1' }, [
        result('slow', 'passed', d(1)),
        result('flips', 'passed', d(0.5)),
        result('todo', 'skipped', d(0.2)),
      ]),
    );
    await post(s, upload({ key: 'r2', branch: 'main', commit_sha: 'c1' }, [result('slow', 'passed', d(3)), result('flips', 'failed', d(0.5))]));
    await post(s, upload({ key: 'r3', branch: 'feature-x', commit_sha: 'c2' }, [result('feature', 'passed', d(0.1))], { team: 'web' }));
    return s;
  };

  it('lists every test with executions in the legacy shape without Buildkite-Version, newest first, with label=flaky', async () => {
    const s = await seed();
    const res = await get(s, '/tests', {}).expect(200);
    // Newest first: the last upload's test leads (the first upload's three share their time).
    expect(res.body[0].name).toBe('feature');
    expect(res.body).toHaveLength(4);
    expect(new Set(names(res.body))).toEqual(new Set(['slow', 'flips', 'todo', 'feature']));
    for (const t of res.body) expect(Object.keys(t).sort()).toEqual(LEGACY_KEYS);
    const flips = res.body.find((t: TestJson) => t.name === 'flips');
    expect(flips).toEqual({
      id: expect.any(String),
      url: `${PUBLIC_URL}/v2/analytics/organizations/${s.org.slug}/suites/${s.suite.slug}/tests/${flips.id}`,
      web_url: `${PUBLIC_URL}/organizations/${s.org.slug}/analytics/suites/${s.suite.slug}/tests/${flips.id}`,
      scope: 'User#email',
      name: 'flips',
      location: './spec/models/user_spec.rb:5',
      file_name: './spec/models/user_spec.rb',
      labels: ['flaky'],
    });
    expect(names((await get(s, '/tests?label=flaky', {}).expect(200)).body)).toEqual(['flips']);
    expect((await get(s, '/tests?label=slow', {}).expect(200)).body).toEqual([]);

    // Blank, or a date before 2026-08-01, is the legacy answer too.
    for (const version of ['', '   ', '2026-07-31']) {
      const legacy = await get(s, '/tests', { 'Buildkite-Version': version }).expect(200);
      expect(Object.keys(legacy.body[0]).sort()).toEqual(LEGACY_KEYS);
    }
  });

  it('gives each test its metrics over the window with Buildkite-Version, slowest first by default', async () => {
    const s = await seed();
    const res = await get(s, '/tests').expect(200);
    expect(names(res.body)).toEqual(['slow', 'flips', 'todo', 'feature']);
    // The documented example's every key (the tests with only passed and failed executions).
    expectConforms(
      res.body.filter((t: TestJson) => t.name !== 'todo'),
      [listTestsSample],
      responseSchema('listTests'),
    );
    const [slow, flips, todo] = res.body;
    expect(Object.keys(slow).sort()).toEqual(Object.keys(getTestSample).sort());
    expect(slow).toMatchObject({
      labels: [],
      reliability: 1,
      duration_avg: 2,
      duration_sum: 4,
      duration_min: 1,
      duration_max: 3,
      executions_count: 2,
      executions_count_by_result: { passed: 2, failed: 0 },
    });
    expect(flips).toMatchObject({ labels: ['flaky'], reliability: 0.5, executions_count: 2, executions_count_by_result: { passed: 1, failed: 1 } });
    // skipped, pending and unknown only when not zero; no passed or failed execution: reliability null.
    expect(todo).toMatchObject({ reliability: null, executions_count: 1, executions_count_by_result: { passed: 0, failed: 0, skipped: 1 } });
    expect(Object.keys(slow.executions_count_by_result).sort()).toEqual(['failed', 'passed']);

    // Least reliable first, ties by id, a test without reliability last.
    const byReliability = (await get(s, '/tests?sort_by=reliability&order=asc').expect(200)).body as TestJson[];
    const ones = byReliability.filter((t) => t.reliability === 1).map((t) => t.id);
    expect(names(byReliability)).toEqual(['flips', expect.any(String), expect.any(String), 'todo']);
    expect(ones).toEqual([...ones].sort());
    expect(names((await get(s, '/tests?sort_by=duration_sum&order=asc').expect(200)).body)).toEqual(['feature', 'todo', 'flips', 'slow']);
    expect(names((await get(s, '/tests?sort_by=duration_max').expect(200)).body)).toEqual(['slow', 'flips', 'todo', 'feature']);
  });

  it('pages with Link next and last, keeping the query', async () => {
    const s = await seed();
    const p1 = await get(s, '/tests?per_page=3&sort_by=duration_min').expect(200);
    expect(names(p1.body)).toEqual(['slow', 'flips', 'todo']);
    expect(p1.headers.link).toContain('/tests?per_page=3&sort_by=duration_min&page=2>; rel="next"');
    expect(p1.headers.link).toContain('/tests?per_page=3&sort_by=duration_min&page=2>; rel="last"');
    const p2 = await get(s, '/tests?per_page=3&page=2&sort_by=duration_min').expect(200);
    expect(names(p2.body)).toEqual(['feature']);
    expect(p2.headers.link).not.toContain('rel="next"');
    const legacy = await get(s, '/tests?per_page=2', {}).expect(200);
    expect(legacy.body).toHaveLength(2);
    expect(legacy.headers.link).toContain('rel="next"');
  });

  it('filters by branch, tags, result, labels, owners, state and min_executions', async () => {
    const s = await seed();
    const list = async (q: string) => names((await get(s, `/tests?${q}`).expect(200)).body).sort();
    expect(await list('branch=main')).toEqual(['flips', 'slow', 'todo']);
    expect(await list('branch=!main')).toEqual(['feature']);
    expect(await list('branch=feat*')).toEqual(['feature']);
    expect(await list('tags=team:web')).toEqual(['feature']);
    expect(await list('tags=team:!web')).toEqual(['flips', 'slow', 'todo']);
    expect(await list('tags=scm.branch:ma*,scm.commit_sha:c1')).toEqual(['flips', 'slow', 'todo']);
    expect(await list('tags=result:failed')).toEqual(['flips']);
    expect(await list('tags=result:~passed')).toEqual(['feature', 'flips', 'slow']);
    expect(await list('tags=result:^passed')).toEqual(['feature', 'slow']);
    expect(await list('tags=result:!passed')).toEqual(['flips', 'todo']);
    expect(await list('labels=flaky')).toEqual(['flips']);
    expect(await list('labels=!flaky')).toEqual(['feature', 'slow', 'todo']);
    expect(await list('labels=flaky,!slow')).toEqual(['flips']);
    expect(await list('owners=payments')).toEqual([]);
    expect(await list('owners=!payments')).toEqual(['feature', 'flips', 'slow', 'todo']);
    expect(await list('state=enabled')).toEqual(['feature', 'flips', 'slow', 'todo']);
    expect(await list('state=muted')).toEqual([]);
    expect(await list('min_executions=2')).toEqual(['flips', 'slow']);

    // `result:failed` counts only the failed executions; `~failed` keeps the test's every execution.
    const onlyFailed = (await get(s, '/tests?tags=result:failed').expect(200)).body[0];
    expect(onlyFailed).toMatchObject({ name: 'flips', executions_count: 1, reliability: 0, executions_count_by_result: { passed: 0, failed: 1 } });
    const groupFailed = (await get(s, '/tests?tags=result:~failed').expect(200)).body[0];
    expect(groupFailed).toMatchObject({ name: 'flips', executions_count: 2, reliability: 0.5 });
    // A branch filter aggregates only that branch's executions.
    const slowMain = (await get(s, '/tests?branch=main&sort_by=duration_max').expect(200)).body[0];
    expect(slowMain).toMatchObject({ name: 'slow', executions_count: 2 });

    // Without the header only `label` applies.
    expect(names((await get(s, '/tests?branch=feature-x', {}).expect(200)).body)).toHaveLength(4);
  });

  it('aggregates over period, min_timestamp and max_timestamp; by default the 7 days before now', async () => {
    const s = await givenSuite(ctx());
    const old = await post(s, upload({ key: 'old' }, [result('ancient', 'failed', d(9)), result('both', 'failed', d(5))]));
    await age(ctx(), old.run_id, 10);
    await post(s, upload({ key: 'new' }, [result('both', 'passed', d(1))]));

    const recent = (await get(s, '/tests').expect(200)).body;
    expect(names(recent)).toEqual(['both']);
    expect(recent[0]).toMatchObject({ executions_count: 1, reliability: 1, duration_sum: 1 });
    expect(names((await get(s, '/tests?period=14days').expect(200)).body)).toEqual(['ancient', 'both']);
    expect((await get(s, '/tests?period=14days').expect(200)).body[1]).toMatchObject({ name: 'both', executions_count: 2, reliability: 0.5, duration_sum: 6 });
    const from = new Date(Date.now() - 12 * DAY).toISOString();
    const to = new Date(Date.now() - 8 * DAY).toISOString();
    const window = (await get(s, `/tests?min_timestamp=${from}&max_timestamp=${to}`).expect(200)).body;
    expect(names(window)).toEqual(['ancient', 'both']);
    expect(window[1]).toMatchObject({ name: 'both', executions_count: 1, reliability: 0 });
    expect(names((await get(s, `/tests?min_timestamp=${from}`).expect(200)).body)).toEqual(['ancient', 'both']);
    expect(names((await get(s, `/tests?max_timestamp=${to}`).expect(200)).body)).toEqual([]);

    // Legacy: every test, whatever the window.
    expect(names((await get(s, '/tests', {}).expect(200)).body).sort()).toEqual(['ancient', 'both']);
  });

  it('gets any test with executions; with no execution in the window its metrics are null and 0', async () => {
    const s = await givenSuite(ctx());
    const old = await post(s, upload({ key: 'old' }, [result('passes quietly', 'passed', d(0.3))]));
    await age(ctx(), old.run_id, 10);
    const id = (await get(s, '/tests', {}).expect(200)).body[0].id;

    const legacy = await get(s, `/tests/${id}`, {}).expect(200);
    expect(Object.keys(legacy.body).sort()).toEqual(LEGACY_KEYS);
    expect(legacy.body).toMatchObject({ id, name: 'passes quietly', labels: [] });

    const none = await get(s, `/tests/${id}`).expect(200);
    expect(none.body).toEqual({
      ...legacy.body,
      reliability: null,
      duration_avg: null,
      duration_sum: null,
      duration_min: null,
      duration_max: null,
      executions_count: 0,
      executions_count_by_result: { passed: 0, failed: 0 },
    });
    const some = await get(s, `/tests/${id}?period=28days`).expect(200);
    expect(some.body).toMatchObject({
      reliability: 1,
      duration_avg: 0.3,
      duration_sum: 0.3,
      executions_count: 1,
      executions_count_by_result: { passed: 1, failed: 0 },
    });
    await get(s, `/tests/${id}?period=7days&min_timestamp=2026-01-01T00:00:00Z`).expect(422);
    expect((await get(s, '/tests/00000000-0000-4000-8000-000000000000').expect(404)).body).toEqual({ message: 'No test found' });
    expect((await get(s, '/tests/not-a-uuid', {}).expect(404)).body).toEqual({ message: 'No test found' });
  });

  it('answers the documented errors: a malformed Buildkite-Version, period with timestamps, label with labels, bad filters', async () => {
    const s = await seed();
    const id = (await get(s, '/tests').expect(200)).body[0].id;
    for (const version of ['2026/08/01', 'latest', '2026-8-1', '2026-02-30']) {
      for (const path of ['/tests', `/tests/${id}`]) {
        const res = await get(s, path, { 'Buildkite-Version': version }).expect(400);
        expect(res.body).toEqual({ message: 'Buildkite-Version must be in format YYYY-MM-DD' });
      }
    }
    const msg = async (q: string, status: number) => (await get(s, `/tests?${q}`).expect(status)).body.message;
    expect(await msg('period=7days&min_timestamp=2026-01-01T00:00:00Z', 422)).toBe('period cannot be combined with min_timestamp');
    expect(await msg('period=7days&max_timestamp=2026-01-01T00:00:00Z', 422)).toBe('period cannot be combined with max_timestamp');
    expect(await msg('min_timestamp=2026-02-01T00:00:00Z&max_timestamp=2026-01-01T00:00:00Z', 422)).toBe('min_timestamp must be before max_timestamp');
    expect(await msg('label=flaky&labels=flaky', 422)).toBe('label cannot be combined with labels');
    expect(await msg('branch=!feat*', 422)).toMatch(/at most one operator/);
    expect(await msg('tags=team', 422)).toMatch(/key:value/);
    expect(await msg('tags=team:~web', 422)).toMatch(/only available for the result tag/);
    expect(await msg('tags=result:passed,result:failed', 422)).toMatch(/at most once/);
    expect(await msg('labels=!', 422)).toMatch(/empty value/);
    await get(s, '/tests?period=1year').expect(400);
    await get(s, '/tests?min_timestamp=yesterday').expect(400);
    await get(s, '/tests?min_executions=0').expect(400);
    await get(s, '/tests?sort_by=name').expect(400);
    await get(s, '/tests?order=up').expect(400);
    await get(s, '/tests?per_page=101').expect(400);
  });

  it('needs read_suites, and another organization’s suite or test is a 404', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const created = await ctx()
      .http()
      .post(`/v2/analytics/organizations/${org.slug}/suites`)
      .set(auth(token))
      .send({ name: 'Scoped', show_api_token: true })
      .expect(201);
    const s: SuiteFixture = {
      org,
      token,
      suite: created.body,
      apiToken: created.body.api_token,
      base: `/v2/analytics/organizations/${org.slug}/suites/scoped`,
    };
    await post(s, upload({ key: 'r1' }, [result('mine', 'passed')]));
    const id = (await get(s, '/tests').expect(200)).body[0].id;

    const other = await givenSuite(ctx());
    await post(other, upload({ key: 'r1' }, [result('theirs', 'passed')]));
    await ctx().http().get(`${s.base}/tests`).set(auth(other.token)).expect(404);
    await ctx().http().get(`${s.base}/tests/${id}`).set(auth(other.token)).set(V).expect(404);
    // The other organization's own suite does not reach this test either.
    await ctx().http().get(`${other.base}/tests/${id}`).set(auth(other.token)).expect(404);
    expect(names((await get(other, '/tests').expect(200)).body)).toEqual(['theirs']);

    const noScope = await ctx().givenToken(user, [org], ['read_pipelines']);
    const denied = await ctx().http().get(`${s.base}/tests`).set(auth(noScope)).expect(403);
    expect(denied.body.message).toBe("Your access token doesn't have the read_suites scope");
    await ctx().http().get(`${s.base}/tests/${id}`).set(auth(noScope)).expect(403);
    const readOnly = await ctx().givenToken(user, [org], ['read_suites']);
    expect(names((await ctx().http().get(`${s.base}/tests`).set(auth(readOnly)).set(V).expect(200)).body)).toEqual(['mine']);
    await ctx().http().get(`${s.base}/tests`).expect(401);
  });
});
