/**
 * One reader per step type. YAML takes both its own property names and the REST API's (so the
 * visual form can be written as YAML); the visual form takes only the API's.
 */
import { parseMatrix, unknownTokens, type Matrix } from './matrix';
import { notify } from './notify';
import { parsePlugins } from './plugins';
import { mergeSecrets, parseSecrets, type StepSecret } from './secrets';
import { parseDependencies } from './dependencies';
import { stepCondition } from './conditions';
import { STEP_ATTRIBUTES, verdict, type StepType } from './step-attributes';
import { MAX_BRANCHES, MAX_CONCURRENCY, MAX_KEY, MAX_NAME, MAX_PRIORITY, MAX_PROMPT, MAX_REF, MAX_SLUG, MAX_TEXT, MAX_TIMEOUT, PIPELINE_SLUG } from './limits';
import { tooLong, type ProblemReporter } from './problems';
import {
  agents,
  allowedTeams,
  bool,
  env,
  fields,
  joined,
  optionalText,
  findProperty,
  positive,
  retry,
  skip,
  softFail,
  text,
  wholeNumber,
  type FoundProperty,
} from './property-readers';
import type { BlockedState, ManualStep, ScriptStep, TriggerStep, WaiterStep } from './step-types';
import type { ConfigValue, ConfigMap } from './value-tree';

export const PROPERTY_NAMES = {
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
    // The request names of pipelines.md's visual-step example, then the names a read shows (a
    // step read can be sent back as it is).
    slug: ['trigger_project_slug', 'pipeline'],
    async: ['trigger_async', 'async'],
  },
} as const;

function command(reporter: ProblemReporter, stepMap: ConfigMap): string | null {
  if (reporter.dialect === 'visual') return optionalText(reporter, findProperty(stepMap, ['command']), MAX_TEXT);
  const one = findProperty(stepMap, ['command']);
  const many = findProperty(stepMap, ['commands']);
  if (one && many) reporter.fail('commands', 'cannot be used together with "command"', many[1]);
  const found = one ?? many;
  const value = optCommand(reporter, found);
  const plugins = findProperty(stepMap, ['plugins']);
  // A step with nothing to run would only ever fail; plugins alone are enough (docker etc.).
  if (value === null && !plugins) reporter.fail(found?.[0] ?? 'command', "can't be blank", found?.[1]);
  return value ?? null;
}

/** The command lines joined; null when blank, undefined once a problem has been reported. */
function optCommand(reporter: ProblemReporter, found: FoundProperty | undefined): string | null | undefined {
  if (!found) return null;
  const [path, v] = found;
  const lines = v.kind === 'list' ? v.items.map(text) : [text(v)];
  if (!lines.every((s): s is string => s !== undefined)) {
    return (reporter.fail(path, 'must be a string or a list of strings', v), undefined);
  }
  const s = lines.join('\n');
  if (s.length > MAX_TEXT) return (reporter.fail(path, tooLong(MAX_TEXT), v), undefined);
  return s.trim() === '' ? null : s;
}

/** What a command step takes from its pipeline's top level when it does not say. */
export interface StepDefaults {
  agents: readonly string[];
  priority?: number;
  secrets?: StepSecret[];
}

