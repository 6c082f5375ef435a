/**
 * What the web pages take from the services, and the rules every page follows: the caller inside
 * the path's organization (or a 404, exactly as the API hides another organization), and the
 * token's scopes (the API checks them at its edge; pages call the services directly, so they
 * check them here).
 */
import type { Actor, Principal, Scope } from '../core/identity';
import { ForbiddenError, NotFoundError } from '../core/errors';
import type { Services } from '../services';
import { isUuid } from '../core/uuid';

export type WebServices = Pick<
  Services,
  | 'db'
  | 'tokens'
  | 'pipelines'
  | 'builds'
  | 'jobs'
  | 'agents'
  | 'agentWork'
  | 'suites'
  | 'annotations'
  | 'artifacts'
  | 'organizations'
  | 'rateLimiter'
  | 'invitations'
  | 'webSessions'
>;

export interface WebDeps extends WebServices {
  publicUrl: string;
}

export function actorFor(principal: Principal, orgSlug: string): Actor {
  const reached = principal.organizationsBySlug.get(orgSlug);
  if (!reached) throw new NotFoundError('organization');
  return { principal, ...reached };
}

export function can(principal: Principal, scope: Scope): boolean {
  return principal.token.scopes.includes(scope);
}

export function need(principal: Principal, scope: Scope): void {
  if (!can(principal, scope)) throw new ForbiddenError(scope);
}

/** An id from the path: a UUID, or the thing does not exist (Postgres would refuse the comparison). */
export function idParam(value: string | undefined, what: string): string {
  if (!isUuid(value)) throw new NotFoundError(what);
  return value.toLowerCase();
}
