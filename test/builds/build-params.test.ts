/**
 * Build reads and writes as the real API takes them (issue 12 item 4, issue 13 item 7):
 * `exclude_jobs` and `exclude_pipeline` on build get and the three list scopes leave those keys
 * out and skip reading them; create refuses a blank commit, branch or meta-data key and a pull
 * request number out of range, naming the field.
 */
import { auth, describeEachDatabase } from '../support/context';

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

  it('does not read jobs (nor the pipeline counts built from them) when both are excluded', async () => {
    for (const target of targets()) {
      const read = await queriesDuring(() => ctx().http().get(target).set(auth(token)).expect(200));
      expect(read.some((sql) => /\bjobs\b/.test(sql))).toBe(true);
      const excluded = await queriesDuring(() => ctx().http().get(`${target}?exclude_jobs=true&exclude_pipeline=true`).set(auth(token)).expect(200));
      expect({ target, jobReads: excluded.filter((sql) => /\bjobs\b/.test(sql)) }).toEqual({ target, jobReads: [] });
    }
  });

  it('refuses exclude values that are not true or false', async () => {
    const res = await ctx().http().get(`${base}?exclude_jobs=yes`).set(auth(token)).expect(400);
    expect(res.body.message).toBe('Invalid parameter exclude_jobs: must be true, false, 1 or 0');
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
