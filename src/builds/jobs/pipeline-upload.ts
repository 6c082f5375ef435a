/**
 * `buildkite-agent pipeline upload`: the agent holding a running job sends a pipeline (YAML
 * text, or the same document as JSON) whose steps join the job's build right after the job's
 * step. The steps are read by the pipeline configuration parser (the same rules and errors as a
 * pipeline's `configuration`, reported on the field `pipeline`) and planned as a build's steps
 * are: env merged from the pipeline's settings, the upload's top-level `env`, the build's and the
 * step's own, each script step signed. The upload's top-level `notify` is appended to the
 * build's (step-level ones stay on the steps, so on the jobs' steps). An upload sent again with the same `uuid` (the agent
 * retrying after a lost answer) adds nothing. No HTTP, no SQL.
 */
import type { Agent } from '../../agents/repository';
import type { StepSignature } from './plan';
import { MAX_JOBS_PER_BUILD, planJobs } from './plan';
import type { BuildProgress } from '../progress/service';
import type { BuildService } from '../service';
import type { Job } from './model';
import { NotFoundError, UnprocessableError, ValidationError } from '../../core/errors';
import { parseConfiguration } from '../../pipelines/configuration';
import type { PipelineService } from '../../pipelines/service';
import type { JobRepository } from './repository';
import { clock } from '../../core/clock';

export class PipelineUploadService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly progress: BuildProgress,
    private readonly builds: BuildService,
    private readonly pipelines: PipelineService,
    private readonly sign: (fields: Record<string, unknown>) => StepSignature,
  ) {}

  /** Adds the pipeline's steps to the build of the agent's running job; answers the new jobs,
   * and the attributes accepted but not acted on. */
  async upload(agent: Agent, jobId: string, pipeline: string | object, uploadId: string | null): Promise<{ jobs: Job[]; notices: string[] }> {
    if (agent.connectionState !== 'connected') throw new UnprocessableError(`The agent is ${agent.connectionState}: POST /v3/connect first.`);
    const context = await this.jobs.findWithContext(jobId);
    if (!context || context.job.agentId !== agent.id) throw new NotFoundError('job');
    if (context.job.state !== 'running')
      throw new UnprocessableError(`A pipeline can't be uploaded by a job that is ${context.job.state}: only by a running one.`);
    const parsed = parseUpload(typeof pipeline === 'string' ? pipeline : JSON.stringify(pipeline));
    const build = (await this.builds.findById(context.build.id))!;
    const settings = await this.pipelines.findInOrganization(context.organizationId, context.pipelineSlug);
    const planned = planJobs(parsed.steps, {
      branch: build.branch,
      pipelineEnv: { ...settings?.env, ...parsed.env },
      buildEnv: build.env,
      repositoryUrl: context.repository,
      stepTimeouts: settings ? { defaultMinutes: settings.defaultTimeoutInMinutes, maximumMinutes: settings.maximumTimeoutInMinutes } : undefined,
      sign: this.sign,
    });
    const ids = await this.progress.addUploadedJobs(build.id, context.job, planned, uploadId, clock.now(), MAX_JOBS_PER_BUILD, parsed.notify);
    if (!ids) throw new UnprocessableError(`A build can't have more than ${MAX_JOBS_PER_BUILD} jobs: this upload would go over.`);
    return { jobs: await this.jobs.findMany(ids), notices: parsed.notices };
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
