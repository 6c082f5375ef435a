/**
 * `buildkite-agent step get|update|cancel` from a running job: a step of the job's own build,
 * named by its id or its `key`, read, relabelled or canceled; and `buildkite-agent build cancel`.
 * A step is the jobs planned from it (retries share its id); its state and outcome are the
 * step's own, over its jobs' latest attempts (./step-state.ts). No HTTP, no SQL.
 */
import type { components } from '../../../generated/api';
import type { Agent } from '../../agents/repository';
import { NotFoundError, ValidationError } from '../../core/errors';
import { clock } from '../../core/clock';
import type { BuildProgress } from '../progress/service';
import type { BuildRepository } from '../repository';
import type { AgentWorkService } from './agent-work';
import type { Job } from './model';
import type { JobRepository } from './repository';
import { TERMINAL_JOB_STATES } from '../states';
import { stepOutcome, stepState } from './step-state';

type ExportBody = components['schemas']['StepExportRequest'];
type UpdateBody = components['schemas']['StepUpdateRequest'];
type CancelBody = components['schemas']['StepCancelRequest'];

const READERS: Record<string, (jobs: Job[]) => string> = {
  id: (jobs) => jobs[0]!.stepId,
  key: (jobs) => jobs[0]!.stepKey ?? '',
  label: (jobs) => jobs[0]!.name ?? '',
  type: (jobs) => jobs[0]!.step.type,
  command: (jobs) => jobs[0]!.command ?? '',
  // The step's own state and outcome (the docs: not job states), over its jobs' latest attempts.
  state: (jobs) => stepState(latest(jobs)),
  outcome: (jobs) => stepOutcome(latest(jobs)),
};

/** A step's jobs without the attempts retried since. */
const latest = (jobs: Job[]) => jobs.filter((j) => !j.retried);

export class StepService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly work: AgentWorkService,
    private readonly builds: BuildRepository,
    private readonly progress: BuildProgress,
  ) {}

  /** One attribute as text; with none, the whole step (every attribute) as JSON, as the agent's help says. */
  async export(agent: Agent, idOrKey: string, body: ExportBody): Promise<string> {
    if (!body.attribute) {
      const jobs = await this.stepJobs(agent, idOrKey, body.build_id);
      return JSON.stringify(Object.fromEntries(Object.entries(READERS).map(([name, read]) => [name, read(jobs)])));
    }
    const read = READERS[body.attribute];
    if (!read) throw ValidationError.field('attribute', 'invalid');
    return read(await this.stepJobs(agent, idOrKey, body.build_id));
  }

  /**
   * Only the label changes (as `append`, added to the end of it). An update sent again with the
   * same `idempotency_uuid` (the agent's retry) changes the step once.
   */
  async update(agent: Agent, idOrKey: string, body: UpdateBody): Promise<void> {
    if (body.attribute !== 'label') throw ValidationError.field('attribute', 'invalid');
    const jobs = await this.stepJobs(agent, idOrKey, body.build_id);
    const label = body.append ? `${jobs[0]!.name ?? ''}${body.value}` : body.value;
    if (label.length > 255) throw ValidationError.field('value', 'too_long');
    await this.jobs.renameStep(jobs[0]!.buildId, jobs[0]!.stepId, label, body.idempotency_uuid ?? null);
  }

  /** Cancels the step's unfinished jobs (BuildProgress.cancelJobs); answers the step's id. */
  async cancel(agent: Agent, idOrKey: string, body: CancelBody): Promise<string> {
    const jobs = await this.stepJobs(agent, idOrKey, body.build_id);
    const unfinished = jobs.filter((j) => !TERMINAL_JOB_STATES.includes(j.state));
    if (unfinished.length)
      await this.progress.cancelJobs(
        jobs[0]!.buildId,
        unfinished.map((j) => j.id),
        body.force === true,
        clock.now(),
      );
    return jobs[0]!.stepId;
  }

  /**
   * `buildkite-agent build cancel`: the build of the job the agent runs (its default), canceled
   * as the REST API cancels one; any other build is as good as missing. Answers its id.
   */
  async cancelBuild(agent: Agent, buildId: string): Promise<string> {
    const build = await this.builds.findById(await this.ownBuild(agent, buildId, 'build'));
    if (!build) throw new NotFoundError('build');
    await this.progress.cancelOrRefuse(build, clock.now());
    return build.id;
  }

  /** The step's jobs in the build of the job the agent runs; a step of another build is as good as missing. */
  private async stepJobs(agent: Agent, idOrKey: string, buildId: string | undefined): Promise<Job[]> {
    const jobs = await this.jobs.ofStep(await this.ownBuild(agent, buildId, 'step'), idOrKey);
    if (!jobs.length) throw new NotFoundError('step');
    return jobs;
  }

  /** The build of the job the agent runs, when `buildId` names it or nothing; otherwise `what` is not found. */
  private async ownBuild(agent: Agent, buildId: string | undefined, what: string): Promise<string> {
    if (!agent.jobId) throw new NotFoundError(what);
    const running = await this.work.activeJob(agent, agent.jobId);
    if (buildId !== undefined && buildId.toLowerCase() !== running.build.id) throw new NotFoundError(what);
    return running.build.id;
  }
}
