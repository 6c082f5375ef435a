/**
 * `secrets` of a command step and of a pipeline's top level: cluster secrets the agent reads
 * when the job starts (`GET /v3/jobs/{id}/secrets?key=`) and puts in the job's environment, as
 * the Buildkite secrets documentation describes. Each entry is normalised to the form the
 * agent reads from its job's `step.secrets`: `{key, environment_variable}`.
 *
 * Written as a list of keys (each into the variable of the same name), a mapping of variable
 * names to keys, or a list of `{key, environment_variable}` objects (the form the REST API shows;
 * without `environment_variable` the agent only redacts the value). No HTTP, no database.
 */
import { ENV_NAME, MAX_REF } from './limits';
import { mapping, quote, type ProblemReporter } from './problems';
import { findProperty, text, type FoundProperty } from './property-readers';
import type { ConfigValue } from './value-tree';

export interface StepSecret {
  key: string;
  environment_variable?: string;
}

const MAX_SECRETS = 100;
/** A cluster secret's key: a letter, then letters, digits and underscores. */
const SECRET_KEY = /^[A-Za-z][A-Za-z0-9_]*$/;
const MAX_SECRET_KEY = 255;
/** "Custom environment variable names for secrets cannot start with BUILDKITE or BK", but for these two. */
const ALLOWED_BUILDKITE_NAMES = new Set(['BUILDKITE_API_TOKEN', 'BUILDKITE_ANALYTICS_TOKEN']);

export function parseSecrets(reporter: ProblemReporter, found: FoundProperty | undefined): StepSecret[] | undefined {
  if (!found) return undefined;
  const [path, v] = found;
  const secrets: StepSecret[] = [];
  const add = (at: string, key: ConfigValue | undefined, variable: ConfigValue | undefined, where: ConfigValue) => {
    const k = key && text(key);
    if (k === undefined || !SECRET_KEY.test(k) || k.length > MAX_SECRET_KEY) {
      return reporter.fail(at, `must name a secret: a letter, then letters, digits and underscores (at most ${MAX_SECRET_KEY} characters)`, key ?? where);
    }
    // Without a variable (or with a null one) the agent only redacts the value.
    if (variable === undefined || variable.kind === 'null') return void secrets.push({ key: k });
    const name = text(variable);
    if (name === undefined || !ENV_NAME.test(name) || name.length > MAX_REF) {
      return reporter.fail(
        at,
        `has an invalid environment variable name${name ? ` ${quote(name)}` : ''}: use letters, digits and underscores, not starting with a digit`,
        variable,
      );
    }
    if (/^(BUILDKITE|BK)/.test(name) && !ALLOWED_BUILDKITE_NAMES.has(name)) {
      return reporter.fail(
        at,
        `cannot set ${quote(name)}: names starting with BUILDKITE or BK are the agent's (BUILDKITE_API_TOKEN and BUILDKITE_ANALYTICS_TOKEN excepted)`,
        variable,
      );
    }
    secrets.push({ key: k, environment_variable: name });
  };
  if (v.kind === 'map') {
    if (v.keys.length > MAX_SECRETS) return (reporter.fail(path, `must have at most ${MAX_SECRETS} secrets`, v), undefined);
    // Variable name -> secret key.
    for (const name of v.keys) {
      const key = v.get(name);
      add(`${path}.${name}`, key, { kind: 'str', value: name, line: key?.line ?? v.line }, v);
    }
  } else if (v.kind === 'list') {
    if (v.items.length > MAX_SECRETS) return (reporter.fail(path, `must have at most ${MAX_SECRETS} secrets`, v), undefined);
    v.items.forEach((item, i) => {
      const at = `${path}[${i}]`;
      if (item.kind === 'map') return add(at, findProperty(item, ['key'])?.[1], findProperty(item, ['environment_variable'])?.[1], item);
      if (text(item) === undefined) return reporter.fail(at, `must be a secret's key, or ${mapping(reporter)} with "key" and "environment_variable"`, item);
      add(at, item, item, item);
    });
  } else {
    return (reporter.fail(path, `must be a list of secret keys, or ${mapping(reporter)} of environment variable names to secret keys`, v), undefined);
  }
  return secrets;
}

/**
 * A step's secrets with the pipeline's: one per environment variable, the step's first, as the
 * agent's pipeline library merges them (a secret with no variable is kept once per key).
 */
export function mergeSecrets(step: readonly StepSecret[], pipeline: readonly StepSecret[]): StepSecret[] {
  const seen = new Set<string>();
  const out: StepSecret[] = [];
  for (const s of [...step, ...pipeline]) {
    const id = s.environment_variable === undefined ? `key:${s.key}` : `env:${s.environment_variable}`;
    if (seen.has(id)) continue;
    seen.add(id);
    out.push(s);
  }
  return out;
}
