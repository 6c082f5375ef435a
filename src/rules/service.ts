/**
 * The rules of rules: any member of the organization reads them (`read_rules`); organization
 * administrators create and delete them (`write_rules`), as the rules pages say. A rule names
 * its pipelines by UUID or slug, both in the organization; its conditions must parse and name
 * only what its type offers (./policy.ts). Several rules may join the same pipelines: any one
 * whose conditions hold allows. The checks
 * themselves (a trigger step, an artifact search) read rules through build progression's and
 * the artifacts area's own paths, with ./policy.ts deciding. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { ForbiddenError, NotFoundError, ValidationError } from '../core/errors';
import type { Actor } from '../core/identity';
import { isUuid } from '../core/uuid';
import type { Pipeline } from '../pipelines/repository';
import type { PipelineService } from '../pipelines/service';
import { RULE_TYPES, ruleConditionError, ruleDecision, type RuleContext, type RuleType } from './policy';
import type { Rule, RuleRepository } from './repository';
import { clock } from '../core/clock';

export type CreateRuleInput = components['schemas']['CreateRuleRequest'];

export class RuleService {
  constructor(
    private readonly rules: RuleRepository,
    private readonly pipelines: PipelineService,
  ) {}

  private administrator(actor: Actor): void {
    if (actor.role !== 'admin') throw new ForbiddenError();
  }

  list(actor: Actor, offset: number, limit: number): Promise<Rule[]> {
    return this.rules.list(actor.organization.id, offset, limit);
  }

  async get(actor: Actor, id: string): Promise<Rule> {
    const found = await this.rules.findInOrganization(actor.organization.id, id.toLowerCase());
    if (!found) throw new NotFoundError('rule');
    return found;
  }

  /** A pipeline of the organization by UUID or slug, or the field's error. */
  private async pipelineOf(actor: Actor, ref: string, field: string): Promise<Pipeline> {
    let found: Pipeline | null = null;
    if (isUuid(ref)) {
      const [byId] = await this.pipelines.findByIdsForSystem([ref.toLowerCase()]);
      found = byId && byId.organizationId === actor.organization.id ? byId : null;
    }
    found ??= await this.pipelines.findInOrganization(actor.organization.id, ref);
    if (!found) throw ValidationError.field(field, `no pipeline with the UUID or slug "${ref}" in this organization`);
    return found;
  }

  async create(actor: Actor, input: CreateRuleInput): Promise<Rule> {
    this.administrator(actor);
    const type: RuleType | undefined = input.type ?? input.rule;
    if (!type) throw ValidationError.field('type', "can't be blank");
    if (input.type && input.rule && input.type !== input.rule) throw ValidationError.field('rule', `must be the same as type (${input.type})`);
    if (!RULE_TYPES.includes(type)) throw ValidationError.field('type', `must be one of ${RULE_TYPES.join(', ')}`);
    const conditions = input.value.conditions ?? [];
    const errors = conditions.flatMap((c, i) => {
      const code = ruleConditionError(type, c);
      return code ? [{ field: `value.conditions[${i}]`, code }] : [];
    });
    if (errors.length > 0) throw new ValidationError(errors);
    const source = await this.pipelineOf(actor, input.value.source_pipeline, 'value.source_pipeline');
    const target = await this.pipelineOf(actor, input.value.target_pipeline, 'value.target_pipeline');
    const id = crypto.randomUUID();
    await this.rules.insert({
      id,
      organizationId: actor.organization.id,
      type,
      description: input.description ?? null,
      sourcePipelineId: source.id,
      targetPipelineId: target.id,
      conditions,
      createdById: actor.principal.user.id,
      createdAt: clock.now(),
    });
    return (await this.rules.findInOrganization(actor.organization.id, id))!;
  }

  /**
   * Whether the source pipeline may act on the target one (both of one organization): null
   * when it may, else why not. For checks outside build progression's transaction (an artifact
   * search); a trigger step reads the rules through the transaction it runs in.
   */
  async refusal(type: RuleType, sourcePipelineId: string, targetPipelineId: string, context: RuleContext): Promise<string | null> {
    const found = await this.pipelines.findByIdsForSystem([sourcePipelineId, targetPipelineId]);
    const source = found.find((p) => p.id === sourcePipelineId);
    const target = found.find((p) => p.id === targetPipelineId);
    if (!source || !target) return 'The pipeline no longer exists.';
    return ruleDecision(type, source, target, await this.rules.between(type, source.id, target.id), context);
  }

  async delete(actor: Actor, id: string): Promise<void> {
    this.administrator(actor);
    if (!(await this.rules.delete(actor.organization.id, id.toLowerCase()))) throw new NotFoundError('rule');
  }
}
