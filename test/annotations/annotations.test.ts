/**
 * Annotations through the REST API and the agent API: create, replace, append, restyle, list
 * (order, pagination), delete, the job scope, limits and bad input, tenancy and scopes.
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { takeNextJob, agentAuth, givenAgent, givenBuildAndAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

/** A build of two command steps, its first job running on a connected agent. */
async function givenRunningJob(ctx: TestContext) {
  const given = await givenBuildAndAgent(ctx, 'steps:\n  - command: one\n  - command: two\n');
  const job = await takeNextJob(ctx, given.agent.token);
  return { ...given, jobId: job.id as string, otherJobId: given.build.jobs[1]!.id };
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describeEachDatabase('annotations', (ctx) => {
  it('are created on a build with the documented fields and defaults, and listed', async () => {
    const { org, token, slug, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: make\n');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`;
    const created = await ctx().http().post(url).set(auth(token)).send({ body: 'Hello world!', style: 'info', priority: 5, context: 'greeting' }).expect(201);
    expect(Object.keys(created.body)).toEqual(['id', 'context', 'style', 'scope', 'job_id', 'priority', 'body_html', 'created_at', 'updated_at']);
    expect(created.body).toMatchObject({ context: 'greeting', style: 'info', scope: 'build', job_id: null, priority: 5, body_html: '<p>Hello world!</p>\n' });
    expect(created.body.created_at).toMatch(ISO);
    expect(created.body.updated_at).toBe(created.body.created_at);

    const plain = await ctx().http().post(url).set(auth(token)).send({ body: '# Heading' }).expect(201);
    expect(plain.body).toMatchObject({ context: 'default', style: 'default', scope: 'build', priority: 3, body_html: '<h1>Heading</h1>\n' });

    const list = await ctx().http().get(url).set(auth(token)).expect(200);
    // Highest priority first, then oldest first.
    expect(list.body.map((a: { context: string }) => a.context)).toEqual(['greeting', 'default']);
    expect(list.body[0]).toEqual(created.body);
  });

  it('replace the body of the same context, or append to it, keeping the id and created_at', async () => {
    const { org, token, slug, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: make\n');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`;
    const first = (await ctx().http().post(url).set(auth(token)).send({ body: 'one', context: 'c', style: 'error', priority: 7 }).expect(201)).body;
    await sleep(5);
    const replaced = (await ctx().http().post(url).set(auth(token)).send({ body: 'two', context: 'c' }).expect(201)).body;
    expect(replaced).toMatchObject({ id: first.id, created_at: first.created_at, style: 'error', priority: 7, body_html: '<p>two</p>\n' });
    expect(Date.parse(replaced.updated_at)).toBeGreaterThan(Date.parse(first.updated_at));
    const appended = (await ctx().http().post(url).set(auth(token)).send({ body: ' and **three**', context: 'c', append: true, style: 'success' }).expect(201))
      .body;
    expect(appended).toMatchObject({ id: first.id, created_at: first.created_at, style: 'success', body_html: '<p>two and <strong>three</strong></p>\n' });
    const list = (await ctx().http().get(url).set(auth(token)).expect(200)).body;
    expect(list).toEqual([appended]);
  });

  it('are paginated with a Link header', async () => {
    const { org, token, slug, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: make\n');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`;
    for (const context of ['a', 'b', 'c']) await ctx().http().post(url).set(auth(token)).send({ body: context, context }).expect(201);
    const page1 = await ctx().http().get(`${url}?per_page=2`).set(auth(token)).expect(200);
    expect(page1.body.map((a: { context: string }) => a.context)).toEqual(['a', 'b']);
    expect(page1.headers.link).toContain('page=2');
    expect(page1.headers.link).toContain('rel="next"');
    const page2 = await ctx().http().get(`${url}?per_page=2&page=2`).set(auth(token)).expect(200);
    expect(page2.body.map((a: { context: string }) => a.context)).toEqual(['c']);
    expect(page2.headers.link ?? '').not.toContain('rel="next"');
  });

  it('are deleted by id (204), then gone (404)', async () => {
    const { org, token, slug, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: make\n');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`;
    const a = (await ctx().http().post(url).set(auth(token)).send({ body: 'x' }).expect(201)).body;
    await ctx().http().delete(`${url}/${a.id}`).set(auth(token)).expect(204);
    await ctx().http().delete(`${url}/${a.id}`).set(auth(token)).expect(404);
    expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toEqual([]);
  });

  it('of a job: scope job, unique per job, listed by the job and by the build, reachable by job id alone', async () => {
    const { org, token, slug, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: one\n  - command: two\n');
    const [j1, j2] = build.jobs.map((j) => j.id);
    const buildUrl = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const onJob1 = (
      await ctx()
        .http()
        .post(`${buildUrl}/jobs/${j1}/annotations`)
        .set(auth(token))
        .send({ body: 'Test results: 42 passed', style: 'success', context: 'test-results' })
        .expect(201)
    ).body;
    expect(onJob1).toMatchObject({ scope: 'job', context: 'test-results', priority: 3, body_html: '<p>Test results: 42 passed</p>\n' });
    // Another job and the build have their own `test-results`.
    const onJob2 = (
      await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/jobs/${j2}/annotations`)
        .set(auth(token))
        .send({ body: 'other', context: 'test-results' })
        .expect(201)
    ).body;
    expect(onJob2.id).not.toBe(onJob1.id);
    const onBuild = (await ctx().http().post(`${buildUrl}/annotations`).set(auth(token)).send({ body: 'build', context: 'test-results' }).expect(201)).body;
    expect(onBuild.scope).toBe('build');

    expect((await ctx().http().get(`${buildUrl}/jobs/${j1}/annotations`).set(auth(token)).expect(200)).body).toEqual([onJob1]);
    expect((await ctx().http().get(`/v2/organizations/${org.slug}/jobs/${j2}/annotations`).set(auth(token)).expect(200)).body).toEqual([onJob2]);
    expect(onJob1.job_id).toBe(j1);
    expect(onBuild.job_id).toBeNull();
    // The build's list: its own by default (scope=build), its jobs' with scope=job, both with scope=all.
    const ids = async (q: string) =>
      (await ctx().http().get(`${buildUrl}/annotations${q}`).set(auth(token)).expect(200)).body.map((a: { id: string }) => a.id).sort();
    expect(await ids('')).toEqual([onBuild.id]);
    expect(await ids('?scope=build')).toEqual([onBuild.id]);
    expect(await ids('?scope=job')).toEqual([onJob1.id, onJob2.id].sort());
    expect(await ids('?scope=all')).toEqual([onJob1.id, onJob2.id, onBuild.id].sort());
    await ctx().http().get(`${buildUrl}/annotations?scope=pipeline`).set(auth(token)).expect(400);
    // omit_body=true: the same annotations without their body.
    const bodiless = (await ctx().http().get(`${buildUrl}/annotations?scope=all&omit_body=true`).set(auth(token)).expect(200)).body;
    expect(bodiless).toHaveLength(3);
    for (const a of bodiless) expect(Object.keys(a)).toEqual(['id', 'context', 'style', 'scope', 'job_id', 'priority', 'created_at', 'updated_at']);

    // A job's delete route deletes only that job's annotations.
    await ctx().http().delete(`${buildUrl}/jobs/${j1}/annotations/${onJob2.id}`).set(auth(token)).expect(404);
    await ctx().http().delete(`${buildUrl}/jobs/${j1}/annotations/${onBuild.id}`).set(auth(token)).expect(404);
    await ctx().http().delete(`${buildUrl}/jobs/${j1}/annotations/${onJob1.id}`).set(auth(token)).expect(204);
    await ctx().http().delete(`/v2/organizations/${org.slug}/jobs/${j2}/annotations/${onJob2.id}`).set(auth(token)).expect(204);
    expect((await ctx().http().get(`${buildUrl}/annotations`).set(auth(token)).expect(200)).body).toEqual([onBuild]);
  });

  it('refuse bad input with a 422 naming the field, and bodies over 1 MiB', async () => {
    const { org, token, slug, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: make\n');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`;
    const bad = async (body: unknown, field: string) => {
      const res = await ctx()
        .http()
        .post(url)
        .set(auth(token))
        .send(body as object)
        .expect(422);
      expect(res.body.message).toBeTruthy();
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    };
    await bad({}, 'body');
    await bad({ body: '' }, 'body');
    await bad({ body: 'x', style: 'purple' }, 'style');
    await bad({ body: 'x', priority: 0 }, 'priority');
    await bad({ body: 'x', priority: 11 }, 'priority');
    await bad({ body: 'x', priority: 'high' }, 'priority');
    await bad({ body: 'x', context: 'c'.repeat(101) }, 'context');
    await bad({ body: 'x', context: '' }, 'context');
    await bad({ body: 'x', append: 'yes' }, 'append');
    // 1 MiB of UTF-8: a multi-byte body under the character limit but over the byte limit.
    await bad({ body: 'é'.repeat(600_000) }, 'body');
    // Exactly 1 MiB is fine; appending one more byte is not.
    const full = (
      await ctx()
        .http()
        .post(url)
        .set(auth(token))
        .send({ body: 'a'.repeat(1024 * 1024), context: 'big' })
        .expect(201)
    ).body;
    expect(full.body_html.length).toBeGreaterThan(1024 * 1024);
    const over = await ctx().http().post(url).set(auth(token)).send({ body: 'b', context: 'big', append: true }).expect(422);
    expect(over.body.errors).toEqual([{ field: 'body', code: expect.stringContaining('1 MiB') }]);
    // Not JSON, or not an annotation id.
    await ctx().http().post(url).set(auth(token)).set('Content-Type', 'application/json').send('{"body":').expect(400);
    await ctx().http().delete(`${url}/not-a-uuid`).set(auth(token)).expect(404);
  });

  it("are another organization's: 404, and need read_builds / write_builds", async () => {
    const { org, token, slug, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: make\n');
    const buildUrl = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const a = (await ctx().http().post(`${buildUrl}/annotations`).set(auth(token)).send({ body: 'x' }).expect(201)).body;
    const jobId = build.jobs[0]!.id;
    const other = await ctx().givenAdmin();
    // Their token on our paths, and our ids under their organization: nothing is found.
    await ctx().http().get(`${buildUrl}/annotations`).set(auth(other.token)).expect(404);
    await ctx().http().post(`${buildUrl}/annotations`).set(auth(other.token)).send({ body: 'x' }).expect(404);
    await ctx().http().delete(`${buildUrl}/annotations/${a.id}`).set(auth(other.token)).expect(404);
    await ctx().http().get(`/v2/organizations/${other.org.slug}/jobs/${jobId}/annotations`).set(auth(other.token)).expect(404);
    await ctx().http().post(`/v2/organizations/${other.org.slug}/jobs/${jobId}/annotations`).set(auth(other.token)).send({ body: 'x' }).expect(404);
    const theirs = await givenPipeline(ctx(), other.org.slug, other.token);
    const theirBuild = await givenBuild(ctx(), other.org.slug, theirs.slug, other.token);
    await ctx()
      .http()
      .delete(`/v2/organizations/${other.org.slug}/pipelines/${theirs.slug}/builds/${theirBuild.number}/annotations/${a.id}`)
      .set(auth(other.token))
      .expect(404);
    expect((await ctx().http().get(`${buildUrl}/annotations`).set(auth(token)).expect(200)).body).toHaveLength(1);

    const user = await ctx().givenUser(org, 'admin');
    const readOnly = await ctx().givenToken(user, [org], ['read_builds']);
    const writeOnly = await ctx().givenToken(user, [org], ['write_builds']);
    await ctx().http().get(`${buildUrl}/annotations`).set(auth(readOnly)).expect(200);
    await ctx().http().post(`${buildUrl}/annotations`).set(auth(readOnly)).send({ body: 'x' }).expect(403);
    await ctx().http().delete(`${buildUrl}/annotations/${a.id}`).set(auth(readOnly)).expect(403);
    await ctx().http().get(`${buildUrl}/annotations`).set(auth(writeOnly)).expect(403);
    await ctx().http().post(`${buildUrl}/annotations`).set(auth(writeOnly)).send({ body: 'y', context: 'w' }).expect(201);
  });

  describe('from the agent', () => {
    it('annotate the build of a running job: default context, append, restyle, job scope, remove', async () => {
      const { org, token, slug, build, agent, jobId } = await givenRunningJob(ctx());
      const api = `/v3/jobs/${jobId}/annotations`;
      const listUrl = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`;
      const a = (await ctx().http().post(api).set(agentAuth(agent.token)).send({ body: 'Hello', priority: 3, scope: 'build' }).expect(201)).body;
      expect(a).toMatchObject({ context: 'default', style: 'default', scope: 'build', priority: 3, body_html: '<p>Hello</p>\n' });
      // An empty context is the default one, and append adds to it.
      await ctx().http().post(api).set(agentAuth(agent.token)).send({ body: ' world', context: '', append: true, priority: 3 }).expect(201);
      // No body: only the style changes.
      const restyled = (await ctx().http().post(api).set(agentAuth(agent.token)).send({ style: 'warning', priority: 3 }).expect(201)).body;
      expect(restyled).toMatchObject({ id: a.id, style: 'warning', body_html: '<p>Hello world</p>\n' });
      // An empty body is no body either.
      const reprioritised = (await ctx().http().post(api).set(agentAuth(agent.token)).send({ body: '', priority: 9 }).expect(201)).body;
      expect(reprioritised).toMatchObject({ id: a.id, style: 'warning', priority: 9, body_html: '<p>Hello world</p>\n' });
      // No body and no such context: nothing to restyle.
      await ctx().http().post(api).set(agentAuth(agent.token)).send({ style: 'info', context: 'nothing' }).expect(404);
      const onJob = (await ctx().http().post(api).set(agentAuth(agent.token)).send({ body: 'job', context: 'a.b', scope: 'job' }).expect(201)).body;
      expect(onJob.scope).toBe('job');
      const jobList = await ctx().http().get(`/v2/organizations/${org.slug}/jobs/${jobId}/annotations`).set(auth(token)).expect(200);
      expect(jobList.body).toEqual([onJob]);

      // The agent escapes dots in the context; the build's annotation of that context is not the job's.
      await ctx().http().delete(`${api}/a%2Eb`).set(agentAuth(agent.token)).expect(404);
      await ctx().http().delete(`${api}/a%2Eb?scope=job`).set(agentAuth(agent.token)).expect(204);
      await ctx().http().delete(`${api}/default`).set(agentAuth(agent.token)).expect(204);
      // A context with a slash and a space, escaped as the agent escapes path segments.
      await ctx().http().post(api).set(agentAuth(agent.token)).send({ body: 'x', context: 'dir/sub ctx' }).expect(201);
      await ctx().http().delete(`${api}/dir%2Fsub%20ctx`).set(agentAuth(agent.token)).expect(204);
      await ctx().http().delete(`${api}/default?scope=build`).set(agentAuth(agent.token)).expect(404);
      expect((await ctx().http().get(listUrl).set(auth(token)).expect(200)).body).toEqual([]);
    });

    it('annotate another job of the build the agent runs a job of (annotate --job), never a job of another build', async () => {
      const { agent, otherJobId, org, token, slug } = await givenRunningJob(ctx());
      // The docs annotate a job that ran before from a later step: `annotate --scope job --job $JOB_UUID --append`.
      const onOther = await ctx()
        .http()
        .post(`/v3/jobs/${otherJobId}/annotations`)
        .set(agentAuth(agent.token))
        .send({ body: 'x', scope: 'job', context: 'other' })
        .expect(201);
      expect(onOther.body).toMatchObject({ scope: 'job', job_id: otherJobId });
      await ctx().http().delete(`/v3/jobs/${otherJobId}/annotations/other?scope=job`).set(agentAuth(agent.token)).expect(204);
      const later = (
        await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${slug}/builds`).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(201)
      ).body;
      await ctx().http().post(`/v3/jobs/${later.jobs[0].id}/annotations`).set(agentAuth(agent.token)).send({ body: 'x' }).expect(404);
    });

    it("refuse a job the agent does not run, another organization's agent, and bad input", async () => {
      const { agent, jobId, org, token } = await givenRunningJob(ctx());
      // Another agent of the same organization does not hold the job.
      const second = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'second');
      await ctx().http().post(`/v3/jobs/${jobId}/annotations`).set(agentAuth(second.token)).send({ body: 'x' }).expect(404);
      // Another organization's agent.
      const other = await ctx().givenAdmin();
      const stranger = await givenAgent(ctx(), await givenRegistrationToken(ctx(), other.org.slug, other.token), 'stranger');
      await ctx().http().post(`/v3/jobs/${jobId}/annotations`).set(agentAuth(stranger.token)).send({ body: 'x' }).expect(404);
      await ctx().http().delete(`/v3/jobs/${jobId}/annotations/default`).set(agentAuth(stranger.token)).expect(404);
      await ctx().http().post(`/v3/jobs/${jobId}/annotations`).send({ body: 'x' }).expect(401);

      const api = `/v3/jobs/${jobId}/annotations`;
      const bad = async (body: object, field: string) => {
        const res = await ctx().http().post(api).set(agentAuth(agent.token)).send(body).expect(422);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      };
      await bad({ body: 'x', context: 'c'.repeat(101) }, 'context');
      await bad({ body: 'x', style: 'loud' }, 'style');
      await bad({ body: 'x', priority: 42 }, 'priority');
      await bad({ body: 'x', scope: 'pipeline' }, 'scope');
      await bad({ body: 'x'.repeat(1024 * 1024 + 1) }, 'body');
      await ctx().http().delete(`${api}/default?scope=everything`).set(agentAuth(agent.token)).expect(400);

      // Once the job is finished, it can't annotate any more.
      await ctx().http().put(`/v3/jobs/${jobId}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
      const late = await ctx().http().post(api).set(agentAuth(agent.token)).send({ body: 'late' }).expect(422);
      expect(late.body.message).toContain('passed');
    });

    it('lose no append when many race on one context, and racing creates make one annotation', async () => {
      const { org, token, slug, build, agent, jobId } = await givenRunningJob(ctx());
      const api = `/v3/jobs/${jobId}/annotations`;
      const parts = Array.from({ length: 16 }, (_, i) => `[${i}]`);
      await Promise.all(parts.map((p) => ctx().http().post(api).set(agentAuth(agent.token)).send({ body: p, context: 'race', append: true }).expect(201)));
      const list = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`).set(auth(token)).expect(200))
        .body;
      expect(list).toHaveLength(1);
      for (const p of parts) expect(list[0].body_html).toContain(p);
      // Racing creates of one new context end as one annotation.
      const bodies = Array.from({ length: 6 }, (_, i) => `body ${i}`);
      const created = await Promise.all(bodies.map((body) => ctx().http().post(api).set(agentAuth(agent.token)).send({ body, context: 'fresh' }).expect(201)));
      expect(new Set(created.map((r) => r.body.id)).size).toBe(1);
      const fresh = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/annotations`).set(auth(token)).expect(200))
        .body;
      expect(fresh.filter((x: { context: string }) => x.context === 'fresh')).toHaveLength(1);
    });
  });
});
