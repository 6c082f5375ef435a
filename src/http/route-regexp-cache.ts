/**
 * express-openapi-validator (5.6.2, the latest) finds a request's operation by compiling every
 * documented route with path-to-regexp on every request (`lookupRoute` in its
 * openapi.metadata.js) and keeps none of the results. With this API's ~40 routes that was about
 * 12% of the CPU of a get-a-build request. It looks `pathToRegexp` up on the module object at
 * each call, so memoizing that export of the very module instance it loads fixes it without
 * touching the library. The routes are a fixed set (the spec's paths), so the cache is bounded
 * by them; anything unusual (non-string path, options with other values) is passed through.
 */
import { createRequire } from 'node:module';

type PathToRegexp = (path: unknown, options?: Record<string, unknown>) => unknown;

let installed = false;

export function cacheRouteRegexps(): void {
  if (installed) return;
  installed = true;
  const fromValidator = createRequire(require.resolve('express-openapi-validator'));
  const mod = fromValidator('path-to-regexp') as { pathToRegexp: PathToRegexp };
  const compile = mod.pathToRegexp;
  const cache = new Map<string, unknown>();
  const MAX = 1000;
  mod.pathToRegexp = (path, options) => {
    // The validator passes only `sensitive` and `strict` (booleans), once per route per request:
    // the key is built from those two without serializing the options.
    const opts = (options ?? {}) as { sensitive?: unknown; strict?: unknown };
    let simple = typeof path === 'string';
    for (const k in opts) if ((k !== 'sensitive' && k !== 'strict') || (typeof opts[k] !== 'boolean' && opts[k] !== undefined)) simple = false;
    if (!simple) return compile(path, options);
    const key = `${opts.sensitive ? 's' : '-'}${opts.strict ? 's' : '-'} ${path as string}`;
    let compiled = cache.get(key);
    if (compiled === undefined) {
      compiled = compile(path, options);
      if (cache.size < MAX) cache.set(key, compiled);
    }
    return compiled;
  };
}
