/**
 * What rules allow, decided without a database: the two documented rule types, the variables
 * each one's `conditions` may name, and the decision a trigger step or an artifact search asks
 * for. As the rules pages say: pipelines in one cluster (or both in none) reach each other by
 * default; across clusters a rule of the type must allow it. A rule whose conditions do not all
 * hold allows nothing, and where rules of the type exist between the two pipelines and none of
 * them holds, the access is refused even inside one cluster. Conditions are shown in the
 * refusal. Conditions use the pipelines' conditional syntax (src/pipelines/filter-condition.ts),
 * over the variables listed here only: every variable a build has in a step's `if`
 * (STEP_BUILD_VARIABLES, `build.env("NAME")` included) as `source.build.*` (and `target.build.*`
 * for artifacts), `target.trigger.*` and `source.request.query`.
 */
import { conditionProblem, parseCondition, STEP_BUILD_VARIABLES, type ConditionContext, type Value } from '../pipelines/filter-condition';

export const RULE_TYPES = ['pipeline.trigger_build.pipeline', 'pipeline.artifacts_read.pipeline'] as const;
export type RuleType = (typeof RULE_TYPES)[number];

/** A rule type's `action`, as the API shows it. */
export const RULE_ACTION: Record<RuleType, 'trigger_build' | 'artifacts_read'> = {
  'pipeline.trigger_build.pipeline': 'trigger_build',
  'pipeline.artifacts_read.pipeline': 'artifacts_read',
};

/** What every check gives of a build, with no read more: the four fields rules first offered. */
const BUILD_FIELDS = ['branch', 'commit', 'message', 'source'] as const;
const TRIGGER_FIELDS = ['branch', 'commit', 'message'] as const;

/** A build's variables on one side of a rule: `source.build.branch`... `source.build.env`. */
const buildVariables = (side: 'source' | 'target') => STEP_BUILD_VARIABLES.map((v) => `${side}.${v}`);

/** What each rule type's conditions may name. */
export const RULE_VARIABLES: Record<RuleType, readonly string[]> = {
  'pipeline.trigger_build.pipeline': [...buildVariables('source'), ...TRIGGER_FIELDS.map((f) => `target.trigger.${f}`)],
  'pipeline.artifacts_read.pipeline': [...buildVariables('source'), ...buildVariables('target'), 'source.request.query'],
};

/** What the 422 says a rule type's conditions may use: each build's variables once, as `source.build.*`. */
function allowedText(type: RuleType): string {
  const sides = type === 'pipeline.trigger_build.pipeline' ? ['source.build.*'] : ['source.build.*', 'target.build.*'];
  const others = RULE_VARIABLES[type].filter((v) => !v.startsWith('source.build.') && !v.startsWith('target.build.'));
  const build = STEP_BUILD_VARIABLES.map((v) => (v === 'build.env' ? 'env("NAME")' : v.slice('build.'.length))).join(', ');
  return `${sides.join(' and ')}, where * is a variable of a build in a step's if (${build}); and ${others.join(', ')}`;
}

/** The variables a condition names, or null when it does not parse for the type. */
function variablesNamed(type: RuleType, text: string): Set<string> | null {
  const parsed = parseCondition(text, RULE_VARIABLES[type]);
  return parsed.ok ? parsed.condition.variables() : null;
}

/** Why a condition can't be used in a rule of `type` (a field-error code), or null when it can. */
export function ruleConditionError(type: RuleType, text: string): string | null {
  const allowed = RULE_VARIABLES[type];
  const parsed = parseCondition(text, allowed);
  if (!parsed.ok) return conditionProblem(parsed.error);
  const unknown = [...parsed.condition.variables()].filter((v) => !allowed.includes(v));
  if (unknown.length > 0)
    return `names ${unknown.map((v) => `\`${v}\``).join(', ')}, which a ${type} rule's conditions can't use (they may use ${allowedText(type)})`;
  return null;
}

/**
 * A build as the conditions see it: the four fields every check gives, and, where a rule's
 * conditions name any other of its variables (factsWanted), `facts`: what a step's `if` reads
 * of the build (stepConditionContext in src/builds/jobs/plan.ts; its `build.*` entries are used).
 * Without `facts`, the other variables read null.
 */
export interface RuleBuild {
  branch: string;
  commit: string;
  message: string | null;
  source: string;
  facts?: ConditionContext | null;
}

/** Which reads a build's facts need: its creator's teams, its env (with the organization's slug). */
export interface FactsWanted {
  creatorTeams: boolean;
  env: boolean;
}

/**
 * What a check must read of one side's build for the rules' conditions: null when they name no
 * variable of it beyond the four fields every check gives; else whether they name its creator's
 * teams (a read of them) and its env (the organization's slug is BUILDKITE_ORGANIZATION_SLUG).
 */
export function factsWanted(type: RuleType, rules: readonly { conditions: readonly string[] }[], side: 'source' | 'target'): FactsWanted | null {
  const prefix = `${side}.build.`;
  const named = new Set<string>();
  for (const r of rules)
    for (const text of r.conditions) for (const v of variablesNamed(type, text) ?? []) if (v.startsWith(prefix)) named.add(v.slice(prefix.length));
  if (![...named].some((v) => !(BUILD_FIELDS as readonly string[]).includes(v))) return null;
  return { creatorTeams: named.has('creator.teams'), env: named.has('env') };
}

/** What the conditions of one check read: `source.build`, and `target.trigger` or `target.build` and `source.request.query`. */
export interface RuleContext {
  source: RuleBuild;
  targetTrigger?: { branch: string; commit: string; message: string | null };
  targetBuild?: RuleBuild;
  query?: string | null;
}

/** A build's variables, prefixed with its side: its facts' `build.*` entries, then the four fields (as every check gives them). */
function setBuild(m: Map<string, Value>, side: 'source' | 'target', b: RuleBuild): void {
  for (const [k, v] of b.facts ?? []) if (k.startsWith('build.')) m.set(`${side}.${k}`, v);
  for (const f of BUILD_FIELDS) m.set(`${side}.build.${f}`, b[f]);
}

function contextMap(c: RuleContext): Map<string, Value> {
  const m = new Map<string, Value>();
  setBuild(m, 'source', c.source);
  if (c.targetTrigger) for (const f of TRIGGER_FIELDS) m.set(`target.trigger.${f}`, c.targetTrigger[f]);
  if (c.targetBuild) setBuild(m, 'target', c.targetBuild);
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
