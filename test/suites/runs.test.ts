/**
 * A suite's runs (`GET .../runs`, with the documented `build_id` filter) and a run's failed
 * executions (`GET .../runs/{id}/failed_executions`), which the docs call a paginated list.
 */
import crypto from 'node:crypto';
import { auth, describeEachDatabase } from '../support/context';
import { RUN_STALE_AFTER_MS } from '../../src/suites/serialize';
import { movableClock } from '../support/agents';
import { givenSuite, postUpload, result, suiteAuth, upload, type SuiteFixture } from '../uploads/helpers';

describeEachDatabase('a suite’s runs and a run’s failed executions', (ctx) => {
  const clock = movableClock();
  afterEach(() => clock.reset());
  const post = (s: SuiteFixture, body: object) => postUpload(ctx(), s, body);
  const get = (s: SuiteFixture, path: string) => ctx().http().get(`${s.base}${path}`).set(auth(s.token));

  it('filters the runs by build_id: the Buildkite runs whose build_id it is, on every page', async () => {
    const s = await givenSuite(ctx());
    const build = crypto.randomUUID();
    const other = crypto.randomUUID();
    const first = await post(s, upload({ ci: 'buildkite', key: build }, [result('a', 'passed')]));
    await post(s, upload({ ci: 'buildkite', key: other }, [result('a', 'passed')]));
    // The same key from another CI is no Buildkite build: its run has no build_id.
    await post(s, upload({ ci: 'github_actions', key: build }, [result('a', 'passed')]));

    const all = await get(s, '/runs').expect(200);
    expect(all.body).toHaveLength(2);
    const filtered = await get(s, `/runs?build_id=${build}`).expect(200);
    expect(filtered.body).toEqual([expect.objectContaining({ id: first.run_id, build_id: build })]);
    // The build's UUID in capitals is the same build.
    expect((await get(s, `/runs?build_id=${build.toUpperCase()}`).expect(200)).body.map((r: { id: string }) => r.id)).toEqual([first.run_id]);
    expect((await get(s, `/runs?build_id=${crypto.randomUUID()}`).expect(200)).body).toEqual([]);

    // Several runs of one build in the suite (a run per key, the key is the build): still only its own.
    const second = await givenSuite(ctx(), 'Other Suite');
    await post(second, upload({ ci: 'buildkite', key: build }, [result('b', 'failed')]));
    expect((await get(s, `/runs?build_id=${build}`).expect(200)).body).toHaveLength(1);
    const page = await get(s, `/runs?build_id=${other}&per_page=1`).expect(200);
    expect(page.body.map((r: { build_id: string }) => r.build_id)).toEqual([other]);
    expect(page.headers.link).toBeUndefined();
  });

  it('has the result runs.md describes: pending until a result is stored, passed or failed, stale after an hour without one', async () => {
    const s = await givenSuite(ctx());
    const runOf = async (key: string, data: unknown[]) => {
      const res = await ctx().http().post('/v1/uploads').set(suiteAuth(s.apiToken)).send(upload({ key }, data)).expect(202);
      return String(res.body.run_id);
    };
    const resultOf = async (id: string) => (await get(s, `/runs/${id}`).expect(200)).body.result as string;
    // Every result refused: the run is there, with none.
    const empty = await runOf('empty', [{ ...result('x', 'passed'), name: undefined }]);
    const skipped = await runOf('skipped', [result('later', 'skipped')]);
    const failing = await runOf('failing', [result('ok', 'passed'), result('broken', 'failed')]);
    expect([await resultOf(empty), await resultOf(skipped), await resultOf(failing)]).toEqual(['pending', 'passed', 'failed']);
    // A later upload of the run moves it on.
    await runOf('skipped', [result('broken too', 'failed')]);
    expect(await resultOf(skipped)).toBe('failed');
    clock.advance(RUN_STALE_AFTER_MS);
    expect(await resultOf(empty)).toBe('stale');
    expect((await get(s, '/runs').expect(200)).body.map((r: { result: string }) => r.result)).toEqual(['failed', 'failed', 'stale']);
  });

  it('refuses a build_id that is not a UUID with a 400 and a message', async () => {
    const s = await givenSuite(ctx());
    const res = await get(s, '/runs?build_id=42').expect(400);
    expect(res.body.message).toEqual(expect.stringContaining('build_id'));
  });

  it('pages the failed executions in upload order with page, per_page and Link', async () => {
    const s = await givenSuite(ctx());
    const names = ['f1', 'f2', 'f3', 'f4', 'f5'];
    const { run_id } = await post(
      s,
      upload({ key: 'r1' }, [result('ok', 'passed'), ...names.slice(0, 3).map((n) => result(n, 'failed')), result('skip', 'skipped')]),
    );
    // A second upload to the same run continues its order.
    await post(
      s,
      upload(
        { key: 'r1' },
        names.slice(3).map((n) => result(n, 'failed')),
      ),
    );
    const path = `/runs/${run_id}/failed_executions`;
    const testNames = (body: { test_name: string }[]) => body.map((e) => e.test_name);

    const everything = await get(s, path).expect(200);
    expect(testNames(everything.body)).toEqual(names);
    expect(everything.headers.link).toBeUndefined();

    const page1 = await get(s, `${path}?per_page=2`).expect(200);
    expect(testNames(page1.body)).toEqual(['f1', 'f2']);
    expect(page1.headers.link).toContain('per_page=2&page=2>; rel="next"');
    const page2 = await get(s, `${path}?per_page=2&page=2`).expect(200);
    expect(testNames(page2.body)).toEqual(['f3', 'f4']);
    expect(page2.headers.link).toContain('rel="prev"');
    expect(page2.headers.link).toContain('per_page=2&page=3>; rel="next"');
    const page3 = await get(s, `${path}?per_page=2&page=3&include_failure_expanded=true`).expect(200);
    expect(testNames(page3.body)).toEqual(['f5']);
    expect(page3.body[0].failure_expanded).toEqual([{ expanded: ['expected true', 'got false'], backtrace: ['user_spec.rb:42'] }]);
    expect(page3.headers.link).not.toContain('rel="next"');
    // The other query parameters are kept in the links.
    expect(page2.headers.link).not.toContain('include_failure_expanded');
    expect((await get(s, `${path}?per_page=2&include_failure_expanded=true`).expect(200)).headers.link).toContain('include_failure_expanded=true');

    expect((await get(s, `${path}?page=4&per_page=2`).expect(200)).body).toEqual([]);
    expect((await get(s, `${path}?per_page=101`).expect(400)).body.message).toEqual(expect.any(String));
  });
});
