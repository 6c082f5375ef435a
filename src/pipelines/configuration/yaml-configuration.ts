/** The YAML `configuration` of a pipeline (also what `buildkite-agent pipeline upload` sends). */
import { LineCounter, parseDocument } from 'yaml';
import { TOP_LEVEL_ATTRIBUTES, verdict } from './step-attributes';
import { notify } from './notify';
import { MAX_CONFIGURATION_BYTES, MAX_KEY, MAX_NAME, MAX_PRIORITY, MAX_STEPS, STEP_KINDS } from './limits';
import { asValidationError, ProblemList, quote, YamlProblemReporter } from './problems';
import { agents, env, optionalText, findProperty, text, wholeNumber, type FoundProperty } from './property-readers';
import { parseSecrets } from './secrets';
import { checkDependencies, keptKey, parseDependencies, type DependentStep } from './dependencies';
import { bothConditions, stepCondition } from './conditions';
import { checkAttributes, manualStep, PROPERTY_NAMES, scriptStep, skipOf, triggerStep, waiterStep, type StepDefaults } from './step-readers';
import type { NotifyEntry, Step, StepDependency } from './step-types';
import { ValueBudget, lazyConfigMap, type ConfigList, type ConfigMap, type ConfigValue } from './value-tree';
import { YamlReader, yamlError } from './yaml-reader';

type StepKind = 'script' | 'waiter' | 'manual' | 'trigger';

const EXPLICIT_TYPES = new Map<string, StepKind>([
  ['script', 'script'],
  ['command', 'script'],
  ['waiter', 'waiter'],
  ['wait', 'waiter'],
  ['manual', 'manual'],
  ['block', 'manual'],
  ['input', 'manual'],
  ['trigger', 'trigger'],
]);

const STEP_KIND_KEYS: [StepKind, string[]][] = [
  ['script', ['command', 'commands']],
  ['waiter', ['wait', 'waiter']],
  ['manual', ['block', 'input']],
  ['trigger', ['trigger']],
];

/** The step keys whose value may be the step's own attributes (the pipeline schema's nested forms). */
const NESTING_KEYS = ['command', 'commands', 'wait', 'waiter', 'block', 'input'];

/**
 * A step written in the pipeline schema's nested form, its attributes under its keyword
 * (`wait: {continue_on_failure: true}`, `block: {fields: [...]}`, `command: {command: make}`),
 * read as the flat step it stands for: the keyword keeps the value it has inside (a nested
 * `command`), or none, and the outer attributes win over the inner ones.
 */
function unnested(v: ConfigMap): ConfigMap {
  const keyword = NESTING_KEYS.find((k) => v.get(k)?.kind === 'map');
  const inner = keyword === undefined ? undefined : v.get(keyword);
  if (keyword === undefined || inner?.kind !== 'map') return v;
  const keys = [...v.keys, ...inner.keys.filter((k) => !v.keys.includes(k))];
  return lazyConfigMap(keys, v.line, (k) => (k === keyword ? (inner.get(k) ?? { kind: 'null', line: inner.line }) : (v.get(k) ?? inner.get(k))));
}

