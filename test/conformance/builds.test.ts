/**
 * Builds, jobs and agents against the documented examples (test/fixtures/samples): each
 * operation the examples document is called with data that fills the optional objects (a GitHub
 * pipeline, an API-created build with a creator and an author, a retried job, a trigger job and
 * the build it started, an agent running a job, a rebuild, a cancel, a block step), and the
 * response must have every key of the examples with the same JSON type (see
 * test/support/conformance.ts).
 */
import listBuilds from '../fixtures/samples/builds__01_list-builds-for-a-pipeline.json';
import getBuild from '../fixtures/samples/builds__02_get-a-build.json';
import triggerJob from '../fixtures/samples/builds__03_get-a-build.json';
import createBuild from '../fixtures/samples/builds__04_create-a-build.json';
import cancelBuild from '../fixtures/samples/builds__05_cancel-a-build.json';
import rebuildBuild from '../fixtures/samples/builds__06_rebuild-a-build.json';
import retryFailedJobs from '../fixtures/samples/builds__07_retry-failed-jobs-for-a-build.json';
import triggeredBuild from '../fixtures/samples/builds__windsock_01_a-triggered-build.windsock.json';
import retryJob from '../fixtures/samples/jobs__05_retry-a-job.json';
import reprioritizeJob from '../fixtures/samples/jobs__06_reprioritize-a-job.json';
import unblockJob from '../fixtures/samples/jobs__07_unblock-a-job.json';
import jobLog from '../fixtures/samples/jobs__08_get-a-job-s-log-output.json';
import jobEnv from '../fixtures/samples/jobs__09_get-a-job-s-environment-variables.json';
import retriedJob from '../fixtures/samples/jobs__windsock_01_a-retried-job.windsock.json';
import listAgents from '../fixtures/samples/agents__01_list-agents.json';
import getAgent from '../fixtures/samples/agents__02_get-an-agent.json';
import { conformanceProblems, expectConforms, responseSchema, specSchema } from '../support/conformance';
import { auth, describeEachDatabase, PUBLIC_URL, type TestContext } from '../support/context';
import { takeNextJob, agentAuth, givenAgent, givenRegistrationToken, type TestAgent } from '../support/agents';

type Json = Record<string, unknown>;
type JobJson = Json & { id: string; type: string; state: string };
type BuildJson = Json & { id: string; number: number; state: string; jobs: JobJson[] };

/** Every documented build: the builds' own examples and the one written from the docs for a triggered build. */
const BUILD_EXAMPLES: unknown[] = [...listBuilds, getBuild, createBuild, cancelBuild, rebuildBuild, triggeredBuild];

/**
 * The build examples show script jobs only; the other job types have shapes of their own
 * (checked against their own examples), so a build is compared with its script jobs.
 */
function expectBuildConforms(build: BuildJson, examples: unknown[] = BUILD_EXAMPLES): void {
  expectConforms({ ...build, jobs: build.jobs.filter((j) => j.type === 'script') }, examples, specSchema('Build'));
}

async function takeNext(ctx: TestContext, agent: TestAgent): Promise<string> {
  const job = await takeNextJob(ctx, agent.token);
  return job.id as string;
}

async function runNext(ctx: TestContext, agent: TestAgent, exitStatus: number): Promise<string> {
  const id = await takeNext(ctx, agent);
  await ctx.http().post(`/v3/jobs/${id}/chunks`).set(agentAuth(agent.token)).send({ sequence: 1, offset: 0, content: 'hello\n' }).expect(201);
  await ctx.http().put(`/v3/jobs/${id}/finish`).set(agentAuth(agent.token)).send({ exit_status: exitStatus }).expect(200);
  return id;
}

describe('the conformance check itself', () => {
  it('names the path of each missing or mistyped key, inside objects and array elements', () => {
    const example = { a: 1, b: { c: 'x', d: [{ e: true }] }, n: null, f: 'y' };
    const actual = { a: '1', b: { d: [{ e: true }, {}] }, n: 5, f: null };
    expect(conformanceProblems(actual, [example])).toEqual([
      '$.a: string, the examples show number',
      '$.b.c: missing',
      '$.b.d[1].e: missing',
      '$.f: null, the examples show string and the spec does not document null',
    ]);
  });

  it('takes the union of several examples, and null where an example or the spec allows it', () => {
    const examples = [{ p: { id: 'x' } }, { p: { id: 'x', settings: { repository: 'a/b' } }, q: null }];
    expect(conformanceProblems({ p: { id: 'y' }, q: 1 }, examples)).toEqual(['$.p.settings: missing']);
    const withSettings = { id: 'y', settings: { repository: 'c/d' } };
    expect(conformanceProblems({ p: withSettings, q: 'anything' }, examples)).toEqual([]);
    // The spec documents Build.cancel_reason as nullable, not Build.commit.
    expect(conformanceProblems({ cancel_reason: null, commit: null }, [{ cancel_reason: 'r', commit: 'c' }], specSchema('Build'))).toEqual([
      '$.commit: null, the examples show string and the spec does not document null',
    ]);
    expect(conformanceProblems({ jobs: [] }, [{ jobs: [{ id: 'j' }] }])[0]).toMatch(/^\$\.jobs: empty array/);
  });
});

