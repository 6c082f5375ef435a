/**
 * Rules: rows in, domain objects out. Reads join the creator (`created_by`).
 */
import type { Knex } from 'knex';
import { parseJson, toDate } from '../db/values';
import { userFromRow } from '../user/rows';
import type { User } from '../core/identity';
import type { RuleType } from './policy';

export interface Rule {
  id: string;
  organizationId: string;
  type: RuleType;
  description: string | null;
  sourcePipelineId: string;
  targetPipelineId: string;
  conditions: string[];
  createdBy: User | null;
  createdAt: Date;
}

export type NewRule = Omit<Rule, 'createdBy'> & { createdById: string };

const SELECT = ['r.*', 'u.id as creator_id', 'u.name as creator_name', 'u.email as creator_email', 'u.created_at as creator_created_at'];

function fromRow(r: Record<string, unknown>): Rule {
  return {
    id: r.id as string,
    organizationId: r.organization_id as string,
    type: r.type as RuleType,
    description: (r.description as string | null) ?? null,
    sourcePipelineId: r.source_pipeline_id as string,
    targetPipelineId: r.target_pipeline_id as string,
    conditions: parseJson<string[]>(r.conditions, []),
    createdBy: r.creator_id
      ? userFromRow({ id: r.creator_id as string, name: r.creator_name as string, email: r.creator_email as string, created_at: r.creator_created_at })
      : null,
    createdAt: toDate(r.created_at),
  };
}

export class RuleRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service (or build progression) makes them part of its transaction. */
  withTransaction(trx: Knex.Transaction): RuleRepository {
    return new RuleRepository(trx);
  }

  private base() {
    return this.db('rules as r').leftJoin('users as u', 'u.id', 'r.created_by_id');
  }

  async insert(r: NewRule): Promise<void> {
    await this.db('rules').insert({
      id: r.id,
      organization_id: r.organizationId,
      type: r.type,
      description: r.description,
      source_pipeline_id: r.sourcePipelineId,
      target_pipeline_id: r.targetPipelineId,
      conditions: JSON.stringify(r.conditions),
      created_by_id: r.createdById,
      created_at: r.createdAt,
    });
  }

  async findInOrganization(organizationId: string, id: string): Promise<Rule | null> {
    const row = await this.base().where({ 'r.organization_id': organizationId, 'r.id': id }).first(SELECT);
    return row ? fromRow(row) : null;
  }

  /** A page of the organization's rules, the most recently created first. */
  async list(organizationId: string, offset: number, limit: number): Promise<Rule[]> {
    const rows = await this.base()
      .where({ 'r.organization_id': organizationId })
      .orderBy([
        { column: 'r.created_at', order: 'desc' },
        { column: 'r.id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit)
      .select(SELECT);
    return rows.map(fromRow);
  }

  /** The rules of `type` from the source pipeline to the target one. */
  async between(type: RuleType, sourcePipelineId: string, targetPipelineId: string): Promise<Rule[]> {
    const rows = await this.base().where({ 'r.type': type, 'r.source_pipeline_id': sourcePipelineId, 'r.target_pipeline_id': targetPipelineId }).select(SELECT);
    return rows.map(fromRow);
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    return (await this.db('rules').where({ organization_id: organizationId, id }).delete()) > 0;
  }
}
