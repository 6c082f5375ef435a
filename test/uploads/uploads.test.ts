import getRunSample from '../fixtures/samples/test_engine_runs__02_get-a-run.json';
import failedSample from '../fixtures/samples/test_engine_runs__03_get-failed-execution-data.json';
import getTestSample from '../fixtures/samples/test_engine_tests__02_get-a-test.json';
import flakySample from '../fixtures/samples/test_engine_flaky_tests__01_legacy-flaky-tests-endpoint-deprecated.json';
import { MAX_RESULTS } from '../../src/uploads/results';
import { auth, createTestContext, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { givenSuite, result, suiteAuth, upload } from './helpers';
import { existing } from '../support/rows';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describeEachDatabase('uploads (JSON)', (ctx) => {
  const post = (apiToken: string, body: unknown) =>
    ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(apiToken))
      .send(body as object);

  it('refuses a missing, malformed or unknown suite token with a JSON message', async () => {
    const body = upload({ key: 'k' }, [result('a', 'passed')]);
    for (const header of [undefined, 'Bearer abc', 'Token token="not-a-real-token"']) {
      const req = ctx().http().post('/v1/uploads');
      if (header) req.set('Authorization', header);
      const res = await req.send(body).expect(401);
      expect(res.body.message).toMatch(/test suite API token/);
      expect(res.headers['www-authenticate']).toBe('Token realm="Test Engine"');
    }
  });

  it('takes the suite token as `Token token="<token>"` (the collectors, the docs) or `Token token=<token>` (bktec), and no other way', async () => {
    const s = await givenSuite(ctx());
    const body = upload({ key: 'forms' }, [result('a', 'passed')]);
    const refused = [
      `Token ${s.apiToken}`,
      `Token token="${s.apiToken}`,
      `Token token=${s.apiToken}"`,
      `Token token='${s.apiToken}'`,
      `Token token= ${s.apiToken}`,
      `token token="${s.apiToken}"`,
      `token token=${s.apiToken}`,
      `Token Token="${s.apiToken}"`,
      `Bearer ${s.apiToken}`,
      `Token token="${s.apiToken}", x`,
    ];
    for (const header of refused) {
      const res = await ctx().http().post('/v1/uploads').set('Authorization', header).send(body);
      expect({ header, status: res.status }).toEqual({ header, status: 401 });
      expect(res.body.message).toMatch(/Token token="<token>"/);
    }
    await ctx().http().post('/v1/uploads').set('Authorization', `Token token="${s.apiToken}"`).send(body).expect(202);
    // What bktec sends (test-engine-client, internal/api/upload_test_results.go): a multipart upload, the token unquoted.
    const bktec = await ctx()
      .http()
      .post('/v1/uploads')
      .set('Authorization', `Token token=${s.apiToken}`)
      .field('format', 'json')
      .field('run_env[key]', 'forms')
      .field('run_env[collector]', 'bktec')
      .attach('data', Buffer.from(JSON.stringify([result('b', 'passed')])), 'results.json')
      .expect(202);
    expect(bktec.body).toMatchObject({ queued: 1, skipped: 0 });
    // An unquoted token must still be the suite's.
    await ctx().http().post('/v1/uploads').set('Authorization', 'Token token=not-a-real-token').send(body).expect(401);
  });

  it('stores the run, the tests and the executions and answers 202 with the run URL', async () => {
    const s = await givenSuite(ctx());
    const res = await post(
      s.apiToken,
      upload(
        { key: 'build-1', branch: 'main', commit_sha: 'abc123', number: '7', message: 'Fix it', url: 'https://ci.example/7' },
        [result('passes', 'passed'), result('fails', 'failed'), result('skipped', 'skipped')],
        {
          'language.name': 'ruby',
        },
      ),
    ).expect(202);
    expect(res.body).toEqual({
      id: expect.any(String),
      run_id: expect.any(String),
      queued: 3,
      skipped: 0,
      errors: [],
      run_url: `${PUBLIC_URL}/organizations/${s.org.slug}/analytics/suites/${s.suite.slug}/runs/${res.body.run_id}`,
    });

    const run = await ctx().http().get(`${s.base}/runs/${res.body.run_id}`).set(auth(s.token)).expect(200);
    expect(Object.keys(run.body).sort()).toEqual(Object.keys(getRunSample).sort());
    expect(run.body).toMatchObject({ id: res.body.run_id, branch: 'main', commit_sha: 'abc123', state: 'finished', result: 'failed', build_id: null });
    expect(run.body.url).toBe(`${PUBLIC_URL}${s.base}/runs/${res.body.run_id}`);
    expect(run.body.created_at).toMatch(ISO);

    const failed = await ctx().http().get(`${s.base}/runs/${res.body.run_id}/failed_executions?include_failure_expanded=true`).set(auth(s.token)).expect(200);
    expect(failed.body).toHaveLength(1);
    for (const key of Object.keys(failedSample[0]!)) expect(failed.body[0]).toHaveProperty(key);
    expect(failed.body[0]).toMatchObject({
      run_id: res.body.run_id,
      test_name: 'fails',
      failure_reason: 'expected true, got false',
      failure_expanded: [{ expanded: ['expected true', 'got false'], backtrace: ['user_spec.rb:42'] }],
      duration: 0.25,
      commit_sha: 'abc123',
      branch: 'main',
      tags: { 'language.name': 'ruby' },
    });
    const test = await ctx().http().get(`${s.base}/tests/${failed.body[0].test_id}`).set(auth(s.token)).set('Buildkite-Version', '2026-08-01').expect(200);
    expect(Object.keys(test.body).sort()).toEqual(Object.keys(getTestSample).sort());
    expect(test.body).toMatchObject({
      scope: 'User#email',
      name: 'fails',
      location: './spec/models/user_spec.rb:5',
      file_name: './spec/models/user_spec.rb',
      labels: [],
      reliability: 0,
      executions_count: 1,
      executions_count_by_result: { passed: 0, failed: 1 },
      duration_sum: 0.25,
      duration_avg: 0.25,
    });
    const runs = await ctx().http().get(`${s.base}/runs`).set(auth(s.token)).expect(200);
    expect(runs.body.map((r: { id: string }) => r.id)).toEqual([res.body.run_id]);
  });

  it('joins uploads with the same run key into one run and keeps test totals across them', async () => {
    const s = await givenSuite(ctx());
    const env = { key: 'same-key', branch: 'main', commit_sha: 'c1', ci: 'buildkite' };
    const first = await post(s.apiToken, upload(env, [result('t', 'passed', { history: { duration: 0.5 } })])).expect(202);
    const second = await post(s.apiToken, upload(env, [result('t', 'passed', { history: { duration: 0.1 } }), result('u', 'passed')])).expect(202);
    expect(second.body.run_id).toBe(first.body.run_id);
    const runs = await ctx().http().get(`${s.base}/runs`).set(auth(s.token)).expect(200);
    expect(runs.body).toHaveLength(1);
    expect(runs.body[0]).toMatchObject({ result: 'passed', build_id: 'same-key' });
    const testId = existing(await ctx().services.db('tests').where({ name: 't' }).first('id'), 'test t').id;
    const test = await ctx().http().get(`${s.base}/tests/${testId}`).set(auth(s.token)).set('Buildkite-Version', '2026-08-01').expect(200);
    expect(test.body).toMatchObject({ executions_count: 2, reliability: 1, duration_min: 0.1, duration_max: 0.5, duration_sum: 0.6 });
    expect(test.body.duration_avg).toBeCloseTo(0.3);
  });

  it('rejects bad results one by one, saying which and why, and stores the others', async () => {
    const s = await givenSuite(ctx());
    const good = result('good', 'passed');
    const noName = { ...result('x', 'passed'), name: undefined };
    const badResult = result('weird', 'exploded');
    const res = await post(s.apiToken, upload({ key: 'k1' }, [good, noName, badResult, result('no result', 'passed', { result: undefined })])).expect(202);
    expect(res.body.queued).toBe(2);
    expect(res.body.skipped).toBe(2);
    expect(res.body.errors).toEqual([
      { index: 1, id: noName.id, field: 'name', code: "can't be blank" },
      { index: 2, id: badResult.id, field: 'result', code: expect.stringContaining('is not included in the list') },
    ]);
    const stored = await ctx().services.db('test_executions').where({ run_id: res.body.run_id }).select('result');
    expect(stored.map((r) => r.result).sort()).toEqual(['passed', 'unknown']);
  });

  it("checks each result against the spec's TestResult schema on its own: a result that breaks it is skipped with the field and reason, the upload goes on", async () => {
    const s = await givenSuite(ctx());
    const good = result('good', 'passed');
    const longSection = result('long section', 'passed', { history: { section: 'x'.repeat(101), duration: 0.1 } });
    const numberName = { ...result('x', 'passed'), name: 5 };
    const badLine = result('bad line', 'failed', { failure_expanded: [{ expanded: ['ok', 7] }] });
    const stringStart = result('string start', 'passed', { history: { start_at: 'soon' } });
    const res = await post(s.apiToken, upload({ key: 'schema' }, [good, longSection, numberName, badLine, stringStart, 'not an object'])).expect(202);
    expect(res.body).toMatchObject({ queued: 1, skipped: 5 });
    expect(res.body.errors).toEqual([
      { index: 1, id: longSection.id, field: 'history.section', code: 'is too long (maximum is 100 characters)' },
      { index: 2, id: numberName.id, field: 'name', code: 'must be a string' },
      { index: 3, id: badLine.id, field: 'failure_expanded[0].expanded', code: 'must be a list of strings' },
      { index: 4, id: stringStart.id, field: 'history.start_at', code: 'must be a number or null' },
      { index: 5, id: null, field: 'data', code: 'must be an object' },
    ]);
    const stored = await ctx().services.db('test_executions').where({ run_id: res.body.run_id }).count({ n: '*' }).first();
    expect(Number(stored?.n)).toBe(1);
  });

  it('takes 5,000 results in one JSON body of several megabytes, beyond the general body limit', async () => {
    const s = await givenSuite(ctx());
    const data = Array.from({ length: MAX_RESULTS }, (_, i) => result(`test ${i} ${'x'.repeat(200)}`, i % 20 ? 'passed' : 'failed'));
    const body = upload({ key: 'big', commit_sha: 'c0ffee' }, data);
    expect(JSON.stringify(body).length).toBeGreaterThan(2 * 1024 * 1024);
    const res = await post(s.apiToken, body).expect(202);
    expect(res.body).toMatchObject({ queued: MAX_RESULTS, skipped: 0, errors: [] });
  });

  it('refuses more than 5,000 results and a body without run_env.key with a 422', async () => {
    const s = await givenSuite(ctx());
    const many = Array.from({ length: MAX_RESULTS + 1 }, (_, i) => ({ name: `t${i}`, result: 'passed' }));
    const tooMany = await post(s.apiToken, upload({ key: 'k' }, many)).expect(422);
    expect(tooMany.body.errors[0]).toEqual({ field: 'data', code: expect.stringContaining('5000') });
    const noKey = await post(s.apiToken, { format: 'json', run_env: {}, data: [] }).expect(422);
    expect(noKey.body.errors).toEqual([{ field: 'run_env.key', code: "can't be blank" }]);
    await ctx().http().post('/v1/uploads').set(suiteAuth(s.apiToken)).set('Content-Type', 'application/json').send('{"data": [').expect(400);
  });

  it('deleting the suite deletes its runs, tests, executions and flaky instances', async () => {
    const s = await givenSuite(ctx());
    await post(s.apiToken, upload({ key: 'k', commit_sha: 'c' }, [result('f', 'passed'), result('f', 'failed')])).expect(202);
    await ctx().http().delete(s.base).set(auth(s.token)).expect(204);
    const count = async (table: string) => Number((await ctx().services.db(table).where({ suite_id: s.suite.id }).count({ n: '*' }).first())?.n);
    expect([await count('test_runs'), await count('tests'), await count('flaky_instances')]).toEqual([0, 0, 0]);
    await post(s.apiToken, upload({ key: 'k' }, [])).expect(401);
  });
});