export function scriptStep(reporter: ProblemReporter, stepMap: ConfigMap, defaults: StepDefaults): ScriptStep {
  const names = PROPERTY_NAMES[reporter.dialect];
  const step: ScriptStep = {
    type: 'script',
    name: optionalText(reporter, findProperty(stepMap, names.name), MAX_NAME),
    command: command(reporter, stepMap),
    artifact_paths: joined(reporter, findProperty(stepMap, names.artifacts), ';', MAX_BRANCHES),
    branch_configuration: joined(reporter, findProperty(stepMap, names.branches), ' ', MAX_BRANCHES),
    env: env(reporter, findProperty(stepMap, ['env'])),
    timeout_in_minutes: positive(reporter, findProperty(stepMap, names.timeout), MAX_TIMEOUT),
    agent_query_rules: agents(reporter, findProperty(stepMap, names.agents)),
    concurrency: positive(reporter, findProperty(stepMap, ['concurrency']), MAX_CONCURRENCY),
    parallelism: wholeNumber(reporter, findProperty(stepMap, ['parallelism']), 1, 1000, 'must be a whole number from 1 to 1000'),
    key: optionalText(reporter, findProperty(stepMap, names.key), MAX_KEY),
    soft_fail: softFail(reporter, findProperty(stepMap, ['soft_fail'])),
    retry: retry(reporter, findProperty(stepMap, ['retry'])),
  };
  if (step.agent_query_rules.length === 0) step.agent_query_rules = [...defaults.agents];
  const priority = wholeNumber(
    reporter,
    findProperty(stepMap, ['priority']),
    -MAX_PRIORITY,
    MAX_PRIORITY,
    `must be a whole number from -${MAX_PRIORITY} to ${MAX_PRIORITY}`,
  );
  if (priority !== null) step.priority = priority;
  else if (defaults.priority !== undefined) step.priority = defaults.priority;
  const plugins = parsePlugins(reporter, findProperty(stepMap, ['plugins']));
  if (plugins) step.plugins = plugins;
  const secrets = mergeSecrets(parseSecrets(reporter, findProperty(stepMap, ['secrets'])) ?? [], defaults.secrets ?? []);
  if (secrets.length > 0) step.secrets = secrets;
  const matrixFound = findProperty(stepMap, ['matrix']);
  const matrix = parseMatrix(reporter, matrixFound);
  // Documented: "Matrix builds are not compatible with explicit parallelism in steps".
  if (matrixFound && step.parallelism !== null && step.parallelism > 1) {
    reporter.fail('parallelism', 'cannot be used together with "matrix": put them on separate steps', findProperty(stepMap, ['parallelism'])?.[1]);
  }
  if (matrix) {
    step.matrix = matrix;
    checkTokens(reporter, stepMap, step, matrix);
  }
  const notifications = notify(reporter, findProperty(stepMap, ['notify']), 'step');
  if (notifications.length > 0) step.notify = notifications;
  concurrencyGroup(reporter, stepMap, step);
  if (bool(reporter, findProperty(stepMap, ['cancel_on_build_failing']), false)) step.cancel_on_build_failing = true;
  return Object.assign(step, ifOf(stepCondition(reporter, stepMap, names.branches)), parseDependencies(reporter, stepMap), skipOf(reporter, stepMap));
}

/**
 * A command step's concurrency group (the docs' "Controlling concurrency"): `concurrency_group`
 * needs `concurrency`, its limit, as the docs say ("If you use this attribute, you must also
 * define the concurrency attribute"); `concurrency_method` is `ordered` or `eager`. A limit
 * without a group limits nothing: kept, and said so.
 */
function concurrencyGroup(reporter: ProblemReporter, stepMap: ConfigMap, step: ScriptStep): void {
  const groupFound = findProperty(stepMap, ['concurrency_group']);
  const group = optionalText(reporter, groupFound, MAX_REF);
  const methodFound = findProperty(stepMap, ['concurrency_method']);
  const method = methodFound && text(methodFound[1]);
  if (methodFound && method !== 'ordered' && method !== 'eager') reporter.fail(methodFound[0], 'must be "ordered" or "eager"', methodFound[1]);
  if (group === null) {
    if (step.concurrency !== null)
      reporter.notice('concurrency', 'a limit applies to the jobs of a concurrency group, and the step names none ("concurrency_group")');
    if (methodFound && (method === 'ordered' || method === 'eager'))
      reporter.notice(methodFound[0], 'it orders the jobs of a concurrency group, and the step names none ("concurrency_group")');
    return;
  }
  if (step.concurrency === null) return reporter.fail('concurrency_group', 'needs "concurrency": how many of its jobs may run at once', groupFound?.[1]);
  step.concurrency_group = group;
  if (method === 'ordered' || method === 'eager') step.concurrency_method = method;
}

/** Matrix values go into label, command, env, agents and plugins; a token naming no dimension is an error. */
function checkTokens(reporter: ProblemReporter, stepMap: ConfigMap, step: ScriptStep, matrix: Matrix): void {
  const names = PROPERTY_NAMES[reporter.dialect];
  const check = (path: string, s: string | null, at: ConfigValue | undefined) => {
    const bad = s === null ? [] : unknownTokens(s, matrix);
    if (bad.length > 0)
      reporter.fail(
        path,
        `uses ${bad[0]}, but the matrix has no such dimension (it has ${Object.keys(matrix.setup)
          .map((d) => (d === '' ? '{{matrix}}' : `{{matrix.${d}}}`))
          .join(', ')})`,
        at,
      );
  };
  check(findProperty(stepMap, names.name)?.[0] ?? 'label', step.name, findProperty(stepMap, names.name)?.[1]);
  check(findProperty(stepMap, ['command', 'commands'])?.[0] ?? 'command', step.command, findProperty(stepMap, ['command', 'commands'])?.[1]);
  for (const [k, v] of Object.entries(step.env)) check(`env.${k}`, v, findProperty(stepMap, ['env'])?.[1]);
  for (const rule of step.agent_query_rules) check(findProperty(stepMap, names.agents)?.[0] ?? 'agents', rule, findProperty(stepMap, names.agents)?.[1]);
  if (step.plugins) check('plugins', JSON.stringify(step.plugins), findProperty(stepMap, ['plugins'])?.[1]);
}

