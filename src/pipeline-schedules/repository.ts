/**
 * Pipeline schedules: rows in, domain objects out. Reads join the creator (`created_by`, and
 * their role in the organization, which the scheduler checks) and the pipeline's slug (the
 * representation names it). The scheduler's writes are conditional on the
 * minute it read (`next_build_at`): `claim` and `fail` change a row only while it is still due
 * at that minute, so of several processes acting on one due minute exactly one sees a change.
 */
import type { Knex } from 'knex';
import { parseJson, toBool, toDate, toDateOrNull } from '../db/values';
import { userFromRow } from '../user/rows';
import type { Role, User } from '../core/identity';
import type { OrganizationMembersRow, PipelineSchedulesRow, PipelinesRow, UsersRow } from '../db/tables';
import { type Nullable, type Prefixed, oneOfOrNull } from '../db/row-types';

export interface PipelineSchedule {
  id: string;
  organizationId: string;
  pipelineId: string;
  pipelineSlug: string;
  label: string | null;
  cronline: string;
  message: string | null;
  commit: string;
  branch: string;
  env: Record<string, string>;
  enabled: boolean;
  /** The minute the next build is due; null while disabled. */
  nextBuildAt: Date | null;
  failedMessage: string | null;
  failedAt: Date | null;
  createdBy: User | null;
  /** The creator's role in the schedule's organization; null once they left it (or were deleted). */
  creatorRole: Role | null;
  createdAt: Date;
}

/** What a create writes. */
export type NewPipelineSchedule = Omit<PipelineSchedule, 'pipelineSlug' | 'createdBy' | 'creatorRole'> & { createdById: string };

/** What an update may change. */
export type ScheduleChanges = Partial<
  Pick<PipelineSchedule, 'label' | 'cronline' | 'message' | 'commit' | 'branch' | 'env' | 'enabled' | 'nextBuildAt' | 'failedMessage' | 'failedAt'>
>;

const SELECT = [
  's.*',
  'p.slug as pipeline_slug',
  'u.id as creator_id',
  'u.name as creator_name',
  'u.email as creator_email',
  'u.created_at as creator_created_at',
  'm.role as creator_role',
];

const ROLES: readonly Role[] = ['admin', 'member'];

/** What SELECT reads: the schedule's row, its pipeline's slug, its creator's columns and role (null when none). */
type ScheduleRow = PipelineSchedulesRow &
  Prefixed<Pick<PipelinesRow, 'slug'>, 'pipeline_'> &
  Nullable<Prefixed<Pick<UsersRow, 'id' | 'name' | 'email' | 'created_at'>, 'creator_'>> &
  Nullable<Prefixed<Pick<OrganizationMembersRow, 'role'>, 'creator_'>>;

function fromRow(r: ScheduleRow): PipelineSchedule {
  return {
    id: r.id,
    organizationId: r.organization_id,
    pipelineId: r.pipeline_id,
    pipelineSlug: r.pipeline_slug,
    label: r.label ?? null,
    cronline: r.cronline,
    message: r.message ?? null,
    commit: r.commit,
    branch: r.branch,
    env: parseJson<Record<string, string>>(r.env, {}),
    enabled: toBool(r.enabled),
    nextBuildAt: toDateOrNull(r.next_build_at),
    failedMessage: r.failed_message ?? null,
    failedAt: toDateOrNull(r.failed_at),
    createdBy:
      r.creator_id && r.creator_name != null && r.creator_email != null
        ? userFromRow({ id: r.creator_id, name: r.creator_name, email: r.creator_email, created_at: r.creator_created_at })
        : null,
    creatorRole: oneOfOrNull(ROLES, r.creator_role, 'organization_members.role'),
    createdAt: toDate(r.created_at),
  };
}

