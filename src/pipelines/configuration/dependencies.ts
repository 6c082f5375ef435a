/**
 * A step's explicit dependencies (`depends_on`, `allow_dependency_failure`),
 * as the "Depends on" page of the Buildkite docs defines them: the step runs once the steps it
 * names are done, whatever wait and block steps stand before it. Written as one key, a list of
 * keys, or a list of `{step, allow_failure}`; `~`, `null` and `[]` say "depends on nothing" (it
 * runs at once; a wait step waits for them on top of every step before it). A key names a step,
 * or a group (all its steps but its waits). No HTTP, no
 * database; the build's state machine (src/builds/jobs/state.ts) acts on them.
 */
import { MAX_KEY } from './limits';
import { quote, tooLong, type ProblemReporter } from './problems';
import { bool, findProperty, text } from './property-readers';
import type { Step, StepDependency } from './step-types';
import type { ConfigMap, ConfigValue } from './value-tree';

const MAX_DEPENDENCIES = 100;
const mappings = (reporter: ProblemReporter) => (reporter.dialect === 'yaml' ? 'mappings' : 'objects');

export interface Dependencies {
  depends_on?: StepDependency[];
  allow_dependency_failure?: boolean;
}

export function parseDependencies(reporter: ProblemReporter, stepMap: ConfigMap): Dependencies {
  const allowFailure = bool(reporter, findProperty(stepMap, ['allow_dependency_failure']), false);
  // In the REST API's visual steps a null is what a client sends for a field it does not set;
  // in YAML (and the agent's JSON uploads) the docs make `~`/`null` "depends on nothing".
  const written = stepMap.get('depends_on');
  const v = written?.kind === 'null' && reporter.dialect === 'visual' ? undefined : written;
  if (v === undefined) {
    if (allowFailure) reporter.notice('allow_dependency_failure', 'it applies to the steps named in "depends_on", and this step names none');
    return {};
  }
  const dependencies: StepDependency[] = [];
  const add = (at: string, key: ConfigValue | undefined, allow: boolean, where: ConfigValue) => {
    const k = key && text(key);
    if (k === undefined || k.trim() === '') return reporter.fail(at, "must name a step's key", key ?? where);
    if (k.length > MAX_KEY) return reporter.fail(at, tooLong(MAX_KEY), key);
    dependencies.push({ step: k, allow_failure: allow });
  };
  if (v.kind === 'list') {
    if (v.items.length > MAX_DEPENDENCIES) return (reporter.fail('depends_on', `must have at most ${MAX_DEPENDENCIES} steps`, v), {});
    v.items.forEach((item, i) => {
      const at = `depends_on[${i}]`;
      if (item.kind !== 'map') return add(at, item, false, item);
      const allow = bool(reporter, findProperty(item, ['allow_failure'], `${at}.`), false);
      add(`${at}.step`, findProperty(item, ['step'])?.[1], allow, item);
    });
  } else if (v.kind !== 'null') {
    if (text(v) === undefined) return (reporter.fail('depends_on', `must be a step's key, or a list of keys and ${mappings(reporter)} with "step"`, v), {});
    add('depends_on', v, false, v);
  }
  return { depends_on: dependencies, ...(allowFailure ? { allow_dependency_failure: true } : {}) };
}

/** The key a step keeps, which `depends_on` can name: a command step's, or any other's when written. */
export function keptKey(step: Step): string | null {
  return step.key ?? null;
}

/** A step of a configuration whose dependencies are checked once every step is read. */
export interface DependentStep {
  reporter: ProblemReporter;
  key: string | null;
  /** The key of the group it was written in. */
  group: string | null;
  dependencies: readonly StepDependency[];
  at: ConfigValue | undefined;
}

/**
 * What can be told from the configuration alone: a step that names itself or its group, and a
 * cycle among the configuration's keys (its steps would wait for ever). A key the configuration
 * does not have is the build's business: it fails the build when no job of the build has it when
 * the step is reached (an earlier upload's step may have it).
 */
export function checkDependencies(steps: readonly DependentStep[], groups: ReadonlyMap<string, readonly string[]>): void {
  const edges = new Map<string, string[]>();
  for (const [group, children] of groups) edges.set(group, [...children]);
  for (const s of steps) {
    for (const d of s.dependencies) {
      if (d.step === s.key) s.reporter.fail('depends_on', `names ${quote(d.step)}, the step's own key`, s.at);
      else if (d.step === s.group) s.reporter.fail('depends_on', `names ${quote(d.step)}, the group the step is in`, s.at);
    }
    // A step naming itself is reported above, not again as a cycle.
    if (s.key !== null) edges.set(s.key, [...(edges.get(s.key) ?? []), ...s.dependencies.map((d) => d.step).filter((k) => k !== s.key)]);
  }
  // Depth-first over the keys: a key met again while it is being visited closes a cycle.
  const state = new Map<string, 'visiting' | 'done'>();
  const visit = (key: string, path: string[]): string[] | null => {
    if (state.get(key) === 'done' || !edges.has(key)) return null;
    if (state.get(key) === 'visiting') return [...path.slice(path.indexOf(key)), key];
    state.set(key, 'visiting');
    for (const next of edges.get(key)!) {
      const cycle = visit(next, [...path, key]);
      if (cycle) return cycle;
    }
    state.set(key, 'done');
    return null;
  };
  for (const s of steps) {
    if (s.key === null) continue;
    const cycle = visit(s.key, []);
    if (cycle) return s.reporter.fail('depends_on', `makes a cycle: ${cycle.map(quote).join(' -> ')}`, s.at);
  }
}