function yamlStep(reporter: YamlProblemReporter, v: ConfigValue, defaults: StepDefaults): Step | undefined {
  if (v.kind === 'str') {
    if (v.value === 'wait' || v.value === 'waiter') return { type: 'waiter', continue_on_failure: false };
    if (v.value === 'block' || v.value === 'input')
      return manualStep(
        reporter,
        lazyConfigMap([], v.line, () => undefined),
        v.value,
      );
  }
  if (v.kind !== 'map') return void reporter.failStep(`is not a known step type: expected one of ${STEP_KINDS}`);
  v = unnested(v);

  const type = v.get('type');
  let kind: StepKind | undefined;
  if (type !== undefined) {
    // An explicit type wins over any step-type keys, as in the visual form it comes from.
    kind = EXPLICIT_TYPES.get(text(type) ?? '');
    if (!kind) return void reporter.fail('type', 'must be one of script, waiter, manual, trigger', type);
  } else {
    const present = STEP_KIND_KEYS.filter(([, keys]) => keys.some((k) => v.get(k) !== undefined));
    if (present.length > 1) {
      const found = present.map(([, keys]) => `"${keys.find((k) => v.get(k) !== undefined)}"`);
      return void reporter.failStep(`mixes step types: ${found.join(' and ')} cannot be in the same step`);
    }
    kind = present[0]?.[0] ?? (v.get('plugins') !== undefined ? 'script' : undefined);
    if (!kind) return void reporter.failStep(`is not a known step type: expected one of ${STEP_KINDS}`);
  }
  // `type: input` (or `block`) names the keyword, and so the default label, when the step has neither key.
  const typed = type && text(type);
  const keyword =
    kind === 'manual'
      ? ((['block', 'input'] as const).find((k) => v.get(k) !== undefined) ?? (typed === 'input' || typed === 'block' ? typed : undefined))
      : undefined;
  // `type: manual` without a keyword reads as a block step, as the visual form has it.
  checkAttributes(reporter, v, kind === 'script' ? 'command' : kind === 'waiter' ? 'wait' : kind === 'manual' ? (keyword ?? 'block') : 'trigger');
  switch (kind) {
    case 'script':
      return scriptStep(reporter, v, defaults);
    case 'waiter':
      return waiterStep(reporter, v);
    case 'manual':
      return manualStep(reporter, v, keyword);
    case 'trigger':
      return triggerStep(reporter, v);
  }
}

/** What a group step gives each of its steps (the docs: its `if` and `skip` are merged into theirs). */
interface GroupAttributes {
  /** Kept on each of its steps: their jobs show it as `group_key`. */
  key: string | null;
  /** Its label (`group`, `label` or `name`), kept on each of its steps: their jobs' `BUILDKITE_GROUP_LABEL`. */
  label: string | null;
  /** Where the group step is in the configuration's `steps`: each of its steps' `group_index`. */
  index: number;
  condition?: string;
  skip?: true | string;
  /** Its `depends_on`, each with `allow_failure` when the group allows dependency failure. */
  dependsOn?: StepDependency[];
  /** Set once one of its wait or block steps has been read. */
  barrierPassed: boolean;
}

function groupAttributes(reporter: YamlProblemReporter, group: ConfigMap, children: ConfigList, index: number, label: string | null): GroupAttributes {
  const key = optionalText(reporter, findProperty(group, PROPERTY_NAMES.yaml.key), MAX_KEY);
  const attributes: GroupAttributes = { key, label, index, barrierPassed: false, ...skipOf(reporter, group) };
  const condition = stepCondition(reporter, group, []);
  if (condition !== undefined) attributes.condition = condition;
  const { depends_on: dependsOn, allow_dependency_failure: allowFailure } = parseDependencies(reporter, group);
  if (dependsOn) {
    // Checked here rather than on each step: a group waiting for itself or its own steps could never start.
    const childKeys = new Set(
      children.items.flatMap((c) => {
        const found = c.kind === 'map' ? findProperty(c, PROPERTY_NAMES.yaml.key) : undefined;
        const k = found && text(found[1]);
        return k ? [k] : [];
      }),
    );
    attributes.dependsOn = dependsOn.flatMap((d) => {
      const why = d.step === key ? "the group's own key" : childKeys.has(d.step) ? 'the key of one of its own steps' : null;
      if (why) return (reporter.fail('depends_on', `names ${quote(d.step)}, ${why}`, group.get('depends_on')), []);
      return [{ step: d.step, allow_failure: d.allow_failure || allowFailure === true }];
    });
  }
  return attributes;
}

/**
 * A group's attributes merged into one of its steps: its condition joined to the step's (not
 * beside a branch filter, as for a step's own), its `skip` where the step has none, and its
 * `depends_on` added to the step's own (the step's entry first for a key both name), on each
 * step that has a `depends_on` of its own or comes before the group's first wait or block step
 * (that one included): the group waits for those steps as one step would, and its steps keep
 * their order.
 */
function inherit(reporter: YamlProblemReporter, item: ConfigValue, step: Step, group: GroupAttributes): void {
  if (group.condition !== undefined && 'branch_configuration' in step && step.branch_configuration !== null) {
    reporter.fail(
      'branches',
      'cannot be used in a group that has an "if"',
      item.kind === 'map' ? findProperty(item, PROPERTY_NAMES.yaml.branches)?.[1] : undefined,
    );
  }
  const condition = bothConditions(group.condition, step.if);
  if (condition !== undefined) step.if = condition;
  if (group.skip !== undefined && (step.type === 'script' || step.type === 'trigger')) step.skip ??= group.skip;
  if (group.dependsOn && (step.depends_on !== undefined || !group.barrierPassed)) {
    const own = step.depends_on ?? [];
    step.depends_on = [...own, ...group.dependsOn.filter((d) => !own.some((o) => o.step === d.step))];
  }
}

