/**
 * `buildkite-agent pipeline upload`: the agent holding a running job sends a pipeline (YAML
 * text, or the same document as JSON) whose steps join the job's build right after the job's
 * step. The steps are read by the pipeline configuration parser (the same rules and errors as a
 * pipeline's `configuration`, reported on the field `pipeline`) and planned as a build's steps
 * are: env merged from the pipeline's settings, the upload's top-level `env`, the build's and the
 * step's own, each script step signed. The upload's top-level `notify` is appended to the
 * build's (step-level ones stay on the steps, so on the jobs' steps). An upload sent again with the same `uuid` (the agent
 * retrying after a lost answer) adds nothing. Each upload a running job sends is recorded as a
 * step upload (./step-upload-repository.ts): `applied` with the jobs it created, or `rejected`
 * with why; the REST step uploads API lists them. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import YAML from 'yaml';
import type { Agent } from '../../agents/repository';
import type { StepSignature } from './plan';
import { MAX_JOBS_PER_BUILD, planJobs, stepConditionContext } from './plan';
import type { BuildProgress } from '../progress/service';
import type { BuildService } from '../service';
import type { Job } from './model';
import { NotFoundError, UnprocessableError, ValidationError } from '../../core/errors';
import { parseConfiguration } from '../../pipelines/configuration';
import type { PipelineService } from '../../pipelines/service';
import type { JobRepository } from './repository';
import type { StepUpload, StepUploadRejection, StepUploadRepository } from './step-upload-repository';
import { clock } from '../../core/clock';
import { encodeTimeCursor, timeCursors } from '../../core/time-cursor';
import type { Actor } from '../../core/identity';
import type { BuildWithJobs } from '../service';
import { isUuid } from '../../core/uuid';

/** The docs' default quotas of a pipeline upload (platform limits): jobs one upload creates, and uploads a build takes. */
export const MAX_JOBS_PER_UPLOAD = 500;
export const MAX_UPLOADS_PER_BUILD = 500;

