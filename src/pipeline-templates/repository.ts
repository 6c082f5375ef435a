/**
 * Pipeline templates: rows in, domain objects out. The parsed steps and env are stored beside
 * the YAML so that the pipelines' reads (which join this table to give a pipeline its template's
 * steps) never parse it again.
 */
import type { Knex } from 'knex';
import { toBool, toDate } from '../db/values';
import type { User } from '../core/identity';
import { userFromRow } from '../user/rows';
import type { PipelineTemplatesRow, UsersRow } from '../db/tables';
import { type Nullable, type Prefixed } from '../db/row-types';

export interface PipelineTemplate {
  id: string;
  organizationId: string;
  name: string;
  description: string | null;
  configuration: string;
  available: boolean;
  createdBy: User | null;
  updatedBy: User | null;
  createdAt: Date;
  updatedAt: Date;
}

/** What a create or update writes: the YAML with what it parses to. */
export interface TemplateFields {
  name: string;
  description: string | null;
  configuration: string;
  steps: unknown[];
  env: Record<string, string>;
  /** The configuration's top-level `notify`, as written: copied to the builds of the pipelines using the template. */
  notify: unknown[];
  available: boolean;
}

/** A user's columns a left join selects under a prefix (`c.name as creator_name`...): null when none. */
type UserColumns<P extends string> = Nullable<Prefixed<Pick<UsersRow, 'id' | 'name' | 'email' | 'created_at'>, P>>;

/** What SELECT reads: the template's columns with its creator's and last updater's. */
type TemplateRow = Pick<PipelineTemplatesRow, 'id' | 'organization_id' | 'name' | 'description' | 'configuration' | 'available' | 'created_at' | 'updated_at'> &
  UserColumns<'creator_'> &
  UserColumns<'updater_'>;

function userOf(id: string | null, name: string | null, email: string | null, createdAt: unknown): User | null {
  return id && name != null && email != null ? userFromRow({ id, name, email, created_at: createdAt }) : null;
}

function fromRow(r: TemplateRow): PipelineTemplate {
  return {
    id: r.id,
    organizationId: r.organization_id,
    name: r.name,
    description: r.description ?? null,
    configuration: r.configuration,
    available: toBool(r.available),
    createdBy: userOf(r.creator_id, r.creator_name, r.creator_email, r.creator_created_at),
    updatedBy: userOf(r.updater_id, r.updater_name, r.updater_email, r.updater_created_at),
    createdAt: toDate(r.created_at),
    updatedAt: toDate(r.updated_at),
  };
}

const SELECT = [
  't.id',
  't.organization_id',
  't.name',
  't.description',
  't.configuration',
  't.available',
  't.created_at',
  't.updated_at',
  'c.id as creator_id',
  'c.name as creator_name',
  'c.email as creator_email',
  'c.created_at as creator_created_at',
  'u.id as updater_id',
  'u.name as updater_name',
  'u.email as updater_email',
  'u.created_at as updater_created_at',
];

function toColumns(f: Partial<TemplateFields>): Partial<PipelineTemplatesRow> {
  const c: Partial<PipelineTemplatesRow> = {};
  if (f.name !== undefined) c.name = f.name;
  if (f.description !== undefined) c.description = f.description;
  if (f.configuration !== undefined) c.configuration = f.configuration;
  if (f.steps !== undefined) c.steps = JSON.stringify(f.steps);
  if (f.env !== undefined) c.env = JSON.stringify(f.env);
  if (f.notify !== undefined) c.notify = JSON.stringify(f.notify);
  if (f.available !== undefined) c.available = f.available;
  return c;
}

export class PipelineTemplateRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): PipelineTemplateRepository {
    return new PipelineTemplateRepository(trx);
  }

  private base() {
    return this.db('pipeline_templates as t').leftJoin('users as c', 'c.id', 't.created_by_id').leftJoin('users as u', 'u.id', 't.updated_by_id');
  }

  /** By name, then id; `availableOnly`: only those members who are not administrators may see. */
  async list(organizationId: string, availableOnly: boolean, offset: number, limit: number): Promise<{ items: PipelineTemplate[]; total: number }> {
    const filtered = (q: Knex.QueryBuilder) => {
      q.where('t.organization_id', organizationId);
      if (availableOnly) q.where('t.available', true);
      return q;
    };
    const [countRow, rows] = await Promise.all([
      filtered(this.db('pipeline_templates as t')).count<{ n: number | string }[]>({ n: '*' }).first(),
      filtered(this.base())
        .orderBy([
          { column: 't.name', order: 'asc' },
          { column: 't.id', order: 'asc' },
        ])
        .offset(offset)
        .limit(limit)
        .select<TemplateRow[]>(SELECT),
    ]);
    return { items: rows.map(fromRow), total: Number(countRow?.n ?? 0) };
  }

  async find(organizationId: string, id: string): Promise<PipelineTemplate | null> {
    const row = await this.base().where({ 't.organization_id': organizationId, 't.id': id }).first<TemplateRow | undefined>(SELECT);
    return row ? fromRow(row) : null;
  }

  async insert(t: { id: string; organizationId: string; userId: string; at: Date } & TemplateFields): Promise<void> {
    await this.db('pipeline_templates').insert({
      id: t.id,
      organization_id: t.organizationId,
      created_by_id: t.userId,
      updated_by_id: t.userId,
      created_at: t.at,
      updated_at: t.at,
      ...toColumns(t),
    });
  }

  async update(organizationId: string, id: string, changes: Partial<TemplateFields>, userId: string, at: Date): Promise<boolean> {
    const n = await this.db('pipeline_templates')
      .where({ organization_id: organizationId, id })
      .update({ ...toColumns(changes), updated_by_id: userId, updated_at: at });
    return n > 0;
  }

  /** How many pipelines (archived ones too) use the template. */
  async usage(id: string): Promise<number> {
    const row = await this.db('pipelines').where({ pipeline_template_uuid: id }).count<{ n: number | string }[]>({ n: '*' }).first();
    return Number(row?.n ?? 0);
  }

  /**
   * Deletes the template unless a pipeline uses it, in one statement (a pipeline assigned the
   * template between a check and the delete cannot be left pointing at nothing by this call).
   * Returns whether it was deleted.
   */
  async deleteUnused(organizationId: string, id: string): Promise<boolean> {
    const n = await this.db('pipeline_templates')
      .where({ organization_id: organizationId, id })
      .whereNotExists(this.db('pipelines').where('pipeline_template_uuid', id).select(this.db.raw('1')))
      .delete();
    return n > 0;
  }
}
