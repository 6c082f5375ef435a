/**
 * What rules allow, decided without a database: the two documented rule types, the variables
 * each one's `conditions` may name, and the decision a trigger step or an artifact search asks
 * for. As the rules pages say: pipelines in one cluster (or both in none) reach each other by
 * default; across clusters a rule of the type must allow it. A rule whose conditions do not all
 * hold allows nothing, and where rules of the type exist between the two pipelines and none of
 * them holds, the access is refused even inside one cluster. Conditions are shown in the
 * refusal. Conditions use the pipelines' conditional syntax (src/pipelines/filter-condition.ts),
 * over the variables listed here only.
 */
import { conditionProblem, parseCondition, type ConditionNode, type Value } from '../pipelines/filter-condition';

export const RULE_TYPES = ['pipeline.trigger_build.pipeline', 'pipeline.artifacts_read.pipeline'] as const;
export type RuleType = (typeof RULE_TYPES)[number];

/** A rule type's `action`, as the API shows it. */
export const RULE_ACTION: Record<RuleType, 'trigger_build' | 'artifacts_read'> = {
  'pipeline.trigger_build.pipeline': 'trigger_build',
  'pipeline.artifacts_read.pipeline': 'artifacts_read',
};

const BUILD_FIELDS = ['branch', 'commit', 'message', 'source'] as const;
const TRIGGER_FIELDS = ['branch', 'commit', 'message'] as const;

/** What each rule type's conditions may name. */
export const RULE_VARIABLES: Record<RuleType, readonly string[]> = {
  'pipeline.trigger_build.pipeline': [...BUILD_FIELDS.map((f) => `source.build.${f}`), ...TRIGGER_FIELDS.map((f) => `target.trigger.${f}`)],
  'pipeline.artifacts_read.pipeline': [
    ...BUILD_FIELDS.map((f) => `source.build.${f}`),
    ...BUILD_FIELDS.map((f) => `target.build.${f}`),
    'source.request.query',
  ],
};

function variablesOf(n: ConditionNode, out: Set<string>): Set<string> {
  switch (n.kind) {
    case 'variable':
      out.add(n.name);
      break;
    case 'not':
      variablesOf(n.operand, out);
      break;
    case 'and':
    case 'or':
    case 'compare':
      variablesOf(n.left, out);
      variablesOf(n.right, out);
      break;
    default:
      break;
  }
  return out;
}

/** Why a condition can't be used in a rule of `type` (a field-error code), or null when it can. */
export function ruleConditionError(type: RuleType, text: string): string | null {
  const allowed = RULE_VARIABLES[type];
  const parsed = parseCondition(text, allowed);
  if (!parsed.ok) return conditionProblem(parsed.error);
  const unknown = [...variablesOf(parsed.condition.ast, new Set())].filter((v) => !allowed.includes(v));
  if (unknown.length > 0)
    return `names ${unknown.map((v) => `\`${v}\``).join(', ')}, which a ${type} rule's conditions can't use (they may use ${allowed.join(', ')})`;
  return null;
}

/** A build as the conditions see it. */
export interface RuleBuild {
  branch: string;
  commit: string;
  message: string | null;
  source: string;
}

/** What the conditions of one check read: `source.build`, and `target.trigger` or `target.build` and `source.request.query`. */
export interface RuleContext {
  source: RuleBuild;
  targetTrigger?: { branch: string; commit: string; message: string | null };
  targetBuild?: RuleBuild;
  query?: string | null;
}

function contextMap(c: RuleContext): Map<string, Value> {
  const m = new Map<string, Value>();
  for (const f of BUILD_FIELDS) m.set(`source.build.${f}`, c.source[f]);
  if (c.targetTrigger) for (const f of TRIGGER_FIELDS) m.set(`target.trigger.${f}`, c.targetTrigger[f]);
  if (c.targetBuild) for (const f of BUILD_FIELDS) m.set(`target.build.${f}`, c.targetBuild[f]);
  m.set('source.request.query', c.query ?? null);
  return m;
}

/** Whether every condition holds (a rule without conditions always does). One that no longer parses holds not. */
export function conditionsHold(type: RuleType, conditions: readonly string[], c: RuleContext): boolean {
  const ctx = contextMap(c);
  return conditions.every((text) => {
    const parsed = parseCondition(text, RULE_VARIABLES[type]);
    return parsed.ok && parsed.condition.evaluate(ctx);
  });
}

/** The pipelines of one check: each one's slug and cluster. */
export interface RulePipeline {
  id: string;
  slug: string;
  clusterId: string | null;
}

/**
 * Whether `source` may act on `target`, given the rules of the type between them: null when it
 * may, else the refusal's message.
 */
export function ruleDecision(
  type: RuleType,
  source: RulePipeline,
  target: RulePipeline,
  rules: readonly { conditions: readonly string[] }[],
  c: RuleContext,
): string | null {
  if (rules.some((r) => conditionsHold(type, r.conditions, c))) return null;
  const sameCluster = source.clusterId === target.clusterId;
  if (rules.length === 0 && sameCluster) return null;
  const what =
    type === 'pipeline.trigger_build.pipeline' ? `trigger a build of the pipeline "${target.slug}"` : `read the artifacts of the pipeline "${target.slug}"`;
  if (rules.length === 0) {
    return `The pipeline "${source.slug}" is not allowed to ${what}: the two pipelines are in different clusters, and no ${type} rule allows it (source_pipeline "${source.slug}", target_pipeline "${target.slug}").`;
  }
  const conditions = rules.flatMap((r) => r.conditions);
  return `The pipeline "${source.slug}" is not allowed to ${what}: the conditions of the ${type} rule were not met: ${conditions.map((t) => `\`${t}\``).join(', ')}.`;
}
