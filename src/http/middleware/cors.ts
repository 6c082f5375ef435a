/**
 * CORS for browser clients (the `cors` middleware), only for the origins CORS_ORIGINS names: a
 * request from one of them gets `Access-Control-Allow-Origin` echoing it (and `Vary: Origin`),
 * a preflight the methods the spec declares for that path; any other origin, or none configured,
 * gets no CORS header at all. Credentials are bearer tokens, not cookies, so no
 * `Access-Control-Allow-Credentials`.
 */
import cors, { type CorsOptions } from 'cors';
import type { Request, RequestHandler } from 'express';
import { allowedMethods, type SpecPathIndex } from '../contract/spec-paths';

/** What a browser script may read of a response: pagination, rate limits, the request id. */
export const EXPOSED_HEADERS = [
  'Link',
  'RateLimit-Scope',
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Warning',
  'RateLimit-User-Scope',
  'RateLimit-User-Limit',
  'RateLimit-User-Remaining',
  'RateLimit-User-Reset',
  'RateLimit-User-Warning',
  'Retry-After',
  'X-Request-Id',
];
export const ALLOWED_HEADERS = ['Authorization', 'Content-Type', 'X-Request-Id'];

export function corsMiddleware(origins: string[], index: SpecPathIndex): RequestHandler | undefined {
  if (origins.length === 0) return undefined;
  const allowed = new Set(origins);
  return cors<Request>((req, callback) => {
    const origin = req.get('origin');
    const operations = index.lookup(req.path);
    const options: CorsOptions = {
      origin: origin !== undefined && allowed.has(origin) ? origin : false,
      // Outside the spec (the docs page, the badges, the documents): GET only.
      methods: (operations ? allowedMethods(operations) : ['GET', 'HEAD', 'OPTIONS']).join(', '),
      allowedHeaders: ALLOWED_HEADERS.join(', '),
      exposedHeaders: EXPOSED_HEADERS.join(', '),
      maxAge: 600,
      optionsSuccessStatus: 204,
    };
    callback(null, options);
  });
}
