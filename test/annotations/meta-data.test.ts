/**
 * Build meta-data through the agent API (`buildkite-agent meta-data`): set, set-batch, get,
 * exists and keys through a job the agent runs, reads through a build id, the same keys in
 * `build.meta_data` and the builds list's `meta_data[key]=value` filter, limits and bad input,
 * tenancy, and concurrent sets of different keys (none lost, in either store).
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { takeNextJob, agentAuth, givenAgent, givenBuildAndAgent, givenRegistrationToken } from '../support/agents';

async function givenRunningJob(ctx: TestContext, configuration = 'steps:\n  - command: one\n  - command: two\n') {
  const given = await givenBuildAndAgent(ctx, configuration);
  const job = await takeNextJob(ctx, given.agent.token);
  return { ...given, jobId: job.id as string };
}

describeEachDatabase('meta-data from the agent', (ctx) => {
  it('is set, read, tested and listed, and shows in build.meta_data and the list filter', async () => {
    const { org, token, slug, url, build, agent, jobId } = await givenRunningJob(ctx());
    const data = (op: string) => `/v3/jobs/${jobId}/data/${op}`;
    const as = agentAuth(agent.token);
    expect((await ctx().http().post(data('set')).set(as).send({ key: 'release', value: '1.2.3' }).expect(200)).body).toEqual({
      key: 'release',
      value: '1.2.3',
    });
    await ctx().http().post(data('set')).set(as).send({ key: 'release', value: '1.2.4' }).expect(200);
    await ctx()
      .http()
      .post(data('set-batch'))
      .set(as)
      .send({
        items: [
          { key: 'channel', value: 'stable' },
          { key: 'a.b', value: 'x y' },
        ],
      })
      .expect(200);

    expect((await ctx().http().post(data('get')).set(as).send({ key: 'release' }).expect(200)).body).toEqual({ key: 'release', value: '1.2.4' });
    const missing = await ctx().http().post(data('get')).set(as).send({ key: 'nope' }).expect(404);
    expect(missing.body.message).toBeTruthy();
    // An inherited property of a JavaScript object is no key.
    await ctx().http().post(data('get')).set(as).send({ key: 'constructor' }).expect(404);
    expect((await ctx().http().post(data('exists')).set(as).send({ key: 'channel' }).expect(200)).body).toEqual({ exists: true });
    expect((await ctx().http().post(data('exists')).set(as).send({ key: 'nope' }).expect(200)).body).toEqual({ exists: false });
    expect((await ctx().http().post(data('keys')).set(as).expect(200)).body).toEqual(['a.b', 'channel', 'release']);

    // By build id, as `--build` reads.
    const byBuild = (op: string) => `/v3/builds/${build.id}/data/${op}`;
    expect((await ctx().http().post(byBuild('get')).set(as).send({ key: 'channel' }).expect(200)).body).toEqual({ key: 'channel', value: 'stable' });
    expect((await ctx().http().post(byBuild('exists')).set(as).send({ key: 'nope' }).expect(200)).body).toEqual({ exists: false });
    expect((await ctx().http().post(byBuild('keys')).set(as).expect(200)).body).toEqual(['a.b', 'channel', 'release']);

    const b = (await ctx().http().get(url).set(auth(token)).expect(200)).body;
    expect(b.meta_data).toEqual({ release: '1.2.4', channel: 'stable', 'a.b': 'x y' });
    for (const listUrl of [`/v2/organizations/${org.slug}/pipelines/${slug}/builds`, `/v2/organizations/${org.slug}/builds`, '/v2/builds']) {
      const found = await ctx().http().get(listUrl).query({ 'meta_data[release]': '1.2.4', 'meta_data[channel]': 'stable' }).set(auth(token)).expect(200);
      expect(found.body.map((x: { id: string }) => x.id)).toEqual([build.id]);
      const stale = await ctx().http().get(listUrl).query({ 'meta_data[release]': '1.2.3' }).set(auth(token)).expect(200);
      expect(stale.body).toEqual([]);
    }
  });

  it('keeps every key when sets of different keys race (both stores)', async () => {
    const { org, token, slug, url, build, agent, jobId } = await givenRunningJob(ctx());
    const keys = Array.from({ length: 12 }, (_, i) => `k${i}`);
    await Promise.all(
      keys.map((k) =>
        ctx()
          .http()
          .post(`/v3/jobs/${jobId}/data/set`)
          .set(agentAuth(agent.token))
          .send({ key: k, value: `v-${k}` })
          .expect(200),
      ),
    );
    const b = (await ctx().http().get(url).set(auth(token)).expect(200)).body;
    expect(b.meta_data).toEqual(Object.fromEntries(keys.map((k) => [k, `v-${k}`])));
    for (const k of keys) {
      const found = await ctx()
        .http()
        .get(`/v2/organizations/${org.slug}/pipelines/${slug}/builds`)
        .query({ [`meta_data[${k}]`]: `v-${k}` })
        .set(auth(token))
        .expect(200);
      expect(found.body.map((x: { id: string }) => x.id)).toEqual([build.id]);
    }
  });

  it("agrees with a block step's fields, which go the same way", async () => {
    const { token, url, agent, jobId, build } = await givenRunningJob(
      ctx(),
      'steps:\n  - command: one\n  - block: ok\n    fields:\n      - text: Who\n        key: who\n',
    );
    await ctx().http().post(`/v3/jobs/${jobId}/data/set`).set(agentAuth(agent.token)).send({ key: 'from-agent', value: 'yes' }).expect(200);
    await ctx().http().put(`/v3/jobs/${jobId}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
    const blockId = build.jobs[1]!.id;
    await ctx()
      .http()
      .put(`${url}/jobs/${blockId}/unblock`)
      .set(auth(token))
      .send({ fields: { who: 'me' } })
      .expect(200);
    expect((await ctx().http().get(url).set(auth(token)).expect(200)).body.meta_data).toEqual({ 'from-agent': 'yes', who: 'me' });
  });

  it('refuses blank or oversized keys and values, more than 1,000 keys, and malformed bodies', async () => {
    const { agent, jobId } = await givenRunningJob(ctx());
    const set = `/v3/jobs/${jobId}/data/set`;
    const as = agentAuth(agent.token);
    const bad = async (body: object, field: string, path = set) => {
      const res = await ctx().http().post(path).set(as).send(body).expect(422);
      expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
    };
    await bad({ key: '', value: 'x' }, 'key');
    await bad({ key: '   ', value: 'x' }, 'key');
    await bad({ key: 'k', value: '' }, 'value');
    await bad({ key: 'k', value: ' \n ' }, 'value');
    await bad({ key: 'k'.repeat(256), value: 'x' }, 'key');
    // The docs: values up to 100 kilobytes.
    await ctx()
      .http()
      .post(set)
      .set(as)
      .send({ key: 'big', value: 'v'.repeat(102_400) })
      .expect(200);
    await bad({ key: 'k', value: 'v'.repeat(102_401) }, 'value');
    await bad({ value: 'x' }, 'key');
    await bad({ key: 'k' }, 'value');
    await bad({ key: 1, value: 'x' }, 'key');
    await bad({ items: [] }, 'items', `/v3/jobs/${jobId}/data/set-batch`);
    await bad(
      {
        items: [
          { key: 'ok', value: 'x' },
          { key: ' ', value: 'x' },
        ],
      },
      'items[1].key',
      `/v3/jobs/${jobId}/data/set-batch`,
    );
    await bad({}, 'key', `/v3/jobs/${jobId}/data/get`);
    await ctx().http().post(set).set(as).set('Content-Type', 'application/json').send('{"key":').expect(400);
    // The batch with a blank key stored nothing.
    expect((await ctx().http().post(`/v3/jobs/${jobId}/data/keys`).set(as).expect(200)).body).toEqual(['big']);

    // A per-file timing written with set-batch: hundreds of keys in one batch.
    const items = Array.from({ length: 999 }, (_, i) => ({ key: `k${i}`, value: 'x' }));
    await ctx().http().post(`/v3/jobs/${jobId}/data/set-batch`).set(as).send({ items }).expect(200);
    await ctx().http().post(set).set(as).send({ key: 'k5', value: 'again' }).expect(200);
    const over = await ctx().http().post(set).set(as).send({ key: 'one-more', value: 'x' }).expect(422);
    expect(over.body.message).toContain('1000');
  });

  it('is for a job of the build the agent runs a job of, and builds of its own organization', async () => {
    const { org, token, build, agent, jobId, slug } = await givenRunningJob(ctx());
    const as = agentAuth(agent.token);
    // `meta-data set --job`: another job of the same build names the same store.
    await ctx().http().post(`/v3/jobs/${build.jobs[1]!.id}/data/set`).set(as).send({ key: 'sibling', value: 'v' }).expect(200);
    expect((await ctx().http().post(`/v3/jobs/${jobId}/data/keys`).set(as).expect(200)).body).toEqual(['sibling']);
    const later = (
      await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${slug}/builds`).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(201)
    ).body;
    await ctx().http().post(`/v3/jobs/${later.jobs[0].id}/data/set`).set(as).send({ key: 'k', value: 'v' }).expect(404);
    await ctx().http().post(`/v3/jobs/${later.jobs[0].id}/data/keys`).set(as).expect(404);
    await ctx().http().post(`/v3/jobs/${jobId}/data/set`).send({ key: 'k', value: 'v' }).expect(401);

    const other = await ctx().givenAdmin();
    const stranger = await givenAgent(ctx(), await givenRegistrationToken(ctx(), other.org.slug, other.token), 'stranger');
    const them = agentAuth(stranger.token);
    await ctx().http().post(`/v3/jobs/${jobId}/data/set`).set(them).send({ key: 'k', value: 'v' }).expect(404);
    await ctx().http().post(`/v3/jobs/${jobId}/data/get`).set(them).send({ key: 'k' }).expect(404);
    await ctx().http().post(`/v3/builds/${build.id}/data/get`).set(them).send({ key: 'k' }).expect(404);
    await ctx().http().post(`/v3/builds/${build.id}/data/exists`).set(them).send({ key: 'k' }).expect(404);
    await ctx().http().post(`/v3/builds/${build.id}/data/keys`).set(them).expect(404);
    await ctx().http().post(`/v3/builds/not-a-uuid/data/keys`).set(as).expect(404);

    // Another agent of the same organization reads the build by id, but can't write through a job it does not run.
    const colleague = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'colleague');
    await ctx().http().post(`/v3/jobs/${jobId}/data/set`).set(as).send({ key: 'k', value: 'v' }).expect(200);
    expect((await ctx().http().post(`/v3/builds/${build.id}/data/get`).set(agentAuth(colleague.token)).send({ key: 'k' }).expect(200)).body.value).toBe('v');
    await ctx().http().post(`/v3/jobs/${jobId}/data/set`).set(agentAuth(colleague.token)).send({ key: 'k', value: 'w' }).expect(404);

    // A finished job writes no more.
    await ctx().http().put(`/v3/jobs/${jobId}/finish`).set(as).send({ exit_status: 0 }).expect(200);
    await ctx().http().post(`/v3/jobs/${jobId}/data/set`).set(as).send({ key: 'k', value: 'late' }).expect(422);
  });
});
