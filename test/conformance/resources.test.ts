/**
 * Access token, user, organizations, pipelines, rate limits and Test Engine (suites, runs,
 * tests, flaky tests) against the documented examples (test/fixtures/samples): each operation
 * the examples document is called with data that fills the optional parts, and the response
 * must have every key of the examples with the same JSON type (test/support/conformance.ts).
 */
import accessToken from '../fixtures/samples/access_token__01_get-the-current-token.json';
import currentUser from '../fixtures/samples/user__01_get-the-current-user.json';
import listOrganizations from '../fixtures/samples/organizations__01_list-organizations.json';
import getOrganization from '../fixtures/samples/organizations__02_get-an-organization.json';
import listPipelines from '../fixtures/samples/pipelines__01_list-pipelines.json';
import getPipeline from '../fixtures/samples/pipelines__02_get-a-pipeline.json';
import createPipeline from '../fixtures/samples/pipelines__03_create-a-yaml-pipeline.json';
import updatePipeline from '../fixtures/samples/pipelines__05_update-a-pipeline.json';
import archivePipeline from '../fixtures/samples/pipelines__06_archive-a-pipeline.json';
import unarchivePipeline from '../fixtures/samples/pipelines__07_unarchive-a-pipeline.json';
import rateLimited from '../fixtures/samples/rate_limits__01_exceeding-the-rate-limit.json';
import listSuites from '../fixtures/samples/test_engine_suites__01_list-all-suites.json';
import getSuite from '../fixtures/samples/test_engine_suites__02_get-a-suite.json';
import createSuite from '../fixtures/samples/test_engine_suites__03_create-a-suite.json';
import updateSuite from '../fixtures/samples/test_engine_suites__04_update-a-suite.json';
import listRuns from '../fixtures/samples/test_engine_runs__01_list-all-runs.json';
import getRun from '../fixtures/samples/test_engine_runs__02_get-a-run.json';
import failedExecutions from '../fixtures/samples/test_engine_runs__03_get-failed-execution-data.json';
import getTest from '../fixtures/samples/test_engine_tests__02_get-a-test.json';
import flakyTests from '../fixtures/samples/test_engine_flaky_tests__01_legacy-flaky-tests-endpoint-deprecated.json';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase } from '../support/context';
import { result, suiteAuth, upload } from '../uploads/helpers';

describeEachDatabase('conformance: token, user, organizations and pipelines', (ctx) => {
  it('answers the access token, the user and the organizations in the documented shapes', async () => {
    const { org, token } = await ctx().givenAdmin();
    expectConforms((await ctx().http().get('/v2/access-token').set(auth(token)).expect(200)).body, [accessToken], responseSchema('getAccessToken'));
    expectConforms((await ctx().http().get('/v2/user').set(auth(token)).expect(200)).body, [currentUser], responseSchema('getUser'));
    expectConforms((await ctx().http().get('/v2/organizations').set(auth(token)).expect(200)).body, [listOrganizations], responseSchema('listOrganizations'));
    expectConforms(
      (await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200)).body,
      [getOrganization],
      responseSchema('getOrganization'),
    );
  });

  it('answers create, list, get, update, archive and unarchive of a GitHub pipeline in the documented shapes', async () => {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const created = await ctx()
      .http()
      .post(base)
      .set(auth(token))
      .send({
        name: 'My Pipeline',
        repository: 'git@github.com:acme/app.git',
        configuration: 'env:\n  A: "1"\nsteps:\n  - command: make\n',
        description: 'Builds the app',
        default_branch: 'main',
        branch_configuration: 'main feature/*',
        tags: ['ruby'],
      })
      .expect(201);
    expectConforms(created.body, [createPipeline], responseSchema('createPipeline', '201'));
    const slug = created.body.slug as string;
    // Every pipeline response is the pipeline representation: all examples hold for each.
    const all = [...listPipelines, getPipeline, updatePipeline, archivePipeline, unarchivePipeline];
    expectConforms((await ctx().http().get(base).set(auth(token)).expect(200)).body, [all], responseSchema('listPipelines'));
    expectConforms((await ctx().http().get(`${base}/${slug}`).set(auth(token)).expect(200)).body, all, responseSchema('getPipeline'));
    const updated = await ctx().http().patch(`${base}/${slug}`).set(auth(token)).send({ description: 'Builds and ships the app' }).expect(200);
    expectConforms(updated.body, all, responseSchema('updatePipeline'));
    const archived = await ctx().http().post(`${base}/${slug}/archive`).set(auth(token)).expect(200);
    expectConforms(archived.body, all, responseSchema('archivePipeline'));
    const unarchived = await ctx().http().post(`${base}/${slug}/unarchive`).set(auth(token)).expect(200);
    expectConforms(unarchived.body, all, responseSchema('unarchivePipeline'));
  });
});

