import crypto from 'node:crypto';
/**
 * The jobs operations of issue 30: a build's jobs by cursor (`state[]`, `include_retried_jobs`),
 * a job under its build and by its id alone, and the organization-scoped twins of retry,
 * unblock, log (GET, HEAD, DELETE) and env: the same answers as the build-scoped routes.
 */
import listJobsSample from '../../fixtures/samples/jobs__01_list-jobs.json';
import getJobSample from '../../fixtures/samples/jobs__02_get-a-job.json';
import { expectConforms, specSchema } from '../../support/conformance';
import { auth, describeEachDatabase, PUBLIC_URL, type TestContext } from '../../support/context';
import { takeNextJob, agentAuth, givenBuildAndAgent, type TestAgent } from '../../support/agents';
import { givenBuild, givenPipeline } from '../../support/given';

type JobJson = Record<string, unknown> & { id: string; state: string; retried: boolean; agent: { id: string } | null };

/** The agent takes the next job, logs `log` and finishes it with this exit status. */
async function runNext(ctx: TestContext, agent: TestAgent, exitStatus: number, log = 'hello\n'): Promise<string> {
  const job = await takeNextJob(ctx, agent.token);
  await ctx.http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence: 1, offset: 0, content: log }).expect(201);
  await ctx.http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: exitStatus }).expect(200);
  return job.id as string;
}

