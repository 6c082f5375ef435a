/**
 * Issue 7, item 11: rate limits per organization (shared by its tokens, announced on every
 * response, 429 with Retry-After and the documented body), per user (rate_limits.md: every
 * request counts against both), and
 * per address on failed authentication; and the counters shared by two app instances on one
 * database, as two server processes would be.
 */
import { FLUSH_MS } from '../../src/http/middleware/rate-limit';
import sample from '../fixtures/samples/rate_limits__01_exceeding-the-rate-limit.json';
import { auth, createTwoContexts, describeEachDatabase, type TestContext, type TwoContexts } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { deliverGitHub, givenTarget } from '../incoming-webhooks/helpers';
import { givenSuite, result, suiteAuth, upload } from '../uploads/helpers';
import { existing } from '../support/rows';

const LIMIT = 5;
const AUTH_LIMIT = 3;
// A fixed clock, 10 s into a window: each test moves to a window of its own.
let clock = Date.UTC(2030, 0, 1, 0, 0, 10);
const nextWindow = () => {
  clock += 60_000;
};
const opts = { rateLimits: { perOrganization: LIMIT, perUser: 1_000_000, failedAuthPerAddress: AUTH_LIMIT }, now: () => clock };

const BAD_TOKEN = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';

function expectHeaders(res: { headers: Record<string, string> }, scope: string, remaining: number) {
  expect(res.headers['ratelimit-scope']).toBe(scope);
  expect(res.headers['ratelimit-limit']).toBe(String(LIMIT));
  expect(res.headers['ratelimit-remaining']).toBe(String(remaining));
  expect(res.headers['ratelimit-reset']).toBe('50');
}

const USER_LIMIT = 3;
describeEachDatabase(
  'per-user rate limits (rate_limits.md: a request counts towards both limits, two sets of headers)',
  (ctx) => {
    beforeEach(nextWindow);

    it("refuses a user over their budget with scope rest_user while the organization's budget goes on, and warns while a budget is used up", async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const colleague = await ctx().givenToken(await ctx().givenUser(org, 'admin'), [org]);
      const second = await ctx().givenToken(user, [org]);
      const pipelines = `/v2/organizations/${org.slug}/pipelines`;
      const first = await ctx().http().get(pipelines).set(auth(token)).expect(200);
      expect(first.headers).toMatchObject({
        'ratelimit-scope': 'rest',
        'ratelimit-limit': String(LIMIT),
        'ratelimit-remaining': String(LIMIT - 1),
        'ratelimit-reset': '50',
        'ratelimit-user-scope': 'rest_user',
        'ratelimit-user-limit': String(USER_LIMIT),
        'ratelimit-user-remaining': String(USER_LIMIT - 1),
        'ratelimit-user-reset': '50',
      });
      expect(first.headers['ratelimit-user-warning']).toBeUndefined();
      // A request outside the organization's paths counts against the user only.
      await ctx().http().get('/v2/user').set(auth(second)).expect(200);
      const last = await ctx().http().get(pipelines).set(auth(second)).expect(200);
      expect(last.headers).toMatchObject({ 'ratelimit-remaining': String(LIMIT - 2), 'ratelimit-user-remaining': '0' });
      expect(last.headers['ratelimit-user-warning']).toBe('You have exceeded your API rate limit.');
      expect(last.headers['ratelimit-warning']).toBeUndefined();
      // Every token of the user shares the budget; the refused request still counts for the organization.
      const refused = await ctx().http().get(pipelines).set(auth(token)).expect(429);
      expect(refused.headers['retry-after']).toBe('50');
      expect(refused.body).toEqual({
        message: 'You have exceeded your API rate limit. Please wait 50 seconds before making more requests.',
        scope: 'rest_user',
        limit: USER_LIMIT,
        current: USER_LIMIT + 1,
        reset: 50,
      });
      // Another user of the organization takes what is left of its budget, then both are refused by it.
      expect((await ctx().http().get(pipelines).set(auth(colleague)).expect(200)).headers['ratelimit-remaining']).toBe('1');
      const other = await ctx().http().get(pipelines).set(auth(colleague)).expect(200);
      expect(other.headers).toMatchObject({ 'ratelimit-remaining': '0', 'ratelimit-user-remaining': String(USER_LIMIT - 2) });
      expect(other.headers['ratelimit-warning']).toBe('You have exceeded your API rate limit.');
      expect((await ctx().http().get(pipelines).set(auth(colleague)).expect(429)).body.scope).toBe('rest');

      nextWindow();
      const fresh = await ctx().http().get(pipelines).set(auth(token)).expect(200);
      expect(fresh.headers['ratelimit-user-remaining']).toBe(String(USER_LIMIT - 1));
      expect(fresh.headers['ratelimit-user-warning']).toBeUndefined();
    });
  },
  { rateLimits: { perOrganization: LIMIT, perUser: USER_LIMIT, failedAuthPerAddress: AUTH_LIMIT }, now: () => clock },
);

