/**
 * The rules of the job endpoints under a build: unblocking a block step, retrying a job, and
 * its log and environment. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../../generated/api';
import type { BuildService, BuildWithJobs } from '../service';
import { BadRequestError, ForbiddenError, NotFoundError, RefusedError, UnprocessableError } from '../../core/errors';
import type { OrganizationService } from '../../organizations/service';
import type { AgentService } from '../../agents/service';
import type { Agent } from '../../agents/repository';
import type { BuildProgress } from '../progress/service';
import type { JobLogRepository } from './log-repository';
import type { Job, JobContext, LogChunk } from './model';
import type { JobRepository } from './repository';
import type { Build, JobState } from '../model';
import { jobInStates } from './state';
import { CANCELED_BUILD_STATES, REPRIORITIZABLE_JOB_STATES, RETRYABLE_JOB_STATES, retryFrom, TERMINAL_JOB_STATES } from '../states';
import type { Actor } from '../../core/identity';
import { oneCursorAtMost } from '../../core/time-cursor';
import { isUuid } from '../../core/uuid';
import type { ManualField } from '../../pipelines/configuration';

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

  /** The log sizes of jobs, for callers that already hold a credential for their build (live pages). */
  logSizesForSystem(ids: readonly string[]): Promise<Map<string, number>> {
    return this.logs.logSizes(ids);
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

  /** The job a route names: under its build, or by its id alone within the organization. */
  locate(actor: Actor, target: JobTarget): Promise<{ item: BuildWithJobs; job: Job }> {
    return 'pipelineSlug' in target ? this.find(actor, target.pipelineSlug, target.number, target.jobId) : this.inOrganization(actor, target.jobId);
  }

  /** One job, and the agent that took it (the job embeds it), as the caller may read them. */
  async get(actor: Actor, target: JobTarget): Promise<{ item: BuildWithJobs; job: Job; agents: Agent[] }> {
    const { item, job } = await this.locate(actor, target);
    return { item, job, agents: job.agentId ? await this.agents.byIds([job.agentId]) : [] };
  }

  /**
   * A page of the build's jobs in the build's order, from a cursor (a job id: `after` the jobs
   * after it, `before` those before it), only the states asked for; retried jobs unless
   * `includeRetried` is false. With the agents the page's jobs embed.
   */
  async list(
    actor: Actor,
    pipelineSlug: string,
    number: number,
    opts: { states?: JobState[]; includeRetried: boolean; stepKey?: string; groupKey?: string; after?: string; before?: string; limit: number },
  ): Promise<{ item: BuildWithJobs; jobs: Job[]; next: string | null; agents: Agent[] }> {
    oneCursorAtMost(opts);
    const item = await this.builds.get(actor, pipelineSlug, number, true);
    const states = opts.states?.length ? new Set(opts.states) : undefined;
    const groupKeyOf = (j: Job) => j.step.group_key;
    const all = item.jobs.filter(
      (j) =>
        (opts.includeRetried || !j.retried) &&
        (!states || jobInStates(j, states, { promisedAsFailed: true })) &&
        (opts.stepKey === undefined || j.stepKey === opts.stepKey) &&
        (opts.groupKey === undefined || groupKeyOf(j) === opts.groupKey),
    );
    const at = (cursor: string, name: string) => {
      const id = decodeJobCursor(cursor);
      const i = id === undefined ? -1 : all.findIndex((j) => j.id === id);
      if (i < 0) throw new BadRequestError(`Invalid parameter ${name}: not a cursor of this list (take it from links.next)`);
      return i;
    };
    let page: Job[];
    let more: boolean;
    if (opts.before !== undefined) {
      const end = at(opts.before, 'before');
      page = all.slice(Math.max(0, end - opts.limit), end);
      more = end > 0;
    } else {
      const start = opts.after !== undefined ? at(opts.after, 'after') + 1 : 0;
      page = all.slice(start, start + opts.limit);
      more = start + opts.limit < all.length;
    }
    const last = page[page.length - 1];
    const agentIds = [...new Set(page.flatMap((j) => (j.agentId ? [j.agentId] : [])))];
    return { item, jobs: page, next: more && last ? encodeJobCursor(last.id) : null, agents: agentIds.length ? await this.agents.byIds(agentIds) : [] };
  }

  /** The job's log as pages of chunks, read from the store as the caller consumes them. */
  async logPages(actor: Actor, target: JobTarget): Promise<AsyncIterable<LogChunk[]>> {
    const { job } = await this.locate(actor, target);
    return this.logs.logPages(job.id);
  }

  /** The job, its build and its log's pages (the log's JSON names the log's URL under the build). */
  async log(actor: Actor, target: JobTarget): Promise<{ item: BuildWithJobs; job: Job; pages: AsyncIterable<LogChunk[]> }> {
    const { item, job } = await this.locate(actor, target);
    return { item, job, pages: this.logs.logPages(job.id) };
  }

  /** The job and its log from byte `from` on (the web log viewer's tail), with the log's whole size. */
  async logFrom(actor: Actor, target: JobTarget, from: number): Promise<{ job: Job; size: number; pages: AsyncIterable<string[]> }> {
    const { job } = await this.locate(actor, target);
    return { job, ...(await this.logs.logFrom(job.id, from)) };
  }

  /** The size of the job's log in stored bytes (what HEAD answers as Content-Length). */
  async logSize(actor: Actor, target: JobTarget): Promise<number> {
    const { job } = await this.locate(actor, target);
    return this.logs.logSize(job.id);
  }

  /** Only a finished job's log: a running job is still writing it. */
  async deleteLog(actor: Actor, target: JobTarget): Promise<void> {
    const { item, job } = await this.locate(actor, target);
    if (!item.perms.build) throw new ForbiddenError();
    if (!TERMINAL_JOB_STATES.includes(job.state)) throw new UnprocessableError(`This job's log can't be deleted while the job is ${job.state}.`);
    await this.logs.deleteLog(job.id);
  }

  async env(actor: Actor, target: JobTarget): Promise<{ context: JobContext; agent: { id: string; name: string; metaData: string[] } | null }> {
    const { job } = await this.locate(actor, target);
    const context = (await this.jobs.findWithContext(job.id))!;
    const agent = job.agentId ? ((await this.agents.byIds([job.agentId]))[0] ?? null) : null;
    return { context, agent };
  }

  async retry(actor: Actor, target: JobTarget): Promise<{ item: BuildWithJobs; jobId: string }> {
    const { item, job } = await this.locate(actor, target);
    if (!item.perms.build) throw new ForbiddenError();
    // A job that is not one to retry is a 400, as jobs.md documents ("Only failed, timed out or
    // canceled jobs can be retried"); the build's and the step's own refusals are 422s.
    if (job.type !== 'script') throw new BadRequestError('Only failed, timed out or canceled jobs can be retried');
    if (job.retried) throw new UnprocessableError('This job has already been retried.');
    const manual = job.step.type === 'script' ? job.step.retry?.manual : undefined;
    if (manual && !manual.allowed) throw new UnprocessableError(manual.reason ?? "This job can't be retried: its step doesn't allow manual retries.");
    const retryable = manual?.permit_on_passed ? [...RETRYABLE_JOB_STATES, ...retryFrom('retry_passed')] : RETRYABLE_JOB_STATES;
    if (!retryable.includes(job.state)) {
      const which = manual?.permit_on_passed ? 'passed, failed, timed out or canceled' : 'failed, timed out or canceled';
      throw new BadRequestError(`Only ${which} jobs can be retried`);
    }
    // As the REST jobs docs have it: a canceled (or canceling) build stays canceled: rebuild it instead.
    if (CANCELED_BUILD_STATES.includes(item.build.state)) throw new UnprocessableError('Jobs from canceled builds cannot be retried');
    if (await this.waitedOnByCanceledBuild(item.build))
      throw new UnprocessableError("This job can't be retried because this build was triggered by a synchronous trigger step in a canceled build");
    const newId = crypto.randomUUID();
    if (!(await this.progress.retry(item.build.id, job.id, newId, retryable, actor.principal.user)))
      throw new UnprocessableError('This job has already been retried.');
    return { item: await this.builds.get(actor, item.pipeline.slug, item.build.number, true), jobId: newId };
  }

  /**
   * Whether the build was made by a synchronous trigger step (`async: false`: its trigger job waits
   * for the build) of a build that has been canceled since: the trigger job no longer waits, so
   * the build may not run again (the jobs docs' refusal).
   */
  private async waitedOnByCanceledBuild(build: Build): Promise<boolean> {
    if (!build.triggeredFrom) return false;
    const parent = await this.builds.findWithJobsById(build.triggeredFrom.build_id);
    if (!parent || !CANCELED_BUILD_STATES.includes(parent.build.state)) return false;
    const trigger = parent.jobs.find((j) => j.triggeredBuild?.id === build.id);
    return trigger?.step.type === 'trigger' && !trigger.step.trigger_async;
  }

  /** A command job that has not finished runs before (or after) others: agents take higher `priority` first. */
  async reprioritize(actor: Actor, target: JobTarget, priority: number): Promise<{ item: BuildWithJobs; jobId: string }> {
    return this.setPriority(actor, await this.locate(actor, target), priority);
  }

  private async setPriority(actor: Actor, { item, job }: { item: BuildWithJobs; job: Job }, priority: number): Promise<{ item: BuildWithJobs; jobId: string }> {
    if (!item.perms.build) throw new ForbiddenError();
    if (job.type !== 'script') throw new UnprocessableError("This job can't be reprioritized: only command steps' jobs can be.");
    if (!(await this.jobs.setPriority(job.id, priority, REPRIORITIZABLE_JOB_STATES))) {
      const now = (await this.jobs.findWithContext(job.id))!.job.state;
      throw new UnprocessableError(`This job can't be reprioritized because it is ${now}: only jobs that have not finished can be.`);
    }
    return { item: await this.builds.get(actor, item.pipeline.slug, item.build.number, true), jobId: job.id };
  }

  /**
   * A block step that the build has reached goes on: `unblocker` (a member of the organization,
   * by id) or else the caller is recorded, and the step's `fields` become build meta-data.
   */
  async unblock(actor: Actor, target: JobTarget, body: UnblockBody): Promise<{ item: BuildWithJobs; jobId: string }> {
    const { item, job } = await this.locate(actor, target);
    const jobId = job.id;
    const refusal = await this.unblockRefusal(actor, item, job);
    if (refusal) throw refusal;
    // As jobs.md documents them: a 400 for a job that is not a block step, a 422 for a canceled build.
    if (job.type !== 'manual') throw new BadRequestError('This job type cannot be unblocked');
    if (CANCELED_BUILD_STATES.includes(item.build.state)) throw new UnprocessableError('Jobs from canceled builds cannot be unblocked');
    if (job.state !== 'blocked') throw new UnprocessableError(`This job can't be unblocked: it is ${job.state}.`);
    let by = actor.principal.user;
    if (body.unblocker !== undefined && body.unblocker !== by.id) {
      const other = isUuid(body.unblocker) ? await this.organizations.member(actor.organization.id, body.unblocker.toLowerCase()) : null;
      // The docs' own answer, a message without field errors.
      if (!other) throw new UnprocessableError('Unblocker is not a valid user id for this organization');
      by = other;
    }
    const fields = job.step.type === 'manual' ? unblockMetaData(job.step.fields, body.fields ?? {}) : (body.fields ?? {});
    if (!(await this.progress.unblock(item.build.id, jobId, by, fields))) throw new UnprocessableError("This job can't be unblocked: it is no longer blocked.");
    return { item: await this.builds.get(actor, item.pipeline.slug, item.build.number, true), jobId };
  }

  /** The build's blocked jobs the caller may unblock (what a page offers to). */
  async unblockable(actor: Actor, item: BuildWithJobs): Promise<Set<string>> {
    const ids = new Set<string>();
    for (const job of item.jobs) if (job.state === 'blocked' && !(await this.unblockRefusal(actor, item, job))) ids.add(job.id);
    return ids;
  }

  /**
   * Who may unblock: with the step's `allowed_teams`, the members of those teams only (the docs'
   * block step permissions: it "replaces the need for write access to the pipeline", and a writer
   * in none of them may not); otherwise whoever may build the pipeline. The 403 to answer, or null.
   */
  private async unblockRefusal(actor: Actor, item: BuildWithJobs, job: Job): Promise<ForbiddenError | null> {
    const teams = job.step.type === 'manual' ? job.step.allowed_teams : undefined;
    if (!teams) return item.perms.build ? null : new ForbiddenError();
    if (await this.organizations.memberOfAnyTeam(actor.organization.id, actor.principal.user.id, teams)) return null;
    return new RefusedError(`Only members of the teams allowed to unblock this step (${teams.join(', ')}) may unblock it.`);
  }
}

/** A job as a route names it: under its build, or by its id within the caller's organization. */
export type JobTarget = { pipelineSlug: string; number: number; jobId: string } | { jobId: string };

/** A list cursor names the job a page ended (or began) with; opaque to clients. */
function encodeJobCursor(jobId: string): string {
  return Buffer.from(jobId, 'utf8').toString('base64url');
}

function decodeJobCursor(cursor: string): string | undefined {
  const id = Buffer.from(cursor, 'base64url').toString('utf8');
  return /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id) ? id : undefined;
}

/**
 * The meta-data an unblock writes: the values given, and for each of the step's fields not given,
 * its `default` (a multiple select's one per line, as the form sends them), else "". The block
 * step page: a field left empty "will still be created in the build's metadata store", so a later
 * `meta-data get` of its key finds it.
 */
function unblockMetaData(stepFields: readonly ManualField[], given: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = { ...given };
  for (const f of stepFields) {
    if (!Object.hasOwn(out, f.key)) out[f.key] = Array.isArray(f.default) ? f.default.join('\n') : (f.default ?? '');
  }
  return out;
}
