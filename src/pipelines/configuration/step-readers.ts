import { parseMatrix, unknownTokens, type Matrix } from '../matrix';
import { parsePlugins } from '../plugins';
import { STEP_ATTRIBUTES, verdict, type StepType } from '../step-attributes';
import { MAX_BRANCHES, MAX_CONCURRENCY, MAX_KEY, MAX_NAME, MAX_PRIORITY, MAX_PROMPT, MAX_REF, MAX_SLUG, MAX_TEXT, MAX_TIMEOUT, PIPELINE_SLUG } from './limits';
import { tooLong, type Ctx } from './problems';
import { agents, bool, env, fields, joined, optText, pick, positive, retry, softFail, text, wholeNumber, type Found } from './property-readers';
import type { ManualStep, ScriptStep, TriggerStep, WaiterStep } from './step-types';
import type { V, VMap } from './value-tree';

// ---------------------------------------------------------------------------------------------
// Steps. YAML takes both its own property names and the REST API's (so the visual form can be
// written as YAML); the visual form takes only the API's.

export const NAMES = {
  yaml: {
    name: ['label', 'name'],
    branches: ['branches', 'branch_configuration'],
    agents: ['agents', 'agent_query_rules'],
    key: ['key', 'id', 'identifier'],
    artifacts: ['artifact_paths', 'artifacts'],
    timeout: ['timeout_in_minutes', 'timeout'],
    manualLabel: ['label', 'name'],
    slug: ['trigger', 'trigger_project_slug'],
    async: ['async', 'trigger_async'],
  },
  visual: {
    name: ['name'],
    branches: ['branch_configuration'],
    agents: ['agent_query_rules'],
    key: ['key'],
    artifacts: ['artifact_paths'],
    timeout: ['timeout_in_minutes'],
    manualLabel: ['label'],
    slug: ['trigger_project_slug'],
    async: ['trigger_async'],
  },
} as const;

function command(c: Ctx, m: VMap): string | null {
  if (c.dialect === 'visual') return optText(c, pick(m, ['command']), MAX_TEXT);
  const one = pick(m, ['command']);
  const many = pick(m, ['commands']);
  if (one && many) c.fail('commands', 'cannot be used together with "command"', many[1]);
  const found = one ?? many;
  const value = optCommand(c, found);
  const plugins = pick(m, ['plugins']);
  // A step with nothing to run would only ever fail; plugins alone are enough (docker etc.).
  if (value === null && !plugins) c.fail(found?.[0] ?? 'command', "can't be blank", found?.[1]);
  return value ?? null;
}

/** The command lines joined; null when blank, undefined once a problem has been reported. */
function optCommand(c: Ctx, found: Found | undefined): string | null | undefined {
  if (!found) return null;
  const [path, v] = found;
  const lines = v.t === 'list' ? v.items.map(text) : [text(v)];
  if (!lines.every((s): s is string => s !== undefined)) {
    return c.fail(path, 'must be a string or a list of strings', v), undefined;
  }
  const s = lines.join('\n');
  if (s.length > MAX_TEXT) return c.fail(path, tooLong(MAX_TEXT), v), undefined;
  return s.trim() === '' ? null : s;
}

export function scriptStep(c: Ctx, m: VMap, defaultAgents: readonly string[], defaultPriority?: number): ScriptStep {
  const names = NAMES[c.dialect];
  const step: ScriptStep = {
    type: 'script',
    name: optText(c, pick(m, names.name), MAX_NAME),
    command: command(c, m),
    artifact_paths: joined(c, pick(m, names.artifacts), ';', MAX_BRANCHES),
    branch_configuration: joined(c, pick(m, names.branches), ' ', MAX_BRANCHES),
    env: env(c, pick(m, ['env'])),
    timeout_in_minutes: positive(c, pick(m, names.timeout), MAX_TIMEOUT),
    agent_query_rules: agents(c, pick(m, names.agents)),
    concurrency: positive(c, pick(m, ['concurrency']), MAX_CONCURRENCY),
    parallelism: wholeNumber(c, pick(m, ['parallelism']), 1, 1000, 'must be a whole number from 1 to 1000'),
    key: optText(c, pick(m, names.key), MAX_KEY),
    soft_fail: softFail(c, pick(m, ['soft_fail'])),
    retry: retry(c, pick(m, ['retry'])),
  };
  if (step.agent_query_rules.length === 0) step.agent_query_rules = [...defaultAgents];
  const priority = wholeNumber(c, pick(m, ['priority']), -MAX_PRIORITY, MAX_PRIORITY, `must be a whole number from -${MAX_PRIORITY} to ${MAX_PRIORITY}`);
  if (priority !== null) step.priority = priority;
  else if (defaultPriority !== undefined) step.priority = defaultPriority;
  const plugins = parsePlugins(c, pick(m, ['plugins']));
  if (plugins) step.plugins = plugins;
  const matrixFound = pick(m, ['matrix']);
  const matrix = parseMatrix(c, matrixFound);
  // Documented: "Matrix builds are not compatible with explicit parallelism in steps".
  if (matrixFound && step.parallelism !== null && step.parallelism > 1) {
    c.fail('parallelism', 'cannot be used together with "matrix": put them on separate steps', pick(m, ['parallelism'])?.[1]);
  }
  if (matrix) {
    step.matrix = matrix;
    checkTokens(c, m, step, matrix);
  }
  return step;
}