describeEachDatabase(
  'rate limits',
  (ctx) => {
    beforeEach(nextWindow);

    it('announces the organization budget on every response, whatever its status', async () => {
      const { org, token } = await ctx().givenAdmin();
      const pipelines = `/v2/organizations/${org.slug}/pipelines`;
      expectHeaders(await ctx().http().get(pipelines).set(auth(token)).expect(200), 'rest', 4);
      expectHeaders(await ctx().http().get(`${pipelines}/nope`).set(auth(token)).expect(404), 'rest', 3);
      expectHeaders(await ctx().http().post(pipelines).set(auth(token)).send({}).expect(422), 'rest', 2);
      const reader = await ctx().givenToken(await ctx().givenUser(org), [org], ['read_user']);
      expectHeaders(await ctx().http().get(pipelines).set(auth(reader)).expect(403), 'rest', 1);
      // Outside an organization's paths, the user's budget alone.
      const own = await ctx().http().get('/v2/access-token').set(auth(token)).expect(200);
      expect(own.headers['ratelimit-scope']).toBeUndefined();
      expect(own.headers['ratelimit-user-scope']).toBe('rest_user');
    });

    it('refuses the request over the budget with 429, Retry-After and the documented body; the tokens of one organization share it, another organization is unaffected', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const second = await ctx().givenToken(user, [org]);
      const other = await ctx().givenAdmin();
      const pipelines = `/v2/organizations/${org.slug}/pipelines`;
      for (let i = 0; i < LIMIT; i++) {
        await ctx()
          .http()
          .get(pipelines)
          .set(auth(i % 2 ? second : token))
          .expect(200);
      }
      const refused = await ctx().http().get(pipelines).set(auth(second)).expect(429);
      expect(refused.headers['retry-after']).toBe('50');
      expectHeaders(refused, 'rest', 0);
      expect(Object.keys(refused.body).sort()).toEqual(Object.keys(sample).sort());
      expect(refused.body).toEqual({
        message: 'You have exceeded your API rate limit. Please wait 50 seconds before making more requests.',
        scope: 'rest',
        limit: LIMIT,
        current: LIMIT + 1,
        reset: 50,
      });
      // Writes are refused too, and nothing is written.
      await ctx().http().post(pipelines).set(auth(token)).send({ name: 'Refused', repository: 'git@github.com:a/b.git' }).expect(429);
      const [row] = await ctx().services.db('pipelines').where({ organization_id: org.id }).count({ n: '*' });
      expect(Number(row!.n)).toBe(0);

      expectHeaders(await ctx().http().get(`/v2/organizations/${other.org.slug}/pipelines`).set(auth(other.token)).expect(200), 'rest', 4);
      // The user's own budget is separate from the organization's.
      await ctx().http().get('/v2/user').set(auth(token)).expect(200);

      nextWindow();
      expectHeaders(await ctx().http().get(pipelines).set(auth(token)).expect(200), 'rest', 4);
    });

    it('after a burst of bad tokens refuses only failures: a valid admin token, a suite upload, an agent ping and a delivery keep working until the window ends', async () => {
      const { org, token } = await ctx().givenAdmin();
      const suite = await givenSuite(ctx());
      const agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'burst');
      const target = await givenTarget(ctx());
      nextWindow();
      for (let i = 0; i < AUTH_LIMIT; i++) {
        await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).expect(401);
      }
      const refused = await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).expect(429);
      expect(refused.headers['retry-after']).toBe('50');
      expect(refused.body).toEqual({
        message: 'Too many failed authentication attempts from your address. Please wait 50 seconds before trying again.',
        scope: 'authentication',
        limit: AUTH_LIMIT,
        current: AUTH_LIMIT + 1,
        reset: 50,
      });

      // Every valid credential from the same address still works...
      await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200);
      await ctx()
        .http()
        .post('/v1/uploads')
        .set(suiteAuth(suite.apiToken))
        .send(upload({ key: 'after-burst' }, [result('a', 'passed')]))
        .expect(202);
      await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200);
      await deliverGitHub(ctx(), target, 'ping', { zen: 'Keep it logically awesome.' }).expect(200);
      // ...and every bad one of any kind is a 429 (X-Forwarded-For is not trusted by default).
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', '198.51.100.9').expect(429);
      await ctx().http().post('/v1/uploads').set('Authorization', 'Token token="nope"').send({}).expect(429);
      await ctx()
        .http()
        .get('/v3/ping')
        .set(agentAuth('n'.repeat(43)))
        .expect(429);
      await ctx().http().post('/deliver/nope-nope-nope').set('X-GitHub-Event', 'ping').send({}).expect(429);
      await deliverGitHub(ctx(), target, 'ping', {}, { signature: `sha256=${'0'.repeat(64)}` }).expect(429);
      // The meta routes are not behind authentication.
      await ctx().http().get('/readyz').expect(200);

      nextWindow();
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).expect(401);
    });

    it('counts bad suite, agent, registration and webhook tokens and signatures against the address too', async () => {
      const target = await givenTarget(ctx());
      nextWindow();
      await ctx().http().post('/v1/uploads').set('Authorization', 'Token token="nope"').send({}).expect(401);
      await ctx()
        .http()
        .get('/v3/ping')
        .set(agentAuth('n'.repeat(43)))
        .expect(401);
      await ctx()
        .http()
        .post('/v3/register')
        .set(agentAuth('n'.repeat(43)))
        .send({ name: 'x' })
        .expect(401);
      expect(AUTH_LIMIT).toBe(3);
      await ctx().http().post('/deliver/nope-nope-nope').set('X-GitHub-Event', 'ping').send({}).expect(429);
      nextWindow();
      await deliverGitHub(ctx(), target, 'ping', {}, { signature: `sha256=${'0'.repeat(64)}` }).expect(401);
      await ctx().http().post('/deliver/nope-nope-nope').set('X-GitHub-Event', 'ping').send({}).expect(404);
      await ctx().http().post('/deliver/nope-nope-nope').set('X-GitHub-Event', 'ping').send({}).expect(404);
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).expect(429);
    });

    it('drops the counters of past windows', async () => {
      const { org, token } = await ctx().givenAdmin();
      await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200);
      nextWindow();
      await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200);
      // Neither the purge nor the write of counts made in memory is awaited by the request.
      await new Promise((resolve) => setTimeout(resolve, FLUSH_MS + 100));
      const windows = await ctx().services.db('rate_limits').distinct('window_start');
      expect(windows.map((w) => Number(w.window_start))).toEqual([Math.floor(clock / 60_000) * 60]);
    });
  },
  opts,
);

