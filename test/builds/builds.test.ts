import createSample from '../fixtures/samples/builds__04_create-a-build.json';
import { verifyStepSignature, signedFieldsOf } from '../../src/builds/jobs/plan';
import { auth, createTwoContexts, describeEachDatabase, PUBLIC_URL, type TestContext } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { existing } from '../support/rows';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const SHA = 'abcd0b72a1e580e90712cdd9eb26d3fb41cd09c8';

function buildsPath(org: { slug: string }, p: { slug: string }) {
  return `/v2/organizations/${org.slug}/pipelines/${p.slug}/builds`;
}

/** A build with this test file's defaults (a full commit SHA, message `Hello`). */
function createBuild(ctx: TestContext, org: { slug: string }, p: { slug: string }, token: string, body: Record<string, unknown> = {}) {
  return givenBuild(ctx, org, p, token, { commit: SHA, message: 'Hello', ...body });
}

describeEachDatabase('builds', (ctx) => {
  describe('create', () => {
    it('creates a build in the sample shape with the next number and jobs from the steps', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token, {
        configuration: [
          'env:',
          '  PIPELINE: p',
          '  SHARED: pipeline',
          'steps:',
          '  - label: Test',
          '    command: make test',
          '    key: test',
          '    parallelism: 3',
          '    env:',
          '      STEP: s',
          '      SHARED: step',
          '    agents:',
          '      queue: default',
          '  - wait',
          '  - block: Deploy?',
          '  - trigger: deployer',
          '    label: Ship',
          '',
        ].join('\n'),
      });
      const res = await ctx()
        .http()
        .post(buildsPath(org, p))
        .set(auth(token))
        .send({
          commit: SHA,
          branch: 'main',
          message: 'Hello',
          env: { BUILD: 'b', SHARED: 'build' },
          meta_data: { release: 'v1' },
          author: {},
          clean_checkout: false,
          ignore_pipeline_branch_filters: false,
        })
        .expect(201);
      const b = res.body;
      for (const key of Object.keys(createSample)) expect(b).toHaveProperty(key);
      expect(b).toMatchObject({
        number: 1,
        state: 'scheduled',
        blocked: false,
        message: 'Hello',
        commit: SHA,
        branch: 'main',
        env: { BUILD: 'b', SHARED: 'build' },
        meta_data: { release: 'v1' },
        source: 'api',
        // The docs: author defaults to the user making the request (an empty one is none).
        author: { name: user.name, email: user.email, username: null },
        pull_request: {},
        rebuilt_from: null,
        started_at: null,
        finished_at: null,
        url: `${PUBLIC_URL}/v2/organizations/${org.slug}/pipelines/${p.slug}/builds/1`,
        web_url: `${PUBLIC_URL}/${org.slug}/${p.slug}/builds/1`,
      });
      expect(b.graphql_id).toBe(Buffer.from(`Build---${b.id}`).toString('base64'));
      expect(b.created_at).toMatch(ISO);
      expect(b.scheduled_at).toBe(b.created_at);
      expect(b.creator).toMatchObject({ id: user.id, name: user.name, email: user.email });
      expect(b.pipeline).toMatchObject({ id: p.id, slug: p.slug, provider: { id: 'github', webhook_url: p.provider.webhook_url } });
      expect(b.jobs.map((j: { type: string; state: string }) => [j.type, j.state])).toEqual([
        ['script', 'scheduled'],
        ['script', 'scheduled'],
        ['script', 'scheduled'],
        ['waiter', 'waiting'],
        ['manual', 'waiting'],
        ['trigger', 'waiting'],
      ]);
      const scripts = b.jobs.slice(0, 3);
      expect(scripts.map((j: { parallel_group_index: number }) => j.parallel_group_index)).toEqual([0, 1, 2]);
      expect(scripts.every((j: { parallel_group_total: number }) => j.parallel_group_total === 3)).toBe(true);
      expect(new Set(scripts.map((j: { step: { id: string } }) => j.step.id)).size).toBe(1);
      expect(scripts[0]).toMatchObject({
        name: 'Test',
        step_key: 'test',
        command: 'make test',
        agent_query_rules: ['queue=default'],
        exit_status: null,
        agent: null,
      });
      expect(scripts[0].log_url).toBe(`${b.url}/jobs/${scripts[0].id}/log`);
      expect(scripts[0].raw_log_url).toBe(`${b.url}/jobs/${scripts[0].id}/log.txt`);
      expect(b.jobs[4]).toMatchObject({ label: 'Deploy?' });
      expect(b.jobs[5]).toMatchObject({ name: 'Ship', async: false });
      expect(b.job_state_counts).toEqual({ total: 6, states: { scheduled: 3, waiting: 3 } });

      // The step signature verifies under the server's key, over the merged env (pipeline < build < step).
      const job = existing(await ctx().services.db('jobs').where({ id: scripts[0].id }).first(), 'the job');
      expect(JSON.parse(job.env)).toEqual({ PIPELINE: 'p', SHARED: 'step', BUILD: 'b', STEP: 's' });
      const signature = scripts[0].step.signature;
      expect(signature).toMatchObject({ algorithm: 'HS256', signed_fields: ['command', 'env', 'matrix', 'plugins', 'repository_url'] });
      const key = Buffer.from(ctx().services.keys.derive('step-signing', 'v1', 64), 'hex');
      const fields = signedFieldsOf({ command: 'make test', env: JSON.parse(String(job?.env)) }, 'git@github.com:acme/app.git');
      expect(verifyStepSignature(key, signature.value, fields)).toBe(true);
      expect(verifyStepSignature(key, signature.value, { ...fields, command: 'rm -rf /' })).toBe(false);

      const second = await createBuild(ctx(), org, p, token);
      expect(second.number).toBe(2);
      const pipeline = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).expect(200);
      expect(pipeline.body).toMatchObject({
        scheduled_builds_count: 2,
        scheduled_jobs_count: 6,
        waiting_jobs_count: 6,
        running_builds_count: 0,
        running_jobs_count: 0,
      });
    });

    it('answers 422 field errors for a missing commit or branch', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      const res = await ctx().http().post(buildsPath(org, p)).set(auth(token)).send({ message: 'x' }).expect(422);
      expect(res.body).toEqual({
        message: 'Validation Failed',
        errors: expect.arrayContaining([
          { field: 'commit', code: "can't be blank" },
          { field: 'branch', code: "can't be blank" },
        ]),
      });
    });

    it("applies the pipeline's branch filter unless told to ignore it, or the build is a pull request's", async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token, { branch_configuration: 'main release/*' });
      const res = await ctx().http().post(buildsPath(org, p)).set(auth(token)).send({ commit: SHA, branch: 'feature/x' }).expect(422);
      expect(res.body.message).toContain('feature/x');
      expect(res.body.message).toContain('main release/*');
      await createBuild(ctx(), org, p, token, { branch: 'release/1.0' });
      const forced = await createBuild(ctx(), org, p, token, { branch: 'feature/x', ignore_pipeline_branch_filters: true });
      expect(forced.branch).toBe('feature/x');
      // branch_configuration.md: "Builds created for pull requests ignore any pipeline-level branch filters."
      const pr = await createBuild(ctx(), org, p, token, { branch: 'feature/x', pull_request_id: 7, pull_request_base_branch: 'main' });
      expect(pr).toMatchObject({ branch: 'feature/x', pull_request: { id: '7', base: 'main' } });
    });

    it('makes a job broken when its step filter excludes the branch, and not_run when every step is', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token, {
        configuration: 'steps:\n  - command: a\n    branches: main\n  - command: b\n    branches: "!main"\n',
      });
      const onMain = await createBuild(ctx(), org, p, token);
      expect(onMain.state).toBe('scheduled');
      expect(onMain.jobs.map((j: { state: string }) => j.state)).toEqual(['scheduled', 'broken']);
      // The reason code the REST docs give for a branch filter that excludes the build's branch.
      expect(onMain.jobs.map((j: { broken_reason?: string | null }) => j.broken_reason)).toEqual([null, 'branch_mismatch']);
      const only = await givenPipeline(ctx(), org, token, { configuration: 'steps:\n  - command: a\n    branches: main\n' });
      const none = await createBuild(ctx(), org, only, token, { branch: 'other' });
      expect(none.state).toBe('not_run');
      expect(none.finished_at).toMatch(ISO);
    });

    it('reports blocked when a block step is reached at once', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token, { configuration: 'steps:\n  - block: Go?\n  - command: a\n' });
      const b = await createBuild(ctx(), org, p, token);
      expect(b.blocked).toBe(true);
      expect(b.state).toBe('scheduled');
      expect(b.jobs.map((j: { state: string }) => j.state)).toEqual(['blocked', 'waiting']);
    });

    it('refuses archived pipelines and users without build permission', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/archive`).set(auth(token)).expect(200);
      const archived = await ctx().http().post(buildsPath(org, p)).set(auth(token)).send({ commit: SHA, branch: 'main' }).expect(422);
      expect(archived.body.message).toMatch(/archived/);

      const teamsOrg = await ctx().givenOrg({ teamsEnabled: true });
      const admin = await ctx().givenUser(teamsOrg, 'admin');
      const reader = await ctx().givenUser(teamsOrg, 'member');
      const team = await ctx().givenTeam(teamsOrg, [reader]);
      const adminToken = await ctx().givenToken(admin, [teamsOrg]);
      const tp = await givenPipeline(ctx(), teamsOrg, adminToken, { teams: [{ id: team.id, access_level: 'read_only' }] });
      const res = await ctx()
        .http()
        .post(buildsPath(teamsOrg, tp))
        .set(auth(await ctx().givenToken(reader, [teamsOrg])))
        .send({ commit: SHA, branch: 'main' })
        .expect(403);
      expect(res.body).toEqual({ message: 'Forbidden' });
    });

    it('skips queued builds and cancels running builds of the same branch, per their filters', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token, {
        skip_queued_branch_builds: true,
        skip_queued_branch_builds_filter: 'main',
        cancel_running_branch_builds: true,
      });
      const first = await createBuild(ctx(), org, p, token);
      const otherBranch = await createBuild(ctx(), org, p, token, { branch: 'dev' });
      const running = await createBuild(ctx(), org, p, token, { branch: 'dev' });
      await ctx().services.db('builds').where({ id: running.id }).update({ state: 'running' });
      await createBuild(ctx(), org, p, token);
      await createBuild(ctx(), org, p, token, { branch: 'dev' });
      const state = async (n: number) =>
        (
          await ctx()
            .http()
            .get(`${buildsPath(org, p)}/${n}`)
            .set(auth(token))
            .expect(200)
        ).body;
      const skipped = await state(first.number);
      expect(skipped.state).toBe('skipped');
      expect(skipped.jobs.map((j: { state: string }) => j.state)).toEqual(['skipped']);
      // dev is outside the skip filter: the queued dev build stays; the running one is canceled.
      expect((await state(otherBranch.number)).state).toBe('scheduled');
      const canceled = await state(running.number);
      expect(canceled.state).toBe('canceled');
      expect(canceled.finished_at).toMatch(ISO);
    });

    it('numbers 200 concurrent creates on one pipeline 1..200 with no duplicate and no error', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      const results = await Promise.all(
        Array.from({ length: 200 }, () => ctx().http().post(buildsPath(org, p)).set(auth(token)).send({ commit: SHA, branch: 'main' })),
      );
      expect(results.map((r) => r.status).filter((s) => s !== 201)).toEqual([]);
      const numbers = results.map((r) => r.body.number).sort((a, b) => a - b);
      expect(numbers).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
    });
  });

  describe('list', () => {
    it('lists each scope newest first, and every filter narrows', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const other = await ctx().givenUser(org, 'member');
      const otherToken = await ctx().givenToken(other, [org]);
      const p1 = await givenPipeline(ctx(), org, token);
      const p2 = await givenPipeline(ctx(), org, token);
      const b1 = await createBuild(ctx(), org, p1, token, { branch: 'main', commit: 'a'.repeat(40), meta_data: { env: 'prod', team: 'x' } });
      const b2 = await createBuild(ctx(), org, p1, token, { branch: 'dev', commit: 'b'.repeat(40), meta_data: { env: 'staging' } });
      const b3 = await createBuild(ctx(), org, p2, otherToken, { branch: 'main', commit: 'c'.repeat(40) });
      await ctx()
        .http()
        .put(`${buildsPath(org, p1)}/${b2.number}/cancel`)
        .set(auth(token))
        .expect(200);
      const finishedAt = new Date(Date.now() + 60_000);
      await ctx().services.db('builds').where({ id: b1.id }).update({ state: 'passed', finished_at: finishedAt });

      const ids = async (path: string) => (await ctx().http().get(path).set(auth(token)).expect(200)).body.map((b: { id: string }) => b.id);
      const pipelineList = buildsPath(org, p1);
      const orgList = `/v2/organizations/${org.slug}/builds`;
      expect(await ids(pipelineList)).toEqual([b2.id, b1.id]);
      expect(await ids(orgList)).toEqual([b3.id, b2.id, b1.id]);
      const all = await ids('/v2/builds');
      expect(all.slice(0, 3)).toEqual([b3.id, b2.id, b1.id]);

      expect(await ids(`${orgList}?branch=main`)).toEqual([b3.id, b1.id]);
      expect(await ids(`${orgList}?branch[]=dev&branch[]=main`)).toEqual([b3.id, b2.id, b1.id]);
      expect(await ids(`${orgList}?branch[]=dev`)).toEqual([b2.id]);
      expect(await ids(`${orgList}?commit=${'c'.repeat(40)}`)).toEqual([b3.id]);
      expect(await ids(`${orgList}?commit[]=${'a'.repeat(40)}&commit[]=${'b'.repeat(40)}`)).toEqual([b2.id, b1.id]);
      expect(await ids(`${orgList}?state=scheduled`)).toEqual([b3.id]);
      expect(await ids(`${orgList}?state[]=canceled&state[]=passed`)).toEqual([b2.id, b1.id]);
      expect(await ids(`${orgList}?state=finished`)).toEqual([b2.id, b1.id]);
      expect(await ids(`${orgList}?creator=${other.id}`)).toEqual([b3.id]);
      expect(await ids(`${orgList}?creator=${user.id}`)).toEqual([b2.id, b1.id]);
      expect(await ids(`${orgList}?meta_data[env]=prod`)).toEqual([b1.id]);
      expect(await ids(`${orgList}?meta_data[env]=prod&meta_data[team]=y`)).toEqual([]);
      expect(await ids(`${orgList}?finished_from=${encodeURIComponent(new Date(finishedAt.getTime() - 1000).toISOString())}`)).toEqual([b1.id]);
      const b3At = existing(await ctx().services.db('builds').where({ id: b3.id }).first(), 'build 3').created_at;
      const b3Time = new Date(typeof b3At === 'number' ? b3At : b3At).toISOString();
      expect(await ids(`${orgList}?created_from=${encodeURIComponent(b3Time)}`)).toEqual([b3.id]);
      expect(await ids(`${orgList}?created_to=${encodeURIComponent(b3Time)}`)).toEqual([b2.id, b1.id]);
    });

    it('matches branches by pattern, `*` for any run of characters, every other character literal and case-sensitive', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      const made: Record<string, string> = {};
      for (const branch of ['main', 'feature/dev-thing', 'dev', 'Devel', 'fix/100%_done', 'fix/100xydone', 'rel[1]?', 'rel1']) {
        made[branch] = (await createBuild(ctx(), org, p, token, { branch })).id;
      }
      const branches = async (q: string) => {
        const res = await ctx()
          .http()
          .get(`${buildsPath(org, p)}?${q}`)
          .set(auth(token))
          .expect(200);
        const byId = new Map(Object.entries(made).map(([b, id]) => [id, b]));
        return res.body.map((b: { id: string }) => byId.get(b.id)).sort();
      };
      expect(await branches('branch=*dev*')).toEqual(['dev', 'feature/dev-thing']);
      expect(await branches('branch=feature/*')).toEqual(['feature/dev-thing']);
      expect(await branches('branch[]=main&branch[]=Dev*')).toEqual(['Devel', 'main']);
      expect(await branches(`branch=${encodeURIComponent('fix/100%_*')}`)).toEqual(['fix/100%_done']);
      expect(await branches(`branch=${encodeURIComponent('rel[1]?*')}`)).toEqual(['rel[1]?']);
      expect(await branches('branch=*')).toHaveLength(8);
      expect(await branches('branch=dev')).toEqual(['dev']);
    });

    it('lists the builds waiting on a block step under `state=blocked`', async () => {
      const { org, token } = await ctx().givenAdmin();
      const gated = await givenPipeline(ctx(), org, token, { configuration: 'steps:\n  - block: Go?\n  - command: a\n' });
      const plain = await givenPipeline(ctx(), org, token);
      const blocked = await createBuild(ctx(), org, gated, token);
      const running = await createBuild(ctx(), org, plain, token);
      const ids = async (q: string) =>
        (await ctx().http().get(`/v2/organizations/${org.slug}/builds?${q}`).set(auth(token)).expect(200)).body.map((b: { id: string }) => b.id);
      expect(await ids('state=blocked')).toEqual([blocked.id]);
      expect(await ids('state[]=blocked&state[]=scheduled')).toEqual([running.id, blocked.id]);
    });

    it('answers 400 for unknown states and malformed times', async () => {
      const { org, token } = await ctx().givenAdmin();
      for (const q of ['state=bogus', 'state[]=passed&state[]=bogus', 'created_from=yesterday', 'finished_from=2020-13-45', 'per_page=1000']) {
        const res = await ctx().http().get(`/v2/organizations/${org.slug}/builds?${q}`).set(auth(token)).expect(400);
        expect(typeof res.body.message).toBe('string');
      }
    });

    it('paginates with Link headers that keep the other query parameters', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      for (let i = 0; i < 5; i++) await createBuild(ctx(), org, p, token);
      const path = buildsPath(org, p);
      const page1 = await ctx().http().get(`${path}?per_page=2&branch=main&state[]=scheduled`).set(auth(token)).expect(200);
      expect(page1.body.map((b: { number: number }) => b.number)).toEqual([5, 4]);
      expect(page1.headers.link).toBe(`<${PUBLIC_URL}${path}?per_page=2&branch=main&state%5B%5D=scheduled&page=2>; rel="next"`);
      const page3 = await ctx().http().get(`${path}?per_page=2&page=3`).set(auth(token)).expect(200);
      expect(page3.body.map((b: { number: number }) => b.number)).toEqual([1]);
      expect(page3.headers.link).toBe(`<${PUBLIC_URL}${path}?per_page=2&page=1>; rel="first", <${PUBLIC_URL}${path}?per_page=2&page=2>; rel="prev"`);
    });

    it('serves deep pages by seek with the same rows as counting would, also after a pipeline is deleted', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p1 = await givenPipeline(ctx(), org, token);
      const p2 = await givenPipeline(ctx(), org, token);
      const made: { id: string; pipeline: string }[] = [];
      for (let i = 0; i < 8; i++) {
        const p = i % 3 === 0 ? p2 : p1;
        made.unshift({ id: (await createBuild(ctx(), org, p, token)).id, pipeline: p.slug });
      }
      const page = async (path: string, n: number) =>
        (
          await ctx()
            .http()
            .get(`${path}${path.includes('?') ? '&' : '?'}per_page=3&page=${n}`)
            .set(auth(token))
            .expect(200)
        ).body.map((b: { id: string }) => b.id);
      const orgList = `/v2/organizations/${org.slug}/builds`;
      const expected = made.map((m) => m.id);
      expect([...(await page(orgList, 1)), ...(await page(orgList, 2)), ...(await page(orgList, 3))]).toEqual(expected);
      expect(await page(orgList, 4)).toEqual([]);
      const inP1 = made.filter((m) => m.pipeline === p1.slug).map((m) => m.id);
      expect([...(await page(buildsPath(org, p1), 1)), ...(await page(buildsPath(org, p1), 2))]).toEqual(inP1);

      // Deleting a pipeline leaves gaps in the organization's sequence: pages stay exact.
      await ctx().http().delete(`/v2/organizations/${org.slug}/pipelines/${p2.slug}`).set(auth(token)).expect(204);
      expect([...(await page(orgList, 1)), ...(await page(orgList, 2))]).toEqual(inP1);
    });

    it('hides retried jobs unless include_retried_jobs=true', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      const b = await createBuild(ctx(), org, p, token);
      await ctx().services.db('jobs').where({ id: b.jobs[0]!.id }).update({ retried: true, state: 'failed' });
      const path = `${buildsPath(org, p)}/${b.number}`;
      expect((await ctx().http().get(path).set(auth(token)).expect(200)).body.jobs).toEqual([]);
      expect((await ctx().http().get(`${path}?include_retried_jobs=true`).set(auth(token)).expect(200)).body.jobs).toHaveLength(1);
      expect(
        (
          await ctx()
            .http()
            .get(`${buildsPath(org, p)}?include_retried_jobs=true`)
            .set(auth(token))
            .expect(200)
        ).body[0].jobs,
      ).toHaveLength(1);
      expect((await ctx().http().get(buildsPath(org, p)).set(auth(token)).expect(200)).body[0].jobs).toEqual([]);
    });

    it('never shows another organization or pipelines hidden by teams', async () => {
      const a = await ctx().givenAdmin();
      const b = await ctx().givenAdmin();
      const pb = await givenPipeline(ctx(), b.org, b.token);
      const bb = await createBuild(ctx(), b.org, pb, b.token);
      const all = (await ctx().http().get('/v2/builds?per_page=100').set(auth(a.token)).expect(200)).body.map((x: { id: string }) => x.id);
      expect(all).not.toContain(bb.id);
      for (const path of [`/v2/organizations/${b.org.slug}/builds`, buildsPath(b.org, pb), `${buildsPath(b.org, pb)}/1`]) {
        const res = await ctx().http().get(path).set(auth(a.token)).expect(404);
        expect(res.body).toEqual({ message: 'No organization found' });
      }
      for (const path of [`${buildsPath(b.org, pb)}/1/cancel`, `${buildsPath(b.org, pb)}/1/rebuild`]) {
        await ctx().http().put(path).set(auth(a.token)).expect(404);
      }
      expect(
        (
          await ctx()
            .http()
            .get(`${buildsPath(b.org, pb)}/1`)
            .set(auth(b.token))
            .expect(200)
        ).body.state,
      ).toBe('scheduled');

      const org = await ctx().givenOrg({ teamsEnabled: true });
      const admin = await ctx().givenUser(org, 'admin');
      const outsider = await ctx().givenUser(org, 'member');
      const adminToken = await ctx().givenToken(admin, [org]);
      const outsiderToken = await ctx().givenToken(outsider, [org]);
      const hidden = await givenPipeline(ctx(), org, adminToken);
      await createBuild(ctx(), org, hidden, adminToken);
      expect((await ctx().http().get(`/v2/organizations/${org.slug}/builds`).set(auth(outsiderToken)).expect(200)).body).toEqual([]);
      expect((await ctx().http().get('/v2/builds').set(auth(outsiderToken)).expect(200)).body).toEqual([]);
      await ctx()
        .http()
        .get(`${buildsPath(org, hidden)}/1`)
        .set(auth(outsiderToken))
        .expect(404);
    });

    it('shows the webhook URL in the embedded pipeline only to a token with write_pipelines', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      await createBuild(ctx(), org, p, token);
      const reader = await ctx().givenToken(user, [org], ['read_builds']);
      expect(
        (
          await ctx()
            .http()
            .get(`${buildsPath(org, p)}/1`)
            .set(auth(reader))
            .expect(200)
        ).body.pipeline.provider.webhook_url,
      ).toBe('');
      expect(
        (
          await ctx()
            .http()
            .get(`${buildsPath(org, p)}/1`)
            .set(auth(token))
            .expect(200)
        ).body.pipeline.provider.webhook_url,
      ).toBe(p.provider.webhook_url);
    });
  });

  describe('get, cancel and rebuild', () => {
    it('answers a create and a rebuild with exactly what a later get returns', async () => {
      // The create answer is built from the rows it wrote, not read back: this pins the two together.
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token, {
        configuration: [
          'steps:',
          '  - command: make test',
          '    parallelism: 2',
          '    agents: { queue: default }',
          '  - command: only-release',
          '    branches: release/*',
          '  - wait: ~',
          '    continue_on_failure: true',
          '  - block: Go?',
          '  - trigger: deployer',
          '    async: true',
          '',
        ].join('\n'),
      });
      const created = await createBuild(ctx(), org, p, token, {
        env: { A: 'b' },
        meta_data: { release: 'v1', other: 'x'.repeat(300) },
        author: { name: 'Ann', email: 'ann@example.com' },
        pull_request_id: '7',
        pull_request_base_branch: 'main',
        pull_request_repository: 'git@github.com:fork/app.git',
        clean_checkout: true,
      });
      expect(created.jobs.map((j: { type: string; state: string }) => `${j.type}:${j.state}`)).toEqual([
        'script:scheduled',
        'script:scheduled',
        'script:broken',
        'waiter:waiting',
        'manual:waiting',
        'trigger:waiting',
      ]);
      const got = await ctx()
        .http()
        .get(`${buildsPath(org, p)}/${created.number}`)
        .set(auth(token))
        .expect(200);
      expect(got.body).toEqual(created);
      const rebuilt = await ctx()
        .http()
        .put(`${buildsPath(org, p)}/${created.number}/rebuild`)
        .set(auth(token))
        .expect(200);
      const gotRebuilt = await ctx()
        .http()
        .get(`${buildsPath(org, p)}/${rebuilt.body.number}`)
        .set(auth(token))
        .expect(200);
      expect(gotRebuilt.body).toEqual(rebuilt.body);
    });

    it('answers 404 No build found', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      expect(
        (
          await ctx()
            .http()
            .get(`${buildsPath(org, p)}/7`)
            .set(auth(token))
            .expect(404)
        ).body,
      ).toEqual({ message: 'No build found' });
      await ctx()
        .http()
        .put(`${buildsPath(org, p)}/7/cancel`)
        .set(auth(token))
        .expect(404);
      await ctx()
        .http()
        .put(`${buildsPath(org, p)}/7/rebuild`)
        .set(auth(token))
        .expect(404);
      // A number that cannot be a build's names nothing, like a missing one.
      for (const n of ['0', 'abc', '-1']) {
        expect(
          (
            await ctx()
              .http()
              .get(`${buildsPath(org, p)}/${n}`)
              .set(auth(token))
              .expect(404)
          ).body,
        ).toEqual({ message: 'No build found' });
      }
    });

    it('cancels a scheduled build and its unfinished jobs once; a finished build cannot be canceled', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token, { configuration: 'steps:\n  - command: a\n  - wait\n  - command: b\n' });
      const b = await createBuild(ctx(), org, p, token);
      const res = await ctx()
        .http()
        .put(`${buildsPath(org, p)}/${b.number}/cancel`)
        .set(auth(token))
        .expect(200);
      expect(res.body.state).toBe('canceled');
      expect(res.body.finished_at).toMatch(ISO);
      expect(res.body.jobs.map((j: { state: string }) => j.state)).toEqual(['canceled', 'canceled', 'canceled']);
      const again = await ctx()
        .http()
        .put(`${buildsPath(org, p)}/${b.number}/cancel`)
        .set(auth(token))
        .expect(422);
      expect(again.body.message).toMatch(/canceled/);
      const reader = await ctx().givenToken(await ctx().givenUser(org, 'admin'), [org], ['read_builds']);
      const denied = await ctx()
        .http()
        .put(`${buildsPath(org, p)}/${b.number}/cancel`)
        .set(auth(reader))
        .expect(403);
      expect(denied.body).toEqual({ message: "Your access token doesn't have the write_builds scope" });
    });

    it('rebuilds into a new number with the same commit, branch, tag, message, env, meta data and pull request', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await givenPipeline(ctx(), org, token);
      const original = await createBuild(ctx(), org, p, token, {
        branch: 'feature',
        message: 'Original',
        env: { A: '1' },
        meta_data: { k: 'v' },
        pull_request_id: 42,
        pull_request_base_branch: 'main',
        pull_request_repository: 'git@github.com:fork/app.git',
        author: { name: 'Ann', email: 'ann@example.com' },
      });
      await ctx()
        .http()
        .patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`)
        .set(auth(token))
        .send({ configuration: 'steps:\n  - command: new-step\n' })
        .expect(200);
      // A tag push's build (webhooks set it; the API does not take one).
      await ctx().services.db('builds').where({ id: original.id }).update({ tag: 'v1.0.0' });
      const rebuilder = await ctx().givenUser(org, 'member');
      const rebuilderToken = await ctx().givenToken(rebuilder, [org]);
      const res = await ctx()
        .http()
        .put(`${buildsPath(org, p)}/${original.number}/rebuild`)
        .set(auth(rebuilderToken))
        .expect(200);
      const r = res.body;
      expect(r).toMatchObject({
        number: original.number + 1,
        commit: original.commit,
        branch: 'feature',
        tag: 'v1.0.0',
        message: 'Original',
        env: { A: '1' },
        meta_data: { k: 'v' },
        pull_request: { id: '42', base: 'main', repository: 'git@github.com:fork/app.git' },
        author: { name: 'Ann', email: 'ann@example.com' },
        state: 'scheduled',
        rebuilt_from: { id: original.id, number: original.number, url: original.url },
      });
      expect(r.creator.id).toBe(rebuilder.id);
      expect(r.jobs.map((j: { command: string }) => j.command)).toEqual(['new-step']);
      const after = await ctx()
        .http()
        .get(`${buildsPath(org, p)}/${original.number}`)
        .set(auth(token))
        .expect(200);
      const { pipeline: _a, ...before } = original;
      const { pipeline: _b, ...now } = after.body;
      expect(now).toEqual({ ...before, tag: 'v1.0.0' });
    });
  });
});

describeEachDatabase('two server processes on one database', null, (_get, kind) => {
  it('number concurrent creates from both without duplicates', async () => {
    // Two independent service stacks (own connection pools) over one store, as two processes would be.
    const contexts = await createTwoContexts(kind);
    const { one, two } = contexts;
    try {
      const { org, token } = await one.givenAdmin();
      const p = await givenPipeline(one, org, token);
      const results = await Promise.all(
        Array.from({ length: 100 }, (_, i) => (i % 2 ? one : two).http().post(buildsPath(org, p)).set(auth(token)).send({ commit: SHA, branch: 'main' })),
      );
      expect(results.map((r) => r.status).filter((s) => s !== 201)).toEqual([]);
      expect(results.map((r) => r.body.number).sort((a, b) => a - b)).toEqual(Array.from({ length: 100 }, (_, i) => i + 1));
    } finally {
      await contexts.close();
    }
  });
});