describeEachDatabase('flaky tests', (ctx) => {
  const post = (apiToken: string, body: unknown) =>
    ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(apiToken))
      .send(body as object)
      .expect(202);
  const flaky = async (s: { base: string; token: string }, query = '') =>
    (await ctx().http().get(`${s.base}/flaky-tests${query}`).set(auth(s.token)).expect(200)).body as { id: string; name: string; instances: number }[];

  it('finds a test that passed and failed on one commit within one run, in the sample shape', async () => {
    const s = await givenSuite(ctx());
    await post(
      s.apiToken,
      upload({ key: 'r1', commit_sha: 'c1', branch: 'main' }, [result('flips', 'failed'), result('flips', 'passed'), result('steady', 'passed')]),
    );
    const list = await flaky(s);
    expect(list).toHaveLength(1);
    expect(Object.keys(list[0]!).sort()).toEqual(Object.keys(flakySample[0]!).sort());
    expect(list[0]).toMatchObject({ last_resolved_at: null, ownership_team_ids: [] });
    expect(list[0]).toMatchObject({ name: 'flips', scope: 'User#email', instances: 1, file_name: './spec/models/user_spec.rb' });
    const test = await ctx().http().get(`${s.base}/tests/${list[0]!.id}`).set(auth(s.token)).set('Buildkite-Version', '2026-08-01').expect(200);
    expect(test.body.labels).toEqual(['flaky']);
    expect(test.body.reliability).toBe(0.5);
  });

  it('counts one instance per commit across runs, never skipped/pending/unknown, never across commits', async () => {
    const s = await givenSuite(ctx());
    await post(
      s.apiToken,
      upload({ key: 'r1', commit_sha: 'c1', branch: 'main' }, [result('a', 'failed'), result('b', 'skipped'), result('c', 'failed'), result('d', 'passed')]),
    );
    await post(
      s.apiToken,
      upload({ key: 'r2', commit_sha: 'c1', branch: 'main' }, [result('a', 'passed'), result('b', 'passed'), result('c', 'pending'), result('a', 'passed')]),
    );
    await post(s.apiToken, upload({ key: 'r3', commit_sha: 'c2', branch: 'main' }, [result('d', 'failed')]));
    expect((await flaky(s)).map((f) => [f.name, f.instances])).toEqual([['a', 1]]);

    // A retry on the same commit is no new instance; a second commit is.
    await post(s.apiToken, upload({ key: 'r4', commit_sha: 'c1', branch: 'main' }, [result('a', 'failed')]));
    await post(s.apiToken, upload({ key: 'r5', commit_sha: 'c3', branch: 'feature' }, [result('a', 'passed'), result('a', 'failed')]));
    expect((await flaky(s)).map((f) => [f.name, f.instances])).toEqual([['a', 2]]);
    // Without a commit SHA nothing can be flaky.
    await post(s.apiToken, upload({ key: 'r6' }, [result('e', 'passed'), result('e', 'failed')]));
    expect((await flaky(s)).map((f) => f.name)).toEqual(['a']);
  });

  it('filters by search, branch and period, most recent first, paginated', async () => {
    const s = await givenSuite(ctx());
    await post(s.apiToken, upload({ key: 'r1', commit_sha: 'c1', branch: 'main' }, [result('Alpha login', 'passed'), result('Alpha login', 'failed')]));
    await post(
      s.apiToken,
      upload({ key: 'r2', commit_sha: 'c2', branch: 'feature' }, [result('beta_logout', 'passed'), result('beta_logout', 'failed', { scope: 'Session' })]),
    );
    await post(
      s.apiToken,
      upload({ key: 'r3', commit_sha: 'c3', branch: 'feature' }, [
        result('beta_logout', 'passed', { scope: 'Session' }),
        result('beta_logout', 'failed', { scope: 'Session' }),
      ]),
    );
    // The first instance was detected three days ago.
    const alpha = existing(await ctx().services.db('tests').where({ name: 'Alpha login' }).first('id'), 'test Alpha login').id;
    await ctx()
      .services.db('flaky_instances')
      .where({ test_id: alpha })
      .update({ detected_at: new Date(Date.now() - 3 * 86_400_000) });

    expect((await flaky(s)).map((f) => f.name)).toEqual(['beta_logout', 'Alpha login']);
    expect((await flaky(s, '?search=ALPHA')).map((f) => f.name)).toEqual(['Alpha login']);
    expect((await flaky(s, '?search=session')).map((f) => f.name)).toEqual(['beta_logout']);
    expect((await flaky(s, '?search=100%25')).map((f) => f.name)).toEqual([]);
    expect((await flaky(s, '?branch=main')).map((f) => f.name)).toEqual(['Alpha login']);
    expect((await flaky(s, '?branch=feature')).map((f) => [f.name, f.instances])).toEqual([['beta_logout', 1]]);
    expect((await flaky(s, '?period=1day')).map((f) => f.name)).toEqual(['beta_logout']);
    expect((await flaky(s, '?period=28days')).map((f) => f.name)).toEqual(['beta_logout', 'Alpha login']);
    await ctx().http().get(`${s.base}/flaky-tests?period=2days`).set(auth(s.token)).expect(400);

    const page1 = await ctx().http().get(`${s.base}/flaky-tests?per_page=1`).set(auth(s.token)).expect(200);
    expect(page1.body.map((f: { name: string }) => f.name)).toEqual(['beta_logout']);
    expect(page1.headers.link).toContain('rel="next"');
    const page2 = await ctx().http().get(`${s.base}/flaky-tests?per_page=1&page=2`).set(auth(s.token)).expect(200);
    expect(page2.body.map((f: { name: string }) => f.name)).toEqual(['Alpha login']);
    expect(page2.headers.link).not.toContain('rel="next"');
  });

  it('searches the location too, as the docs’ `?search="/billing_spec"` does', async () => {
    const s = await givenSuite(ctx());
    const flips = (name: string, extra: Record<string, unknown>) => [result(name, 'passed', extra), result(name, 'failed', extra)];
    await post(
      s.apiToken,
      upload({ key: 'r1', commit_sha: 'c1', branch: 'main' }, [
        ...flips('charges', { scope: 'Invoice', location: './spec/models/billing_spec.rb:12' }),
        ...flips('refunds', { scope: 'Refund', location: null }),
        ...flips('emails', { scope: 'Mailer', location: './spec/mailers/welcome_spec.rb:3' }),
      ]),
    );
    const search = async (text: string) => (await flaky(s, `?search=${encodeURIComponent(text)}`)).map((f) => f.name).sort();
    expect(await search('/billing_spec')).toEqual(['charges']);
    expect(await search('BILLING_SPEC.rb:12')).toEqual(['charges']);
    expect(await search('spec/')).toEqual(['charges', 'emails']);
    // Name and scope still match; a test without a location is found by them.
    expect(await search('refund')).toEqual(['refunds']);
    expect(await search('mailer')).toEqual(['emails']);
    expect(await search('_spec.rb:99')).toEqual([]);
  });

  it('answers 404 for unknown suites, runs and tests', async () => {
    const s = await givenSuite(ctx());
    expect((await ctx().http().get(`${s.base}/runs/not-a-uuid`).set(auth(s.token)).expect(404)).body).toEqual({ message: 'No run found' });
    await ctx().http().get(`${s.base}/runs/00000000-0000-4000-8000-000000000000`).set(auth(s.token)).expect(404);
    expect((await ctx().http().get(`${s.base}/tests/00000000-0000-4000-8000-000000000000`).set(auth(s.token)).expect(404)).body).toEqual({
      message: 'No test found',
    });
    await ctx().http().get(`${s.base}x/flaky-tests`).set(auth(s.token)).expect(404);
  });
});

describeEachDatabase('upload body limit', null, (_get, kind) => {
  it('answers 413 for a JSON body or a multipart file over the upload limit', async () => {
    const ctx = await createTestContext(kind, { uploadBodyLimitBytes: 4096 });
    try {
      const s = await givenSuite(ctx);
      const res = await ctx
        .http()
        .post('/v1/uploads')
        .set(suiteAuth(s.apiToken))
        .send(upload({ key: 'k' }, [result('x'.repeat(5000), 'passed')]))
        .expect(413);
      expect(res.body.message).toBe('Request body is too large');
      const file = await ctx
        .http()
        .post('/v1/uploads')
        .set(suiteAuth(s.apiToken))
        .field('format', 'junit')
        .field('run_env[key]', 'k')
        .attach('data', Buffer.from(`<testsuite>${' '.repeat(5000)}</testsuite>`), 'junit.xml')
        .expect(413);
      expect(file.body.message).toBe('Request body is too large');
    } finally {
      await ctx.close();
    }
  });
});
