/**
 * Test Engine quarantine and labels: skip, mute and enable a test, the muted and skipped lists,
 * find a test by scope and name, add and remove labels, and executions' mutable tags; what a
 * quarantine changes (a muted test's failures do not fail its run; the `state` filter and the
 * web pages show it); scopes, tenancy and Teams.
 */
import { clock } from '../../src/core/clock';
import findSample from '../fixtures/samples/test_engine_tests__03_find-a-test-with-scope-and-name.json';
import labelsSample from '../fixtures/samples/test_engine_tests__04_add-or-remove-labels-from-a-test.json';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { HTML, signedIn } from '../web/support';
import { givenSuite, postUpload, result, suiteAuth, upload, type SuiteFixture } from '../uploads/helpers';

const V = { 'Buildkite-Version': '2026-08-01' };
type TestJson = { id: string; name: string } & Record<string, unknown>;

describeEachDatabase('Test Engine quarantine, labels and execution tags', (ctx) => {
  const post = (s: SuiteFixture, body: object) => postUpload(ctx(), s, body);
  const api = () => ctx().http();
  /** A suite whose first run has `steady` passing and `wobbly` failing, on commit c1. */
  const seed = async () => {
    const s = await givenSuite(ctx());
    const run = await post(s, upload({ key: 'r1', commit_sha: 'c1', branch: 'main' }, [result('steady', 'passed'), result('wobbly', 'failed')]));
    const tests = (await api().get(`${s.base}/tests`).set(auth(s.token)).expect(200)).body as TestJson[];
    const id = (name: string) => tests.find((t) => t.name === name)!.id;
    return { s, run, steady: id('steady'), wobbly: id('wobbly') };
  };
  const names = (body: TestJson[]) => body.map((t) => t.name).sort();

  it('skips, mutes and enables a test, answering it as the docs show, and lists the muted and skipped ones', async () => {
    const { s, steady, wobbly } = await seed();
    const skipped = await api().put(`${s.base}/tests/${steady}/skip`).set(auth(s.token)).expect(200);
    expectConforms(skipped.body, [findSample], responseSchema('skipTest'));
    expect(skipped.body).toEqual({
      id: steady,
      url: `${PUBLIC_URL}${s.base}/tests/${steady}`,
      web_url: `${PUBLIC_URL}/organizations/${s.org.slug}/analytics/suites/${s.suite.slug}/tests/${steady}`,
      scope: 'User#email',
      name: 'steady',
      location: './spec/models/user_spec.rb:6',
      file_name: './spec/models/user_spec.rb',
    });
    await api().put(`${s.base}/tests/${wobbly}/mute`).set(auth(s.token)).expect(200);

    const muted = await api().get(`${s.base}/tests/muted`).set(auth(s.token)).expect(200);
    expectConforms(muted.body, [[findSample]], responseSchema('listMutedTests'));
    expect(names(muted.body)).toEqual(['wobbly']);
    expect(names((await api().get(`${s.base}/tests/skipped`).set(auth(s.token)).expect(200)).body)).toEqual(['steady']);

    // The state filter of the versioned list now tells them apart.
    const byState = async (state: string) => names((await api().get(`${s.base}/tests?state=${state}`).set(auth(s.token)).set(V).expect(200)).body);
    expect(await byState('muted')).toEqual(['wobbly']);
    expect(await byState('skipped')).toEqual(['steady']);
    expect(await byState('enabled')).toEqual([]);

    // Enabled again: out of both lists.
    const enabled = await api().put(`${s.base}/tests/${wobbly}/enable`).set(auth(s.token)).expect(200);
    expect(enabled.body.id).toBe(wobbly);
    expect((await api().get(`${s.base}/tests/muted`).set(auth(s.token)).expect(200)).body).toEqual([]);
    expect(await byState('enabled')).toEqual(['wobbly']);

    // An unknown test, and a test of another suite, are 404s.
    await api().put(`${s.base}/tests/00000000-0000-4000-8000-000000000000/skip`).set(auth(s.token)).expect(404);
    await api().put(`${s.base}/tests/not-a-uuid/mute`).set(auth(s.token)).expect(404);
    const other = await givenSuite(ctx(), 'Other');
    await api().put(`${other.base}/tests/${steady}/skip`).set(auth(other.token)).expect(404);
    await api().put(`${s.base}/tests/${steady}/skip`).set(auth(other.token)).expect(404);
  });

  it('pages the muted tests, most recently muted first', async () => {
    const s = await givenSuite(ctx());
    await post(
      s,
      upload(
        { key: 'r1' },
        ['a', 'b', 'c'].map((n) => result(n, 'passed')),
      ),
    );
    const tests = (await api().get(`${s.base}/tests`).set(auth(s.token)).expect(200)).body as TestJson[];
    for (const name of ['b', 'a', 'c']) {
      await api()
        .put(`${s.base}/tests/${tests.find((t) => t.name === name)!.id}/mute`)
        .set(auth(s.token))
        .expect(200);
      clock.advance(1000); // moves on: the order is by when each was muted
    }
    const first = await api().get(`${s.base}/tests/muted?per_page=2`).set(auth(s.token)).expect(200);
    expect(first.body.map((t: TestJson) => t.name)).toEqual(['c', 'a']);
    expect(first.headers.link).toContain('rel="next"');
    const second = await api().get(`${s.base}/tests/muted?per_page=2&page=2`).set(auth(s.token)).expect(200);
    expect(second.body.map((t: TestJson) => t.name)).toEqual(['b']);
  });

  it('does not fail a run with a muted test’s failures, and counts them again once enabled', async () => {
    const { s, run, wobbly } = await seed();
    expect((await api().get(`${s.base}/runs/${run.run_id}`).set(auth(s.token)).expect(200)).body.result).toBe('failed');
    await api().put(`${s.base}/tests/${wobbly}/mute`).set(auth(s.token)).expect(200);

    const mutedRun = await post(s, upload({ key: 'r2', commit_sha: 'c2' }, [result('steady', 'passed'), result('wobbly', 'failed')]));
    expect((await api().get(`${s.base}/runs/${mutedRun.run_id}`).set(auth(s.token)).expect(200)).body.result).toBe('passed');
    // The failure is still recorded: the run's failed executions and the test's counts show it.
    const failures = await api().get(`${s.base}/runs/${mutedRun.run_id}/failed_executions`).set(auth(s.token)).expect(200);
    expect(failures.body.map((e: { test_name: string }) => e.test_name)).toEqual(['wobbly']);
    const test = await api().get(`${s.base}/tests/${wobbly}`).set(auth(s.token)).set(V).expect(200);
    expect(test.body.executions_count_by_result).toEqual({ passed: 0, failed: 2 });

    // Another test's failure still fails the run.
    const mixed = await post(s, upload({ key: 'r3', commit_sha: 'c3' }, [result('steady', 'failed'), result('wobbly', 'failed')]));
    expect((await api().get(`${s.base}/runs/${mixed.run_id}`).set(auth(s.token)).expect(200)).body.result).toBe('failed');

    await api().put(`${s.base}/tests/${wobbly}/enable`).set(auth(s.token)).expect(200);
    const after = await post(s, upload({ key: 'r4', commit_sha: 'c4' }, [result('wobbly', 'failed')]));
    expect((await api().get(`${s.base}/runs/${after.run_id}`).set(auth(s.token)).expect(200)).body.result).toBe('failed');
  });

  it('shows a test’s state on its web page and on the flaky tests page', async () => {
    const { s, wobbly } = await seed();
    // Flaky: passes on the same commit.
    await post(s, upload({ key: 'r1b', commit_sha: 'c1' }, [result('wobbly', 'passed')]));
    await api().put(`${s.base}/tests/${wobbly}/skip`).set(auth(s.token)).expect(200);
    const web = await signedIn(ctx().app, s.token);
    const base = `/organizations/${s.org.slug}/analytics/suites/${s.suite.slug}`;
    const page = await web.get(`${base}/tests/${wobbly}`).set(HTML).expect(200);
    expect(page.text).toMatch(/<dt>State<\/dt>\s*<dd>skipped<\/dd>/);
    const flaky = await web.get(`${base}/flaky-tests`).set(HTML).expect(200);
    expect(flaky.text).toContain('wobbly');
    expect(flaky.text).toMatch(/<td>skipped<\/td>/);
  });

  it('finds a test by scope and name', async () => {
    const { s, steady } = await seed();
    const found = await api().post(`${s.base}/tests/find`).set(auth(s.token)).send({ scope: 'User#email', name: 'steady' }).expect(200);
    expectConforms(found.body, [findSample], responseSchema('findTest'));
    expect(found.body.id).toBe(steady);
    // A test without a scope is found with a blank or missing one.
    await post(s, upload({ key: 'r2' }, [result('bare', 'passed', { scope: null })]));
    const bare = await api().post(`${s.base}/tests/find`).set(auth(s.token)).send({ name: 'bare' }).expect(200);
    expect(bare.body).toMatchObject({ name: 'bare', scope: null });
    await api().post(`${s.base}/tests/find`).set(auth(s.token)).send({ scope: '', name: 'bare' }).expect(200);

    const missing = await api().post(`${s.base}/tests/find`).set(auth(s.token)).send({ scope: 'Other', name: 'steady' }).expect(404);
    expect(missing.body.message).toEqual(expect.any(String));
    const blank = await api().post(`${s.base}/tests/find`).set(auth(s.token)).send({ name: '  ' }).expect(422);
    expect(blank.body.errors).toEqual([{ field: 'name', code: "can't be blank" }]);
    const noName = await api().post(`${s.base}/tests/find`).set(auth(s.token)).send({ scope: 'User#email' }).expect(422);
    expect(noName.body.errors).toEqual([expect.objectContaining({ field: 'name' })]);
  });

  it('adds and removes labels, keeps the derived flaky label, and filters by them', async () => {
    const { s, wobbly } = await seed();
    await post(s, upload({ key: 'r1b', commit_sha: 'c1' }, [result('wobbly', 'passed')]));
    const path = `${s.base}/tests/${wobbly}/labels`;
    const added = await api()
      .patch(path)
      .set(auth(s.token))
      .send({ operator: 'add', labels: ['slow', 'payments', 'slow'] })
      .expect(200);
    expectConforms(added.body, [labelsSample], responseSchema('updateTestLabels'));
    expect(added.body.labels).toEqual(['flaky', 'payments', 'slow']);
    expect((await api().get(`${s.base}/tests/${wobbly}`).set(auth(s.token)).expect(200)).body.labels).toEqual(['flaky', 'payments', 'slow']);
    const listed = await api().get(`${s.base}/tests?labels=slow,!payments`).set(auth(s.token)).set(V).expect(200);
    expect(listed.body).toEqual([]);
    const slow = await api().get(`${s.base}/tests?labels=slow`).set(auth(s.token)).set(V).expect(200);
    expect(names(slow.body)).toEqual(['wobbly']);
    // The legacy list's single label too, and a label only part of another one matches nothing.
    expect(names((await api().get(`${s.base}/tests?label=slow`).set(auth(s.token)).expect(200)).body)).toEqual(['wobbly']);
    expect((await api().get(`${s.base}/tests?label=slo`).set(auth(s.token)).expect(200)).body).toEqual([]);
    expect((await api().get(`${s.base}/tests?label=s%25w`).set(auth(s.token)).expect(200)).body).toEqual([]);

    const removed = await api()
      .patch(path)
      .set(auth(s.token))
      .send({ operator: 'remove', labels: ['payments', 'flaky', 'never-had'] })
      .expect(200);
    expect(removed.body.labels).toEqual(['flaky', 'slow']);

    const many = Array.from({ length: 10 }, (_, i) => `l${i}`);
    const tooMany = await api().patch(path).set(auth(s.token)).send({ operator: 'add', labels: many }).expect(422);
    expect(tooMany.body.errors).toEqual([{ field: 'labels', code: expect.stringContaining('at most 10') }]);
    const blank = await api()
      .patch(path)
      .set(auth(s.token))
      .send({ operator: 'add', labels: [' '] })
      .expect(422);
    expect(blank.body.errors).toEqual([{ field: 'labels[0]', code: "can't be blank" }]);
    await api()
      .patch(path)
      .set(auth(s.token))
      .send({ operator: 'replace', labels: ['x'] })
      .expect(422);
    await api().patch(path).set(auth(s.token)).send({ operator: 'add' }).expect(422);
    expect((await api().get(`${s.base}/tests/${wobbly}`).set(auth(s.token)).expect(200)).body.labels).toEqual(['flaky', 'slow']);
  });

  it('takes a flaky label given by hand, as tests.md’s example adds it, and lists the test as flaky', async () => {
    const { s, steady } = await seed();
    await post(s, upload({ key: 'r1b', commit_sha: 'c1' }, [result('wobbly', 'passed')])); // wobbly is found flaky
    const path = `${s.base}/tests/${steady}/labels`;
    const added = await api()
      .patch(path)
      .set(auth(s.token))
      .send({ operator: 'add', labels: ['flaky', 'slow'] })
      .expect(200);
    expect(added.body.labels).toEqual(['flaky', 'slow']);
    expect(names((await api().get(`${s.base}/tests?label=flaky`).set(auth(s.token)).expect(200)).body)).toEqual(['steady', 'wobbly']);
    expect(names((await api().get(`${s.base}/tests?labels=flaky`).set(auth(s.token)).set(V).expect(200)).body)).toEqual(['steady', 'wobbly']);
    // Taking it off again leaves the test as detection sees it: not flaky.
    const removed = await api()
      .patch(path)
      .set(auth(s.token))
      .send({ operator: 'remove', labels: ['flaky'] })
      .expect(200);
    expect(removed.body.labels).toEqual(['slow']);
    expect(names((await api().get(`${s.base}/tests?label=flaky`).set(auth(s.token)).expect(200)).body)).toEqual(['wobbly']);
  });

  it('replaces executions’ mutable tags, all or none, and shows them on the failed executions', async () => {
    const { s, run } = await seed();
    const failed = await api().get(`${s.base}/runs/${run.run_id}/failed_executions`).set(auth(s.token)).expect(200);
    const executionId = failed.body[0].execution_id as string;
    const path = `${s.base}/execution-tags`;
    const ok = await api()
      .put(path)
      .set(auth(s.token))
      .send({ executions: [{ id: executionId, tags: { 'mut.classification': 'infrastructure', 'mut.reason': 'api_timeout' } }] })
      .expect(200);
    expect(ok.body).toEqual({ executions_count: 1 });
    const tagged = await api().get(`${s.base}/runs/${run.run_id}/failed_executions`).set(auth(s.token)).expect(200);
    expect(tagged.body[0].tags).toEqual({ 'mut.classification': 'infrastructure', 'mut.reason': 'api_timeout' });

    // A key without the prefix, too many tags, an unknown execution and another suite's: 422, nothing changed.
    const noPrefix = await api()
      .put(path)
      .set(auth(s.token))
      .send({ executions: [{ id: executionId, tags: { classification: 'x' } }] })
      .expect(422);
    expect(noPrefix.body.errors).toEqual([{ field: 'executions[0].tags.classification', code: expect.stringContaining('mut.') }]);
    const eleven = Object.fromEntries(Array.from({ length: 11 }, (_, i) => [`mut.t${i}`, 'v']));
    await api()
      .put(path)
      .set(auth(s.token))
      .send({ executions: [{ id: executionId, tags: eleven }] })
      .expect(422);
    const other = await givenSuite(ctx(), 'Other');
    const otherRun = await post(other, upload({ key: 'o1' }, [result('elsewhere', 'failed')]));
    const otherExecution = (await api().get(`${other.base}/runs/${otherRun.run_id}/failed_executions`).set(auth(other.token)).expect(200)).body[0]
      .execution_id as string;
    const unknown = await api()
      .put(path)
      .set(auth(s.token))
      .send({
        executions: [
          { id: executionId, tags: {} },
          { id: otherExecution, tags: { 'mut.x': 'y' } },
          { id: '00000000-0000-4000-8000-000000000000', tags: {} },
        ],
      })
      .expect(422);
    expect(unknown.body.errors).toEqual([
      { field: 'executions[1].id', code: 'is not an execution of this suite' },
      { field: 'executions[2].id', code: 'is not an execution of this suite' },
    ]);
    expect((await api().get(`${s.base}/runs/${run.run_id}/failed_executions`).set(auth(s.token)).expect(200)).body[0].tags).toEqual({
      'mut.classification': 'infrastructure',
      'mut.reason': 'api_timeout',
    });

    // `{}` removes them.
    await api()
      .put(path)
      .set(auth(s.token))
      .send({ executions: [{ id: executionId, tags: {} }] })
      .expect(200);
    expect((await api().get(`${s.base}/runs/${run.run_id}/failed_executions`).set(auth(s.token)).expect(200)).body[0].tags).toEqual({});
  });

  it('holds mutable tags to the rules of other tags but for their prefix, naming each entry and tag at fault', async () => {
    const { s, run } = await seed();
    const failedPath = `${s.base}/runs/${run.run_id}/failed_executions`;
    const executionId = (await api().get(failedPath).set(auth(s.token)).expect(200)).body[0].execution_id as string;
    const path = `${s.base}/execution-tags`;
    const put = (tags: Record<string, string>) =>
      api()
        .put(path)
        .set(auth(s.token))
        .send({ executions: [{ id: executionId, tags }] });
    const bad: [Record<string, string>, string, RegExp][] = [
      [{ mut: 'x' }, 'executions[0].tags.mut', /mut\. prefix/],
      [{ 'mut.': 'x' }, 'executions[0].tags.mut.', /after the mut\. prefix/],
      [{ 'mut.has space': 'x' }, 'executions[0].tags', /key/],
      [{ '1mut.x': 'x' }, 'executions[0].tags', /key/],
      // 64 bytes: keys are under 64 bytes, as other tags' are.
      [{ [`mut.${'k'.repeat(60)}`]: 'x' }, 'executions[0].tags', /key/],
      [{ 'mut.reason': '' }, 'executions[0].tags.mut.reason', /blank/],
      [{ 'mut.reason': '   ' }, 'executions[0].tags.mut.reason', /blank/],
      // 64 characters, 128 bytes of UTF-8.
      [{ 'mut.reason': 'é'.repeat(64) }, 'executions[0].tags.mut.reason', /127 bytes/],
      [{ 'mut.reason': 'x'.repeat(128) }, 'executions[0].tags.mut.reason', /too long/],
      [{ 'mut.reason.code': 'x', 'mut.reason': 'y' }, 'executions[0].tags.mut.reason', /dot-separated prefix/],
    ];
    for (const [tags, field, code] of bad) {
      const res = await put(tags);
      expect({ tags, status: res.status }).toEqual({ tags, status: 422 });
      expect({ tags, errors: res.body.errors }).toEqual({ tags, errors: [{ field, code: expect.stringMatching(code) }] });
    }
    // Every fault of every entry is named, and nothing is changed.
    const several = await api()
      .put(path)
      .set(auth(s.token))
      .send({
        executions: [
          { id: executionId, tags: { 'mut.fine': 'yes' } },
          { id: executionId, tags: { 'mut.a': ' ', team: 'web', 'mut.b': 'ok' } },
        ],
      })
      .expect(422);
    expect(several.body.errors).toEqual([
      { field: 'executions[1].tags.mut.a', code: "can't be blank" },
      { field: 'executions[1].tags.team', code: 'must begin with the mut. prefix' },
    ]);
    expect((await api().get(failedPath).set(auth(s.token)).expect(200)).body[0].tags).toEqual({});

    // At the limits: a 63-byte key, a 127-byte value, ten tags.
    const fine = {
      [`mut.${'k'.repeat(59)}`]: `${'é'.repeat(63)}x`,
      ...Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`mut.t-${i}_x.y`, `v${i}`])),
    };
    await put(fine).expect(200);
    expect((await api().get(failedPath).set(auth(s.token)).expect(200)).body[0].tags).toEqual(fine);
  });

  it('takes as many executions as the general body limit holds (BODY_LIMIT_BYTES, 1 MiB by default), as the spec says', async () => {
    const { s } = await seed();
    const entries = (n: number) =>
      Array.from({ length: n }, (_, i) => ({ id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`, tags: { 'mut.reason': 'api_timeout' } }));
    // About 10,000 with a tag each fit: read, checked and refused only because the executions are unknown.
    const fits = { executions: entries(10_000) };
    expect(Buffer.byteLength(JSON.stringify(fits))).toBeLessThan(1024 * 1024);
    const unknown = await api().put(`${s.base}/execution-tags`).set(auth(s.token)).send(fits).expect(422);
    expect(unknown.body.errors[0]).toEqual({ field: 'executions[0].id', code: 'is not an execution of this suite' });
    // Far fewer than the 100,000 the schema allows are over it.
    const over = await api()
      .put(`${s.base}/execution-tags`)
      .set(auth(s.token))
      .send({ executions: entries(14_000) })
      .expect(413);
    expect(over.body.message).toBe('Request body is too large');
  });

  it('needs write_suites to change and read_suites to read, and edit access in a Teams-enabled organization', async () => {
    const { org: home, user, token: adminOfHome } = await ctx().givenAdmin();
    const made = await api()
      .post(`/v2/analytics/organizations/${home.slug}/suites`)
      .set(auth(adminOfHome))
      .send({ name: 'Scoped', show_api_token: true })
      .expect(201);
    const s: SuiteFixture = {
      org: home,
      token: adminOfHome,
      suite: made.body,
      apiToken: made.body.api_token,
      base: `/v2/analytics/organizations/${home.slug}/suites/scoped`,
    };
    await post(s, upload({ key: 'r1' }, [result('steady', 'passed')]));
    const steady = (await api().get(`${s.base}/tests`).set(auth(s.token)).expect(200)).body[0].id as string;
    const readOnly = await ctx().givenToken(user, [home], ['read_suites']);
    await api().put(`${s.base}/tests/${steady}/mute`).set(auth(readOnly)).expect(403);
    await api()
      .patch(`${s.base}/tests/${steady}/labels`)
      .set(auth(readOnly))
      .send({ operator: 'add', labels: ['x'] })
      .expect(403);
    await api().get(`${s.base}/tests/muted`).set(auth(readOnly)).expect(200);
    await api().post(`${s.base}/tests/find`).set(auth(readOnly)).send({ name: 'steady', scope: 'User#email' }).expect(200);
    const noRead = await ctx().givenToken(user, [home], ['read_pipelines']);
    await api().get(`${s.base}/tests/skipped`).set(auth(noRead)).expect(403);
    await api().put(`${s.base}/tests/${steady}/skip`).expect(401);

    const org = await ctx().givenOrg({ teamsEnabled: true });
    const admin = await ctx().givenUser(org, 'admin');
    const adminToken = await ctx().givenToken(admin, [org]);
    const reader = await ctx().givenUser(org, 'member');
    const team = await ctx().givenTeam(org, [reader]);
    const readerToken = await ctx().givenToken(reader, [org]);
    const created = await api()
      .post(`/v2/analytics/organizations/${org.slug}/suites`)
      .set(auth(adminToken))
      .send({ name: 'Guarded', show_api_token: true })
      .expect(201);
    const base = `/v2/analytics/organizations/${org.slug}/suites/guarded`;
    await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(created.body.api_token))
      .send(upload({ key: 'g1' }, [result('guarded test', 'passed')]))
      .expect(202);
    const testId = (await api().get(`${base}/tests`).set(auth(adminToken)).expect(200)).body[0].id as string;
    // Not granted: as if the suite did not exist.
    await api().put(`${base}/tests/${testId}/mute`).set(auth(readerToken)).expect(404);
    await api()
      .post(`/v2/organizations/${org.slug}/teams/${team.id}/suites`)
      .set(auth(adminToken))
      .send({ suite_id: created.body.id, access_level: ['read'] })
      .expect(201);
    // A read grant reads, but does not change.
    await api().get(`${base}/tests/muted`).set(auth(readerToken)).expect(200);
    await api().put(`${base}/tests/${testId}/mute`).set(auth(readerToken)).expect(403);
    await api()
      .put(`${base}/execution-tags`)
      .set(auth(readerToken))
      .send({ executions: [{ id: testId, tags: {} }] })
      .expect(403);
    await api().put(`${base}/tests/${testId}/mute`).set(auth(adminToken)).expect(200);
  });
});
