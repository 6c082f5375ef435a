/**
 * The rules of pipeline schedules: CRUD under the pipeline's permissions (reading needs the
 * pipeline readable, writing needs its settings editable, as the real service keeps schedules
 * among a pipeline's settings), the cronline checked and `next_build_at` worked out on every
 * write, and `runDue`, what the scheduler calls: each enabled schedule whose minute has come
 * gets one build (`source: schedule`, its creator the schedule's), the due minute claimed in
 * the transaction that writes the build. No HTTP, no SQL.
 *
 * Missed minutes: `next_build_at` is stored, so a schedule whose minute passed while no server
 * ran is still due when one starts again. It then creates ONE build (not one per missed
 * minute) and moves on to the cronline's first minute after now: catch up once, as a stored
 * "next build at" time implies.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import type { BuildProgress } from '../builds/progress/service';
import { DomainError, ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../core/errors';
import type { Actor, Permissions } from '../core/identity';
import { errorMessage } from '../core/guards';
import type { OrganizationService } from '../organizations/service';
import type { Pipeline } from '../pipelines/repository';
import type { PipelineService } from '../pipelines/service';
import { parseCronline, type ParsedCronline } from './cronline';
import type { PipelineSchedule, PipelineScheduleRepository, ScheduleChanges } from './repository';
import { clock } from '../core/clock';
import { changes as changedFields, type AuditEntry, type AuditLog } from '../audit/service';

export type CreateScheduleInput = components['schemas']['CreatePipelineScheduleRequest'];
export type UpdateScheduleInput = components['schemas']['UpdatePipelineScheduleRequest'];

/** How many due schedules one run handles; the next run takes the rest. */
const BATCH = 100;

export interface DueRun {
  /** Builds created. */
  created: number;
  /** Schedules whose attempt failed (now disabled, with `failed_message`). */
  failed: number;
  /** Due minutes passed without a build: the pipeline is archived. */
  skipped: number;
}

function cronlineOf(cronline: string): ParsedCronline {
  try {
    return parseCronline(cronline);
  } catch (err) {
    const reason = errorMessage(err);
    throw new ValidationError([{ field: 'cronline', code: reason }], `Validation failed: Cronline ${reason}`);
  }
}

export class PipelineScheduleService {
  constructor(
    private readonly schedules: PipelineScheduleRepository,
    private readonly pipelines: PipelineService,
    private readonly organizations: OrganizationService,
    private readonly progress: BuildProgress,
    /** Where every change is recorded, in its transaction (src/audit/service.ts). */
    private readonly audit: AuditLog | null = null,
  ) {}

