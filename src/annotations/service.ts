/**
 * The rules of annotations, for the REST API (a caller reaching a build or a job of it) and for
 * the agent (`buildkite-agent annotate` / `annotation remove` from a job it runs). One
 * annotation per context of a build (scope `build`) or of a job (scope `job`): writing a
 * context again replaces its body, or with `append` adds to it, keeping its id and created_at
 * and bumping updated_at; `style` and `priority` left out keep what the annotation had (a new
 * one is `default` and 3). A missing body (the agent only) restyles the existing annotation.
 *
 * Limits: a body is at most 1 MiB (1,048,576 bytes of UTF-8, what the real service and the
 * agent allow), after an append too; a context at most 100 characters (the agent's limit).
 * Bodies are rendered and sanitised once, when written (./render.ts). No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { Agent } from '../agents/repository';
import type { AgentWorkService } from '../builds/jobs/agent-work';
import type { Job } from '../builds/jobs/model';
import type { JobService } from '../builds/jobs/service';
import type { BuildService, BuildWithJobs } from '../builds/service';
import { ForbiddenError, NotFoundError, UnprocessableError, ValidationError, type FieldError } from '../core/errors';
import type { Actor } from '../core/identity';
import type { Annotation, AnnotationPlace, AnnotationRepository, AnnotationScope, AnnotationStyle } from './repository';
import { renderAnnotationHtml } from './render';
import { clock } from '../core/clock';

export const MAX_ANNOTATION_BODY_BYTES = 1024 * 1024;
export const MAX_ANNOTATION_CONTEXT_LENGTH = 100;
export const DEFAULT_ANNOTATION_PRIORITY = 3;
/** Tries of a write whose body depends on the stored one with the body rendered outside the lock, then under it. */
const OPTIMISTIC_TRIES = 5;
const MAX_TRIES = 20;

export interface AnnotationInput {
  /** Undefined: only style and priority change (the annotation must exist). */
  body?: string;
  context?: string;
  style?: AnnotationStyle;
  append?: boolean;
  priority?: number;
}

/** Where a REST call points: a build, or a job of it, as the caller may reach it. */
export interface AnnotationTarget {
  item: BuildWithJobs;
  job: Job | null;
}

export class AnnotationService {
  constructor(
    private readonly db: Knex,
    private readonly annotations: AnnotationRepository,
    private readonly builds: BuildService,
    private readonly jobs: JobService,
    private readonly work: AgentWorkService,
  ) {}

  /* REST: the caller's build or job, then the rule. */

  async build(actor: Actor, pipelineSlug: string, number: number): Promise<AnnotationTarget> {
    return { item: await this.builds.get(actor, pipelineSlug, number, false, { jobs: true, pipeline: true }), job: null };
  }

  async job(actor: Actor, pipelineSlug: string, number: number, jobId: string): Promise<AnnotationTarget> {
    return this.jobs.find(actor, pipelineSlug, number, jobId);
  }

  async organizationJob(actor: Actor, jobId: string): Promise<AnnotationTarget> {
    return this.jobs.inOrganization(actor, jobId);
  }

  /** A page of the target's annotations: a build's all, a job's own. */
  /** A page of the job's annotations, or of the build's (`scope`: its own, its jobs' or all). */
  list(t: AnnotationTarget, offset: number, limit: number, scope: AnnotationScope | 'all' = 'build'): Promise<Annotation[]> {
    return t.job ? this.annotations.listForJob(t.item.build.id, t.job.id, offset, limit) : this.annotations.listForBuild(t.item.build.id, scope, offset, limit);
  }

  async create(t: AnnotationTarget, input: AnnotationInput & { body: string }): Promise<Annotation> {
    if (!t.item.perms.build) throw new ForbiddenError();
    return (await this.write({ organizationId: t.item.build.organizationId, buildId: t.item.build.id, jobId: t.job?.id ?? null }, input)).annotation;
  }

  async delete(t: AnnotationTarget, id: string): Promise<void> {
    const found = await this.annotations.findInBuild(t.item.build.id, id);
    if (!found || (t.job && found.jobId !== t.job.id)) throw new NotFoundError('annotation');
    if (!t.item.perms.build) throw new ForbiddenError();
    if (!(await this.annotations.delete(id))) throw new NotFoundError('annotation');
  }

  /* The agent's, from a job it runs. */

  /** `buildkite-agent annotate`: answers the annotation and whether it is new. */
  async annotateFromJob(
    agent: Agent,
    jobId: string,
    input: AnnotationInput & { scope?: AnnotationScope },
  ): Promise<{ annotation: Annotation; created: boolean }> {
    const context = await this.work.jobOfRunningBuild(agent, jobId);
    const place = { organizationId: context.organizationId, buildId: context.build.id, jobId: input.scope === 'job' ? jobId : null };
    // As the agent sends them: an empty context is the default one, an empty body no body (a restyle).
    return this.write(place, { ...input, context: input.context || undefined, body: input.body || undefined });
  }