/** Failures from `from` (X-Forwarded-For) until the budget is spent, then: the next is a 429. */
async function spendBudget(ctx: TestContext, from: string) {
  for (let i = 0; i < AUTH_LIMIT; i++) await ctx.http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', from).expect(401);
  await ctx.http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', from).expect(429);
}

describeEachDatabase(
  'failed-authentication budget behind one trusted proxy (TRUST_PROXY=1)',
  (ctx) => {
    beforeEach(nextWindow);

    it('counts per client address as the proxy forwards it', async () => {
      await spendBudget(ctx(), '203.0.113.7');
      // Another client behind the same proxy has its own budget.
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', '198.51.100.9').expect(401);
      // One hop: the address the proxy appended, not what the client wrote before it.
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', '198.51.100.9, 203.0.113.7').expect(429);
    });
  },
  { ...opts, trustProxy: 1 },
);

describeEachDatabase(
  'failed-authentication budget behind trusted subnets (TRUST_PROXY=127.0.0.0/8,::1,10.0.0.0/8)',
  (ctx) => {
    beforeEach(nextWindow);

    it('takes the first address from the right that is not a trusted proxy', async () => {
      await spendBudget(ctx(), '203.0.113.7, 10.1.2.3');
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', '203.0.113.7').expect(429);
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', '198.51.100.9, 10.1.2.3').expect(401);
      // 192.0.2.1 is no trusted proxy: it is the client, whatever it claims came before it.
      await ctx().http().get('/v2/user').set(auth(BAD_TOKEN)).set('X-Forwarded-For', '203.0.113.7, 192.0.2.1').expect(401);
    });
  },
  { ...opts, trustProxy: ['127.0.0.0/8', '::1', '10.0.0.0/8'] },
);

describeEachDatabase('rate limits across two app instances on one database', null, (_get, kind) => {
  let contexts: TwoContexts | undefined;
  let first: TestContext;
  let second: TestContext;

  beforeAll(async () => {
    contexts = await createTwoContexts(kind, opts);
    ({ one: first, two: second } = contexts);
  });
  afterAll(async () => {
    await contexts?.close();
  });

  it('share the organization budget: together they let exactly the budget through', async () => {
    // Each counts its first half of the budget in memory (written every FLUSH_MS, here not yet),
    // and exactly, through the shared counter, after it: two can never overshoot together.
    nextWindow();
    const { org, user, token } = await first.givenAdmin();
    const other = await first.givenToken(user, [org]);
    const pipelines = `/v2/organizations/${org.slug}/pipelines`;
    for (let i = 0; i < LIMIT; i++) {
      const res = await (i % 2 ? second : first)
        .http()
        .get(pipelines)
        .set(auth(i % 2 ? other : token))
        .expect(200);
      expect(Number(res.headers['ratelimit-remaining'])).toBeLessThan(LIMIT);
    }
    const over = await second.http().get(pipelines).set(auth(token)).expect(429);
    expect(over.headers['ratelimit-remaining']).toBe('0');
    await first.http().get(pipelines).set(auth(other)).expect(429);
    const stored = existing(await first.services.db('rate_limits').where('bucket', `org:${org.id}`).first('count'), 'the counter');
    expect(Number(stored.count)).toBe(LIMIT + 2);
  });

  it('write what they counted in memory, so the other sees it', async () => {
    nextWindow();
    const { org, token } = await first.givenAdmin();
    const path = `/v2/organizations/${org.slug}`;
    await first.http().get(path).set(auth(token)).expect(200);
    await new Promise((resolve) => setTimeout(resolve, FLUSH_MS + 100));
    const stored = existing(await first.services.db('rate_limits').where('bucket', `org:${org.id}`).first('count'), 'the counter');
    expect(Number(stored.count)).toBe(1);
  });
});