describeEachDatabase('jobs: list, get, and the organization-scoped routes', (ctx) => {
  it("lists a build's jobs by cursor, in order, with every page's links, as the docs' example has them", async () => {
    const { token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n  - command: b\n  - command: c\n');
    await runNext(ctx(), agent, 0);
    const all = (await ctx().http().get(`${url}/jobs`).set(auth(token)).expect(200)).body as { items: JobJson[]; links: { self: string; next?: string } };
    expect(all.items).toHaveLength(3);
    expect(all.links).toEqual({ self: `${PUBLIC_URL}${url}/jobs` });
    expectConforms(all.items[0], [listJobsSample.items[0]!], specSchema('Job'));
    expect(all.items[0]!.agent).toMatchObject({ id: agent.id });

    const seen: string[] = [];
    let next: string | undefined = `${url}/jobs?per_page=2`;
    let pages = 0;
    while (next) {
      const res: { body: { items: JobJson[]; links: { next?: string } } } = await ctx().http().get(next).set(auth(token)).expect(200);
      seen.push(...(res.body.items as JobJson[]).map((j) => j.id));
      next = res.body.links.next ? String(res.body.links.next).slice(PUBLIC_URL.length) : undefined;
      if (next) expect(next).toMatch(/per_page=2/);
      pages++;
    }
    expect(pages).toBe(2);
    expect(seen).toEqual(all.items.map((j) => j.id));

    // `before` reads backwards from a cursor: the page before the second one is the first.
    const first = await ctx().http().get(`${url}/jobs?per_page=2`).set(auth(token)).expect(200);
    const cursor = new URL(first.body.links.next as string).searchParams.get('after')!;
    const back = await ctx().http().get(`${url}/jobs?per_page=1&before=${cursor}`).set(auth(token)).expect(200);
    expect(back.body.items.map((j: JobJson) => j.id)).toEqual([seen[0]]);
  });

  it('filters by state[] (passed and failed as the jobs show them) and leaves retried jobs out only when asked', async () => {
    const { token, agent, url, user } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n  - command: b\n');
    const passed = await runNext(ctx(), agent, 0);
    const failed = await runNext(ctx(), agent, 3);
    const retry = await ctx().http().put(`${url}/jobs/${failed}/retry`).set(auth(token)).expect(200);
    // The retried job names who retried it; the new one, not retried, names nobody.
    const original = (await ctx().http().get(`${url}/jobs/${failed}`).set(auth(token)).expect(200)).body;
    expect(original).toMatchObject({ retried: true, retried_in_job_id: retry.body.id, retried_by: { id: user.id, name: user.name, email: user.email } });
    expect(retry.body.retried_by).toBeNull();
    const ids = async (query: string) =>
      ((await ctx().http().get(`${url}/jobs${query}`).set(auth(token)).expect(200)).body.items as JobJson[]).map((j) => j.id);
    expect(await ids('?state[]=passed')).toEqual([passed]);
    expect(await ids('?state=failed')).toEqual([failed]);
    expect(await ids('?state[]=passed&state[]=failed')).toEqual([passed, failed]);
    expect(await ids('?state[]=scheduled')).toEqual([retry.body.id]);
    // Retried jobs are included by default (the docs' default), left out with false.
    expect(await ids('')).toEqual([passed, failed, retry.body.id]);
    expect(await ids('?include_retried_jobs=false')).toEqual([passed, retry.body.id]);
    expect(await ids('?include_retried_jobs=false&state=failed')).toEqual([]);
  });

  it('filters by step_key (every job of a parallel step) and group_key (the jobs of a group), with the filter kept in links.next', async () => {
    const configuration = [
      'steps:',
      '  - key: unit',
      '    command: a',
      '    parallelism: 3',
      '  - group: Checks',
      '    key: checks',
      '    steps:',
      '      - { key: lint, command: lint }',
      '      - command: types',
      '  - command: other',
    ].join('\n');
    const { token, url } = await givenBuildAndAgent(ctx(), configuration);
    const jobs = async (query: string) =>
      (await ctx().http().get(`${url}/jobs${query}`).set(auth(token)).expect(200)).body as { items: JobJson[]; links: { next?: string } };
    const commands = async (query: string) => (await jobs(query)).items.map((j) => j.command);
    expect(await commands('?step_key=unit')).toEqual(['a', 'a', 'a']);
    expect(await commands('?group_key=checks')).toEqual(['lint', 'types']);
    expect(await commands('?step_key=lint&group_key=checks')).toEqual(['lint']);
    expect(await commands('?step_key=nothing')).toEqual([]);
    expect(await commands('?group_key=unit')).toEqual([]);
    const first = await jobs('?step_key=unit&per_page=2');
    expect(new URL(first.links.next!).searchParams.get('step_key')).toBe('unit');
    expect(await commands(String(first.links.next).slice(`${PUBLIC_URL}${url}/jobs`.length))).toEqual(['a']);
  });

  it('refuses an unknown state, finished, a foreign cursor, after with before, and per_page over 100 with a 400', async () => {
    const { token, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n');
    for (const query of [
      'state=finished',
      'state[]=sleeping',
      'after=bm90LWEtam9i',
      'after=x&before=y',
      'per_page=101',
      `after=${Buffer.from(crypto.randomUUID()).toString('base64url')}`,
    ]) {
      const res = await ctx().http().get(`${url}/jobs?${query}`).set(auth(token));
      expect({ query, status: res.status }).toEqual({ query, status: 400 });
      expect(typeof res.body.message).toBe('string');
    }
    const other = await ctx()
      .http()
      .get(`${url.replace(/\d+$/, '987654')}/jobs`)
      .set(auth(token));
    expect(other.status).toBe(404);
  });

  it("gets a job under its build and by its id alone, as the docs' example has it; another organization's job is No job found", async () => {
    const { token, agent, url, org } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n');
    const id = await runNext(ctx(), agent, 0);
    const scoped = await ctx().http().get(`${url}/jobs/${id}`).set(auth(token)).expect(200);
    const byId = await ctx().http().get(`/v2/organizations/${org.slug}/jobs/${id}`).set(auth(token)).expect(200);
    expect(byId.body).toEqual(scoped.body);
    expect(scoped.body).toMatchObject({ id, state: 'passed', exit_status: 0, agent: { id: agent.id } });
    expectConforms(scoped.body, [getJobSample], specSchema('Job'));

    const stranger = await ctx().givenAdmin();
    const foreign = await ctx().http().get(`/v2/organizations/${stranger.org.slug}/jobs/${id}`).set(auth(stranger.token));
    expect({ status: foreign.status, body: foreign.body }).toEqual({ status: 404, body: { message: 'No job found' } });
    const missing = await ctx().http().get(`${url}/jobs/${crypto.randomUUID()}`).set(auth(token));
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 404, body: { message: 'No job found' } });
  });

  it('retries, reads the log and env of (log.txt, log.html and env.txt too), and deletes the log of a job named by its id alone', async () => {
    const { token, agent, url, org } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n');
    const id = await runNext(ctx(), agent, 1, 'héllo wörld\n');
    const byId = `/v2/organizations/${org.slug}/jobs/${id}`;

    const log = await ctx().http().get(`${byId}/log`).set(auth(token)).expect(200);
    expect(log.body).toMatchObject({ url: `${PUBLIC_URL}${url}/jobs/${id}/log`, content: 'héllo wörld\n', size: Buffer.byteLength('héllo wörld\n') });
    const text = await ctx().http().get(`${byId}/log`).set(auth(token)).set('Accept', 'text/plain').expect(200);
    expect(text.text).toBe('héllo wörld\n');
    const tail = await ctx().http().get(`${byId}/log`).set(auth(token)).set('Accept', 'text/plain').set('Range', 'bytes=-6').expect(206);
    expect(tail.text).toBe('wörld\n'.slice(-5));

    // The file-extension forms the docs list beside the Accept header, on both routes.
    for (const base of [byId, `${url}/jobs/${id}`]) {
      const txt = await ctx().http().get(`${base}/log.txt`).set(auth(token)).expect(200);
      expect({ base, type: txt.headers['content-type'], text: txt.text }).toEqual({ base, type: 'text/plain; charset=utf-8', text: 'héllo wörld\n' });
      const html = await ctx().http().get(`${base}/log.html`).set(auth(token)).expect(200);
      expect({ base, type: html.headers['content-type'] }).toEqual({ base, type: 'text/html; charset=utf-8' });
      expect(html.text).toContain('héllo wörld');
      const envTxt = await ctx().http().get(`${base}/env.txt`).set(auth(token)).expect(200);
      expect(envTxt.text).toContain(`BUILDKITE_JOB_ID=${id}\n`);
    }
    const foreign = await ctx().givenAdmin();
    for (const suffix of ['log.txt', 'log.html', 'env.txt']) {
      const res = await ctx().http().get(`/v2/organizations/${foreign.org.slug}/jobs/${id}/${suffix}`).set(auth(foreign.token));
      expect({ suffix, status: res.status, body: res.body }).toEqual({ suffix, status: 404, body: { message: 'No job found' } });
    }

    for (const path of [`${byId}/log`, `${url}/jobs/${id}/log`, `${url}/jobs/${id}/log.txt`, `${byId}/log.txt`]) {
      const head = await ctx().http().head(path).set(auth(token));
      expect({ path, status: head.status, length: head.headers['content-length'], ranges: head.headers['accept-ranges'], body: head.text }).toEqual({
        path,
        status: 200,
        length: String(Buffer.byteLength('héllo wörld\n')),
        ranges: 'bytes',
        body: undefined,
      });
    }

    const env = await ctx().http().get(`${byId}/env`).set(auth(token)).expect(200);
    expect(env.body.env).toMatchObject({ BUILDKITE_JOB_ID: id, BUILDKITE_ORGANIZATION_SLUG: org.slug });
    const envText = await ctx().http().get(`${byId}/env`).set(auth(token)).set('Accept', 'text/plain').expect(200);
    expect(envText.text).toContain(`BUILDKITE_JOB_ID=${id}\n`);

    const retried = await ctx().http().put(`${byId}/retry`).set(auth(token)).expect(200);
    expect(retried.body).toMatchObject({ state: 'scheduled', retries_count: 1, retry_type: 'manual' });
    const again = await ctx().http().put(`${byId}/retry`).set(auth(token));
    expect({ status: again.status, body: again.body }).toEqual({ status: 422, body: { message: 'This job has already been retried.' } });

    await ctx().http().delete(`${byId}/log`).set(auth(token)).expect(204);
    const emptied = await ctx().http().head(`${byId}/log`).set(auth(token)).expect(200);
    expect(emptied.headers['content-length']).toBe('0');
    const running = await ctx().http().delete(`/v2/organizations/${org.slug}/jobs/${retried.body.id}/log`).set(auth(token));
    expect(running.status).toBe(422);
  });

  it('unblocks a block step named by its id alone, with the documented fields', async () => {
    const { org, token } = await ctx().givenAdmin();
    const { slug } = await givenPipeline(
      ctx(),
      org.slug,
      token,
      'steps:\n  - block: Deploy?\n    fields:\n      - text: Release\n        key: release\n  - command: deploy\n',
    );
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const block = ((await ctx().http().get(`${url}/jobs`).set(auth(token)).expect(200)).body.items as (JobJson & { type: string })[]).find(
      (j) => j.type === 'manual',
    )!;
    const res = await ctx()
      .http()
      .put(`/v2/organizations/${org.slug}/jobs/${block.id}/unblock`)
      .set(auth(token))
      .send({ fields: { release: 'v1' } })
      .expect(200);
    expect(res.body).toMatchObject({ id: block.id, state: 'unblocked' });
    const b = await ctx().http().get(url).set(auth(token)).expect(200);
    expect(b.body.meta_data).toMatchObject({ release: 'v1' });
    const twice = await ctx().http().put(`/v2/organizations/${org.slug}/jobs/${block.id}/unblock`).set(auth(token)).send({});
    expect(twice.status).toBe(422);
  });
});