export class PipelineUploadService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly progress: BuildProgress,
    private readonly builds: BuildService,
    private readonly pipelines: PipelineService,
    private readonly sign: (fields: Record<string, unknown>) => StepSignature,
    private readonly stepUploads: StepUploadRepository,
  ) {}

  /** Adds the pipeline's steps to the build of the agent's running job; answers the new jobs,
   * and the attributes accepted but not acted on. */
  async upload(agent: Agent, jobId: string, pipeline: string | object, uploadId: string | null, replace = false): Promise<{ jobs: Job[]; notices: string[] }> {
    if (agent.connectionState !== 'connected') throw new UnprocessableError(`The agent is ${agent.connectionState}: POST /v3/connect first.`);
    const context = await this.jobs.findWithContext(jobId);
    if (!context || context.job.agentId !== agent.id) throw new NotFoundError('job');
    const receivedAt = clock.now();
    const definition = definitionOf(pipeline);
    const record = (outcome: Pick<StepUpload, 'state' | 'createdJobsCount' | 'rejectionType' | 'message'>) =>
      this.stepUploads.insert({
        id: crypto.randomUUID(),
        buildId: context.build.id,
        sourceJobId: jobId,
        uploadUuid: uploadId,
        replaceExistingSteps: replace,
        definition,
        definitionBytes: definition === null ? 0 : Buffer.byteLength(definition),
        createdAt: receivedAt,
        processedAt: clock.now(),
        ...outcome,
      });
    const reject = async (rejectionType: StepUploadRejection, error: Error) => {
      await record({ state: 'rejected', createdJobsCount: null, rejectionType, message: error.message });
      return error;
    };
    if (context.job.state !== 'running')
      throw await reject(
        'build_not_running_error',
        new UnprocessableError(`A pipeline can't be uploaded by a job that is ${context.job.state}: only by a running one.`),
      );
    let parsed: ReturnType<typeof parseUpload>;
    try {
      parsed = parseUpload(typeof pipeline === 'string' ? pipeline : JSON.stringify(pipeline));
    } catch (error) {
      if (error instanceof ValidationError) throw await reject('validation_error', error);
      throw error;
    }
    const build = (await this.builds.findById(context.build.id))!;
    const settings = await this.pipelines.findInOrganization(context.organizationId, context.pipelineSlug);
    const planned = planJobs(parsed.steps, {
      branch: build.branch,
      pipelineEnv: { ...settings?.env, ...parsed.env },
      buildEnv: build.env,
      repositoryUrl: context.repository,
      stepTimeouts: settings ? { defaultMinutes: settings.defaultTimeoutInMinutes, maximumMinutes: settings.maximumTimeoutInMinutes } : undefined,
      sign: this.sign,
      // Documented: conditions are evaluated at pipeline upload.
      conditions: stepConditionContext({
        build,
        pipeline: {
          id: context.pipelineId,
          name: context.pipelineName,
          slug: context.pipelineSlug,
          defaultBranch: context.pipelineDefaultBranch,
          repository: context.repository,
          providerId: context.providerId,
        },
        organization: { id: context.organizationId, slug: context.orgSlug },
        creatorTeams: await this.progress.creatorTeams(context.organizationId, build.creator?.id ?? null, parsed.steps),
        env: { ...settings?.env, ...parsed.env, ...build.env },
      }),
    });
    // A send the agent retries (same uuid) added nothing the second time: recorded once.
    const repeated = uploadId !== null && (await this.stepUploads.hasApplied(context.build.id, uploadId));
    // The docs' default quotas (platform limits: 'Jobs created per pipeline upload', 'Pipeline uploads per build').
    if (!repeated) {
      if (planned.length > MAX_JOBS_PER_UPLOAD)
        throw await reject(
          'job_creation_error',
          new UnprocessableError(
            `A pipeline upload can't create more than ${MAX_JOBS_PER_UPLOAD} jobs: this one makes ${planned.length} (parallelism and matrix steps count each job).`,
          ),
        );
      if ((await this.stepUploads.appliedCount(context.build.id)) >= MAX_UPLOADS_PER_BUILD)
        throw await reject(
          'job_creation_error',
          new UnprocessableError(`A build can't have more than ${MAX_UPLOADS_PER_BUILD} pipeline uploads: this one would go over.`),
        );
    }
    const ids = await this.progress.addUploadedJobs(build.id, context.job, planned, uploadId, clock.now(), MAX_JOBS_PER_BUILD, parsed.notify, replace);
    if (!ids)
      throw await reject('job_creation_error', new UnprocessableError(`A build can't have more than ${MAX_JOBS_PER_BUILD} jobs: this upload would go over.`));
    if (!repeated) await record({ state: 'applied', createdJobsCount: ids.length, rejectionType: null, message: null });
    return { jobs: await this.jobs.findMany(ids), notices: parsed.notices };
  }

  /**
   * A page of the build's step uploads, newest first, from a cursor (`after` older ones,
   * `before` newer ones, not both), optionally only those one job made.
   */
  async list(
    actor: Actor,
    pipelineSlug: string,
    number: number,
    opts: { filter?: Record<string, string>; after?: string; before?: string; limit: number },
  ): Promise<{ item: BuildWithJobs; uploads: StepUpload[]; next: string | null }> {
    const { after, before } = timeCursors(opts);
    const unknown = Object.keys(opts.filter ?? {}).filter((k) => k !== 'source_job_id');
    if (unknown.length)
      throw new ValidationError(
        unknown.map((k) => ({ field: `filter[${k}]`, code: 'is not a supported filter' })),
        'Unsupported filter',
      );
    const sourceJobId = opts.filter?.source_job_id;
    if (sourceJobId !== undefined && !isUuid(sourceJobId)) throw ValidationError.field('filter[source_job_id]', 'is not a job id');
    const item = await this.builds.get(actor, pipelineSlug, number, false, { jobs: true, pipeline: true });
    const page = await this.stepUploads.list(item.build.id, { sourceJobId, after, before, limit: opts.limit });
    // Read backwards (before), the page always has older uploads after it: the one the cursor named.
    const last = page.items[page.items.length - 1];
    const more = before ? true : page.more;
    return { item, uploads: page.items, next: more && last ? encodeTimeCursor(last.createdAt, last.id) : null };
  }

  /** One step upload of the build, with its definition. */
  async get(actor: Actor, pipelineSlug: string, number: number, id: string): Promise<{ item: BuildWithJobs; upload: StepUpload }> {
    const item = await this.builds.get(actor, pipelineSlug, number, false, { jobs: true, pipeline: true });
    const upload = isUuid(id) ? await this.stepUploads.find(item.build.id, id) : undefined;
    if (!upload) throw new NotFoundError('step upload');
    return { item, upload };
  }
}

/** The uploaded document as JSON text (a YAML upload parsed; null when it isn't a document). */
function definitionOf(pipeline: string | object): string | null {
  if (typeof pipeline !== 'string') return JSON.stringify(pipeline);
  try {
    return JSON.stringify(YAML.parse(pipeline) ?? null);
  } catch {
    return null;
  }
}

/** The configuration parser's result, its errors named after the request's field. */
function parseUpload(text: string): ReturnType<typeof parseConfiguration> {
  try {
    return parseConfiguration(text);
  } catch (error) {
    if (!(error instanceof ValidationError)) throw error;
    throw new ValidationError(
      error.errors.map((e) => (e.field === 'configuration' ? { ...e, field: 'pipeline' } : e)),
      error.message,
    );
  }
}