/**
 * What a YAML step says beyond what Windsock acts on: documented attributes it only accepts are
 * reported, those it cannot honour and undocumented ones are refused (step-attributes.ts).
 */
export function checkAttributes(reporter: ProblemReporter, stepMap: ConfigMap, type: StepType): void {
  for (const attribute of stepMap.keys) {
    const v = stepMap.get(attribute);
    // `depends_on: ~` and the like say nothing, so there is nothing to refuse.
    if (v === undefined || v.kind === 'null') continue;
    const found = verdict(STEP_ATTRIBUTES[type], attribute);
    // `false` (and for `skip`, the documented empty reason) asks for the default: what Windsock does.
    if (found.state !== 'unknown' && ((v.kind === 'bool' && !v.value) || (attribute === 'skip' && v.kind === 'str' && v.value === ''))) continue;
    if (found.state === 'reported') reporter.notice(attribute, found.why);
    else if (found.state === 'refused') reporter.fail(attribute, `is not supported by Windsock: ${found.why}`, v);
    else if (found.state === 'unknown') reporter.fail(attribute, `is not an attribute of a ${type} step`, v);
  }
}

export function waiterStep(reporter: ProblemReporter, stepMap: ConfigMap): WaiterStep {
  if (reporter.dialect === 'yaml') {
    // The label of a wait step is only shown in Buildkite's UI; a waiter has nowhere to keep it.
    const label = findProperty(stepMap, ['wait', 'waiter']);
    if (label && text(label[1]) === undefined) reporter.fail(label[0], 'must be empty or a label', label[1]);
  }
  return {
    type: 'waiter',
    continue_on_failure: bool(reporter, findProperty(stepMap, ['continue_on_failure']), false),
    ...branchesOf(joined(reporter, findProperty(stepMap, PROPERTY_NAMES[reporter.dialect].branches), ' ', MAX_BRANCHES)),
    ...ifOf(stepCondition(reporter, stepMap, PROPERTY_NAMES[reporter.dialect].branches)),
    ...keyOf(optionalText(reporter, findProperty(stepMap, PROPERTY_NAMES[reporter.dialect].key), MAX_KEY)),
    ...parseDependencies(reporter, stepMap),
  };
}

export function manualStep(reporter: ProblemReporter, stepMap: ConfigMap, keyword?: 'block' | 'input'): ManualStep {
  let label = keyword ? optionalText(reporter, findProperty(stepMap, [keyword]), MAX_NAME) : null;
  label ??= optionalText(reporter, findProperty(stepMap, PROPERTY_NAMES[reporter.dialect].manualLabel), MAX_NAME);
  if (label === null) {
    if (keyword) label = keyword;
    else reporter.fail('label', "can't be blank", stepMap.get('label'));
  }
  // YAML says `input: <label>`; the visual form (and a read sent back) `input: true`.
  const input = keyword === 'input' || (reporter.dialect === 'visual' && bool(reporter, findProperty(stepMap, ['input']), false));
  return {
    type: 'manual',
    label: label ?? '',
    ...(input ? { input: true as const } : {}),
    prompt: optionalText(reporter, findProperty(stepMap, ['prompt']), MAX_PROMPT),
    ...submitOf(optionalText(reporter, findProperty(stepMap, ['submit']), MAX_NAME)),
    ...blockedStateOf(reporter, findProperty(stepMap, ['blocked_state'])),
    fields: fields(reporter, findProperty(stepMap, ['fields'])),
    ...allowedTeamsOf(allowedTeams(reporter, findProperty(stepMap, ['allowed_teams']))),
    branch_configuration: joined(reporter, findProperty(stepMap, PROPERTY_NAMES[reporter.dialect].branches), ' ', MAX_BRANCHES),
    ...ifOf(stepCondition(reporter, stepMap, PROPERTY_NAMES[reporter.dialect].branches)),
    ...keyOf(optionalText(reporter, findProperty(stepMap, PROPERTY_NAMES[reporter.dialect].key), MAX_KEY)),
    ...parseDependencies(reporter, stepMap),
  };
}

/** `{branch_configuration}` when written (a wait step keeps it only then). */
function branchesOf(filter: string | null): { branch_configuration?: string } {
  return filter === null ? {} : { branch_configuration: filter };
}

const BLOCKED_STATES: readonly BlockedState[] = ['passed', 'failed', 'running'];

