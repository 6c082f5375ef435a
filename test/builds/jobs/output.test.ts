import logSample from '../../fixtures/samples/jobs__08_get-a-job-s-log-output.json';
import envSample from '../../fixtures/samples/jobs__09_get-a-job-s-environment-variables.json';
import { auth, describeEachDatabase } from '../../support/context';
import { acceptAndStart, takeNextJob, agentAuth, givenAgent, givenBuildAndAgent, givenRegistrationToken } from '../../support/agents';
import { givenBuild, givenPipeline } from '../../support/given';

describeEachDatabase('job logs, env and retries', (ctx) => {
  const setup = (configuration: string) => givenBuildAndAgent(ctx(), configuration);
  const a = (token: string) => agentAuth(token);

  it('serves the log as JSON, as text and as log.txt, and deletes it once the job finished', async () => {
    const s = await setup('steps:\n  - command: make\n');
    const job = await takeNextJob(ctx(), a(s.agent.token));
    for (const [sequence, offset, content] of [
      [2, 6, 'wörld\n'],
      [1, 0, 'hello '],
    ] as const) {
      await ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(a(s.agent.token)).send({ sequence, offset, content }).expect(201);
    }
    const jobUrl = `${s.url}/jobs/${job.id}`;
    const json = await ctx().http().get(`${jobUrl}/log`).set(auth(s.token));
    expect(json.status).toBe(200);
    expect(Object.keys(json.body).sort()).toEqual(Object.keys(logSample).sort());
    expect(json.body).toEqual({ url: `http://windsock.test${jobUrl}/log`, content: 'hello wörld\n', size: 13, header_times: [] });
    const build = await ctx().http().get(s.url).set(auth(s.token));
    expect(build.body.jobs[0].log_url).toBe(json.body.url);
    const text = await ctx().http().get(`${jobUrl}/log`).set(auth(s.token)).set('Accept', 'text/plain');
    expect(text.headers['content-type']).toMatch(/^text\/plain/);
    expect(text.text).toBe('hello wörld\n');
    const raw = await ctx().http().get(`${jobUrl}/log.txt`).set(auth(s.token));
    expect(raw.text).toBe('hello wörld\n');

    // Still running: the log can't be deleted.
    expect((await ctx().http().delete(`${jobUrl}/log`).set(auth(s.token))).status).toBe(422);
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(a(s.agent.token)).send({ exit_status: 0 }).expect(200);
    const readOnly = await ctx().givenToken(s.user, [s.org], ['read_builds', 'read_build_logs']);
    const denied = await ctx().http().delete(`${jobUrl}/log`).set(auth(readOnly));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('write_build_logs');
    expect((await ctx().http().delete(`${jobUrl}/log`).set(auth(s.token))).status).toBe(204);
    expect((await ctx().http().get(`${jobUrl}/log`).set(auth(s.token))).body).toMatchObject({ content: '', size: 0 });
    expect((await ctx().http().get(`${s.url}/jobs/00000000-0000-4000-8000-000000000000/log`).set(auth(s.token))).status).toBe(404);
    const noLogs = await ctx().givenToken(s.user, [s.org], ['read_builds']);
    expect((await ctx().http().get(`${jobUrl}/log.txt`).set(auth(noLogs))).status).toBe(403);
  });

  it("answers every variable of the documented env: pull request, creator, provider, the repository's host, the agent's tags", async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token, { repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make\n' });
    const pr = await givenBuild(ctx(), org, pipeline, token, {
      pull_request_id: 42,
      pull_request_base_branch: 'main',
      pull_request_repository: 'git@github.com:fork/app.git',
      pull_request_labels: ['ready', 'ui'],
      clean_checkout: true,
      author: { name: 'Ada Lovelace', email: 'ada@example.com' },
    });
    const plain = await givenBuild(ctx(), org, pipeline, token);
    const agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'tagged', ['queue=default', 'local=true', 'os-family=linux']);
    await ctx().http().get('/v3/ping').set(a(agent.token)).expect(200);
    const envOf = async (b: { number: number; jobs: { id: string }[] }) =>
      (
        await ctx()
          .http()
          .get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${b.number}/jobs/${b.jobs[0]!.id}/env`)
          .set(auth(token))
          .expect(200)
      ).body.env as Record<string, string>;
    const first = await envOf(pr);
    expect(Object.keys(envSample.env).filter((k) => !(k in first))).toEqual([]);
    expect(first).toMatchObject({
      BUILDKITE_PULL_REQUEST: '42',
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: 'main',
      BUILDKITE_PULL_REQUEST_REPO: 'git@github.com:fork/app.git',
      BUILDKITE_BUILD_CREATOR: user.name,
      BUILDKITE_BUILD_CREATOR_EMAIL: user.email,
      BUILDKITE_PIPELINE_PROVIDER: 'github',
      BUILDKITE_REPO_SSH_HOST: 'github.com',
      BUILDKITE_AGENT_META_DATA_QUEUE: 'default',
      BUILDKITE_AGENT_META_DATA_LOCAL: 'true',
      BUILDKITE_AGENT_META_DATA_OS_FAMILY: 'linux',
      BUILDKITE_PULL_REQUEST_LABELS: 'ready,ui',
      // The real agent's checkout phase reads it; the commit's author as the API call gave it.
      BUILDKITE_CLEAN_CHECKOUT: 'true',
      BUILDKITE_BUILD_AUTHOR: 'Ada Lovelace',
      BUILDKITE_BUILD_AUTHOR_EMAIL: 'ada@example.com',
    });
    const second = await envOf(plain);
    // The docs: LABELS is `""` when not a pull request; DRAFT is only on a draft's builds.
    expect(second).toMatchObject({
      BUILDKITE_PULL_REQUEST: 'false',
      BUILDKITE_PULL_REQUEST_BASE_BRANCH: '',
      BUILDKITE_PULL_REQUEST_REPO: '',
      BUILDKITE_PULL_REQUEST_LABELS: '',
    });
    for (const name of ['BUILDKITE_CLEAN_CHECKOUT', 'BUILDKITE_PULL_REQUEST_DRAFT']) {
      expect(second[name]).toBeUndefined();
    }
    // The docs: a build's author defaults to the user who made it through the API.
    expect(second).toMatchObject({ BUILDKITE_BUILD_AUTHOR: user.name, BUILDKITE_BUILD_AUTHOR_EMAIL: user.email });
  });

  it('answers the env the job runs in, with the agent once one took it', async () => {
    const s = await setup('env:\n  PIPE: p\nsteps:\n  - command: make\n    env:\n      STEP: s\n');
    const jobId = s.build.jobs[0]!.id;
    const before = await ctx().http().get(`${s.url}/jobs/${jobId}/env`).set(auth(s.token));
    expect(before.status).toBe(200);
    expect(before.body.env).toMatchObject({
      PIPE: 'p',
      STEP: 's',
      CI: 'true',
      BUILDKITE: 'true',
      BUILDKITE_JOB_ID: jobId,
      BUILDKITE_PIPELINE_SLUG: s.slug,
      BUILDKITE_ORGANIZATION_SLUG: s.org.slug,
      BUILDKITE_COMMAND: 'make',
    });
    expect(before.body.env.BUILDKITE_AGENT_NAME).toBeUndefined();
    await ctx().http().get('/v3/ping').set(a(s.agent.token)).expect(200);
    const after = await ctx().http().get(`${s.url}/jobs/${jobId}/env`).set(auth(s.token));
    expect(after.body.env.BUILDKITE_AGENT_NAME).toBe('runner');
    // Every variable the sample's env has that this service knows of.
    const known = Object.keys(envSample.env).filter((k) => k in after.body.env);
    expect(known.length).toBeGreaterThanOrEqual(15);
    const noEnv = await ctx().givenToken(s.user, [s.org], ['read_builds']);
    const denied = await ctx().http().get(`${s.url}/jobs/${jobId}/env`).set(auth(noEnv));
    expect(denied.status).toBe(403);
    expect(denied.body.message).toContain('read_job_env');
  });

  it('retries a failed job once, hiding the old one, and reopens the finished build', async () => {
    const s = await setup('steps:\n  - command: flaky\n');
    const job = (await ctx().http().get('/v3/ping').set(a(s.agent.token))).body.job;
    const retry = (id: string) => ctx().http().put(`${s.url}/jobs/${id}/retry`).set(auth(s.token));
    expect((await retry(job.id)).status).toBe(400); // assigned: not finished (jobs.md's 400)
    await acceptAndStart(ctx(), a(s.agent.token), job.id);
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(a(s.agent.token)).send({ exit_status: 1 }).expect(200);
    let b = (await ctx().http().get(s.url).set(auth(s.token))).body;
    expect(b.state).toBe('failed');

    const res = await retry(job.id);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      state: 'scheduled',
      command: 'flaky',
      retries_count: 1,
      retry_type: 'manual',
      retried: false,
      exit_status: null,
      agent: null,
    });
    expect(res.body.id).not.toBe(job.id);
    expect((await retry(job.id)).body.message).toContain('already been retried');

    b = (await ctx().http().get(s.url).set(auth(s.token))).body;
    expect(b).toMatchObject({ state: 'running', finished_at: null });
    expect(b.jobs.map((j: { id: string }) => j.id)).toEqual([res.body.id]);
    const all = (await ctx().http().get(`${s.url}?include_retried_jobs=true`).set(auth(s.token))).body;
    expect(all.jobs.find((j: { id: string }) => j.id === job.id)).toMatchObject({ retried: true, retried_in_job_id: res.body.id, state: 'failed' });

    // The retry runs like any job, and its result decides the build.
    const next = (await ctx().http().get('/v3/ping').set(a(s.agent.token))).body.job;
    expect(next.id).toBe(res.body.id);
    await acceptAndStart(ctx(), a(s.agent.token), next.id);
    await ctx().http().put(`/v3/jobs/${next.id}/finish`).set(a(s.agent.token)).send({ exit_status: 0 }).expect(200);
    b = (await ctx().http().get(s.url).set(auth(s.token))).body;
    expect(b.state).toBe('passed');
    expect((await retry(next.id)).status).toBe(400); // passed
  });

  it('refuses to retry waiters, and the jobs of a canceled build (the build stays canceled)', async () => {
    const s = await setup('steps:\n  - command: a\n  - wait\n  - command: b\n');
    const before = (await ctx().http().get(s.url).set(auth(s.token))).body.jobs;
    const waiter = await ctx().http().put(`${s.url}/jobs/${before[1].id}/retry`).set(auth(s.token)).expect(400);
    expect(waiter.body.message).toBe('Only failed, timed out or canceled jobs can be retried');
    await ctx().http().put(`${s.url}/cancel`).set(auth(s.token)).expect(200);
    const jobs = (await ctx().http().get(s.url).set(auth(s.token))).body.jobs;
    expect(jobs[0].state).toBe('canceled');
    const res = await ctx().http().put(`${s.url}/jobs/${jobs[0].id}/retry`).set(auth(s.token)).expect(422);
    expect(res.body.message).toBe('Jobs from canceled builds cannot be retried');
    const b = (await ctx().http().get(s.url).set(auth(s.token))).body;
    expect(b.state).toBe('canceled');
    expect(b.jobs.filter((j: { type: string }) => j.type === 'script').map((j: { retried: boolean }) => j.retried)).toEqual([false, false]);
  });
});
