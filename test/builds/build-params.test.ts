/**
 * Build reads and writes as the real API takes them (issue 12 item 4, issue 13 item 7):
 * `exclude_jobs` and `exclude_pipeline` on build get and the three list scopes leave those keys
 * out and skip reading them (jobs are only counted, for `job_state_counts`); `job_states[]` on
 * build get narrows its jobs; create refuses a blank commit, branch or meta-data key and a pull
 * request number out of range, naming the field.
 */
import { auth, describeEachDatabase } from '../support/context';
import { givenAgent, givenAgentPipeline, runNextJob } from '../support/agents';

describeEachDatabase('build parameters', (ctx) => {
  let base: string;
  let token: string;
  let orgSlug: string;

  beforeAll(async () => {
    const admin = await ctx().givenAdmin();
    token = admin.token;
    orgSlug = admin.org.slug;
    const p = await ctx()
      .http()
      .post(`/v2/organizations/${orgSlug}/pipelines`)
      .set(auth(token))
      .send({ name: 'Excludes', repository: 'git@github.com:acme/x.git', configuration: 'steps:\n  - command: a\n  - command: b\n' })
      .expect(201);
    base = `/v2/organizations/${orgSlug}/pipelines/${p.body.slug}/builds`;
    await ctx().http().post(base).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
  });

  /** The SQL the store ran while `fn` ran. */
  async function queriesDuring(fn: () => Promise<unknown>): Promise<string[]> {
    const sqls: string[] = [];
    const listener = (q: { sql: string }) => sqls.push(q.sql);
    ctx().services.db.on('query', listener);
    try {
      await fn();
    } finally {
      ctx().services.db.removeListener('query', listener);
    }
    return sqls;
  }

  const targets = () => [`${base}/1`, base, `/v2/organizations/${orgSlug}/builds`, '/v2/builds'];
  const first = (body: unknown) => (Array.isArray(body) ? body[0] : body) as Record<string, unknown>;

  it('leaves out jobs with exclude_jobs=true, and pipeline with exclude_pipeline=true, on get and every list', async () => {
    for (const target of targets()) {
      const plain = first((await ctx().http().get(target).set(auth(token)).expect(200)).body);
      expect(plain.jobs).toHaveLength(2);
      expect(plain.pipeline).toBeDefined();
      const noJobs = first((await ctx().http().get(`${target}?exclude_jobs=true`).set(auth(token)).expect(200)).body);
      expect({ target, jobs: 'jobs' in noJobs, pipeline: 'pipeline' in noJobs }).toEqual({ target, jobs: false, pipeline: true });
      const noPipeline = first((await ctx().http().get(`${target}?exclude_pipeline=true`).set(auth(token)).expect(200)).body);
      expect({ target, jobs: 'jobs' in noPipeline, pipeline: 'pipeline' in noPipeline }).toEqual({ target, jobs: true, pipeline: false });
      const neither = first((await ctx().http().get(`${target}?exclude_jobs=true&exclude_pipeline=true`).set(auth(token)).expect(200)).body);
      expect({ target, jobs: 'jobs' in neither, pipeline: 'pipeline' in neither }).toEqual({ target, jobs: false, pipeline: false });
      expect(neither.number).toBe(1);
      const falsy = first((await ctx().http().get(`${target}?exclude_jobs=false&exclude_pipeline=false`).set(auth(token)).expect(200)).body);
      expect(Object.keys(falsy)).toEqual(Object.keys(plain));
    }
  });

  it('does not read jobs (nor the pipeline counts built from them) when both are excluded, only how many are in each state', async () => {
    for (const target of targets()) {
      const read = await queriesDuring(() => ctx().http().get(target).set(auth(token)).expect(200));
      expect(read.some((sql) => /\bjobs\b/.test(sql))).toBe(true);
      const excluded = await queriesDuring(() => ctx().http().get(`${target}?exclude_jobs=true&exclude_pipeline=true`).set(auth(token)).expect(200));
      // The one read of jobs left is job_state_counts' count by state.
      const jobReads = excluded.filter((sql) => /\bjobs\b/.test(sql));
      expect({ target, rowReads: jobReads.filter((sql) => !/count\(\*\)[^]*group by[^)]*state/i.test(sql)) }).toEqual({ target, rowReads: [] });
      expect({ target, countReads: jobReads.length }).toEqual({ target, countReads: 1 });
    }
  });

  it('counts every job in job_state_counts whatever exclude_jobs and job_states[] leave out of jobs', async () => {
    for (const target of targets()) {
      const counts = first((await ctx().http().get(`${target}?exclude_jobs=true`).set(auth(token)).expect(200)).body).job_state_counts;
      expect({ target, counts }).toEqual({ target, counts: { total: 2, states: { scheduled: 2 } } });
    }
    const none = (await ctx().http().get(`${base}/1?job_states[]=passed`).set(auth(token)).expect(200)).body;
    expect(none.jobs).toEqual([]);
    expect(none.job_state_counts).toEqual({ total: 2, states: { scheduled: 2 } });
  });

  it('shows only the jobs in the states job_states[] names, a finished wait step as passed and a failed one as waiting_failed', async () => {
    const {
      org,
      token: t,
      reg,
      slug,
    } = await givenAgentPipeline(
      ctx(),
      'steps:\n  - command: fails\n  - wait: ~\n    continue_on_failure: true\n  - command: after\n  - wait: ~\n  - command: never\n',
    );
    await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${slug}/builds`).set(auth(t)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    const agent = await givenAgent(ctx(), reg, 'states');
    await runNextJob(ctx(), agent, 1);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/1`;
    const jobsIn = async (query: string) => {
      const b = (await ctx().http().get(`${url}${query}`).set(auth(t)).expect(200)).body as {
        jobs: { type: string; command: string | null; state: string }[];
        job_state_counts: unknown;
      };
      return { jobs: b.jobs.map((j) => `${j.type}:${j.command ?? ''}:${j.state}`), counts: b.job_state_counts };
    };
    const all = await jobsIn('');
    expect(all.jobs).toEqual(['script:fails:failed', 'waiter::passed', 'script:after:scheduled', 'waiter::waiting', 'script:never:waiting']);
    const counts = { total: 5, states: { failed: 1, passed: 1, scheduled: 1, waiting: 2 } };
    expect(all.counts).toEqual(counts);
    expect(await jobsIn('?job_states[]=failed')).toEqual({ jobs: ['script:fails:failed'], counts });
    expect(await jobsIn('?job_states[]=scheduled&job_states[]=waiting')).toEqual({ jobs: all.jobs.slice(2), counts });
    expect(await jobsIn('?job_states=scheduled')).toEqual({ jobs: ['script:after:scheduled'], counts });
    // The build fails its last wait step once "after" fails: a wait that ended waiting_failed did
    // not finish (the docs' "finished waiter" matches passed), so it matches waiting_failed only.
    await runNextJob(ctx(), agent, 1);
    const failedWait = await jobsIn('?job_states[]=passed');
    expect(failedWait.jobs).toEqual(['waiter::passed']);
    expect((await jobsIn('?job_states[]=waiting_failed')).jobs).toEqual(['waiter::waiting_failed', 'script:never:waiting_failed']);
    const refused = await ctx().http().get(`${url}?job_states[]=finished`).set(auth(t)).expect(400);
    expect(refused.body.message).toMatch(/job_states/);
  });

  it('refuses exclude values that are not true or false', async () => {
    const res = await ctx().http().get(`${base}?exclude_jobs=yes`).set(auth(token)).expect(400);
    expect(res.body.message).toBe('Invalid parameter exclude_jobs: must be true, false, 1 or 0');
  });

  it("takes meta-data values as the docs' example sends them: a boolean or a number is kept as its text", async () => {
    const created = await ctx()
      .http()
      .post(base)
      .set(auth(token))
      .send({ commit: 'HEAD', branch: 'main', meta_data: { 'some build data': 'value', 'other build data': true, count: 42, off: false } })
      .expect(201);
    const expected = { 'some build data': 'value', 'other build data': 'true', count: '42', off: 'false' };
    expect(created.body.meta_data).toEqual(expected);
    expect((await ctx().http().get(`${base}/${created.body.number}`).set(auth(token)).expect(200)).body.meta_data).toEqual(expected);
    // A fraction or a number past 2^53 has no one text: refused, as before.
    for (const value of [null, { nested: 'x' }, ['x'], 0.5, 2 ** 60]) {
      const res = await ctx()
        .http()
        .post(base)
        .set(auth(token))
        .send({ commit: 'HEAD', branch: 'main', meta_data: { key: value } });
      expect({ value, status: res.status, fields: (res.body.errors as { field: string }[]).map((e) => e.field) }).toEqual({
        value,
        status: 422,
        fields: ['meta_data.key'],
      });
    }
  });

  it('refuses a blank commit, branch or meta-data key and a pull request number out of range, naming the field', async () => {
    const cases: [Record<string, unknown>, { field: string; code: string }[]][] = [
      [{ commit: '', branch: 'main' }, [{ field: 'commit', code: "can't be blank" }]],
      [{ commit: 'HEAD', branch: '' }, [{ field: 'branch', code: "can't be blank" }]],
      [{ commit: 'HEAD', branch: 'main', meta_data: { '': 'x' } }, [{ field: 'meta_data', code: "has an invalid key: can't be blank" }]],
      [{ commit: 'HEAD', branch: 'main', pull_request_id: -1 }, [{ field: 'pull_request_id', code: 'must be at least 1' }]],
      [{ commit: 'HEAD', branch: 'main', pull_request_id: 0 }, [{ field: 'pull_request_id', code: 'must be at least 1' }]],
      [{ commit: 'HEAD', branch: 'main', pull_request_id: 1e20 }, [{ field: 'pull_request_id', code: 'must be at most 2147483647' }]],
      [{ commit: 'HEAD', branch: 'main', pull_request_id: 1.5 }, [{ field: 'pull_request_id', code: 'must be a whole number' }]],
      [{ commit: 'HEAD', branch: 'main', pull_request_id: '-1' }, [{ field: 'pull_request_id', code: 'must be a whole number' }]],
      [{ commit: 'HEAD', branch: 'main', env: { A: 1 } }, [{ field: 'env.A', code: 'must be a string' }]],
      [{ commit: 'HEAD', branch: 'main', clean_checkout: 'yes' }, [{ field: 'clean_checkout', code: 'must be true or false' }]],
    ];
    for (const [body, errors] of cases) {
      const res = await ctx().http().post(base).set(auth(token)).send(body);
      expect({ body, status: res.status, res: res.body }).toEqual({ body, status: 422, res: { message: 'Validation Failed', errors } });
    }
    // The contract says an integer; the digits as a string, and "" for none, are accepted as before.
    for (const pr of [42, '42', '']) {
      const res = await ctx().http().post(base).set(auth(token)).send({ commit: 'HEAD', branch: 'main', pull_request_id: pr });
      expect({ pr, status: res.status }).toEqual({ pr, status: 201 });
    }
  });
});
