/**
 * Rate limits counted in Redis (REDIS_URL): the same budgets, headers and 429 as the database's
 * counters, one budget shared exactly by two app instances (as two server processes), counters
 * that expire with their window, and requests let through when Redis cannot be reached.
 */
import crypto from 'node:crypto';
import { auth, createTestContext, createTwoContexts, databases, type TestContext, type TwoContexts } from '../support/context';
import { describeWithRedis, itWithRedis } from '../support/redis';
import { connectRedis, redisReady } from '../../src/db/redis';

const LIMIT = 10;
// A fixed clock, 10 s into a window of its own per run.
const windowStart = Date.UTC(2031, 0, 1, 0, 0, 0) + crypto.randomInt(0, 100_000) * 60_000;
const opts = { rateLimits: { perOrganization: LIMIT, perUser: 1_000_000_000, failedAuthPerAddress: 3 }, now: () => windowStart + 10_000 };

describe.each(databases)('rate limits in Redis [%s]', (kind) => {
  describeWithRedis(`rate limits in Redis [${kind}]`, (redis) => {
    let contexts: TwoContexts | undefined;
    let one: TestContext;
    let two: TestContext;
    beforeAll(async () => {
      let settings;
      try {
        settings = redis();
      } catch {
        return; // Redis unreachable: the tests say so and do nothing.
      }
      contexts = await createTwoContexts(kind, { ...opts, redis: settings });
      ({ one, two } = contexts);
    });
    afterAll(async () => {
      await contexts?.close();
    });

    itWithRedis('counts one budget per organization exactly across two instances: the same headers, then 429', async () => {
      const settings = redis();
      const { org, token } = await one.givenAdmin();
      const pipelines = `/v2/organizations/${org.slug}/pipelines`;
      const remaining: string[] = [];
      for (let i = 0; i < LIMIT; i++) {
        const res = await (i % 2 ? two : one).http().get(pipelines).set(auth(token)).expect(200);
        expect(res.headers['ratelimit-scope']).toBe('rest');
        expect(res.headers['ratelimit-limit']).toBe(String(LIMIT));
        expect(res.headers['ratelimit-reset']).toBe('50');
        remaining.push(res.headers['ratelimit-remaining'] as string);
      }
      // Exact: every request saw the shared count, whichever instance answered.
      expect(remaining).toEqual(['9', '8', '7', '6', '5', '4', '3', '2', '1', '0']);
      const refused = await two.http().get(pipelines).set(auth(token)).expect(429);
      expect(refused.headers['retry-after']).toBe('50');
      expect(refused.body).toEqual({
        message: 'You have exceeded your API rate limit. Please wait 50 seconds before making more requests.',
        scope: 'rest',
        limit: LIMIT,
        current: LIMIT + 1,
        reset: 50,
      });
      await one.http().get(pipelines).set(auth(token)).expect(429);
      // The counter is Redis's, under the prefix, and expires after its window (50 s left, plus a minute's grace).
      const client = connectRedis(settings.url, 'windsock-test');
      try {
        await redisReady(client);
        const key = `${settings.prefix}rate:org:${org.id}:${(windowStart + 10_000) / 1000 - 10}`;
        expect(await client.get(key)).toBe(String(LIMIT + 2));
        const ttl = await client.pttl(key);
        expect(ttl).toBeGreaterThan(60_000);
        expect(ttl).toBeLessThanOrEqual(110_000);
      } finally {
        client.disconnect();
      }
      // Nothing in the database's counters.
      expect(await one.services.db('rate_limits').where('bucket', `org:${org.id}`).first()).toBeUndefined();
    });

    itWithRedis('counts failed authentications per address in Redis too', async () => {
      redis();
      const bad = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
      for (let i = 0; i < 3; i++) await (i % 2 ? two : one).http().get('/v2/user').set(auth(bad)).expect(401);
      const refused = await two.http().get('/v2/user').set(auth(bad)).expect(429);
      expect(refused.body).toMatchObject({ scope: 'authentication', limit: 3 });
    });
  });

  it('lets requests through, without rate limit headers, when Redis cannot be reached', async () => {
    // A port nothing listens on.
    const ctx = await createTestContext(kind, { ...opts, redis: { url: 'redis://127.0.0.1:1', prefix: 'windsock-test-down:' } });
    try {
      const { org, token } = await ctx.givenAdmin();
      for (let i = 0; i < LIMIT + 2; i++) {
        const res = await ctx.http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).expect(200);
        expect(res.headers['ratelimit-limit']).toBeUndefined();
      }
    } finally {
      await ctx.close();
    }
  });
});
