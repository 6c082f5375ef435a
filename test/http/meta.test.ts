import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('meta routes', (ctx) => {
  it('GET / says hello with a unix timestamp, without auth', async () => {
    const res = await ctx().http().get('/').expect(200);
    expect(typeof res.body.message).toBe('string');
    expect(Math.abs(res.body.timestamp - Date.now() / 1000)).toBeLessThan(60);
  });

  it('serves liveness and readiness', async () => {
    await ctx().http().get('/healthz').expect(200, { status: 'ok' });
    await ctx().http().get('/readyz').expect(200, { status: 'ok' });
  });

  it('serves its own contract as JSON and YAML, identical', async () => {
    const json = await ctx()
      .http()
      .get('/openapi.json')
      .expect(200)
      .expect('Content-Type', /application\/json/);
    const yaml = await ctx()
      .http()
      .get('/openapi.yaml')
      .expect(200)
      .expect('Content-Type', /application\/yaml/);
    expect(json.body.openapi).toBe('3.1.0');
    expect(YAML.parse(yaml.text)).toEqual(json.body);
  });

  it('serves the bundled contract: the committed generated/openapi.yaml, every $ref inside it', async () => {
    const yaml = await ctx().http().get('/openapi.yaml').expect(200);
    expect(yaml.text).toBe(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.yaml'), 'utf8'));
    const refs = [...yaml.text.matchAll(/\$ref: '?([^'\n]*)'?$/gm)].map((m) => m[1]!);
    expect(refs.length).toBeGreaterThan(100);
    expect(refs.filter((r) => !r.startsWith('#/'))).toEqual([]);
  });

  it('answers an unknown /v2 path with 401 before anything else, and 404 once authenticated', async () => {
    const res = await ctx().http().get('/v2/nothing-here').expect(401);
    expect(res.headers['www-authenticate']).toBe('Bearer');
    const { token } = await ctx().givenAdmin();
    const found = await ctx().http().get('/v2/nothing-here').set('Authorization', `Bearer ${token}`).expect(404);
    expect(found.body).toEqual({ message: 'Not Found' });
  });

  it('gives every response a request id, and echoes a sane incoming one', async () => {
    const res = await ctx().http().get('/healthz').set('X-Request-Id', 'abc-123').expect(200);
    expect(res.headers['x-request-id']).toBe('abc-123');
    const generated = await ctx().http().get('/healthz').set('X-Request-Id', 'bad id with spaces').expect(200);
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('sends no ETag and never a 304, which no operation documents: a conditional GET gets the body', async () => {
    const { org, token } = await ctx().givenAdmin();
    const first = await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).expect(200);
    expect(first.headers.etag).toBeUndefined();
    const again = await ctx().http().get(`/v2/organizations/${org.slug}`).set(auth(token)).set('If-None-Match', '*').expect(200);
    expect(again.body).toEqual(first.body);
    const since = await ctx()
      .http()
      .get(`/v2/organizations/${org.slug}`)
      .set(auth(token))
      .set('If-Modified-Since', new Date(Date.now() + 3600_000).toUTCString())
      .expect(200);
    expect(since.body).toEqual(first.body);
  });
});
