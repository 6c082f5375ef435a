import { loadConfig } from '../../src/config';
import { auth, createTestContext, describeEachDatabase } from '../support/context';
import { givenPipeline } from '../support/given';

const APP = 'https://app.example.com';

describeEachDatabase(
  'CORS for the configured origins',
  (ctx) => {
    let org: { slug: string };
    let token: string;
    beforeAll(async () => {
      ({ org, token } = await ctx().givenAdmin());
      await givenPipeline(ctx(), org, token);
    });

    it('answers a preflight from an allowed origin with the methods the spec declares for the path', async () => {
      const res = await ctx()
        .http()
        .options(`/v2/organizations/${org.slug}/pipelines`)
        .set('Origin', APP)
        .set('Access-Control-Request-Method', 'POST')
        .set('Access-Control-Request-Headers', 'authorization, content-type')
        .expect(204);
      expect(res.headers['access-control-allow-origin']).toBe(APP);
      expect(res.headers['access-control-allow-methods']).toBe('GET, POST, HEAD, OPTIONS');
      expect(res.headers['allow']).toBe('GET, POST, HEAD, OPTIONS');
      expect(res.headers['access-control-allow-headers']).toBe('Authorization, Content-Type, X-Request-Id');
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      expect(res.headers['vary']).toMatch(/Origin/);
    });

    it('lists a build path’s own methods: GET only for a build, PUT for its cancel', async () => {
      const build = await ctx()
        .http()
        .options(`/v2/organizations/${org.slug}/pipelines/p/builds/1`)
        .set('Origin', APP)
        .set('Access-Control-Request-Method', 'GET')
        .expect(204);
      expect(build.headers['access-control-allow-methods']).toBe('GET, HEAD, OPTIONS');
      const cancel = await ctx()
        .http()
        .options(`/v2/organizations/${org.slug}/pipelines/p/builds/1/cancel`)
        .set('Origin', APP)
        .set('Access-Control-Request-Method', 'PUT')
        .expect(204);
      expect(cancel.headers['access-control-allow-methods']).toBe('PUT, OPTIONS');
    });

    it('echoes an allowed origin on a simple request and exposes pagination and rate-limit headers', async () => {
      const res = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).set('Origin', APP).expect(200);
      expect(res.headers['access-control-allow-origin']).toBe(APP);
      const exposed = String(res.headers['access-control-expose-headers'])
        .split(',')
        .map((h) => h.trim());
      expect(exposed).toEqual(expect.arrayContaining(['Link', 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'Retry-After']));
    });

    it('gives a disallowed origin no CORS header, and a plain OPTIONS its Allow', async () => {
      const simple = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).set('Origin', 'https://evil.example.com').expect(200);
      expect(simple.headers['access-control-allow-origin']).toBeUndefined();
      const preflight = await ctx()
        .http()
        .options(`/v2/organizations/${org.slug}/pipelines`)
        .set('Origin', 'https://evil.example.com')
        .set('Access-Control-Request-Method', 'POST')
        .expect(204);
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
      expect(preflight.headers['access-control-allow-methods']).toBeUndefined();
      expect(preflight.headers['allow']).toBe('GET, POST, HEAD, OPTIONS');
    });

    it('lets an allowed page read a badge’s JSON', async () => {
      const res = await ctx().http().get('/badges/sample.json?status=passing').set('Origin', APP).expect(200, { status: 'passing' });
      expect(res.headers['access-control-allow-origin']).toBe(APP);
    });

    it('answers OPTIONS on a path outside the spec with a 404', async () => {
      const res = await ctx().http().options('/nothing-here').expect(404);
      expect(res.body.message).toEqual(expect.any(String));
    });
  },
  { corsOrigins: [APP, 'http://localhost:3000'] },
);

describeEachDatabase('no CORS origins configured', null, (_get, kind) => {
  it('sends no CORS header at all, and OPTIONS still lists the methods from the spec', async () => {
    const ctx = await createTestContext(kind);
    try {
      const { org, token } = await ctx.givenAdmin();
      const res = await ctx.http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).set('Origin', APP).expect(200);
      expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
      const options = await ctx.http().options(`/v2/organizations/${org.slug}/pipelines`).set('Origin', APP).expect(204);
      expect(options.headers['allow']).toBe('GET, POST, HEAD, OPTIONS');
      expect(Object.keys(options.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
    } finally {
      await ctx.close();
    }
  });
});

describe('CORS_ORIGINS', () => {
  it('takes comma-separated origins, none by default, and refuses anything but an origin', () => {
    expect(loadConfig({}).corsOrigins).toEqual([]);
    expect(loadConfig({ CORS_ORIGINS: 'https://app.example.com, http://localhost:3000' }).corsOrigins).toEqual([
      'https://app.example.com',
      'http://localhost:3000',
    ]);
    expect(() => loadConfig({ CORS_ORIGINS: '*' })).toThrow(/CORS_ORIGINS must be a comma-separated list of origins/);
    expect(() => loadConfig({ CORS_ORIGINS: 'https://app.example.com/path' })).toThrow(/"https:\/\/app.example.com\/path" is not one/);
  });
});
