/**
 * An upload's `tags`: applied to each of that upload's executions (javascript_collectors.md:
 * "Tags configured on the collector will be included in each upload batch, and will be applied
 * server-side to every execution therein"), so the uploads of one run may each carry their own;
 * checked by the tagging rules (tags.md: "Up to 10 tags may be specified at the upload level",
 * no `mut.` keys); and runs stored before upload tags moved to executions still read as they did.
 */
import { auth, describeEachDatabase } from '../support/context';
import { givenSuite, postUpload, result, suiteAuth, upload, type SuiteFixture } from './helpers';

const V = { 'Buildkite-Version': '2026-08-01' };

type FailedJson = { execution_id: string; test_name: string; tags: Record<string, string> };
type TestJson = { name: string; executions_count: number };

describeEachDatabase('an upload’s tags', (ctx) => {
  const post = (s: SuiteFixture, body: object) => postUpload(ctx(), s, body);
  const get = (s: SuiteFixture, path: string) => ctx().http().get(`${s.base}${path}`).set(auth(s.token));
  const failedTags = async (s: SuiteFixture, runId: string) =>
    Object.fromEntries(((await get(s, `/runs/${runId}/failed_executions`).expect(200)).body as FailedJson[]).map((e) => [e.test_name, e.tags]));
  const list = async (s: SuiteFixture, q: string) =>
    Object.fromEntries(((await get(s, `/tests?${q}`).set(V).expect(200)).body as TestJson[]).map((t) => [t.name, t.executions_count] as const).sort());

  it('apply to that upload’s executions only, when the uploads of one run carry different ones', async () => {
    const s = await givenSuite(ctx());
    const env = { key: 'build-1', branch: 'main', commit_sha: 'c1' };
    // Three shards of one build: two tagged differently, one untagged; results' own tags win.
    const { run_id } = await post(
      s,
      upload(env, [result('backend a', 'failed'), result('backend b', 'failed', { tags: { team: 'payments', shard: '1' } })], {
        team: 'backend',
        'cloud.region': 'eu',
      }),
    );
    expect((await post(s, upload(env, [result('frontend a', 'failed')], { team: 'frontend' }))).run_id).toBe(run_id);
    expect((await post(s, upload(env, [result('untagged a', 'failed'), result('untagged b', 'passed', { tags: { shard: '3' } })]))).run_id).toBe(run_id);

    expect(await failedTags(s, run_id)).toEqual({
      'backend a': { team: 'backend', 'cloud.region': 'eu' },
      'backend b': { team: 'payments', 'cloud.region': 'eu', shard: '1' },
      'frontend a': { team: 'frontend' },
      'untagged a': {},
    });

    // The tests list weighs each execution by its own upload's tags.
    expect(await list(s, 'tags=team:backend')).toEqual({ 'backend a': 1 });
    expect(await list(s, 'tags=team:frontend')).toEqual({ 'frontend a': 1 });
    expect(await list(s, 'tags=team:payments')).toEqual({ 'backend b': 1 });
    expect(await list(s, 'tags=team:!backend')).toEqual({ 'backend b': 1, 'frontend a': 1, 'untagged a': 1, 'untagged b': 1 });
    expect(await list(s, 'tags=team:x*')).toEqual({});
    expect(await list(s, 'tags=team:front*')).toEqual({ 'frontend a': 1 });
    expect(await list(s, 'tags=team:p*')).toEqual({ 'backend b': 1 });
    expect(await list(s, 'tags=cloud.region:eu')).toEqual({ 'backend a': 1, 'backend b': 1 });
    expect(await list(s, 'tags=cloud.region:eu,team:!payments')).toEqual({ 'backend a': 1 });
    expect(await list(s, 'tags=shard:3,result:passed')).toEqual({ 'untagged b': 1 });
    expect(await list(s, 'tags=cloud.region:e*,shard:1')).toEqual({ 'backend b': 1 });
    expect(await list(s, '')).toEqual({ 'backend a': 1, 'backend b': 1, 'frontend a': 1, 'untagged a': 1, 'untagged b': 1 });
  });

  it('read runs stored before they moved to executions as before, and move them when such a run takes another upload', async () => {
    const s = await givenSuite(ctx());
    const env = { key: 'legacy', branch: 'main' };
    const { run_id } = await post(s, upload(env, [result('old a', 'failed'), result('old b', 'failed', { tags: { team: 'own' } })], { team: 'old' }));
    // As an older Windsock stored it: the first upload's tags on the run, executions with their own tags only.
    const db = ctx().services.db;
    await db('test_runs')
      .where({ id: run_id })
      .update({ tags: JSON.stringify({ team: 'old', os: 'linux' }) });
    await db('test_executions').where({ run_id }).update({ tags: null });
    const oldB = ((await get(s, `/runs/${run_id}/failed_executions`).expect(200)).body as FailedJson[]).find((e) => e.test_name === 'old b')!;
    await db('test_executions')
      .where({ id: oldB.execution_id })
      .update({ tags: JSON.stringify({ team: 'own' }) });

    const before = { 'old a': { team: 'old', os: 'linux' }, 'old b': { team: 'own', os: 'linux' } };
    expect(await failedTags(s, run_id)).toEqual(before);
    expect(await list(s, 'tags=team:old')).toEqual({ 'old a': 1 });
    expect(await list(s, 'tags=os:linux')).toEqual({ 'old a': 1, 'old b': 1 });

    // Another upload to that run: its executions get its own tags and not the first upload's.
    await post(s, upload(env, [result('new a', 'failed')], { team: 'new' }));
    await post(s, upload(env, [result('new b', 'failed')]));
    expect(await failedTags(s, run_id)).toEqual({ ...before, 'new a': { team: 'new' }, 'new b': {} });
    expect(await list(s, 'tags=team:old')).toEqual({ 'old a': 1 });
    expect(await list(s, 'tags=team:new')).toEqual({ 'new a': 1 });
    expect(await list(s, 'tags=os:linux')).toEqual({ 'old a': 1, 'old b': 1 });
    expect(await list(s, 'tags=team:!old')).toEqual({ 'old b': 1, 'new a': 1, 'new b': 1 });
    // The move happened once: the run keeps no tags of its own now.
    expect(JSON.parse((await db('test_runs').where({ id: run_id }).first('tags'))!.tags)).toEqual({});
  });

  it('are refused with the upload, by the rules a result’s own tags follow, naming the tag', async () => {
    const s = await givenSuite(ctx());
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`k${i}`, 'v']));
    const bad: [Record<string, string>, string, RegExp][] = [
      [eleven, 'tags', /too many/],
      [{ 'mut.reason': 'x' }, 'tags.mut.reason', /reserved/],
      [{ mut: 'x' }, 'tags.mut', /reserved/],
      [{ '1st': 'x' }, 'tags', /key/],
      [{ 'has space': 'x' }, 'tags', /key/],
      [{ ['k'.repeat(64)]: 'x' }, 'tags', /key/],
      [{ team: '' }, 'tags.team', /blank/],
      [{ team: '  ' }, 'tags.team', /blank/],
      // 64 characters, 128 bytes of UTF-8.
      [{ team: 'é'.repeat(64) }, 'tags.team', /127 bytes/],
      [{ team: 'x'.repeat(128) }, 'tags.team', /too long/],
    ];
    for (const [tags, field, code] of bad) {
      const res = await ctx()
        .http()
        .post('/v1/uploads')
        .set(suiteAuth(s.apiToken))
        .send(upload({ key: 'refused' }, [result('a', 'passed')], tags));
      expect({ tags, status: res.status }).toEqual({ tags, status: 422 });
      expect({ tags, errors: res.body.errors }).toEqual({ tags, errors: [{ field, code: expect.stringMatching(code) }] });
    }
    // The same through a multipart form (`tags[...]` fields), JUnit or JSON.
    const form = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .field('format', 'junit')
      .field('run_env[key]', 'refused')
      .field('tags[mut.reason]', 'x')
      .field('tags[team]', ' ')
      .attach('data', Buffer.from('<testsuite><testcase classname="A" name="b"/></testsuite>'), 'junit.xml')
      .expect(422);
    expect(form.body.errors).toEqual([
      { field: 'tags.mut.reason', code: expect.stringMatching(/reserved/) },
      { field: 'tags.team', code: "can't be blank" },
    ]);
    // Nothing of a refused upload is stored.
    expect(await ctx().services.db('test_runs').where({ suite_id: s.suite.id }).first('id')).toBeUndefined();

    // At the limits: 10 tags, a 63-byte key, a 127-byte value, keys that merely start with `mut`.
    const fine = {
      ...Object.fromEntries(Array.from({ length: 7 }, (_, i) => [`k${i}`, 'v'])),
      ['k'.repeat(63)]: 'é'.repeat(63) + 'x',
      mutation: 'y',
      'mutable.tag': 'z',
    };
    const { run_id } = await post(s, upload({ key: 'fine' }, [result('tagged', 'failed')], fine));
    expect((await failedTags(s, run_id)).tagged).toEqual(fine);
  });
});