/** Matrix values go into label, command, env, agents and plugins; a token naming no dimension is an error. */
function checkTokens(c: Ctx, m: VMap, step: ScriptStep, matrix: Matrix): void {
  const names = NAMES[c.dialect];
  const check = (path: string, s: string | null, at: V | undefined) => {
    const bad = s === null ? [] : unknownTokens(s, matrix);
    if (bad.length > 0) c.fail(path, `uses ${bad[0]}, but the matrix has no such dimension (it has ${Object.keys(matrix.setup).map((d) => (d === '' ? '{{matrix}}' : `{{matrix.${d}}}`)).join(', ')})`, at);
  };
  check(pick(m, names.name)?.[0] ?? 'label', step.name, pick(m, names.name)?.[1]);
  check(pick(m, ['command', 'commands'])?.[0] ?? 'command', step.command, pick(m, ['command', 'commands'])?.[1]);
  for (const [k, v] of Object.entries(step.env)) check(`env.${k}`, v, pick(m, ['env'])?.[1]);
  for (const rule of step.agent_query_rules) check(pick(m, names.agents)?.[0] ?? 'agents', rule, pick(m, names.agents)?.[1]);
  if (step.plugins) check('plugins', JSON.stringify(step.plugins), pick(m, ['plugins'])?.[1]);
}

/**
 * What a YAML step says beyond what Windsock acts on: documented attributes it only accepts are
 * reported, those it cannot honour and undocumented ones are refused (step-attributes.ts).
 */
export function checkAttributes(c: Ctx, m: VMap, type: StepType): void {
  for (const attribute of m.keys) {
    const v = m.get(attribute);
    // `depends_on: ~` and the like say nothing, so there is nothing to refuse.
    if (v === undefined || v.t === 'null') continue;
    const found = verdict(STEP_ATTRIBUTES[type], attribute);
    // `false` (and for `skip`, the documented empty reason) asks for the default: what Windsock does.
    if (found.state !== 'unknown' && ((v.t === 'bool' && !v.v) || (attribute === 'skip' && v.t === 'str' && v.v === ''))) continue;
    if (found.state === 'reported') c.notice(attribute, found.why);
    else if (found.state === 'refused') c.fail(attribute, `is not supported by Windsock: ${found.why}`, v);
    else if (found.state === 'unknown') c.fail(attribute, `is not an attribute of a ${type} step`, v);
  }
}

export function waiterStep(c: Ctx, m: VMap): WaiterStep {
  if (c.dialect === 'yaml') {
    // The label of a wait step is only shown in Buildkite's UI; a waiter has nowhere to keep it.
    const label = pick(m, ['wait', 'waiter']);
    if (label && text(label[1]) === undefined) c.fail(label[0], 'must be empty or a label', label[1]);
  }
  return { type: 'waiter', continue_on_failure: bool(c, pick(m, ['continue_on_failure']), false) };
}

export function manualStep(c: Ctx, m: VMap, keyword?: 'block' | 'input'): ManualStep {
  let label = keyword ? optText(c, pick(m, [keyword]), MAX_NAME) : null;
  label ??= optText(c, pick(m, NAMES[c.dialect].manualLabel), MAX_NAME);
  if (label === null) {
    if (keyword) label = keyword;
    else c.fail('label', "can't be blank", m.get('label'));
  }
  return {
    type: 'manual',
    label: label ?? '',
    prompt: optText(c, pick(m, ['prompt']), MAX_PROMPT),
    fields: fields(c, pick(m, ['fields'])),
    branch_configuration: joined(c, pick(m, NAMES[c.dialect].branches), ' ', MAX_BRANCHES),
  };
}

export function triggerStep(c: Ctx, m: VMap): TriggerStep {
  const names = NAMES[c.dialect];
  const slugFound = pick(m, names.slug);
  let slug = '';
  if (!slugFound) {
    if (c.dialect === 'yaml') c.fail('trigger', 'must name a pipeline slug', m.get('trigger'));
    else c.fail('trigger_project_slug', "can't be blank");
  } else {
    const s = text(slugFound[1]);
    if (s === undefined || s.length > MAX_SLUG || !PIPELINE_SLUG.test(s)) {
      const blank = s?.trim() === '' && c.dialect === 'visual';
      c.fail(slugFound[0], blank ? "can't be blank" : 'must name a pipeline slug', slugFound[1]);
    } else {
      slug = s;
    }
  }

  let build: VMap | undefined;
  if (c.dialect === 'yaml') {
    const found = pick(m, ['build']);
    if (found?.[1].t === 'map') build = found[1];
    else if (found) c.fail('build', 'must be a mapping of message, commit, branch, env and meta_data', found[1]);
  }
  const from = (buildKey: string, apiKey: string) => pick(build, [buildKey], 'build.') ?? pick(m, [apiKey]);

  return {
    type: 'trigger',
    name: optText(c, pick(m, ['label', 'name']), MAX_NAME),
    trigger_project_slug: slug,
    // Buildkite's default: the triggered pipeline builds the newest commit of the branch.
    trigger_commit: optText(c, from('commit', 'trigger_commit'), MAX_REF) ?? 'HEAD',
    trigger_branch: optText(c, from('branch', 'trigger_branch'), MAX_REF) ?? '',
    trigger_message: optText(c, from('message', 'trigger_message'), MAX_TEXT),
    trigger_env: env(c, from('env', 'trigger_env')),
    trigger_meta_data: env(c, from('meta_data', 'trigger_meta_data'), 'keys'),
    trigger_async: bool(c, pick(m, names.async), false),
    branch_configuration: joined(c, pick(m, names.branches), ' ', MAX_BRANCHES),
  };
}