function firstLine(message: string): string {
  const line = message.split('\n', 1)[0]?.trim() ?? '';
  return /call stack/i.test(line) ? 'it is nested too deeply' : line;
}

/**
 * Steps, env and build-level notifications of a pipeline configuration, and a line for each
 * attribute accepted but not acted on.
 */
export type ParsedConfiguration = { steps: Step[]; env: Record<string, string>; notify: NotifyEntry[]; notices: string[] };

/** Parse a pipeline YAML configuration (the `configuration` field of the pipelines API). */
export function parseConfiguration(yamlText: string): ParsedConfiguration {
  try {
    return parseConfigurationOrThrow(yamlText);
  } catch (error) {
    throw asValidationError(error, 'configuration', 'is too large once its aliases and merge keys are expanded');
  }
}

function parseConfigurationOrThrow(yamlText: string): ParsedConfiguration {
  if (typeof yamlText !== 'string') throw yamlError('must be a string');
  if (Buffer.byteLength(yamlText, 'utf8') > MAX_CONFIGURATION_BYTES) {
    throw yamlError(`is too large (maximum is ${MAX_CONFIGURATION_BYTES} bytes)`);
  }

  const lines = new LineCounter();
  // `merge`: pipelines commonly share settings with `<<: *defaults`, which the Buildkite agent
  // (YAML 1.1 rules) accepts.
  // `uniqueKeys` is off because the library checks it quadratically; YamlReader checks instead.
  const doc = parseDocument(yamlText, { lineCounter: lines, prettyErrors: false, merge: true, uniqueKeys: false });
  const parseError = doc.errors[0];
  if (parseError) {
    const { line, col } = lines.linePos(parseError.pos[0]);
    const message = parseError.code === 'MULTIPLE_DOCS' ? 'only one document is allowed, remove the "---" that starts another' : firstLine(parseError.message);
    throw yamlError(`is not a valid YAML document: line ${line}, column ${col}: ${message}`);
  }
  const reader = new YamlReader(doc, lines, new ValueBudget());
  const root = reader.value(doc.contents, reader.line(doc.contents) ?? 1, 0);
  const problems = new ProblemList();
  const top = new YamlProblemReporter(problems, null, root.line);

  let stepsFound: FoundProperty | undefined;
  let pipelineEnv: Record<string, string> = {};
  let pipelineNotify: NotifyEntry[] = [];
  const defaults: StepDefaults = { agents: [] };
  const rootSteps = root.kind === 'map' ? root.get('steps') : undefined;
  if (root.kind === 'list') {
    stepsFound = ['steps', root];
  } else if (root.kind === 'map' && rootSteps !== undefined) {
    stepsFound = ['steps', rootSteps];
    pipelineEnv = env(top, findProperty(root, ['env']));
    pipelineNotify = notify(top, findProperty(root, ['notify']), 'build');
    defaults.agents = agents(top, findProperty(root, ['agents']));
    const priority = wholeNumber(
      top,
      findProperty(root, ['priority']),
      -MAX_PRIORITY,
      MAX_PRIORITY,
      `must be a whole number from -${MAX_PRIORITY} to ${MAX_PRIORITY}`,
    );
    if (priority !== null) defaults.priority = priority;
    defaults.secrets = parseSecrets(top, findProperty(root, ['secrets']));
    // Keys the documentation does not define are anchor holders and the like: left alone.
    for (const key of root.keys) {
      const value = root.get(key);
      if (value === undefined || value.kind === 'null') continue;
      const found = verdict(TOP_LEVEL_ATTRIBUTES, key);
      if (found.state === 'reported') top.notice(key, found.why);
      else if (found.state === 'refused') top.fail(key, `is not supported by Windsock: ${found.why}`, value);
    }
  } else {
    throw yamlError('must contain a "steps" list');
  }

  const stepsValue = stepsFound[1];
  if (stepsValue.kind === 'null' || (stepsValue.kind === 'list' && stepsValue.items.length === 0)) {
    throw yamlError(`line ${stepsValue.line ?? 1}: steps must not be empty`);
  }
  if (stepsValue.kind !== 'list') throw yamlError(`line ${stepsValue.line ?? 1}: "steps" must be a list`);

  const steps: Step[] = [];
  const keys = new Map<string, string>();
  /** Step and group keys share one namespace, as `depends_on` would name either. */
  const claimKey = (reporter: YamlProblemReporter, key: string, label: string, at: FoundProperty[1] | undefined) => {
    const owner = keys.get(key);
    if (owner !== undefined) reporter.fail('key', `${quote(key)} is already used by step ${owner}`, at);
    else keys.set(key, label);
  };
  const dependents: DependentStep[] = [];
  const groups = new Map<string, string[]>();
  const add = (reporter: YamlProblemReporter, label: string, item: ConfigValue, group?: GroupAttributes) => {
    const step = yamlStep(reporter, item, defaults);
    if (!step) return;
    const groupKey = group?.key ?? null;
    if (group) inherit(reporter, item, step, group);
    // The group's steps after its first wait or block step wait for that one, not for the group's `depends_on`.
    if (group && (step.type === 'waiter' || (step.type === 'manual' && !step.input))) group.barrierPassed = true;
    if (groupKey !== null) step.group_key = groupKey;
    if (group?.label) step.group_label = group.label;
    if (group) step.group_index = group.index;
    const ownKey = keptKey(step);
    const written = item.kind === 'map' ? findProperty(item, PROPERTY_NAMES.yaml.key) : undefined;
    // What the group's key waits for: its steps but waits (through their keys, or what a step without one waits for).
    if (step.type !== 'waiter' && groupKey !== null) {
      const waitsFor = ownKey !== null ? [ownKey] : (step.depends_on ?? []).map((d) => d.step);
      groups.set(groupKey, [...(groups.get(groupKey) ?? []), ...waitsFor]);
    }
    const dependencies = step.depends_on;
    if (dependencies) dependents.push({ reporter, key: ownKey, group: groupKey, dependencies, at: item.kind === 'map' ? item.get('depends_on') : undefined });
    if (ownKey !== null) claimKey(reporter, ownKey, label, written?.[1]);
    steps.push(step);
  };

  for (const [i, item] of stepsValue.items.entries()) {
    if (problems.full || steps.length > MAX_STEPS) break;
    const label = String(i + 1);
    const reporter = new YamlProblemReporter(problems, label, item.line);
    if (item.kind !== 'map' || item.get('group') === undefined) {
      add(reporter, label, item);
      continue;
    }
    // A group's steps are kept in place, each with its `group_index`: the build's machine runs
    // the group beside what follows it (src/builds/jobs/state.ts, the docs' "Parallel groups").
    const children = item.get('steps');
    if (children === undefined || children.kind === 'null' || (children.kind === 'list' && children.items.length === 0)) {
      reporter.fail('steps', 'must not be empty', children);
      continue;
    }
    if (children.kind !== 'list') {
      reporter.fail('steps', 'must be a list', children);
      continue;
    }
    const groupLabel = optionalText(reporter, findProperty(item, ['group', 'label', 'name']), MAX_NAME);
    checkAttributes(reporter, item, 'group');
    const group = groupAttributes(reporter, item, children, i, groupLabel);
    if (group.key !== null) claimKey(reporter, group.key, label, findProperty(item, PROPERTY_NAMES.yaml.key)?.[1]);
    for (const [j, child] of children.items.entries()) {
      if (problems.full || steps.length > MAX_STEPS) break;
      const childLabel = `${label}.${j + 1}`;
      const childReporter = new YamlProblemReporter(problems, childLabel, child.line);
      if (child.kind === 'map' && child.get('group') !== undefined) {
        childReporter.failStep('is a group inside a group: groups cannot be nested');
      } else {
        add(childReporter, childLabel, child, group);
      }
    }
  }
  if (steps.length > MAX_STEPS) throw yamlError(`has too many steps (maximum is ${MAX_STEPS})`);
  checkDependencies(dependents, groups);
  problems.throwIfAny();
  return { steps, env: pipelineEnv, notify: pipelineNotify, notices: problems.notices };
}
