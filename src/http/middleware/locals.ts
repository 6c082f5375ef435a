/**
 * What middleware leaves for later middleware and handlers in `res.locals`, typed once through
 * Express's `Locals` (declaration merging): the fields the HTTP floor sets are declared here; an
 * area adds its own beside the middleware that sets them (src/agent-api/locals.ts: the agent and
 * the registration; src/uploads/routes.ts: the uploader). Read them through `localsOf(res)` (a
 * plain Express `Response` types its locals as `any`) or the accessors that check them
 * (`principalOf`, `orgOf` in auth.ts): no casts at the call sites.
 */
import type { Organization, Principal, Role } from '../../core/identity';
import type { RateLimitUsage } from './rate-limit';

/** What a body's own parser already checked, so the general body checks need not walk it again (an upload's). */
export interface CheckedBody {
  /** Its depth is within MAX_JSON_DEPTH. */
  depth: true;
  /** No string or key can hold NUL (the text has no `\u0000` escape). */
  nulFree: boolean;
  /**
   * The body's `data`, taken out before express-openapi-validator sees the body (it sees `[]`):
   * the results are checked one by one, in batches, by the upload service (src/uploads/results.ts),
   * which the validator's single pass over 5,000 results would hold the event loop for.
   */
  results?: unknown[];
}

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's own augmentation point
  namespace Express {
    interface Locals {
      /** The request's id (X-Request-Id), set first (logger.ts). */
      requestId?: string;
      /** The spec operation the request names (spec-paths.ts); unset outside the spec. */
      operationId?: string;
      /** The spec path the request names, parameters unnamed (spec-paths.ts); null outside the spec, unset before `tagOperation`. */
      specRoute?: string | null;
      /** The bearer token's holder (auth.ts `authenticate`). */
      principal?: Principal;
      /** The organization the path names, and the caller's role in it (auth.ts). */
      organization?: Organization;
      role?: Role;
      /** What the rate limiter counted the request as (rate-limit.ts). */
      rateLimit?: RateLimitUsage;
      checkedBody?: CheckedBody;
    }
  }
}

/** `res.locals` with its declared fields, from any response (Express types a plain one's as `any`). */
export function localsOf(res: { locals: Express.Locals }): Express.Locals {
  return res.locals;
}
