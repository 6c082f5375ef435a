/**
 * A test result's own `tags` (importing_json.md, "Execution level custom tags"): checked by the
 * tagging rules, stored with the execution, shown in the run's failed executions over the
 * upload's tags, and weighed one execution at a time by the test lists' `tags` filter.
 */
import { auth, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { givenSuite, postUpload, result, suiteAuth, upload, type SuiteFixture } from '../uploads/helpers';

const V = { 'Buildkite-Version': '2026-08-01' };

type TestJson = { name: string; executions_count: number; executions?: { id: string }[]; latest_fail?: { id: string } | null };

describeEachDatabase('a test result’s own tags', (ctx) => {
  const post = (s: SuiteFixture, body: object) => postUpload(ctx(), s, body);
  const get = (s: SuiteFixture, path: string) => ctx().http().get(`${s.base}${path}`).set(auth(s.token));

  it('shows them on the failed executions over the upload’s tags, under the mutable ones, without the duplicated fields', async () => {
    const s = await givenSuite(ctx());
    const { run_id } = await post(
      s,
      upload(
        { key: 'r1', branch: 'main', commit_sha: 'c1' },
        [
          result('tagged', 'failed', { tags: { env: 'staging', 'language.name': 'ruby', 'scm.branch': 'spoof' } }),
          result('untagged', 'failed'),
          result('passes', 'passed', { tags: { env: 'prod' } }),
        ],
        { team: 'web', env: 'ci', result: 'x' },
      ),
    );
    const path = `/runs/${run_id}/failed_executions`;
    const [tagged, untagged] = (await get(s, path).expect(200)).body;
    expect(tagged.test_name).toBe('tagged');
    expect(tagged.tags).toEqual({ team: 'web', env: 'staging', 'language.name': 'ruby' });
    expect(untagged.tags).toEqual({ team: 'web', env: 'ci' });

    await ctx()
      .http()
      .put(`${s.base}/execution-tags`)
      .set(auth(s.token))
      .send({ executions: [{ id: tagged.execution_id, tags: { 'mut.reason': 'api_timeout' } }] })
      .expect(200);
    expect((await get(s, path).expect(200)).body[0].tags).toEqual({ team: 'web', env: 'staging', 'language.name': 'ruby', 'mut.reason': 'api_timeout' });

    // A multipart JSON file carries them the same way.
    const file = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .field('format', 'json')
      .field('run_env[key]', 'r2')
      .attach('data', Buffer.from(JSON.stringify([result('from a file', 'failed', { tags: { shard: '3' } })])), 'results.json')
      .expect(202);
    expect((await get(s, `/runs/${file.body.run_id}/failed_executions`).expect(200)).body[0].tags).toEqual({ shard: '3' });
  });

  it('rejects a result whose tags break the tagging rules, on its own, with the reason', async () => {
    const s = await givenSuite(ctx());
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']));
    const bad: [Record<string, unknown> | unknown, string, RegExp][] = [
      [{ 'mut.reason': 'x' }, 'tags.mut.reason', /reserved/],
      [{ mut: 'x' }, 'tags.mut', /reserved/],
      [eleven, 'tags', /too many tags/],
      [{ '1st': 'x' }, 'tags', /not a tag key/],
      [{ ['k'.repeat(64)]: 'x' }, 'tags', /not a tag key/],
      [{ 'has space': 'x' }, 'tags', /not a tag key/],
      [{ team: ' ' }, 'tags.team', /blank/],
      [{ team: 3 }, 'tags.team', /must be a string/],
      // 64 characters, 128 bytes of UTF-8.
      [{ team: 'é'.repeat(64) }, 'tags.team', /127 bytes/],
      [['team', 'web'], 'tags', /must be an object/],
      // tags.md: not a dot-separated prefix of another key (`service.instance` is not one of `service.instance-id`).
      [{ 'service.instance.id': 'a', service: 'b' }, 'tags.service', /dot-separated prefix of the key "service.instance.id"/],
    ];
    const res = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .send(
        upload({ key: 'r1' }, [
          ...bad.map(([tags], i) => result(`bad ${i}`, 'failed', { tags })),
          result('fine', 'failed', { tags: { 'service.instance-id_2': 'é'.repeat(63), 'service.instance': 'x', team: 'web' } }),
          result('none', 'failed', { tags: null }),
        ]),
      )
      .expect(202);
    expect(res.body.queued).toBe(2);
    expect(res.body.errors).toEqual(bad.map(([, field, code], index) => ({ index, id: expect.any(String), field, code: expect.stringMatching(code) })));
    const failed = (await get(s, `/runs/${res.body.run_id}/failed_executions`).expect(200)).body;
    expect(failed.map((e: { test_name: string; tags: object }) => [e.test_name, e.tags])).toEqual([
      ['fine', { 'service.instance-id_2': 'é'.repeat(63), 'service.instance': 'x', team: 'web' }],
      ['none', {}],
    ]);
  });

  it('rejects a result whose own tag keys and its upload’s are dot-separated prefixes of each other (tags.md)', async () => {
    const s = await givenSuite(ctx());
    const res = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .send(
        upload(
          { key: 'r1' },
          [
            result('longer', 'failed', { tags: { 'service.name': 'api' } }),
            result('shorter', 'failed', { tags: { language: 'ruby' } }),
            result('fine', 'failed', { tags: { team: 'web' } }),
          ],
          { service: 'x', 'language.version': '3.3' },
        ),
      )
      .expect(202);
    expect(res.body.queued).toBe(1);
    expect(res.body.errors).toEqual([
      { index: 0, id: expect.any(String), field: 'tags.service.name', code: 'has the upload\'s tag key "service" as a dot-separated prefix' },
      { index: 1, id: expect.any(String), field: 'tags.language', code: 'is a dot-separated prefix of the upload\'s tag key "language.version"' },
    ]);
  });

  it('filters a suite’s tests by each execution’s own tags over its upload’s', async () => {
    const s = await givenSuite(ctx());
    const d = (seconds: number) => ({ history: { duration: seconds } });
    // Run r1's upload is api's, but one execution of `mixed` says web; run r2's is web's, but `other` says api.
    await post(
      s,
      upload(
        { key: 'r1', branch: 'main' },
        [result('mixed', 'passed', { ...d(1), tags: { team: 'web' } }), result('mixed', 'failed', d(2)), result('api only', 'passed', d(1))],
        { team: 'api' },
      ),
    );
    await post(
      s,
      upload({ key: 'r2', branch: 'feature' }, [result('web only', 'passed', d(1)), result('other', 'passed', { ...d(1), tags: { team: 'api' } })], {
        team: 'web',
      }),
    );
    const list = async (q: string) =>
      Object.fromEntries(((await get(s, `/tests?${q}`).set(V).expect(200)).body as TestJson[]).map((t) => [t.name, t.executions_count] as const).sort());

    expect(await list('tags=team:web')).toEqual({ mixed: 1, 'web only': 1 });
    expect(await list('tags=team:api')).toEqual({ mixed: 1, 'api only': 1, other: 1 });
    expect(await list('tags=team:!web')).toEqual({ mixed: 1, 'api only': 1, other: 1 });
    expect(await list('tags=team:w*,result:passed')).toEqual({ mixed: 1, 'web only': 1 });
    // The branch is the run's: an execution's own tags do not take it past the branch filter.
    expect(await list('tags=team:web&branch=feature')).toEqual({ 'web only': 1 });
    expect(await list('tags=team:api&branch=feature')).toEqual({ other: 1 });
    // Without a tag filter every execution counts, tagged or not.
    expect(await list('')).toEqual({ mixed: 2, 'api only': 1, 'web only': 1, other: 1 });
    // A custom tag named like a run's own field does not stand in for it, at the upload's level or the result's.
    await post(s, upload({ key: 'r3', branch: 'main' }, [result('spoofed', 'passed', { tags: { 'scm.branch': 'feature' } })], { 'scm.branch': 'feature' }));
    expect(await list('tags=scm.branch:feature')).toEqual({ 'web only': 1, other: 1 });
    expect((await list('tags=scm.branch:main')).spoofed).toBe(1);
    // A result's own tags that do not name a filtered key leave it to its upload's (stored with it), and both filter together.
    await post(s, upload({ key: 'r4', branch: 'main' }, [result('sharded', 'passed', { tags: { shard: '1' } })], { team: 'ops' }));
    expect(await list('tags=team:ops')).toEqual({ sharded: 1 });
    expect(await list('tags=team:ops,shard:1')).toEqual({ sharded: 1 });
    expect(await list('tags=team:ops,shard:2')).toEqual({});
    // The `mixed` test counted for team:web is its passed execution only.
    const mixed = ((await get(s, '/tests?tags=team:web').set(V).expect(200)).body as (TestJson & Record<string, unknown>)[]).find((t) => t.name === 'mixed');
    expect(mixed).toMatchObject({ executions_count_by_result: { passed: 1, failed: 0 }, duration_sum: 1, reliability: 1 });
  });

  it('keeps a build’s tests, their executions and latest failure to the executions the tags filter counts', async () => {
    const { org, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token);
    const build = await givenBuild(ctx(), org, pipeline, token);
    const res = await ctx()
      .http()
      .post(`/v2/analytics/organizations/${org.slug}/suites`)
      .set(auth(token))
      .send({ name: 'Unit', show_api_token: true })
      .expect(201);
    const s: SuiteFixture = { org, token, suite: res.body, apiToken: res.body.api_token, base: `/v2/analytics/organizations/${org.slug}/suites/unit` };
    const { run_id } = await post(
      s,
      upload(
        { key: build.id, ci: 'buildkite', branch: 'main' },
        [result('t', 'failed', { tags: { shard: '1' } }), result('t', 'failed', { tags: { shard: '2' } }), result('u', 'passed', { tags: { shard: '2' } })],
        { shard: '0' },
      ),
    );
    const failed = (await get(s, `/runs/${run_id}/failed_executions`).expect(200)).body as { execution_id: string; tags: { shard: string } }[];
    const shard1 = failed.find((e) => e.tags.shard === '1')!.execution_id;
    const tests = async (q: string) =>
      (await ctx().http().get(`/v2/analytics/organizations/${org.slug}/builds/${build.id}/tests?${q}`).set(auth(token)).expect(200)).body as TestJson[];

    const shard1Tests = await tests('tags=shard:1&include=executions,latest_fail');
    expect(shard1Tests.map((t) => [t.name, t.executions_count, t.executions!.map((e) => e.id), t.latest_fail?.id])).toEqual([['t', 1, [shard1], shard1]]);
    expect((await tests('tags=shard:2')).map((t) => t.name).sort()).toEqual(['t', 'u']);
    expect(await tests('tags=shard:0')).toEqual([]);
  });
});
