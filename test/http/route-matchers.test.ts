/**
 * express-openapi-validator 5.6.2 compiles the regular expression of every route of the spec on
 * every request while it looks for the request's operation (~20% of a get-a-build's CPU here,
 * BENCHMARKS.md). `patches/express-openapi-validator+5.6.2.patch` (applied by patch-package at
 * `npm ci`; the fix proposed upstream in cdimascio/express-openapi-validator#1217) keeps the
 * compiled matchers. This fails when the patch is not applied: the second request to a route
 * would compile every route again.
 */
import { createRequire } from 'node:module';
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('route matchers of the validator', (ctx) => {
  it('are compiled on the first request and never again, and still match the right operation', async () => {
    const pathToRegexp = createRequire(require.resolve('express-openapi-validator'))('path-to-regexp') as { pathToRegexp: (...args: unknown[]) => unknown };
    const { org, token } = await ctx().givenAdmin();
    const get = () => ctx().http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).expect(200);
    await get();
    const spy = jest.spyOn(pathToRegexp, 'pathToRegexp');
    try {
      await get();
      await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/missing`).set(auth(token)).expect(404);
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });
});
