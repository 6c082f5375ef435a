/**
 * GitHub webhook processing (issue 30; the docs' pipelines page, "GitHub webhook processing"):
 * read, disable (DELETE) and enable (PUT) on `.../pipelines/{slug}/github-webhooks`, full access to
 * the pipeline needed; while disabled, GitHub deliveries make no build; both changes idempotent.
 */
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { branchPush, buildsOf, deliverGitHub, givenTarget } from '../incoming-webhooks/helpers';

describeEachDatabase('GitHub webhook processing', (ctx) => {
  it('is enabled by default; DELETE disables it (who and when kept), deliveries then build nothing; PUT enables it again; both idempotent', async () => {
    const t = await givenTarget(ctx());
    const path = `/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/github-webhooks`;
    const url = `${PUBLIC_URL}${path}`;
    expect((await ctx().http().get(path).set(auth(t.token)).expect(200)).body).toEqual({ url, enabled: true, disabled_at: null, disabled_by: null });

    const disabled = (await ctx().http().delete(path).set(auth(t.token)).expect(200)).body;
    expect(disabled).toEqual({
      url,
      enabled: false,
      disabled_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      disabled_by: expect.stringMatching(/^User /),
    });
    // Again: the same state, the first disabling's time kept.
    expect((await ctx().http().delete(path).set(auth(t.token)).expect(200)).body).toEqual(disabled);
    expect((await ctx().http().get(path).set(auth(t.token)).expect(200)).body).toEqual(disabled);

    const refused = await deliverGitHub(ctx(), t, 'push', branchPush()).expect(200);
    expect(refused.body).toEqual({ message: 'No build: GitHub webhook processing is disabled for this pipeline.' });
    expect(await buildsOf(ctx(), t)).toEqual([]);

    const enabled = { url, enabled: true, disabled_at: null, disabled_by: null };
    expect((await ctx().http().put(path).set(auth(t.token)).expect(200)).body).toEqual(enabled);
    expect((await ctx().http().put(path).set(auth(t.token)).expect(200)).body).toEqual(enabled);
    await deliverGitHub(ctx(), t, 'push', branchPush()).expect(201);
    expect(await buildsOf(ctx(), t)).toHaveLength(1);
  });

  it('needs full access to the pipeline (403 for read-only team access), the scopes, and a pipeline of the organization (404)', async () => {
    const org = await ctx().givenOrg({ teamsEnabled: true });
    const admin = await ctx().givenUser(org, 'admin');
    const reader = await ctx().givenUser(org, 'member');
    const team = await ctx().givenTeam(org, [reader]);
    const adminToken = await ctx().givenToken(admin, [org]);
    const p = (
      await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(adminToken))
        .send({
          name: 'Hooks',
          repository: 'git@github.com:acme/app.git',
          configuration: 'steps:\n  - command: x\n',
          teams: [{ id: team.id, access_level: 'read_only' }],
        })
        .expect(201)
    ).body as { slug: string };
    const path = `/v2/organizations/${org.slug}/pipelines/${p.slug}/github-webhooks`;
    const readerToken = await ctx().givenToken(reader, [org]);
    for (const method of ['get', 'put', 'delete'] as const) {
      expect((await ctx().http()[method](path).set(auth(readerToken)).expect(403)).body).toEqual({ message: 'Forbidden' });
    }
    const readOnlyScope = await ctx().givenToken(admin, [org], ['read_pipelines']);
    await ctx().http().get(path).set(auth(readOnlyScope)).expect(200);
    await ctx().http().delete(path).set(auth(readOnlyScope)).expect(403);
    await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/nope/github-webhooks`).set(auth(adminToken)).expect(404);
    // Still enabled: nothing above changed it.
    expect((await ctx().http().get(path).set(auth(adminToken)).expect(200)).body.enabled).toBe(true);
  });

  it('is a 404 for a pipeline not on GitHub or GitHub Enterprise, as documented', async () => {
    const { org, token } = await ctx().givenAdmin();
    for (const repository of ['git@gitlab.com:acme/app.git', 'git@bitbucket.org:acme/app.git', 'file:///srv/git/app.git']) {
      const p = (
        await ctx()
          .http()
          .post(`/v2/organizations/${org.slug}/pipelines`)
          .set(auth(token))
          .send({ name: `Not GitHub ${repository.length}`, repository, configuration: 'steps:\n  - command: x\n' })
          .expect(201)
      ).body as { slug: string };
      for (const method of ['get', 'put', 'delete'] as const) {
        const res = await ctx().http()[method](`/v2/organizations/${org.slug}/pipelines/${p.slug}/github-webhooks`).set(auth(token));
        expect([repository, method, res.status, res.body]).toEqual([
          repository,
          method,
          404,
          { message: 'No GitHub webhook processing for this pipeline found' },
        ]);
      }
    }
  });
});
