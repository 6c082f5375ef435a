/**
 * The rules of the job endpoints under a build: unblocking a block step. No HTTP, no SQL.
 */
import type { components } from '../../generated/api';
import type { BuildService, BuildWithJobs } from '../builds/service';
import { ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../http/errors';
import type { OrganizationRepository } from '../organizations/repository';
import type { Actor } from '../pipelines/service';
import type { UserRepository } from '../user/repository';
import type { JobRepository } from './repository';

type UnblockBody = components['schemas']['UnblockJobRequest'];

export class JobService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly builds: BuildService,
    private readonly users: UserRepository,
    private readonly orgs: OrganizationRepository,
  ) {}

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
      const other = await this.users.findById(body.unblocker);
      if (!other || !(await this.orgs.membershipsOf(other.id)).has(actor.organization.id)) throw ValidationError.field('unblocker', 'is not a member of this organization');
      by = other;
    }
    if (!(await this.jobs.unblock(item.build.id, jobId, by, body.fields ?? {}))) throw new UnprocessableError("This job can't be unblocked: it is no longer blocked.");
    return { item: await this.builds.get(actor, pipelineSlug, number, true), jobId };
  }
}
