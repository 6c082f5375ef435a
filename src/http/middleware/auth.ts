/**
 * Authentication and authorization at the edge: who is calling (bearer token), which
 * organization the path names and whether the token may reach it, and whether the token has
 * the scope the operation needs. Scopes come from the spec's security requirements, so the
 * contract and the enforcement cannot drift apart.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routeTable } from '../contract/route-table';
import { ForbiddenError, IpNotAllowedError, NotFoundError, UnauthorizedError } from '../../core/errors';
import { ipAllowed } from '../../security/allowed-ips';
import type { Principal, Organization, Role } from '../../core/identity';
import { localsOf } from './locals';
import { METHODS, specOperations } from '../contract/spec-operations';
import { isOneOf } from '../../db/row-types';

const BEARER = /^Bearer ([A-Za-z0-9_.~+/=-]{1,4096})$/i;

/** Who a bearer token is (the access-token area's service; by shape, so http/ depends on no area). */
export interface BearerAuthenticator {
  authenticate(bearer: string): Promise<Principal>;
}

export function authenticate(tokens: BearerAuthenticator) {
  return async (req: Request, res: Response, next: NextFunction) => {
    const header = req.get('authorization');
    const match = header ? BEARER.exec(header.trim()) : null;
    if (!match) throw new UnauthorizedError('missing or malformed Authorization header');
    res.locals.principal = await tokens.authenticate(match[1]!);
    next();
  };
}

export function principalOf(res: Response): Principal {
  const p = localsOf(res).principal;
  if (!p) throw new UnauthorizedError('not authenticated');
  return p;
}

export interface OrgContext {
  organization: Organization;
  role: Role;
}

export function orgOf(res: Response): OrgContext {
  const { organization, role } = localsOf(res);
  if (!organization || !role) throw new NotFoundError('organization');
  return { organization, role };
}

/** The caller within the path's organization: the actor every organization-scoped service takes. */
export function actorOf(res: Response): { principal: Principal } & OrgContext {
  return { principal: principalOf(res), ...orgOf(res) };
}

export interface OperationGuard {
  operationId: string | undefined;
  method: string;
  /** Express path, e.g. /v2/organizations/:org_slug/pipelines */
  path: string;
  /** Every role name of the bearerAuth requirement: the token needs all of them. */
  scopes: string[];
  hasOrg: boolean;
}

type SecurityRequirement = Record<string, string[]>;
type SpecDoc = { paths?: Record<string, Record<string, unknown>>; security?: SecurityRequirement[] };

/** One guard per operation that needs a bearer token, read from the spec. */
export function guardsFromSpec(spec: SpecDoc): OperationGuard[] {
  const guards: OperationGuard[] = [];
  for (const { method, specPath, path, operation } of specOperations<{ security?: SecurityRequirement[] }>(spec)) {
    const security = operation.security ?? spec.security ?? [];
    const bearer = security.find((s) => 'bearerAuth' in s);
    if (!bearer) continue;
    guards.push({ operationId: operation.operationId, method, path, scopes: bearer.bearerAuth ?? [], hasOrg: specPath.includes('{org_slug}') });
  }
  return guards;
}

/** The scopes of each guarded operation, by its operationId: for callers that stand for an operation without its path (the web pages). */
export function scopesByOperation(guards: OperationGuard[]): Map<string, readonly string[]> {
  return new Map(guards.flatMap((g) => (g.operationId ? [[g.operationId, g.scopes] as const] : [])));
}

/** The first of `scopes` the principal's token lacks, if any. */
export function missingScope(principal: Principal, scopes: readonly string[]): string | undefined {
  return scopes.find((scope) => !isOneOf(principal.token.scopes, scope));
}

/** The scope check of an operation: every one of its scopes, or a 403 naming the first one missing. */
export function requireScopes(principal: Principal, scopes: readonly string[]): void {
  const missing = missingScope(principal, scopes);
  if (missing) throw new ForbiddenError(missing);
}

/** An organization's API IP allow-list (its API settings; null: any address), asked on each request (the organizations' service keeps it a second). */
export type AllowedIpsOf = (organizationId: string) => Promise<string | null>;

/**
 * Per operation: the organization in the path must be one the token reaches (else 404, exactly
 * like a missing one, so its existence is never revealed), the request must come from an address
 * its API IP allow-list admits (else 403), then every scope must be present (403).
 */
export function guardRouter(guards: OperationGuard[], allowedIpsOf: AllowedIpsOf = async () => null): RequestHandler {
  const table = routeTable();
  for (const g of guards) {
    // The guards are the spec's operations (guardsFromSpec): their methods are the spec's.
    if (!isOneOf(METHODS, g.method)) throw new TypeError(`guard of ${g.path}: no such method ${g.method}`);
    table.add(g.method, g.path, async (req, res, next) => {
      const principal = principalOf(res);
      if (g.hasOrg) {
        const reached = principal.organizationsBySlug.get(String(req.params.org_slug));
        if (!reached) throw new NotFoundError('organization');
        res.locals.organization = reached.organization;
        res.locals.role = reached.role;
        const allowed = await allowedIpsOf(reached.organization.id);
        if (allowed && !ipAllowed(allowed, req.ip)) throw new IpNotAllowedError(req.ip ?? 'unknown');
      }
      requireScopes(principal, g.scopes);
      next();
    });
  }
  return table.handler;
}
