import { createRequire } from 'node:module';
import { cacheRouteRegexps } from '../../src/http/route-regexp-cache';

describe('route regexp cache', () => {
  const ptr = () =>
    createRequire(require.resolve('express-openapi-validator'))('path-to-regexp') as {
      pathToRegexp: (p: unknown, o?: object) => { regexp: RegExp; keys: { name: string }[] };
    };

  it('compiles each route of the validator once and matches as before', () => {
    cacheRouteRegexps();
    const opts = { sensitive: false, strict: false };
    const first = ptr().pathToRegexp('/v2/organizations/:org_slug/pipelines/:pipeline_slug', opts);
    expect(ptr().pathToRegexp('/v2/organizations/:org_slug/pipelines/:pipeline_slug', { ...opts })).toBe(first);
    expect(ptr().pathToRegexp('/v2/organizations/:org_slug/pipelines/:pipeline_slug', { sensitive: true, strict: false })).not.toBe(first);
    expect(first.regexp.exec('/v2/organizations/acme/pipelines/app')?.slice(1)).toEqual(['acme', 'app']);
    expect(first.regexp.exec('/v2/organizations/acme/pipelines/app/builds')).toBeNull();
    expect(first.keys.map((k) => k.name)).toEqual(['org_slug', 'pipeline_slug']);
  });
});