  /** `change` on this area's queries in one transaction, with its audit record in the same one. */
  private audited<T>(actor: Actor, change: (schedules: PipelineScheduleRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    if (!this.audit) return change(this.schedules);
    return this.audit.transaction(actor, (trx) => change(this.schedules.withTransaction(trx)), entry);
  }

  private async readable(actor: Actor, pipelineSlug: string): Promise<{ pipeline: Pipeline; perms: Permissions }> {
    return this.pipelines.get(actor, pipelineSlug);
  }

  private async editable(actor: Actor, pipelineSlug: string): Promise<Pipeline> {
    const { pipeline, perms } = await this.readable(actor, pipelineSlug);
    if (!perms.edit) throw new ForbiddenError();
    return pipeline;
  }

  async list(actor: Actor, pipelineSlug: string, offset: number, limit: number): Promise<PipelineSchedule[]> {
    const { pipeline } = await this.readable(actor, pipelineSlug);
    return this.schedules.list(pipeline.id, offset, limit);
  }

  async get(actor: Actor, pipelineSlug: string, id: string): Promise<PipelineSchedule> {
    const { pipeline } = await this.readable(actor, pipelineSlug);
    const found = await this.schedules.findInPipeline(pipeline.id, id);
    if (!found) throw new NotFoundError('pipeline schedule');
    return found;
  }

  /** The docs: 'Archived pipelines are read-only': no schedule is added to one or changed (deleting one is left possible). */
  private async configurable(actor: Actor, pipelineSlug: string): Promise<Pipeline> {
    const pipeline = await this.editable(actor, pipelineSlug);
    if (pipeline.archivedAt) throw new UnprocessableError('This pipeline is archived: unarchive it before adding or changing its schedules.');
    return pipeline;
  }

  async create(actor: Actor, pipelineSlug: string, input: CreateScheduleInput): Promise<PipelineSchedule> {
    const pipeline = await this.configurable(actor, pipelineSlug);
    const cron = cronlineOf(input.cronline);
    const enabled = input.enabled ?? true;
    const id = crypto.randomUUID();
    const fields = {
      id,
      organizationId: pipeline.organizationId,
      pipelineId: pipeline.id,
      label: input.label ?? null,
      cronline: input.cronline.trim(),
      message: input.message ?? null,
      commit: input.commit ?? 'HEAD',
      branch: input.branch ?? pipeline.defaultBranch ?? 'main',
      env: input.env ?? {},
      enabled,
      nextBuildAt: enabled ? cron.nextAfter(clock.now()) : null,
      failedMessage: null,
      failedAt: null,
      createdById: actor.principal.user.id,
      createdAt: clock.now(),
    };
    await this.audited(
      actor,
      (schedules) => schedules.insert(fields),
      () => ({
        type: 'PipelineScheduleCreatedEvent',
        subject: scheduleSubject(fields),
        data: {
          pipeline_id: pipeline.id,
          label: fields.label,
          cronline: fields.cronline,
          branch: fields.branch,
          commit: fields.commit,
          enabled,
          env: { changed: true },
        },
      }),
    );
    return (await this.schedules.findById(id))!;
  }

  /**
   * Changes what was sent. A new cronline, or enabling, moves `next_build_at` to the cronline's
   * next minute from now; disabling clears it; enabling clears a past failure.
   */
  async update(actor: Actor, pipelineSlug: string, id: string, input: UpdateScheduleInput): Promise<PipelineSchedule> {
    const pipeline = await this.configurable(actor, pipelineSlug);
    const current = await this.schedules.findInPipeline(pipeline.id, id);
    if (!current) throw new NotFoundError('pipeline schedule');
    const cronline = input.cronline?.trim() ?? current.cronline;
    const cron = input.cronline !== undefined ? cronlineOf(cronline) : null;
    const enabled = input.enabled ?? current.enabled;
    const changes: ScheduleChanges = {
      label: input.label,
      cronline: input.cronline === undefined ? undefined : cronline,
      message: input.message,
      commit: input.commit,
      branch: input.branch,
      env: input.env,
      enabled,
    };
    if (!enabled) changes.nextBuildAt = null;
    else if (cron || !current.enabled) changes.nextBuildAt = (cron ?? cronlineOf(cronline)).nextAfter(clock.now());
    if (enabled && !current.enabled) {
      changes.failedMessage = null;
      changes.failedAt = null;
    }
    await this.audited(
      actor,
      (schedules) => schedules.update(current.id, changes),
      () => ({
        type: 'PipelineScheduleUpdatedEvent',
        subject: scheduleSubject({ id: current.id, label: changes.label !== undefined ? changes.label : current.label }),
        data: changedFields(
          { ...current },
          {
            label: changes.label,
            cronline: changes.cronline,
            message: changes.message,
            commit: changes.commit,
            branch: changes.branch,
            env: changes.env,
            enabled: changes.enabled,
          },
          ['env'],
        ),
      }),
    );
    return (await this.schedules.findById(current.id))!;
  }

  async delete(actor: Actor, pipelineSlug: string, id: string): Promise<void> {
    const pipeline = await this.editable(actor, pipelineSlug);
    const current = await this.schedules.findInPipeline(pipeline.id, id);
    if (!current) throw new NotFoundError('pipeline schedule');
    await this.audited(
      actor,
      async (schedules) => {
        if (!(await schedules.delete(pipeline.id, id))) throw new NotFoundError('pipeline schedule');
      },
      () => ({ type: 'PipelineScheduleDeletedEvent', subject: scheduleSubject(current), data: { pipeline_id: pipeline.id, cronline: current.cronline } }),
    );
  }

  /**
   * Creates the build of every enabled schedule due at `now` (the scheduler's tick). Each due
   * minute is claimed with a conditional update in the transaction that writes its build, so
   * several processes running this at once on one database create each build once, and a
   * crash leaves the minute unclaimed (the next run creates it). A schedule whose build can't
   * be made (its pipeline's steps, its creator gone) is disabled with `failed_message`, as the
   * real service reports a failed schedule; re-enabling it clears that.
   */
  async runDue(now: Date = clock.now()): Promise<DueRun> {
    const run: DueRun = { created: 0, failed: 0, skipped: 0 };
    for (const due of await this.schedules.due(now, BATCH)) {
      const s = await this.schedules.findById(due.id);
      // Deleted, disabled or moved on since the list was read (another process took it).
      if (!s || !s.enabled || s.nextBuildAt?.getTime() !== due.nextBuildAt.getTime()) continue;
      let next: Date | null;
      try {
        next = parseCronline(s.cronline).nextAfter(now);
      } catch (err) {
        // Stored before a rule of the parser changed: the schedule can't run, and says why.
        if (await this.schedules.fail(s.id, due.nextBuildAt, `Cronline ${errorMessage(err)}`, now)) run.failed++;
        continue;
      }
      try {
        const outcome = await this.fire(s, due.nextBuildAt, next);
        if (outcome) run[outcome]++;
      } catch (err) {
        // A database that is down is the next run's to retry; a rule that refused the build fails the schedule.
        if (!(err instanceof DomainError)) throw err;
        if (await this.schedules.fail(s.id, due.nextBuildAt, err.message, now)) run.failed++;
      }
    }
    return run;
  }

  /** One due minute of one schedule: 'created', 'skipped', or null when another process claimed it. */
  private async fire(s: PipelineSchedule, due: Date, next: Date | null): Promise<'created' | 'skipped' | null> {
    const pipeline = await this.pipelines.findInOrganization(s.organizationId, s.pipelineSlug);
    if (!pipeline) return null;
    // An archived pipeline builds nothing: its schedules' minutes pass (none is caught up on unarchiving).
    if (pipeline.archivedAt) return (await this.schedules.claim(s.id, due, next)) ? 'skipped' : null;
    // The schedule builds as its creator, who must still be able to: a member with Build access
    // (an admin, or through a team where teams are on), as the docs' permission note says.
    const creator = s.createdBy;
    if (!creator || !s.creatorRole)
      throw new UnprocessableError("The schedule's creator is no longer a member of the organization: re-create the schedule as a member.");
    const organization = await this.organizations.findById(s.organizationId);
    if (!organization || !(await this.pipelines.memberPermissions(organization, s.creatorRole, creator.id, pipeline)).build) {
      throw new UnprocessableError(
        `The schedule's creator (${creator.email}) no longer has Build access to this pipeline: give one of their teams Build access, or re-create the schedule.`,
      );
    }
    const written = await this.progress.createClaimedBuild((trx) => this.schedules.withTransaction(trx).claim(s.id, due, next), pipeline, creator, {
      commit: s.commit,
      branch: s.branch,
      message: s.message,
      author: null,
      env: s.env,
      metaData: {},
      cleanCheckout: false,
      pullRequest: null,
      rebuiltFrom: null,
      source: 'schedule',
      // defining_steps.md: for a schedule's build, scheduled_at "represents the intended execution time".
      scheduledAt: due,
    });
    return written ? 'created' : null;
  }
}

const scheduleSubject = (s: { id: string; label: string | null }) => ({ type: 'PipelineSchedule', id: s.id, name: s.label });
