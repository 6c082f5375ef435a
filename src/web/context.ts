/**
 * What the web pages take from the services, and the rules every page follows: the caller inside
 * the path's organization (or a 404, exactly as the API hides another organization), and the
 * token's scopes (the API checks them at its edge; pages call the services directly, so they
 * check them here).
 */
import type { Actor, Principal, Scope } from '../core/identity';
import { ForbiddenError, NotFoundError } from '../core/errors';
import type { Knex } from 'knex';
import type { AccessTokenService } from '../access-token/service';
import type { AgentService } from '../agents/service';
import type { AnnotationService } from '../annotations/service';
import type { ArtifactService } from '../artifacts/service';
import type { AgentWorkService } from '../builds/jobs/agent-work';
import type { JobService } from '../builds/jobs/service';
import type { BuildService } from '../builds/service';
import type { RateLimiter } from '../http/rate-limit';
import type { InvitationService } from '../invitations/service';
import type { OrganizationService } from '../organizations/service';
import type { PipelineService } from '../pipelines/service';
import type { SuiteService } from '../suites/service';
import type { WebSessions } from './sessions';
import { isUuid } from '../core/uuid';

/**
 * The services the pages call, as src/services.ts names them (typed here, not picked from
 * `Services`: the composition root builds the web sessions, so the web area sits below it).
 */
export interface WebServices {
  db: Knex;
  tokens: AccessTokenService;
  pipelines: PipelineService;
  builds: BuildService;
  jobs: JobService;
  agents: AgentService;
  agentWork: AgentWorkService;
  suites: SuiteService;
  annotations: AnnotationService;
  artifacts: ArtifactService;
  organizations: OrganizationService;
  rateLimiter: RateLimiter;
  invitations: InvitationService;
  webSessions: WebSessions;
}

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
