/**
 * What the web pages take from the services, and the rules every page follows: the caller inside
 * the path's organization (or a 404, exactly as the API hides another organization), and the
 * token's scopes. Each page and action stands for an API operation and is guarded as that
 * operation is: the scopes come from the spec's security requirement of the operation and are
 * checked by the API's own guard function (http/auth.ts), so a page never asks for a different
 * scope than the API does for the same thing.
 */
import type { Actor, Principal } from '../core/identity';
import { NotFoundError } from '../core/errors';
import type { Knex } from 'knex';
import type { AccessTokenService } from '../access-token/service';
import type { AgentService } from '../agents/service';
import type { AnnotationService } from '../annotations/service';
import type { ArtifactService } from '../artifacts/service';
import type { AgentWorkService } from '../builds/jobs/agent-work';
import type { JobService } from '../builds/jobs/service';
import type { BuildService } from '../builds/service';
import type { EmojiService } from '../emojis/service';
import type { RateLimiter } from '../http/middleware/rate-limit';
import type { InvitationService } from '../invitations/service';
import type { OrganizationService } from '../organizations/service';
import type { PipelineService } from '../pipelines/service';
import type { SuiteService } from '../suites/service';
import type { WebSessions } from './sessions';
import type { ChangeFeed } from '../live/changes';
import type { Logger } from '../http/middleware/logger';
import type { LiveStreams } from './live';
import { isUuid } from '../core/uuid';
import { guardsFromSpec, missingScope, requireScopes, scopesByOperation } from '../http/middleware/auth';
import type { OperationId } from '../http/contract/operation';
import { loadSpec } from '../spec';

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
  emojis: EmojiService;
  organizations: OrganizationService;
  rateLimiter: RateLimiter;
  invitations: InvitationService;
  webSessions: WebSessions;
  /** What the live pages hear (src/web/live.ts), and their open streams. */
  changes: ChangeFeed;
  liveStreams: LiveStreams;
}

export interface WebDeps extends WebServices {
  publicUrl: string;
  logger?: Logger;
}

export function actorFor(principal: Principal, orgSlug: string): Actor {
  const reached = principal.organizationsBySlug.get(orgSlug);
  if (!reached) throw new NotFoundError('organization');
  return { principal, ...reached };
}

let operationScopes: Map<string, readonly string[]> | undefined;

/** The scopes the API's guard asks of `operation` (read once from the spec, as the API's guards are). */
export function scopesOf(operation: OperationId): readonly string[] {
  operationScopes ??= scopesByOperation(guardsFromSpec(loadSpec().doc));
  const scopes = operationScopes.get(operation);
  if (!scopes) throw new Error(`${operation} is not an operation the API guards with a bearer token`);
  return scopes;
}

/** Whether the token may call `operation`: a page shows what leads to it (a button, a list) only then. */
export function mayCall(principal: Principal, operation: OperationId): boolean {
  return missingScope(principal, scopesOf(operation)) === undefined;
}

/** The API's scope guard of `operation`: a 403 naming the first scope the token lacks. */
export function guardOperation(principal: Principal, operation: OperationId): void {
  requireScopes(principal, scopesOf(operation));
}

/** An id from the path: a UUID, or the thing does not exist (Postgres would refuse the comparison). */
export function idParam(value: string | undefined, what: string): string {
  if (!isUuid(value)) throw new NotFoundError(what);
  return value.toLowerCase();
}
