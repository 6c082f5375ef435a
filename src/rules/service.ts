/**
 * The rules of rules: any member of the organization reads them (`read_rules`); organization
 * administrators create and delete them (`write_rules`), as the rules pages say. A rule names
 * its pipelines by UUID or slug, both in the organization; its conditions must parse and name
 * only what its type offers (./policy.ts). Several rules may join the same pipelines: any one
 * whose conditions hold allows. The checks
 * themselves (a trigger step, an artifact search) read rules through build progression's and
 * the artifacts area's own paths, with ./policy.ts deciding; a build's variables beyond the
 * four every check gives are read (src/builds/progress/creation.ts, storedBuildConditions) only
 * where a rule's conditions name them. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { ForbiddenError, NotFoundError, ValidationError } from '../core/errors';
import type { Actor } from '../core/identity';
import { isUuid } from '../core/uuid';
import type { Pipeline } from '../pipelines/repository';
import type { PipelineService } from '../pipelines/service';
import { factsWanted, RULE_TYPES, ruleConditionError, ruleDecision, type FactsWanted, type RuleBuild, type RuleType } from './policy';
import type { Rule, RuleRepository } from './repository';
import { clock } from '../core/clock';
import type { ConditionContext } from '../pipelines/filter-condition';

export type CreateRuleInput = components['schemas']['CreateRuleRequest'];

/**
 * One side's build as a check gives it: its pipeline, the four fields every check has, and how
 * to read what a step's `if` reads of it (called only when a rule names more than those).
 */
export interface RuleSubject extends Omit<RuleBuild, 'facts'> {
  pipelineId: string;
  facts(pipeline: Pipeline, want: FactsWanted): Promise<ConditionContext | null>;
}

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
   * Whether a job of the build `source` may read the artifacts of the build `target`, of another
   * pipeline of the organization (the agent's artifact search, `query` its search): null when it
   * may, else why not. Every variable of both builds is offered to the conditions; a side's
   * `facts` are read only where one names a variable beyond its four fields.
   */
  async artifactsReadRefusal(source: RuleSubject, target: RuleSubject, query: string | null): Promise<string | null> {
    const type = 'pipeline.artifacts_read.pipeline';
    const found = await this.pipelines.findByIdsForSystem([source.pipelineId, target.pipelineId]);
    const sourcePipeline = found.find((p) => p.id === source.pipelineId);
    const targetPipeline = found.find((p) => p.id === target.pipelineId);
    if (!sourcePipeline || !targetPipeline) return 'The pipeline no longer exists.';
    const rules = await this.rules.between(type, sourcePipeline.id, targetPipeline.id);
    const asRule = async (b: RuleSubject, pipeline: Pipeline, side: 'source' | 'target'): Promise<RuleBuild> => {
      const want = factsWanted(type, rules, side);
      return { branch: b.branch, commit: b.commit, message: b.message, source: b.source, facts: want && (await b.facts(pipeline, want)) };
    };
    return ruleDecision(type, sourcePipeline, targetPipeline, rules, {
      source: await asRule(source, sourcePipeline, 'source'),
      targetBuild: await asRule(target, targetPipeline, 'target'),
      query,
    });
  }

  async delete(actor: Actor, id: string): Promise<void> {
    this.administrator(actor);
    if (!(await this.rules.delete(actor.organization.id, id.toLowerCase()))) throw new NotFoundError('rule');
  }
}
