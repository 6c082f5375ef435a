/**
 * Whether a page shows what leads to an operation (a button, a link to a form): only when the
 * API would let this caller perform it, so nobody is offered a button that ends in "Forbidden".
 *
 * Two checks, the API's own: the token's scopes for the operation (the spec's security
 * requirement, through `mayCall`, the guard the API's edge runs), then the rule the operation's
 * service applies to the caller: an administrator's operations by the role in the page's
 * organization (the agents service's `administered`), a pipeline's by the caller's permissions
 * on it (`PipelineService.permissions`: `build` for builds and jobs, `edit` for the pipeline).
 * Pages that show a pipeline's buttons pass the `Permissions` the pipelines service gave them.
 */
import type { Permissions } from '../core/identity';
import type { OperationId } from '../http/contract/operation';
import { mayCall } from './context';
import type { PageContext } from './ui';

/** What the services ask beyond the scopes, by operation. */
type Rule = 'admin' | 'build' | 'edit' | 'create-pipeline';

const RULES: Partial<Record<OperationId, Rule>> = {
  // The agents service acts only for the organization's administrators (src/agents/service.ts).
  pauseAgent: 'admin',
  resumeAgent: 'admin',
  stopAgent: 'admin',
  // Builds and jobs: the pipeline's `build` permission (src/builds/service.ts, src/builds/jobs/service.ts).
  createBuild: 'build',
  rebuildBuild: 'build',
  cancelBuild: 'build',
  retryJob: 'build',
  unblockJob: 'build',
  // The pipeline itself: its `edit` permission (PipelineService.getEditable).
  updatePipeline: 'edit',
  archivePipeline: 'edit',
  unarchivePipeline: 'edit',
  deletePipeline: 'edit',
  createPipeline: 'create-pipeline',
};

/** Optional facts about the thing acted on: the caller's permissions on the pipeline of the page. */
export interface Subject {
  pipeline?: Permissions;
}

/**
 * Whether the signed-in caller may perform `operation` in the page's organization (on `subject`).
 * A pipeline operation asked without the pipeline's permissions is refused: a page that cannot say
 * shows no button.
 */
export function can(ctx: PageContext, operation: OperationId, subject: Subject = {}): boolean {
  const principal = ctx.principal;
  if (!principal || !mayCall(principal, operation)) return false;
  const membership = ctx.orgSlug ? principal.organizationsBySlug.get(ctx.orgSlug) : undefined;
  const rule = RULES[operation];
  if (rule === undefined) return true;
  if (!membership) return false;
  switch (rule) {
    case 'admin':
      return membership.role === 'admin';
    case 'build':
      return subject.pipeline?.build === true;
    case 'edit':
      return subject.pipeline?.edit === true;
    case 'create-pipeline':
      // In an organization with teams a member names a team of theirs for the new pipeline, which
      // the web form does not ask: only an administrator (who needs none) gets the form.
      return !membership.organization.teamsEnabled || membership.role === 'admin';
  }
}
