/**
 * The rules of the job endpoints under a build: unblocking a block step, retrying a job, and
 * its log and environment. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../../generated/api';
import type { BuildService, BuildWithJobs } from '../service';
import { ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../../core/errors';
import type { OrganizationService } from '../../organizations/service';
import type { AgentService } from '../../agents/service';
import type { BuildProgress } from '../progress/service';
import type { JobLogRepository } from './log-repository';
import { UNFINISHED_JOB_STATES, type Job, type JobContext, type LogChunk } from './model';
import type { JobRepository } from './repository';
import { TERMINAL_JOB_STATES } from './state';
import type { JobState } from '../model';
import type { Actor } from '../../core/identity';

/** Job states a retry starts from. */
const RETRYABLE = ['failed', 'timed_out', 'canceled'];

/** A job can be reprioritized until it finishes. */
const REPRIORITIZABLE: JobState[] = UNFINISHED_JOB_STATES.concat(['running']);

type UnblockBody = components['schemas']['UnblockJobRequest'];

export class JobService {
  /** Retries and unblocks move the build along: through `progress`, which owns their transactions. */
  constructor(
    private readonly jobs: JobRepository,
    private readonly logs: JobLogRepository,
    private readonly progress: BuildProgress,
    private readonly builds: BuildService,
    private readonly organizations: OrganizationService,
    private readonly agents: AgentService,
  ) {}

  /** Jobs by id for the server's own work, with no caller to check (notifications: a job's step). */
  findForSystem(ids: string[]): Promise<Job[]> {
    return this.jobs.findMany(ids);
  }

  /** The build and one of its jobs (retried ones included), as the caller may read them. */
  async find(actor: Actor, pipelineSlug: string, number: number, jobId: string): Promise<{ item: BuildWithJobs; job: Job }> {
    const item = await this.builds.get(actor, pipelineSlug, number, true);
    const job = item.jobs.find((j) => j.id === jobId);
    if (!job) throw new NotFoundError('job');
    return { item, job };
  }

  /**
   * A job of the caller's organization named by its id alone (the `/organizations/{org}/jobs/{id}`
   * routes), with its build as the caller may read it: 404 for another organization's job or
   * one in a pipeline the caller can't see.
   */
  async inOrganization(actor: Actor, jobId: string): Promise<{ item: BuildWithJobs; job: Job }> {
    const context = await this.jobs.findWithContext(jobId);
    if (!context || context.organizationId !== actor.organization.id) throw new NotFoundError('job');
    try {
      return await this.find(actor, context.pipelineSlug, context.build.number, jobId);
    } catch (err) {
      // Named by its id alone, a job whose pipeline the caller may not see is as missing as a
      // random id: `No job found`, never the `No pipeline found` that would say it exists.
      if (err instanceof NotFoundError) throw new NotFoundError('job');
      throw err;
    }
  }

  /** The job's log as pages of chunks, read from the store as the caller consumes them. */
  async logPages(actor: Actor, pipelineSlug: string, number: number, jobId: string): Promise<AsyncIterable<LogChunk[]>> {
    await this.find(actor, pipelineSlug, number, jobId);
    return this.logs.logPages(jobId);
  }

  /** Only a finished job's log: a running job is still writing it. */
  async deleteLog(actor: Actor, pipelineSlug: string, number: number, jobId: string): Promise<void> {
    const { item, job } = await this.find(actor, pipelineSlug, number, jobId);
    if (!item.perms.build) throw new ForbiddenError();
    if (!TERMINAL_JOB_STATES.includes(job.state)) throw new UnprocessableError(`This job's log can't be deleted while the job is ${job.state}.`);
    await this.logs.deleteLog(jobId);
  }

  async env(
    actor: Actor,
    pipelineSlug: string,
    number: number,
    jobId: string,
  ): Promise<{ context: JobContext; agent: { id: string; name: string; metaData: string[] } | null }> {
    const { job } = await this.find(actor, pipelineSlug, number, jobId);
    const context = (await this.jobs.findWithContext(job.id))!;
    const agent = job.agentId ? ((await this.agents.byIds([job.agentId]))[0] ?? null) : null;
    return { context, agent };
  }

