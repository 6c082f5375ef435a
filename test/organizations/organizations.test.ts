import sample from '../fixtures/samples/organizations__02_get-an-organization.json';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';

describeEachDatabase('organizations', (ctx) => {
  it('GET /v2/organizations/{org} answers the sample shape', async () => {
    const { org, token } = await ctx().givenAdmin();
    const res = await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(Object.keys(sample).sort());
    expect(res.body).toEqual({
      id: org.id,
      graphql_id: Buffer.from(`Organization---${org.id}`).toString('base64'),
      url: `${PUBLIC_URL}/v2/organizations/${org.slug}`,
      web_url: `${PUBLIC_URL}/${org.slug}`,
      name: org.name,
      slug: org.slug,
      pipelines_url: `${PUBLIC_URL}/v2/organizations/${org.slug}/pipelines`,
      agents_url: `${PUBLIC_URL}/v2/organizations/${org.slug}/agents`,
      emojis_url: `${PUBLIC_URL}/v2/organizations/${org.slug}/emojis`,
      created_at: org.createdAt.toISOString(),
    });
  });

  it('lists only the organizations the token reaches and the user belongs to, paginated by name', async () => {
    const a = await ctx().givenOrg({ name: 'A org' });
    const b = await ctx().givenOrg({ name: 'B org' });
    const c = await ctx().givenOrg({ name: 'C org' });
    const notMember = await ctx().givenOrg({ name: 'D org' });
    const user = await ctx().givenUser(a);
    await ctx().services.orgs.addMember(b.id, user.id, 'member');
    await ctx().services.orgs.addMember(c.id, user.id, 'member');
    const token = await ctx().givenToken(user, [a, b, c, notMember]);
    const page1 = await ctx().http().get('/v2/organizations?per_page=2').set(auth(token)).expect(200);
    expect(page1.body.map((o: { slug: string }) => o.slug)).toEqual([a.slug, b.slug]);
    expect(page1.headers.link).toBe(
      `<${PUBLIC_URL}/v2/organizations?per_page=2&page=2>; rel="next", <${PUBLIC_URL}/v2/organizations?per_page=2&page=2>; rel="last"`,
    );
    const page2 = await ctx().http().get('/v2/organizations?per_page=2&page=2').set(auth(token)).expect(200);
    expect(page2.body.map((o: { slug: string }) => o.slug)).toEqual([c.slug]);
    expect(page2.headers.link).toBe(
      `<${PUBLIC_URL}/v2/organizations?per_page=2&page=1>; rel="first", <${PUBLIC_URL}/v2/organizations?per_page=2&page=1>; rel="prev"`,
    );
  });

  it('answers another organization exactly like a missing one', async () => {
    const { token } = await ctx().givenAdmin();
    const other = await ctx().givenOrg();
    const hidden = await ctx().http().get(`/v2/organizations/${other.slug}`).set(auth(token)).expect(404);
    const missing = await ctx().http().get('/v2/organizations/does-not-exist').set(auth(token)).expect(404);
    expect(hidden.body).toEqual({ message: 'No organization found' });
    expect(missing.body).toEqual(hidden.body);
  });

  it('answers 404, not 403, for an unreachable organization even when the scope is missing too', async () => {
    const org = await ctx().givenOrg();
    const user = await ctx().givenUser(org);
    const token = await ctx().givenToken(user, [org], ['read_user']);
    const other = await ctx().givenOrg();
    await ctx().http().get(`/v2/organizations/${other.slug}`).set(auth(token)).expect(404);
    const res = await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(403);
    expect(res.body).toEqual({ message: "Your access token doesn't have the read_organizations scope" });
  });

  it('rejects per_page above 100 with a 400 naming the parameter', async () => {
    const { token } = await ctx().givenAdmin();
    const res = await ctx().http().get('/v2/organizations?per_page=101').set(auth(token)).expect(400);
    expect(res.body.message).toMatch(/per_page/);
  });
});
