/**
 * The small endpoints of issue 16: `GET /v2/meta` (no authentication, the operator's
 * WEBHOOK_IPS), an organization's rate limit status (the same counts as the RateLimit-* headers,
 * this request included) and its custom emojis (an empty list when it has none), which the
 * organization's own `emojis_url` names.
 */
import metaSample from '../fixtures/samples/meta__01_get-meta-information.json';
import rateSample from '../fixtures/samples/organization_rate_limits__01_get-rate-limit-status.json';
import emojiSample from '../fixtures/samples/emojis__01_list-emojis.json';
import { auth, describeEachDatabase } from '../support/context';

const LIMIT = 5;
// A fixed clock, 10 s into a window: each test moves to a window of its own.
let clock = Date.UTC(2030, 0, 1, 0, 0, 10);
const nextWindow = () => {
  clock += 60_000;
};

describeEachDatabase(
  'meta',
  (ctx) => {
    it('answers the documented fields without authentication, with the addresses the operator set', async () => {
      const res = await ctx().http().get('/v2/meta').expect(200);
      expect(Object.keys(res.body)).toEqual(Object.keys(metaSample));
      expect(res.body).toEqual({ webhook_ips: ['192.0.2.0/24', '198.51.100.12'] });
      // A token, even a bad one, changes nothing: the Meta API does not authenticate.
      await ctx().http().get('/v2/meta').set(auth('not-a-token')).expect(200);
    });
  },
  { webhookIps: ['192.0.2.0/24', '198.51.100.12'] },
);

describeEachDatabase('meta without WEBHOOK_IPS', (ctx) => {
  it('answers an empty list', async () => {
    expect((await ctx().http().get('/v2/meta').expect(200)).body).toEqual({ webhook_ips: [] });
  });
});

describeEachDatabase(
  'rate limit status',
  (ctx) => {
    beforeEach(nextWindow);

    it("agrees with the RateLimit-* headers: the previous response's count plus this request, which its own headers show", async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const previous = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).expect(200);
      const usedBefore = LIMIT - Number(previous.headers['ratelimit-remaining']);
      expect(usedBefore).toBe(1);
      // Another token of the organization shares its budget.
      const second = await ctx().givenToken(user, [org], ['read_accounts']);
      const res = await ctx().http().get(`/v2/organizations/${org.slug}/rate-limit`).set(auth(second)).expect(200);
      expect(Object.keys(res.body)).toEqual(Object.keys(rateSample));
      expect(Object.keys(res.body.scopes)).toEqual(Object.keys(rateSample.scopes));
      expect(Object.keys(res.body.scopes.rest)).toEqual(Object.keys(rateSample.scopes.rest));
      expect(Object.keys(res.body.scopes.graphql)).toEqual(Object.keys(rateSample.scopes.graphql));
      const windowEnd = new Date(Math.floor(clock / 60_000) * 60_000 + 60_000).toISOString();
      expect(res.body.scopes.rest).toEqual({ limit: LIMIT, current: usedBefore + 1, reset: 50, reset_at: windowEnd, enforced: true });
      // No GraphQL API: its scope, which the docs' answer has, is never enforced.
      expect(res.body.scopes.graphql).toMatchObject({ limit: 0, current: 0, enforced: false });
      expect(res.body.scopes.graphql.reset).toBeGreaterThan(0);
      expect(res.body.scopes.graphql.reset).toBeLessThanOrEqual(300);
      expect(res.headers['ratelimit-scope']).toBe('rest');
      expect(res.body.scopes.rest.current).toBe(LIMIT - Number(res.headers['ratelimit-remaining']));
      expect(String(res.body.scopes.rest.reset)).toBe(res.headers['ratelimit-reset']);

      // Another organization's usage is its own.
      const other = await ctx().givenAdmin();
      const theirs = await ctx().http().get(`/v2/organizations/${other.org.slug}/rate-limit`).set(auth(other.token)).expect(200);
      expect(theirs.body.scopes.rest.current).toBe(1);
    });

    it('counts itself, so over the budget it is refused like any request', async () => {
      const { org, token } = await ctx().givenAdmin();
      const url = `/v2/organizations/${org.slug}/rate-limit`;
      for (let i = 1; i <= LIMIT; i++) {
        expect((await ctx().http().get(url).set(auth(token)).expect(200)).body.scopes.rest.current).toBe(i);
      }
      const refused = await ctx().http().get(url).set(auth(token)).expect(429);
      expect(refused.body).toMatchObject({ scope: 'rest', limit: LIMIT, current: LIMIT + 1 });
    });

    it('needs the read_accounts scope (as the docs say) and a token that reaches the organization', async () => {
      const { org, user } = await ctx().givenAdmin();
      const other = await ctx().givenAdmin();
      const without = await ctx().givenToken(user, [org], ['read_organizations']);
      const denied = await ctx().http().get(`/v2/organizations/${org.slug}/rate-limit`).set(auth(without)).expect(403);
      expect(denied.body.message).toBe("Your access token doesn't have the read_accounts scope");
      await ctx().http().get(`/v2/organizations/${other.org.slug}/rate-limit`).set(auth(without)).expect(404);
      await ctx().http().get(`/v2/organizations/${org.slug}/rate-limit`).expect(401);
    });
  },
  { rateLimits: { perOrganization: LIMIT, perUser: 1_000_000_000, failedAuthPerAddress: 1_000_000 }, now: () => clock },
);