  /** `buildkite-agent annotation remove`: 404 when that context has no annotation. */
  async removeFromJob(agent: Agent, jobId: string, context: string, scope: AnnotationScope): Promise<void> {
    const job = await this.work.jobOfRunningBuild(agent, jobId);
    if (!(await this.annotations.deleteByContext({ buildId: job.build.id, jobId: scope === 'job' ? jobId : null }, context)))
      throw new NotFoundError('annotation');
  }

  /**
   * Creates, replaces, appends to or restyles the annotation of the input's context at
   * `place`. Rendering a large body takes a while (about a second a MiB), so it happens before
   * the transaction: the row lock (and on SQLite the one connection) is held for the statements
   * alone. A body that depends on the stored one (an append, a restyle) is worked out from a
   * snapshot read first, and the transaction writes it only if the stored body is still the
   * snapshot's, else it tries again; after OPTIMISTIC_TRIES the body is rendered under the lock,
   * so a context many jobs append to at once still gets every append in. A create that meets
   * another's create of the same context tries again, and becomes an update of the winner's.
   */
  private async write(place: AnnotationPlace & { organizationId: string }, input: AnnotationInput): Promise<{ annotation: Annotation; created: boolean }> {
    const context = input.context ?? 'default';
    const errors: FieldError[] = [];
    if (context.length > MAX_ANNOTATION_CONTEXT_LENGTH)
      errors.push({ field: 'context', code: `is too long (maximum is ${MAX_ANNOTATION_CONTEXT_LENGTH} characters)` });
    if (input.body !== undefined && Buffer.byteLength(input.body) > MAX_ANNOTATION_BODY_BYTES) errors.push({ field: 'body', code: tooLong() });
    if (errors.length) throw new ValidationError(errors);
    const dependsOnStored = input.body === undefined || input.append === true;
    /** The new body over what is stored. */
    const bodyOver = (stored: Annotation | null): string => {
      if (input.body === undefined) {
        if (!stored) throw new NotFoundError('annotation');
        return stored.body;
      }
      const body = input.append && stored ? stored.body + input.body : input.body;
      if (Buffer.byteLength(body) > MAX_ANNOTATION_BODY_BYTES) throw ValidationError.field('body', `${tooLong()} after the append`);
      return body;
    };
    const htmlOf = async (body: string, stored: Annotation | null) => (stored && body === stored.body ? stored.bodyHtml : renderAnnotationHtml(body));
    // A replace renders once, whatever the tries.
    const replacement = dependsOnStored ? undefined : { body: input.body!, html: await renderAnnotationHtml(input.body!) };

    for (let attempt = 1; attempt <= MAX_TRIES; attempt++) {
      let prepared: { body: string; html: string; over: Annotation | null } | undefined;
      if (replacement) prepared = { ...replacement, over: null };
      else if (attempt <= OPTIMISTIC_TRIES) {
        const stored = await this.annotations.find(place, context);
        const body = bodyOver(stored);
        prepared = { body, html: await htmlOf(body, stored), over: stored };
      }
      const at = clock.now();
      const done = await this.db.transaction(async (trx) => {
        const repo = this.annotations.withTransaction(trx);
        const existing = await repo.findForUpdate(place, context);
        // The stored annotation moved on since the snapshot: its body is worked out again.
        if (prepared && dependsOnStored && (existing?.id !== prepared.over?.id || existing?.body !== prepared.over?.body)) return undefined;
        const body = prepared?.body ?? bodyOver(existing);
        const bodyHtml = prepared?.html ?? (await htmlOf(body, existing));
        if (!existing) {
          const annotation: Annotation = {
            id: crypto.randomUUID(),
            organizationId: place.organizationId,
            buildId: place.buildId,
            jobId: place.jobId,
            scope: place.jobId ? 'job' : 'build',
            context,
            style: input.style ?? 'default',
            priority: input.priority ?? DEFAULT_ANNOTATION_PRIORITY,
            body,
            bodyHtml,
            createdAt: at,
            updatedAt: at,
          };
          // Another create of the context won: the next try updates it.
          return (await repo.insertIfAbsent(annotation)) ? { annotation, created: true } : undefined;
        }
        const fields = {
          style: input.style ?? existing.style,
          priority: input.priority ?? existing.priority,
          body,
          bodyHtml,
          // Never before created_at, whatever the clocks of the processes did.
          updatedAt: at < existing.createdAt ? existing.createdAt : at,
        };
        await repo.update(existing.id, fields);
        return { annotation: { ...existing, ...fields }, created: false };
      });
      if (done) return done;
    }
    throw new UnprocessableError(`The annotation ${context} kept changing while this one was written: send it again.`);
  }
}

function tooLong(): string {
  return `is too long (maximum is ${MAX_ANNOTATION_BODY_BYTES} bytes, 1 MiB)`;
}