  async retry(actor: Actor, pipelineSlug: string, number: number, jobId: string): Promise<{ item: BuildWithJobs; jobId: string }> {
    const { item, job } = await this.find(actor, pipelineSlug, number, jobId);
    if (!item.perms.build) throw new ForbiddenError();
    if (job.type !== 'script') throw new UnprocessableError("This job can't be retried: only command steps can be.");
    if (job.retried) throw new UnprocessableError('This job has already been retried.');
    const manual = job.step.type === 'script' ? job.step.retry?.manual : undefined;
    if (manual && !manual.allowed) throw new UnprocessableError(manual.reason ?? "This job can't be retried: its step doesn't allow manual retries.");
    const retryable = manual?.permit_on_passed ? [...RETRYABLE, 'passed'] : RETRYABLE;
    if (!retryable.includes(job.state)) {
      const which = manual?.permit_on_passed ? 'passed, failed, timed out or canceled' : 'failed, timed out or canceled';
      throw new UnprocessableError(`This job can't be retried because it is ${job.state}: only ${which} jobs can be.`);
    }
    if (item.build.state === 'canceling') throw new UnprocessableError("This job can't be retried while its build is canceling.");
    // As the REST jobs docs have it: a canceled build stays canceled (rebuild it instead).
    if (item.build.state === 'canceled') throw new UnprocessableError('Jobs from canceled builds cannot be retried');
    const newId = crypto.randomUUID();
    if (!(await this.progress.retry(item.build.id, job.id, newId, retryable))) throw new UnprocessableError('This job has already been retried.');
    return { item: await this.builds.get(actor, pipelineSlug, number, true), jobId: newId };
  }

  /** A command job that has not finished runs before (or after) others: agents take higher `priority` first. */
  async reprioritize(actor: Actor, pipelineSlug: string, number: number, jobId: string, priority: number): Promise<{ item: BuildWithJobs; jobId: string }> {
    return this.setPriority(actor, await this.find(actor, pipelineSlug, number, jobId), priority);
  }

  /** The same, for a job found by its id alone within the caller's organization. */
  async reprioritizeById(actor: Actor, jobId: string, priority: number): Promise<{ item: BuildWithJobs; jobId: string }> {
    return this.setPriority(actor, await this.inOrganization(actor, jobId), priority);
  }

  private async setPriority(actor: Actor, { item, job }: { item: BuildWithJobs; job: Job }, priority: number): Promise<{ item: BuildWithJobs; jobId: string }> {
    if (!item.perms.build) throw new ForbiddenError();
    if (job.type !== 'script') throw new UnprocessableError("This job can't be reprioritized: only command steps' jobs can be.");
    if (!(await this.jobs.setPriority(job.id, priority, REPRIORITIZABLE))) {
      const now = (await this.jobs.findWithContext(job.id))!.job.state;
      throw new UnprocessableError(`This job can't be reprioritized because it is ${now}: only jobs that have not finished can be.`);
    }
    return { item: await this.builds.get(actor, item.pipeline.slug, item.build.number, true), jobId: job.id };
  }

  /**
   * A block step that the build has reached goes on: `unblocker` (a member of the organization,
   * by id) or else the caller is recorded, and the step's `fields` become build meta-data.
   */
  async unblock(actor: Actor, pipelineSlug: string, number: number, jobId: string, body: UnblockBody): Promise<{ item: BuildWithJobs; jobId: string }> {
    const item = await this.builds.get(actor, pipelineSlug, number, true);
    const job = item.jobs.find((j) => j.id === jobId);
    if (!job) throw new NotFoundError('job');
    if (!item.perms.build) throw new ForbiddenError();
    if (job.type !== 'manual') throw new UnprocessableError("This job can't be unblocked: it isn't a block step.");
    if (['canceling', 'canceled'].includes(item.build.state)) throw new UnprocessableError(`This job can't be unblocked: its build is ${item.build.state}.`);
    if (job.state !== 'blocked') throw new UnprocessableError(`This job can't be unblocked: it is ${job.state}.`);
    let by = actor.principal.user;
    if (body.unblocker !== undefined && body.unblocker !== by.id) {
      const other = await this.organizations.member(actor.organization.id, body.unblocker);
      if (!other) throw ValidationError.field('unblocker', 'is not a member of this organization');
      by = other;
    }
    if (!(await this.progress.unblock(item.build.id, jobId, by, body.fields ?? {})))
      throw new UnprocessableError("This job can't be unblocked: it is no longer blocked.");
    return { item: await this.builds.get(actor, pipelineSlug, number, true), jobId };
  }
}