function toColumns(c: ScheduleChanges): Partial<PipelineSchedulesRow> {
  const cols: Partial<PipelineSchedulesRow> = {};
  if (c.label !== undefined) cols.label = c.label;
  if (c.cronline !== undefined) cols.cronline = c.cronline;
  if (c.message !== undefined) cols.message = c.message;
  if (c.commit !== undefined) cols.commit = c.commit;
  if (c.branch !== undefined) cols.branch = c.branch;
  if (c.env !== undefined) cols.env = JSON.stringify(c.env);
  if (c.enabled !== undefined) cols.enabled = c.enabled;
  if (c.nextBuildAt !== undefined) cols.next_build_at = c.nextBuildAt;
  if (c.failedMessage !== undefined) cols.failed_message = c.failedMessage;
  if (c.failedAt !== undefined) cols.failed_at = c.failedAt;
  return cols;
}

export class PipelineScheduleRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): PipelineScheduleRepository {
    return new PipelineScheduleRepository(trx);
  }

  private base() {
    return this.db('pipeline_schedules as s')
      .join('pipelines as p', 'p.id', 's.pipeline_id')
      .leftJoin('users as u', 'u.id', 's.created_by_id')
      .leftJoin('organization_members as m', (j) => j.on('m.organization_id', 's.organization_id').andOn('m.user_id', 's.created_by_id'));
  }

  async insert(s: NewPipelineSchedule): Promise<void> {
    await this.db('pipeline_schedules').insert({
      id: s.id,
      organization_id: s.organizationId,
      pipeline_id: s.pipelineId,
      created_by_id: s.createdById,
      created_at: s.createdAt,
      ...toColumns(s),
    });
  }

  async findInPipeline(pipelineId: string, id: string): Promise<PipelineSchedule | null> {
    const row = await this.base().where({ 's.pipeline_id': pipelineId, 's.id': id }).first<ScheduleRow | undefined>(SELECT);
    return row ? fromRow(row) : null;
  }

  async findById(id: string): Promise<PipelineSchedule | null> {
    const row = await this.base().where({ 's.id': id }).first<ScheduleRow | undefined>(SELECT);
    return row ? fromRow(row) : null;
  }

  /** A page of the pipeline's schedules, the most recently created first. */
  async list(pipelineId: string, offset: number, limit: number): Promise<PipelineSchedule[]> {
    const rows = await this.base()
      .where({ 's.pipeline_id': pipelineId })
      .orderBy([
        { column: 's.created_at', order: 'desc' },
        { column: 's.id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit)
      .select<ScheduleRow[]>(SELECT);
    return rows.map(fromRow);
  }

  async update(id: string, changes: ScheduleChanges): Promise<void> {
    const cols = toColumns(changes);
    if (Object.keys(cols).length) await this.db('pipeline_schedules').where({ id }).update(cols);
  }

  /** Deletes the pipeline's schedule: false if it had none of that id. */
  async delete(pipelineId: string, id: string): Promise<boolean> {
    return (await this.db('pipeline_schedules').where({ pipeline_id: pipelineId, id }).delete()) > 0;
  }

  /** Enabled schedules due at or before `now`, the longest due first: id and the minute due. */
  async due(now: Date, limit: number): Promise<{ id: string; nextBuildAt: Date }[]> {
    const rows = await this.db('pipeline_schedules')
      .where({ enabled: true })
      .where('next_build_at', '<=', now)
      .orderBy('next_build_at')
      .limit(limit)
      .select('id', 'next_build_at');
    return rows.map((r) => ({ id: r.id, nextBuildAt: toDate(r.next_build_at) }));
  }

  /**
   * Takes the due minute `due` of an enabled schedule, moving `next_build_at` on to `next` (and
   * clearing a past failure): false when another process took it first, or the schedule was
   * disabled, changed or deleted since it was read.
   */
  async claim(id: string, due: Date, next: Date | null): Promise<boolean> {
    return (
      (await this.db('pipeline_schedules')
        .where({ id, enabled: true, next_build_at: due })
        .update({ next_build_at: next, failed_message: null, failed_at: null })) > 0
    );
  }

  /** The attempt at the due minute `due` failed: the schedule is disabled with the reason, unless another process already moved it on. */
  async fail(id: string, due: Date, message: string, at: Date): Promise<boolean> {
    return (
      (await this.db('pipeline_schedules')
        .where({ id, enabled: true, next_build_at: due })
        .update({ enabled: false, next_build_at: null, failed_message: message, failed_at: at })) > 0
    );
  }
}
