import createSample from '../fixtures/samples/test_engine_suites__03_create-a-suite.json';
import getSample from '../fixtures/samples/test_engine_suites__02_get-a-suite.json';
import { sha256Hex } from '../../src/security/keys';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { existing } from '../support/rows';

const base = (org: { slug: string }) => `/v2/analytics/organizations/${org.slug}/suites`;

describeEachDatabase('suites', (ctx) => {
  it('creates a suite in the sample shape, with a slug from the name and the API token shown once', async () => {
    const { org, token } = await ctx().givenAdmin();
    const res = await ctx().http().post(base(org)).set(auth(token)).send({ name: 'Jasmine Suite', default_branch: 'trunk', show_api_token: true }).expect(201);
    const s = res.body;
    expect(Object.keys(s).sort()).toEqual(Object.keys(createSample).sort());
    expect(s.slug).toBe('jasmine-suite');
    expect(s.organization_id).toBe(org.id);
    expect(s.graphql_id).toBe(Buffer.from(`Suite---${s.id}`).toString('base64'));
    expect(s.url).toBe(`${PUBLIC_URL}/v2/analytics/organizations/${org.slug}/suites/jasmine-suite`);
    expect(s.web_url).toBe(`${PUBLIC_URL}/organizations/${org.slug}/analytics/suites/jasmine-suite`);
    expect(s.default_branch).toBe('trunk');
    expect(s.api_token).toMatch(/^[A-Za-z0-9_-]{32}$/);

    // Never stored in the clear: a hash to find it by, and a sealed copy to show it again.
    const row = existing(await ctx().services.db('suites').where({ id: s.id }).first(), 'the suite');
    expect(JSON.stringify(row)).not.toContain(s.api_token);
    expect(row?.api_token_hash).toBe(sha256Hex(s.api_token));
    expect(row?.api_token_sealed).toMatch(/^v1\./);
    const got = await ctx()
      .http()
      .get(`${base(org)}/jasmine-suite`)
      .set(auth(token))
      .expect(200);
    expect(Object.keys(got.body).sort()).toEqual(Object.keys(getSample).sort());
    expect(got.body).not.toHaveProperty('api_token');
  });

  it('shows the token again when get, list or update asks with show_api_token', async () => {
    const { org, token } = await ctx().givenAdmin();
    const made = (await ctx().http().post(base(org)).set(auth(token)).send({ name: 'Shown', show_api_token: true }).expect(201)).body;
    const got = await ctx()
      .http()
      .get(`${base(org)}/shown?show_api_token=true`)
      .set(auth(token))
      .expect(200);
    expect(got.body.api_token).toBe(made.api_token);
    const listed = await ctx()
      .http()
      .get(`${base(org)}?show_api_token=true`)
      .set(auth(token))
      .expect(200);
    expect(listed.body.map((x: { api_token?: string }) => x.api_token)).toEqual([made.api_token]);
    const updated = await ctx()
      .http()
      .patch(`${base(org)}/shown`)
      .set(auth(token))
      .send({ emoji: ':lemon:', show_api_token: true })
      .expect(200);
    expect(updated.body).toMatchObject({ emoji: ':lemon:', api_token: made.api_token });
    for (const res of [
      await ctx()
        .http()
        .get(`${base(org)}/shown?show_api_token=false`)
        .set(auth(token))
        .expect(200),
      await ctx().http().get(base(org)).set(auth(token)).expect(200),
      await ctx()
        .http()
        .patch(`${base(org)}/shown`)
        .set(auth(token))
        .send({ emoji: null })
        .expect(200),
    ])
      expect(JSON.stringify(res.body)).not.toContain(made.api_token);
  });

  it('leaves the token out of the create response unless show_api_token is true', async () => {
    const { org, token } = await ctx().givenAdmin();
    const res = await ctx().http().post(base(org)).set(auth(token)).send({ name: 'No Token' }).expect(201);
    expect(res.body).not.toHaveProperty('api_token');
    expect(res.body.default_branch).toBe('main');
  });

  it('refuses a blank name, a duplicate slug and junk with field errors', async () => {
    const { org, token } = await ctx().givenAdmin();
    await ctx().http().post(base(org)).set(auth(token)).send({ name: 'Dup' }).expect(201);
    const dup = await ctx().http().post(base(org)).set(auth(token)).send({ name: 'dup' }).expect(422);
    expect(dup.body).toEqual({ message: 'Validation Failed', errors: [{ field: 'name', code: expect.stringContaining('has already been taken') }] });
    const blank = await ctx().http().post(base(org)).set(auth(token)).send({ name: '  ' }).expect(422);
    expect(blank.body.errors).toEqual([{ field: 'name', code: "can't be blank" }]);
    const symbols = await ctx().http().post(base(org)).set(auth(token)).send({ name: '!!!' }).expect(422);
    expect(symbols.body.errors[0].field).toBe('name');
    const missing = await ctx().http().post(base(org)).set(auth(token)).send({}).expect(422);
    expect(missing.body.errors).toEqual([{ field: 'name', code: "can't be blank" }]);
  });

  it('lists newest first with Link pagination, updates and deletes', async () => {
    const { org, token } = await ctx().givenAdmin();
    for (const name of ['One', 'Two', 'Three']) await ctx().http().post(base(org)).set(auth(token)).send({ name }).expect(201);
    const page1 = await ctx()
      .http()
      .get(`${base(org)}?per_page=2`)
      .set(auth(token))
      .expect(200);
    expect(page1.body.map((s: { slug: string }) => s.slug)).toEqual(['three', 'two']);
    expect(page1.headers.link).toContain(`per_page=2&page=2>; rel="next"`);
    const page2 = await ctx()
      .http()
      .get(`${base(org)}?per_page=2&page=2`)
      .set(auth(token))
      .expect(200);
    expect(page2.body.map((s: { slug: string }) => s.slug)).toEqual(['one']);

    const upd = await ctx()
      .http()
      .patch(`${base(org)}/two`)
      .set(auth(token))
      .send({ name: 'Deux', default_branch: 'develop' })
      .expect(200);
    expect(upd.body).toMatchObject({ name: 'Deux', slug: 'two', default_branch: 'develop' });
    await ctx()
      .http()
      .patch(`${base(org)}/two`)
      .set(auth(token))
      .send({ name: '' })
      .expect(422);

    await ctx()
      .http()
      .delete(`${base(org)}/two`)
      .set(auth(token))
      .expect(204);
    const gone = await ctx()
      .http()
      .get(`${base(org)}/two`)
      .set(auth(token))
      .expect(404);
    expect(gone.body).toEqual({ message: 'No suite found' });
  });

  it('needs read_suites / write_suites and hides other organizations', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    await ctx().http().post(base(org)).set(auth(token)).send({ name: 'Scoped' }).expect(201);
    const readOnly = await ctx().givenToken(user, [org], ['read_suites']);
    await ctx()
      .http()
      .get(`${base(org)}/scoped`)
      .set(auth(readOnly))
      .expect(200);
    const denied = await ctx().http().post(base(org)).set(auth(readOnly)).send({ name: 'X' }).expect(403);
    expect(denied.body.message).toBe("Your access token doesn't have the write_suites scope");
    const noRead = await ctx().givenToken(user, [org], ['read_pipelines']);
    await ctx().http().get(base(org)).set(auth(noRead)).expect(403);
    const other = await ctx().givenAdmin();
    await ctx()
      .http()
      .get(`${base(org)}/scoped`)
      .set(auth(other.token))
      .expect(404);
    await ctx().http().get(base(org)).expect(401);
  });

  describe('in a Teams-enabled organization', () => {
    it('requires team_ids (or teams_ids) from a member, names unknown teams, and shows suites to their teams only', async () => {
      const org = await ctx().givenOrg({ teamsEnabled: true });
      const member = await ctx().givenUser(org, 'member');
      const outsider = await ctx().givenUser(org, 'member');
      const team = await ctx().givenTeam(org, [member]);
      const otherTeam = await ctx().givenTeam(org, []);
      const token = await ctx().givenToken(member, [org]);
      const outsiderToken = await ctx().givenToken(outsider, [org]);

      const none = await ctx().http().post(base(org)).set(auth(token)).send({ name: 'Teamless' }).expect(422);
      expect(none.body.errors).toEqual([{ field: 'team_ids', code: expect.stringContaining("can't be blank") }]);
      const unknown = await ctx()
        .http()
        .post(base(org))
        .set(auth(token))
        .send({ name: 'Unknown', team_ids: ['00000000-0000-4000-8000-000000000000'] })
        .expect(422);
      expect(unknown.body.errors).toEqual([{ field: 'team_ids[0]', code: expect.stringContaining('is not a team of this organization') }]);
      const notMine = await ctx()
        .http()
        .post(base(org))
        .set(auth(token))
        .send({ name: 'Not mine', teams_ids: [otherTeam.id] })
        .expect(422);
      expect(notMine.body.errors).toEqual([{ field: 'teams_ids[0]', code: expect.stringContaining('not a member') }]);

      await ctx()
        .http()
        .post(base(org))
        .set(auth(token))
        .send({ name: 'Ours', teams_ids: [team.id] })
        .expect(201);
      await ctx()
        .http()
        .get(`${base(org)}/ours`)
        .set(auth(token))
        .expect(200);
      await ctx()
        .http()
        .get(`${base(org)}/ours`)
        .set(auth(outsiderToken))
        .expect(404);
      const listed = await ctx().http().get(base(org)).set(auth(outsiderToken)).expect(200);
      expect(listed.body).toEqual([]);

      const admin = await ctx().givenUser(org, 'admin');
      const adminToken = await ctx().givenToken(admin, [org]);
      await ctx().http().post(base(org)).set(auth(adminToken)).send({ name: 'Admin made' }).expect(201);
      const all = await ctx().http().get(base(org)).set(auth(adminToken)).expect(200);
      expect(all.body.map((s: { slug: string }) => s.slug).sort()).toEqual(['admin-made', 'ours']);

      // show_api_token: only for a suite the user may change. A read grant sees the suite, not its token.
      const adminMade = all.body.find((s: { slug: string }) => s.slug === 'admin-made');
      await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/teams/${team.id}/suites`)
        .set(auth(adminToken))
        .send({ suite_id: adminMade.id, access_level: ['read'] })
        .expect(201);
      await ctx()
        .http()
        .get(`${base(org)}/admin-made?show_api_token=true`)
        .set(auth(token))
        .expect(403);
      expect(
        (
          await ctx()
            .http()
            .get(`${base(org)}/ours?show_api_token=true`)
            .set(auth(token))
            .expect(200)
        ).body.api_token,
      ).toEqual(expect.any(String));
      const shown = await ctx()
        .http()
        .get(`${base(org)}?show_api_token=true`)
        .set(auth(token))
        .expect(200);
      expect(Object.fromEntries(shown.body.map((s: { slug: string; api_token?: string }) => [s.slug, typeof s.api_token]))).toEqual({
        'admin-made': 'undefined',
        ours: 'string',
      });
    });
  });
});
