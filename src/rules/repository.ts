/**
 * Rules: rows in, domain objects out. Reads join the creator (`created_by`).
 */
import type { Knex } from 'knex';
import { toDate } from '../db/values';
import type { RulesRow, UsersRow } from '../db/tables';
import { joinedUser } from '../user/rows';
import type { User } from '../core/identity';
import { RULE_TYPES, type RuleType } from './policy';
import { type Nullable, type Prefixed, jsonColumn, oneOf } from '../db/row-types';
import { isStringArray } from '../core/guards';

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

/** A rule as `base()` selects it: the rule's columns and its creator's (`SELECT`), null when there is none. */
type RuleJoinRow = RulesRow & Nullable<Prefixed<Pick<UsersRow, 'id' | 'name' | 'email' | 'created_at'>, 'creator_'>>;

function fromRow(r: RuleJoinRow): Rule {
  return {
    id: r.id,
    organizationId: r.organization_id,
    type: oneOf(RULE_TYPES, r.type, 'rules.type'),
    description: r.description ?? null,
    sourcePipelineId: r.source_pipeline_id,
    targetPipelineId: r.target_pipeline_id,
    conditions: jsonColumn(r.conditions, [], isStringArray, 'rules.conditions'),
    createdBy: joinedUser(r.creator_id, r.creator_name, r.creator_email, r.creator_created_at),
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
    return this.db<RuleJoinRow>('rules as r').leftJoin('users as u', 'u.id', 'r.created_by_id');
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
    const row = await this.base().where({ 'r.organization_id': organizationId, 'r.id': id }).first<RuleJoinRow | undefined>(SELECT);
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
      .select<RuleJoinRow[]>(SELECT);
    return rows.map(fromRow);
  }

  /** The rules of `type` from the source pipeline to the target one. */
  async between(type: RuleType, sourcePipelineId: string, targetPipelineId: string): Promise<Rule[]> {
    const rows = await this.base()
      .where({ 'r.type': type, 'r.source_pipeline_id': sourcePipelineId, 'r.target_pipeline_id': targetPipelineId })
      .select<RuleJoinRow[]>(SELECT);
    return rows.map(fromRow);
  }

  async delete(organizationId: string, id: string): Promise<boolean> {
    return (await this.db('rules').where({ organization_id: organizationId, id }).delete()) > 0;
  }
}
