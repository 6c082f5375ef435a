/**
 * A build's tests (`GET /v2/analytics/organizations/{org}/builds/{build_id}/tests`) and a
 * build's `test_engine` (`include_test_engine=true`): runs are linked to a build by the key the
 * Buildkite collectors send (`run_env[key]` = BUILDKITE_BUILD_ID, `run_env[ci]` = buildkite).
 */
import buildTestsSample from '../fixtures/samples/test_engine_build_tests__01_list-tests-for-a-build.json';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { result, suiteAuth, upload } from '../uploads/helpers';

type TestJson = { id: string; name: string; url: string } & Record<string, unknown>;

describeEachDatabase('a build’s tests', (ctx) => {
  const newSuite = async (org: { slug: string }, token: string, name: string) => {
    const res = await ctx().http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name, show_api_token: true }).expect(201);
    return res.body as { id: string; slug: string; api_token: string };
  };
  const post = async (apiToken: string, body: unknown) => {
    const res = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(apiToken))
      .send(body as object);
    if (res.status !== 202) throw new Error(`upload: ${res.status} ${JSON.stringify(res.body)}`);
    return res.body as { run_id: string };
  };
  const d = (seconds: number) => ({ history: { duration: seconds } });
  const buildkite = (buildId: string, extra: Record<string, unknown> = {}) => ({
    key: buildId,
    ci: 'buildkite',
    branch: 'main',
    commit_sha: 'abc123',
    ...extra,
  });
  const names = (body: TestJson[]) => body.map((t) => t.name);

  /** An organization with a build whose tests went to two suites, and noise that must not count. */
  const seed = async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token);
    const build = await givenBuild(ctx(), org, pipeline, token);
    const other = await givenBuild(ctx(), org, pipeline, token);
    const unit = await newSuite(org, token, 'Unit');
    const e2e = await newSuite(org, token, 'E2E');
    const unitRun = await post(
      unit.api_token,
      upload(buildkite(build.id), [result('adds', 'passed', d(0.2)), result('flips', 'passed', d(1)), result('flips', 'failed', d(3))], { team: 'core' }),
    );
    const e2eRun = await post(e2e.api_token, upload(buildkite(build.id), [result('logs in', 'passed', d(5)), result('pending one', 'pending', d(0.1))]));
    // Another build's run, and a run with the build's id as key but not from Buildkite.
    await post(unit.api_token, upload(buildkite(other.id), [result('elsewhere', 'failed', d(9))]));
    // (In a suite of its own: a run key names one run per suite, whatever its ci.)
    const otherCi = await newSuite(org, token, 'Other CI');
    await post(otherCi.api_token, upload({ key: build.id, ci: 'github_actions' }, [result('not linked', 'passed', d(9))]));
    return { org, user, token, pipeline, build, other, unit, e2e, unitRun, e2eRun };
  };
  const path = (org: { slug: string }, buildId: string, q = '') => `/v2/analytics/organizations/${org.slug}/builds/${buildId}/tests${q}`;

  it('lists the tests of every suite with a Buildkite run of the build, with metrics and each test’s suite URL', async () => {
    const s = await seed();
    const res = await ctx().http().get(path(s.org, s.build.id)).set(auth(s.token)).expect(200);
    expect(names(res.body)).toEqual(['logs in', 'flips', 'adds', 'pending one']);
    const [logsIn, flips, , pending] = res.body as TestJson[];
    expect(logsIn!.url).toBe(`${PUBLIC_URL}/v2/analytics/organizations/${s.org.slug}/suites/e2e/tests/${logsIn!.id}`);
    expect(logsIn!.web_url).toBe(`${PUBLIC_URL}/organizations/${s.org.slug}/analytics/suites/e2e/tests/${logsIn!.id}`);
    expect(flips!.url).toBe(`${PUBLIC_URL}/v2/analytics/organizations/${s.org.slug}/suites/unit/tests/${flips!.id}`);
    expect(flips).toMatchObject({
      labels: ['flaky'],
      reliability: 0.5,
      duration_avg: 2,
      duration_sum: 4,
      duration_min: 1,
      duration_max: 3,
      executions_count: 2,
      executions_count_by_result: { passed: 1, failed: 1 },
    });
    expect(pending).toMatchObject({ reliability: null, executions_count: 1, executions_count_by_result: { passed: 0, failed: 0, pending: 1 } });

    // The same test in another build does not count here.
    const elsewhere = await ctx().http().get(path(s.org, s.other.id)).set(auth(s.token)).expect(200);
    expect(names(elsewhere.body)).toEqual(['elsewhere']);
    // An upper-case UUID is the same build.
    expect(names((await ctx().http().get(path(s.org, s.build.id.toUpperCase())).set(auth(s.token)).expect(200)).body)).toHaveLength(4);
  });

  it('answers in the documented shape', async () => {
    const { org, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token);
    const build = await givenBuild(ctx(), org, pipeline, token);
    const suite = await newSuite(org, token, 'Shape');
    await post(
      suite.api_token,
      upload(buildkite(build.id, { commit_sha: 'c1' }), [
        result('shaped', 'passed', d(0.1)),
        result('shaped', 'failed', d(0.2)),
        result('shaped', 'skipped', d(0.3)),
      ]),
    );
    const res = await ctx().http().get(path(org, build.id)).set(auth(token)).expect(200);
    expectConforms(res.body, [buildTestsSample], responseSchema('listBuildTests'));
    expect(res.body[0].executions_count_by_result).toEqual({ passed: 1, failed: 1, skipped: 1 });
  });

  it('filters, sorts and pages like a suite’s tests', async () => {
    const s = await seed();
    const list = async (q: string) =>
      names(
        (
          await ctx()
            .http()
            .get(path(s.org, s.build.id, `?${q}`))
            .set(auth(s.token))
            .expect(200)
        ).body,
      );
    expect(await list('sort_by=duration_min&order=asc')).toEqual(['pending one', 'adds', 'flips', 'logs in']);
    expect(await list('sort_by=reliability&order=asc')).toEqual(['flips', expect.any(String), expect.any(String), 'pending one']);
    expect(await list('labels=flaky')).toEqual(['flips']);
    expect((await list('tags=team:core')).sort()).toEqual(['adds', 'flips']);
    expect(await list('tags=result:^passed')).toEqual(['logs in', 'adds']);
    expect(await list('tags=result:~failed')).toEqual(['flips']);
    expect(await list(`tags=build.id:${s.other.id}`)).toEqual([]);
    expect(await list('branch=!main')).toEqual([]);
    expect(await list('state=skipped')).toEqual([]);
    const page = await ctx()
      .http()
      .get(path(s.org, s.build.id, '?per_page=3'))
      .set(auth(s.token))
      .expect(200);
    expect(page.body).toHaveLength(3);
    expect(page.headers.link).toContain('page=2>; rel="next"');
    await ctx()
      .http()
      .get(path(s.org, s.build.id, '?tags=team:^core'))
      .set(auth(s.token))
      .expect(422);
    await ctx()
      .http()
      .get(path(s.org, s.build.id, '?sort_by=name'))
      .set(auth(s.token))
      .expect(400);
  });

  it('takes the result, include=executions and include=latest_fail the Go client sends, and shows each test’s state', async () => {
    const s = await seed();
    const get = async (q: string, status = 200) =>
      (
        await ctx()
          .http()
          .get(path(s.org, s.build.id, `?${q}`))
          .set(auth(s.token))
          .expect(status)
      ).body;
    const plain = (await get('')) as TestJson[];
    expect(plain.map((t) => t.state)).toEqual(['enabled', 'enabled', 'enabled', 'enabled']);
    for (const t of plain) {
      expect(t).not.toHaveProperty('executions');
      expect(t).not.toHaveProperty('latest_fail');
    }

    // `result=failed`: at least one failed execution; `^passed`: only passed ones.
    expect(names(await get('result=failed'))).toEqual(['flips']);
    expect(names(await get('result=^passed'))).toEqual(['logs in', 'adds']);
    expect(names(await get('result=~pending'))).toEqual(['pending one']);
    expect((await get('result=failed&tags=result:~failed', 422)).message).toContain('result');
    await get('result=!failed', 422);

    // The executions the metrics counted, oldest first, in the client's shape.
    const withExecutions = (await get('include=executions')) as TestJson[];
    const flips = withExecutions.find((t) => t.name === 'flips')!;
    expect(flips.executions).toEqual([
      {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        status: 'passed',
        timestamp: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T[\d:.]+Z$/),
        duration: 1,
        location: './spec/models/user_spec.rb:5',
        failure_reason: null,
        failure_expanded: null,
      },
      {
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        status: 'failed',
        timestamp: expect.any(String),
        duration: 3,
        location: './spec/models/user_spec.rb:5',
        failure_reason: 'expected true, got false',
        failure_expanded: [{ expanded: ['expected true', 'got false'], backtrace: ['user_spec.rb:42'] }],
      },
    ]);
    expect(withExecutions.find((t) => t.name === 'adds')!.executions).toHaveLength(1);
    expect(withExecutions.every((t) => !('latest_fail' in t))).toBe(true);
    // Only the executions the result filter keeps.
    const failedOnly = (await get('include=executions&tags=result:failed')) as TestJson[];
    expect(failedOnly.map((t) => [t.name, (t.executions as { status: string }[]).map((e) => e.status)])).toEqual([['flips', ['failed']]]);

    // The most recent failure of each test, null without one; both at once.
    const withLatest = (await get('include=latest_fail,executions')) as TestJson[];
    const latest = withLatest.find((t) => t.name === 'flips')!.latest_fail as { id: string; status: string };
    expect(latest).toMatchObject({ status: 'failed', failure_reason: 'expected true, got false', duration: 3 });
    expect(latest.id).toBe((flips.executions as { id: string }[])[1]!.id);
    expect(withLatest.find((t) => t.name === 'adds')!.latest_fail).toBeNull();
    expect(withLatest.find((t) => t.name === 'adds')!.executions).toHaveLength(1);
    expect((await get('include=everything', 422)).message).toContain('include');

    // A muted test shows as such, and the state filter finds it.
    const flipsId = flips.id;
    await ctx().http().put(`/v2/analytics/organizations/${s.org.slug}/suites/unit/tests/${flipsId}/mute`).set(auth(s.token)).expect(200);
    const muted = (await get('state=muted')) as TestJson[];
    expect(names(muted)).toEqual(['flips']);
    expect(muted[0]!.state).toBe('muted');
    expect(names(await get('state=enabled'))).toEqual(['logs in', 'adds', 'pending one']);
  });

  it('is a 404 for an unknown build, a build number, another organization’s build; needs read_suites', async () => {
    const s = await seed();
    for (const id of ['00000000-0000-4000-8000-000000000000', String(s.build.number), 'nope']) {
      const res = await ctx().http().get(path(s.org, id)).set(auth(s.token)).expect(404);
      expect(res.body).toEqual({ message: 'No build found' });
    }
    const other = await ctx().givenAdmin();
    // Through their own organization's path, and through this one's.
    await ctx().http().get(path(other.org, s.build.id)).set(auth(other.token)).expect(404);
    await ctx().http().get(path(s.org, s.build.id)).set(auth(other.token)).expect(404);
    // Their suite uploading runs keyed to this build does not make it theirs.
    const theirs = await newSuite(other.org, other.token, 'Theirs');
    await post(theirs.api_token, upload(buildkite(s.build.id), [result('sneaky', 'passed')]));
    await ctx().http().get(path(other.org, s.build.id)).set(auth(other.token)).expect(404);
    expect(names((await ctx().http().get(path(s.org, s.build.id)).set(auth(s.token)).expect(200)).body)).not.toContain('sneaky');

    const noScope = await ctx().givenToken(s.user, [s.org], ['read_builds']);
    const denied = await ctx().http().get(path(s.org, s.build.id)).set(auth(noScope)).expect(403);
    expect(denied.body.message).toBe("Your access token doesn't have the read_suites scope");
    const readSuites = await ctx().givenToken(s.user, [s.org], ['read_suites']);
    await ctx().http().get(path(s.org, s.build.id)).set(auth(readSuites)).expect(200);
  });

  it('shows the build’s runs in test_engine only with include_test_engine=true, on get and on the lists', async () => {
    const s = await seed();
    // Another organization's suite uploading a Buildkite run keyed to this build is not its run.
    const other = await ctx().givenAdmin();
    const theirs = await newSuite(other.org, other.token, 'Theirs');
    await post(theirs.api_token, upload(buildkite(s.build.id), [result('sneaky', 'passed')]));
    const buildPath = `/v2/organizations/${s.org.slug}/pipelines/${s.pipeline.slug}/builds/${s.build.number}`;
    const plain = await ctx().http().get(buildPath).set(auth(s.token)).expect(200);
    expect(plain.body).not.toHaveProperty('test_engine');
    const withRuns = await ctx().http().get(`${buildPath}?include_test_engine=true`).set(auth(s.token)).expect(200);
    expect(withRuns.body.test_engine).toEqual({
      runs: [
        { id: s.unitRun.run_id, suite: { id: s.unit.id, slug: 'unit' } },
        { id: s.e2eRun.run_id, suite: { id: s.e2e.id, slug: 'e2e' } },
      ],
    });
    const off = await ctx().http().get(`${buildPath}?include_test_engine=false`).set(auth(s.token)).expect(200);
    expect(off.body).not.toHaveProperty('test_engine');

    const lists = [`/v2/organizations/${s.org.slug}/pipelines/${s.pipeline.slug}/builds`, `/v2/organizations/${s.org.slug}/builds`, '/v2/builds'];
    for (const list of lists) {
      const res = await ctx().http().get(`${list}?include_test_engine=true&exclude_jobs=true`).set(auth(s.token)).expect(200);
      const byId = new Map(res.body.map((b: { id: string; test_engine: unknown }) => [b.id, b.test_engine]));
      expect(byId.get(s.build.id)).toEqual(withRuns.body.test_engine);
      expect(byId.get(s.other.id)).toEqual({ runs: [{ id: expect.any(String), suite: { id: s.unit.id, slug: 'unit' } }] });
      const without = await ctx().http().get(list).set(auth(s.token)).expect(200);
      for (const b of without.body) expect(b).not.toHaveProperty('test_engine');
    }

    // Suites are read_suites data: a token with read_builds only sees no run.
    const buildsOnly = await ctx().givenToken(s.user, [s.org], ['read_builds']);
    expect((await ctx().http().get(`${buildPath}?include_test_engine=true`).set(auth(buildsOnly)).expect(200)).body.test_engine).toEqual({ runs: [] });

    // A build without runs has an empty list.
    const bare = await givenBuild(ctx(), s.org, s.pipeline, s.token);
    const bareRes = await ctx()
      .http()
      .get(`/v2/organizations/${s.org.slug}/pipelines/${s.pipeline.slug}/builds/${bare.number}?include_test_engine=true`)
      .set(auth(s.token))
      .expect(200);
    expect(bareRes.body.test_engine).toEqual({ runs: [] });
  });

  it('in a Teams-enabled organization, shows only the suites of the caller’s teams', async () => {
    const org = await ctx().givenOrg({ teamsEnabled: true });
    const admin = await ctx().givenUser(org, 'admin');
    const adminToken = await ctx().givenToken(admin, [org]);
    const member = await ctx().givenUser(org, 'member');
    const team = await ctx().givenTeam(org, [member]);
    const memberToken = await ctx().givenToken(member, [org]);
    const pipeline = await givenPipeline(ctx(), org, adminToken, { team_uuids: [team.id] });
    const build = await givenBuild(ctx(), org, pipeline, adminToken);
    const ours = await ctx()
      .http()
      .post(`/v2/analytics/organizations/${org.slug}/suites`)
      .set(auth(memberToken))
      .send({ name: 'Ours', team_ids: [team.id], show_api_token: true })
      .expect(201);
    const hidden = await newSuite(org, adminToken, 'Hidden');
    await post(ours.body.api_token, upload(buildkite(build.id), [result('visible', 'passed')]));
    await post(hidden.api_token, upload(buildkite(build.id), [result('secret', 'passed')]));

    expect(names((await ctx().http().get(path(org, build.id)).set(auth(memberToken)).expect(200)).body)).toEqual(['visible']);
    expect(names((await ctx().http().get(path(org, build.id)).set(auth(adminToken)).expect(200)).body).sort()).toEqual(['secret', 'visible']);
    const got = await ctx()
      .http()
      .get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${build.number}?include_test_engine=true`)
      .set(auth(memberToken))
      .expect(200);
    expect(got.body.test_engine.runs.map((r: { suite: { slug: string } }) => r.suite.slug)).toEqual(['ours']);
  });
});