describeEachDatabase(
  'conformance: rate limits',
  (ctx) => {
    it('refuses a request over the limit with the documented body', async () => {
      const { org, token } = await ctx().givenAdmin();
      await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200);
      const refused = await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(429);
      expectConforms(refused.body, [rateLimited], responseSchema('getOrganization', '429'));
    });
  },
  { rateLimits: { perOrganization: 1, perUser: 1_000_000_000, failedAuthPerAddress: 1000 } },
);

describeEachDatabase('conformance: Test Engine', (ctx) => {
  it('answers suites, runs, failed executions, tests and flaky tests in the documented shapes', async () => {
    const { org, token } = await ctx().givenAdmin();
    const suites = `/v2/analytics/organizations/${org.slug}/suites`;
    const created = await ctx().http().post(suites).set(auth(token)).send({ name: 'My Suite', default_branch: 'main', show_api_token: true }).expect(201);
    expectConforms(created.body, [createSuite], responseSchema('createSuite', '201'));
    const base = `${suites}/${created.body.slug}`;
    const every = [...listSuites, getSuite, updateSuite];
    expectConforms((await ctx().http().get(suites).set(auth(token)).expect(200)).body, [every], responseSchema('listSuites'));
    expectConforms((await ctx().http().get(base).set(auth(token)).expect(200)).body, every, responseSchema('getSuite'));
    const updated = await ctx().http().patch(base).set(auth(token)).send({ default_branch: 'trunk' }).expect(200);
    expectConforms(updated.body, every, responseSchema('updateSuite'));

    // A run where one test failed and one passed and failed on the same commit (flaky).
    const results = [result('passes', 'passed'), result('fails', 'failed'), result('flaky', 'passed'), result('flaky', 'failed')];
    const uploaded = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(created.body.api_token as string))
      .send(upload({ key: 'build-1', branch: 'main', commit_sha: 'abc123', number: '1', message: 'Fix it', url: 'https://ci.example/1' }, results))
      .expect(202);
    const runId = uploaded.body.run_id as string;
    expectConforms((await ctx().http().get(`${base}/runs`).set(auth(token)).expect(200)).body, [listRuns], responseSchema('listRuns'));
    expectConforms((await ctx().http().get(`${base}/runs/${runId}`).set(auth(token)).expect(200)).body, [getRun], responseSchema('getRun'));
    const failed = await ctx().http().get(`${base}/runs/${runId}/failed_executions?include_failure_expanded=true`).set(auth(token)).expect(200);
    expectConforms(failed.body, [failedExecutions], responseSchema('listFailedExecutions'));
    const test = await ctx().http().get(`${base}/tests/${failed.body[0].test_id}`).set(auth(token)).set('Buildkite-Version', '2026-08-01').expect(200);
    expectConforms(test.body, [getTest], responseSchema('getTest'));
    const flaky = await ctx().http().get(`${base}/flaky-tests`).set(auth(token)).expect(200);
    expect(flaky.body).toHaveLength(1);
    expectConforms(flaky.body, [flakyTests], responseSchema('listFlakyTests'));
  });
});