describeEachDatabase('conformance: builds, jobs and agents', (ctx) => {
  async function setup() {
    const { org, user, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const agent = await givenAgent(ctx(), reg, 'runner', ['queue=default']);
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const pipeline = async (slug: string, configuration: string, repository = 'git@github.com:acme/app.git') => {
      const res = await ctx().http().post(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).send({ name: slug, repository, configuration });
      expect(res.status).toBe(201);
      return res.body.slug as string;
    };
    const create = async (slug: string, body: Json = {}) => {
      const res = await ctx()
        .http()
        .post(`${base}/${slug}/builds`)
        .set(auth(token))
        .send({ commit: 'abc123', branch: 'main', message: 'Ship it', meta_data: { release: '1.2' }, env: { A: '1' }, ...body });
      expect(res.status).toBe(201);
      return res.body as BuildJson;
    };
    const read = async (slug: string, number: number, query = '') =>
      (await ctx().http().get(`${base}/${slug}/builds/${number}${query}`).set(auth(token)).expect(200)).body as BuildJson;
    return { org, user, token, agent, base, pipeline, create, read };
  }

  it('answers every build, job and agent operation in the documented shapes', async () => {
    const s = await setup();
    const deploy = await s.pipeline('deploy', 'steps:\n  - command: ./deploy.sh\n');
    const app = await s.pipeline('app', 'steps:\n  - command: make\n    key: make\n  - wait\n  - trigger: deploy\n    label: Deploy\n');

    // A failed job retried through the API (a pipeline of its own: the retry is all it runs):
    // the retry answers the new job (jobs__05), the old one reads as retried (the example
    // written from the docs), and the job's log and env are in their documented shapes.
    const flaky = await s.pipeline('flaky', 'steps:\n  - command: ./flaky.sh\n');
    const flakyBuild = await s.create(flaky);
    const failed = await runNext(ctx(), s.agent, 1);
    const jobUrl = `${s.base}/${flaky}/builds/${flakyBuild.number}/jobs/${failed}`;
    const retry = await ctx().http().put(`${jobUrl}/retry`).set(auth(s.token)).expect(200);
    expectConforms(retry.body, [retryJob], specSchema('Job'));
    const log = await ctx().http().get(`${jobUrl}/log`).set(auth(s.token)).expect(200);
    expectConforms(log.body, [jobLog], specSchema('JobLog'));
    const env = await ctx().http().get(`${jobUrl}/env`).set(auth(s.token)).expect(200);
    expectConforms(env.body, [jobEnv], responseSchema('getJobEnv'));
    await runNext(ctx(), s.agent, 0);
    const retried = await s.read(flaky, flakyBuild.number, '?include_retried_jobs=true');
    expectBuildConforms(retried);
    const old = retried.jobs.find((j) => j.id === failed)!;
    expectConforms(old, [retriedJob], specSchema('Job'));
    expect(old).toMatchObject({ retried: true, retried_in_job_id: retry.body.id });

    // Create: a creator, an author, and the pipeline with its GitHub provider settings.
    const created = await s.create(app, { author: { name: 'Keith Pitt', email: 'keith@example.com' } });
    expectBuildConforms(created);
    expect(created.author).toEqual({ name: 'Keith Pitt', email: 'keith@example.com', username: null });
    expect(created).toMatchObject({ triggered_from: null });
    expect(created).not.toHaveProperty('test_engine');
    const make = created.jobs[0]!;
    expect(make).toMatchObject({
      priority: { number: 0 },
      group_key: null,
      artifacts_url: `${PUBLIC_URL}${s.base}/${app}/builds/${created.number}/jobs/${make.id}/artifacts`,
    });

    // The app's step passes, its trigger step starts a build of `deploy`, and the agent takes that build's job.
    await runNext(ctx(), s.agent, 0);
    const deployJob = await takeNext(ctx(), s.agent);

    const parent = await s.read(app, created.number, '?include_retried_jobs=true');
    expectBuildConforms(parent);
    const trigger = parent.jobs.find((j) => j.type === 'trigger')!;
    expectConforms(trigger, [triggerJob], specSchema('Job'));

    // The triggered build: where it came from, and its job on the agent.
    const child = await s.read(deploy, 1);
    expectBuildConforms(child);
    expect(child.triggered_from).toEqual({ build_id: parent.id, build_number: parent.number, build_pipeline_slug: app });
    expect(trigger.triggered_build).toEqual({
      id: child.id,
      number: 1,
      url: `${PUBLIC_URL}${s.base}/${deploy}/builds/1`,
      web_url: `${PUBLIC_URL}/${s.org.slug}/${deploy}/builds/1`,
    });
    expect(child.jobs[0]).toMatchObject({ id: deployJob, state: 'running', agent: { id: s.agent.id } });
    // The example of a triggered build has an author: builds given one show it in that shape.
    const authored = await s.create(deploy, { author: { name: 'Keith Pitt', email: 'keith@example.com', username: 'keithpitt' } });
    expectConforms({ ...child, author: authored.author }, [triggeredBuild], specSchema('Build'));

    // Lists in the three scopes.
    for (const url of [`${s.base}/${deploy}/builds`, `/v2/organizations/${s.org.slug}/builds`, '/v2/builds']) {
      const list = (await ctx().http().get(url).set(auth(s.token)).expect(200)).body as BuildJson[];
      expect(list.length).toBeGreaterThan(0);
      for (const b of list) expectBuildConforms(b);
    }

    // Agents: the agent holds the job.
    const agents = await ctx().http().get(`/v2/organizations/${s.org.slug}/agents`).set(auth(s.token)).expect(200);
    expect(agents.body).toHaveLength(1);
    expectConforms(agents.body, [listAgents, [getAgent]], specSchema('Agent[]'));
    const agent = await ctx().http().get(`/v2/organizations/${s.org.slug}/agents/${s.agent.id}`).set(auth(s.token)).expect(200);
    expectConforms(agent.body, [...listAgents, getAgent], specSchema('Agent'));
    expect(agent.body.job).toMatchObject({ id: deployJob });
    expect(agent.body.creator).toMatchObject({ id: s.user.id });
    expect(child.jobs[0]!.agent).toMatchObject({ creator: { id: s.user.id } });

    // Rebuild and cancel.
    const rebuilt = await ctx().http().put(`${s.base}/${app}/builds/${created.number}/rebuild`).set(auth(s.token)).expect(200);
    expectBuildConforms(rebuilt.body);
    expect(rebuilt.body.rebuilt_from).toMatchObject({ id: created.id, number: created.number });
    const canceled = await ctx().http().put(`${s.base}/${deploy}/builds/1/cancel`).set(auth(s.token)).expect(200);
    expectBuildConforms(canceled.body);
  });

  it('unblocks a block step in the documented shape', async () => {
    const s = await setup();
    const slug = await s.pipeline('gated', 'steps:\n  - block: Deploy\n  - command: ./deploy.sh\n');
    const build = await s.create(slug);
    const block = build.jobs[0]!;
    const res = await ctx().http().put(`${s.base}/${slug}/builds/${build.number}/jobs/${block.id}/unblock`).set(auth(s.token)).send({}).expect(200);
    expectConforms(res.body, [unblockJob], specSchema('Job'));
  });

  it('answers retry_failed_jobs and reprioritize in the documented shapes', async () => {
    const s = await setup();
    const slug = await s.pipeline('two', 'steps:\n  - command: ./a.sh\n  - command: ./b.sh\n');
    const build = await s.create(slug);
    await runNext(ctx(), s.agent, 1);
    const later = build.jobs[1]!;
    const res = await ctx()
      .http()
      .put(`${s.base}/${slug}/builds/${build.number}/jobs/${later.id}/reprioritize`)
      .set(auth(s.token))
      .send({ priority: 5 })
      .expect(200);
    expectConforms(res.body, [reprioritizeJob], specSchema('Job'));
    await runNext(ctx(), s.agent, 0);
    const retried = await ctx().http().put(`${s.base}/${slug}/builds/${build.number}/retry_failed_jobs`).set(auth(s.token)).send({}).expect(202);
    expect(retried.body.retried_jobs_count).toBe(1);
    expectBuildConforms(retried.body as BuildJson, [retryFailedJobs]);
    // The bulk retry is the caller's too: the failed job names them.
    const failed = await ctx().http().get(`${s.base}/${slug}/builds/${build.number}/jobs/${build.jobs[0]!.id}`).set(auth(s.token)).expect(200);
    expect(failed.body).toMatchObject({ retried: true, retried_by: { id: s.user.id, name: s.user.name } });
  });

  it('embeds provider settings for every provider kind (the Go client decodes them by provider id)', async () => {
    const s = await setup();
    const repositories: [string, string][] = [
      ['github', 'git@github.com:acme/app.git'],
      ['github_enterprise', 'git@github.acme.internal:acme/app.git'],
      ['gitlab', 'git@gitlab.com:acme/app.git'],
      ['gitlab_ee', 'https://gitlab.acme.internal/acme/app.git'],
      ['bitbucket', 'git@bitbucket.org:acme/app.git'],
      ['bitbucket_server', 'ssh://git@bitbucket.acme.internal:7999/acme/app.git'],
      ['git', 'https://git.acme.internal/app.git'],
    ];
    for (const [id, repository] of repositories) {
      const slug = await s.pipeline(`p-${id}`, 'steps:\n  - command: make\n', repository);
      const build = await s.create(slug);
      const provider = (build.pipeline as { provider: { id: string; settings: Record<string, unknown> } }).provider;
      expect(provider.id).toBe(id);
      expect(typeof provider.settings).toBe('object');
      if (id !== 'git') expect(provider.settings.repository).toBe('acme/app');
      const read = await s.read(slug, build.number);
      expect((read.pipeline as { provider: unknown }).provider).toEqual(provider);
      const pipeline = await ctx().http().get(`${s.base}/${slug}`).set(auth(s.token)).expect(200);
      // One representation: the build embeds the same provider the pipeline shows.
      expect(pipeline.body.provider).toEqual(provider);
    }
  });
});