describeEachDatabase(
  'rate limit status without a limit',
  (ctx) => {
    it('says the limit is not enforced', async () => {
      const { org, token } = await ctx().givenAdmin();
      const res = await ctx().http().get(`/v2/organizations/${org.slug}/rate-limit`).set(auth(token)).expect(200);
      expect(res.body.scopes.rest).toMatchObject({ limit: 0, current: 0, enforced: false });
      expect(res.body.scopes.rest.reset).toBeGreaterThan(0);
      expect(res.body.scopes.rest.reset).toBeLessThanOrEqual(60);
      expect(res.headers['ratelimit-limit']).toBeUndefined();
    });
  },
  { rateLimits: { perOrganization: 0, perUser: 0, failedAuthPerAddress: 0 } },
);

describeEachDatabase('emojis', (ctx) => {
  it("are the standard ones when the organization has none of its own, at the organization's emojis_url", async () => {
    const { org, token } = await ctx().givenAdmin();
    const orgBody = (await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200)).body;
    const path = new URL(orgBody.emojis_url as string).pathname;
    expect(path).toBe(`/v2/organizations/${org.slug}/emojis`);
    const listed = (await ctx().http().get(path).set(auth(token)).expect(200)).body as { name: string; url: string }[];
    // The docs' example: the Unicode rocket, at its image URL.
    expect(listed).toContainEqual(emojiSample[0]);
    expect(listed.length).toBeGreaterThan(1000);
    const unicodeImage = /^https:\/\/buildkiteassets\.com\/emoji\/unicode\/[0-9a-f]+(-[0-9a-f]+)*\.png\?v1$/;
    expect(listed.filter((e) => !unicodeImage.test(e.url))).toEqual([]);
    expect(new Set(listed.map((e) => e.name)).size).toBe(listed.length);
  });

  it('list the custom emojis by name in the documented shape, aliases only where there are some', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    await ctx().services.emojis.add(org.id, { name: 'shipit', url: 'https://example.com/emoji/shipit.png?v1', aliases: ['squirrel'] });
    await ctx().services.emojis.add(org.id, { name: ':rocket:', url: 'https://example.com/emoji/rocket.png' });
    // Required scope: none; only a token that reaches the organization.
    const noScopes = await ctx().givenToken(user, [org], ['read_user']);
    const res = await ctx().http().get(`/v2/organizations/${org.slug}/emojis`).set(auth(noScopes)).expect(200);
    const own = [
      { name: 'rocket', url: 'https://example.com/emoji/rocket.png' },
      { name: 'shipit', url: 'https://example.com/emoji/shipit.png?v1', aliases: ['squirrel'] },
    ];
    // After the standard ones; its own `rocket` takes the standard one's place.
    expect(res.body.slice(-2)).toEqual(own);
    expect(res.body.filter((e: { name: string }) => e.name === 'rocket')).toEqual([own[0]]);
    // The same keys as the documented examples, with and without aliases.
    expect(Object.keys(res.body.at(-2))).toEqual(Object.keys(emojiSample[0]!));
    expect(Object.keys(res.body.at(-1))).toEqual(Object.keys(emojiSample[1]!));
    // Not paginated, as the docs say.
    expect(res.headers.link).toBeUndefined();

    // Another organization sees the standard ones only, and the first's are not found through its token.
    const other = await ctx().givenAdmin();
    const theirs = (await ctx().http().get(`/v2/organizations/${other.org.slug}/emojis`).set(auth(other.token)).expect(200)).body;
    expect(theirs).toHaveLength(res.body.length - 1); // the standard rocket, which the first one's own replaced
    expect(theirs.filter((e: { url: string }) => e.url.startsWith('https://example.com/'))).toEqual([]);
    await ctx().http().get(`/v2/organizations/${org.slug}/emojis`).set(auth(other.token)).expect(404);
    await ctx().http().get(`/v2/organizations/${org.slug}/emojis`).set(auth(token)).expect(200);
  });

  it('refuse a bad name, URL or alias and a name or alias the organization already has', async () => {
    const { org } = await ctx().givenAdmin();
    const emojis = ctx().services.emojis;
    await emojis.add(org.id, { name: 'party', url: 'https://example.com/p.png', aliases: ['tada'] });
    const fields = async (input: { name: string; url: string; aliases?: string[] }) => {
      try {
        await emojis.add(org.id, input);
      } catch (err) {
        return (err as { errors: { field: string }[] }).errors.map((e) => e.field);
      }
      throw new Error('accepted');
    };
    expect(await fields({ name: 'has space', url: 'https://example.com/x.png' })).toEqual(['name']);
    expect(await fields({ name: 'x', url: 'javascript:alert(1)' })).toEqual(['url']);
    expect(await fields({ name: 'x', url: 'not a url' })).toEqual(['url']);
    expect(await fields({ name: 'x', url: 'https://example.com/x.png', aliases: ['bad alias'] })).toEqual(['aliases']);
    expect(await fields({ name: 'party', url: 'https://example.com/x.png' })).toEqual(['name']);
    expect(await fields({ name: 'tada', url: 'https://example.com/x.png' })).toEqual(['name']);
    expect(await fields({ name: 'new', url: 'https://example.com/x.png', aliases: ['party'] })).toEqual(['aliases']);
    expect((await emojis.list(org.id)).map((e) => e.name)).toEqual(['party']);
  });
});