/** `{blocked_state}` when written: one of the documented values. */
function blockedStateOf(reporter: ProblemReporter, found: FoundProperty | undefined): { blocked_state?: BlockedState } {
  if (!found) return {};
  const value = text(found[1]);
  const state = BLOCKED_STATES.find((s) => s === value);
  if (state) return { blocked_state: state };
  reporter.fail(found[0], 'must be "passed", "failed" or "running"', found[1]);
  return {};
}

/** `{submit}` when written: the label of the button that unblocks (the docs' default is "Continue"). */
function submitOf(submit: string | null): { submit?: string } {
  return submit === null ? {} : { submit };
}

/** `{allowed_teams}` when written. */
function allowedTeamsOf(teams: string[] | undefined): { allowed_teams?: string[] } {
  return teams ? { allowed_teams: teams } : {};
}

/** `{key}` when there is one (a wait, block or trigger step keeps its key only when written). */
function keyOf(key: string | null): { key?: string } {
  return key === null ? {} : { key };
}

export function triggerStep(reporter: ProblemReporter, stepMap: ConfigMap): TriggerStep {
  const names = PROPERTY_NAMES[reporter.dialect];
  const slugFound = findProperty(stepMap, names.slug);
  let slug = '';
  if (!slugFound) {
    if (reporter.dialect === 'yaml') reporter.fail('trigger', 'must name a pipeline slug', stepMap.get('trigger'));
    else reporter.fail('trigger_project_slug', "can't be blank");
  } else {
    const s = text(slugFound[1]);
    if (s === undefined || s.length > MAX_SLUG || !PIPELINE_SLUG.test(s)) {
      const blank = s?.trim() === '' && reporter.dialect === 'visual';
      reporter.fail(slugFound[0], blank ? "can't be blank" : 'must name a pipeline slug', slugFound[1]);
    } else {
      slug = s;
    }
  }

  // YAML's `build`, or the `build` object a REST read shows (findProperty skips its null values).
  let build: ConfigMap | undefined;
  const foundBuild = findProperty(stepMap, ['build']);
  if (foundBuild?.[1].kind === 'map') build = foundBuild[1];
  else if (foundBuild)
    reporter.fail('build', `must be ${reporter.dialect === 'yaml' ? 'a mapping' : 'an object'} of message, commit, branch, env and meta_data`, foundBuild[1]);
  const from = (buildKey: string, apiKey: string) => findProperty(build, [buildKey], 'build.') ?? findProperty(stepMap, [apiKey]);

  return {
    type: 'trigger',
    name: optionalText(reporter, findProperty(stepMap, reporter.dialect === 'yaml' ? ['label', 'name'] : ['name', 'label']), MAX_NAME),
    trigger_project_slug: slug,
    // Buildkite's default: the triggered pipeline builds the newest commit of the branch.
    trigger_commit: optionalText(reporter, from('commit', 'trigger_commit'), MAX_REF) ?? 'HEAD',
    trigger_branch: optionalText(reporter, from('branch', 'trigger_branch'), MAX_REF) ?? '',
    trigger_message: optionalText(reporter, from('message', 'trigger_message'), MAX_TEXT),
    trigger_env: env(reporter, from('env', 'trigger_env')),
    trigger_meta_data: env(reporter, from('meta_data', 'trigger_meta_data'), 'keys'),
    trigger_async: bool(reporter, findProperty(stepMap, names.async), false),
    branch_configuration: joined(reporter, findProperty(stepMap, names.branches), ' ', MAX_BRANCHES),
    ...ifOf(stepCondition(reporter, stepMap, names.branches)),
    ...keyOf(optionalText(reporter, findProperty(stepMap, names.key), MAX_KEY)),
    ...parseDependencies(reporter, stepMap),
    ...skipOf(reporter, stepMap),
    ...(bool(reporter, findProperty(stepMap, ['soft_fail']), false) ? { soft_fail: true as const } : {}),
    ...parallelismOf(wholeNumber(reporter, findProperty(stepMap, ['parallelism']), 1, 1000, 'must be a whole number from 1 to 1000')),
  };
}

/** `{parallelism}` for more than one job (a trigger step's 1 is its default). */
function parallelismOf(n: number | null): { parallelism?: number } {
  return n !== null && n > 1 ? { parallelism: n } : {};
}

/** `{skip}` when the step is skipped (true or a reason), else nothing. */
export function skipOf(reporter: ProblemReporter, stepMap: ConfigMap): { skip?: true | string } {
  const skipped = skip(reporter, findProperty(stepMap, ['skip']));
  return skipped === undefined ? {} : { skip: skipped };
}

/** `{if}` when there is a condition, else nothing (the step carries no `if` key). */
function ifOf(condition: string | undefined): { if?: string } {
  return condition === undefined ? {} : { if: condition };
}
