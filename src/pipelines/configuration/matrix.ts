/**
 * Build matrices on command steps, as Buildkite documents them (pipelines/configure/workflows/
 * build-matrix): a step template plus either a list of values (one dimension, `{{matrix}}`) or
 * `setup` (named dimensions, `{{matrix.<name>}}`) with optional `adjustments` that skip or
 * soft-fail a combination, or add one. The parser here keeps the matrix on the stored step;
 * `combinations` and `interpolate` expand it into one job per combination when a build is
 * planned (src/builds/jobs/plan.ts). No HTTP, no database.
 */
import { define, mapping, quote, type ProblemReporter } from './problems';
import type { JsonValue } from './plugins';
import { findProperty, skip, softFail, text, type FoundProperty } from './property-readers';
import type { ScriptStep } from './step-types';
import type { ConfigList, ConfigMap, ConfigValue } from './value-tree';

/** The documented limits ("Matrix limits"): dimensions, elements per dimension, adjustments, jobs. */
export const MATRIX_LIMITS = { dimensions: 6, elements: 25, adjustments: 12, jobs: 50 } as const;
/** "128 bytes maximum size for each individual matrix element (both keys and values)". */
const MAX_ELEMENT_BYTES = 128;
/** Dimension names as Buildkite's pipeline schema allows them. */
const DIMENSION = /^[A-Za-z0-9_]+$/;
/** `{{matrix}}` (the single, unnamed dimension) and `{{matrix.<name>}}`. */
const TOKEN = /\{\{\s*matrix(?:\.([A-Za-z0-9_]+))?\s*\}\}/g;

/** The name of the one dimension of `matrix: [a, b]` or `setup: [a, b]`, the one `{{matrix}}` reads. */
export const UNNAMED = '';

export type SoftFail = ScriptStep['soft_fail'];
export type MatrixAdjustment = { with: Record<string, string>; skip?: true | string; soft_fail?: SoftFail };
/** A step's matrix as stored: dimensions in the order written, each with its values as text. */
export type Matrix = { setup: Record<string, string[]>; adjustments: MatrixAdjustment[] };
/** One job's values, and its own `soft_fail` when an adjustment gives one. */
export type Combination = { values: Record<string, string>; soft_fail?: SoftFail };

const key = (values: Record<string, string>, dims: string[]) => JSON.stringify(dims.map((d) => values[d]));

/** Reads `matrix`; undefined when absent or wrong (the problem is reported through `reporter`). */
export function parseMatrix(reporter: ProblemReporter, found: FoundProperty | undefined): Matrix | undefined {
  if (!found) return undefined;
  const [path, v] = found;
  let setupFound: FoundProperty;
  let adjustments: FoundProperty | undefined;
  if (v.kind === 'list') {
    setupFound = [path, v];
  } else if (v.kind === 'map') {
    for (const k of v.keys) {
      if (k !== 'setup' && k !== 'adjustments') reporter.fail(`${path}.${k}`, 'is not a matrix attribute: use "setup" and "adjustments"', v.get(k));
    }
    const setup = findProperty(v, ['setup'], `${path}.`);
    if (!setup) return (reporter.fail(`${path}.setup`, "can't be blank", v), undefined);
    setupFound = setup;
    adjustments = findProperty(v, ['adjustments'], `${path}.`);
  } else {
    return (reporter.fail(path, `must be a list of values, or ${mapping(reporter)} with "setup" and optional "adjustments"`, v), undefined);
  }

  const setup = dimensions(reporter, setupFound);
  if (!setup) return undefined;
  const dims = Object.keys(setup);
  const matrix: Matrix = { setup, adjustments: adjustments ? adjustmentList(reporter, adjustments, dims) : [] };
  const jobs = jobCount(matrix);
  if (jobs === 0) reporter.fail(path, 'skips every combination: a matrix must create at least one job', v);
  if (jobs > MATRIX_LIMITS.jobs) reporter.fail(path, `would create ${jobs} jobs: a matrix creates at most ${MATRIX_LIMITS.jobs}`, v);
  return matrix;
}

function dimensions(reporter: ProblemReporter, [path, v]: FoundProperty): Record<string, string[]> | undefined {
  const setup: Record<string, string[]> = {};
  if (v.kind === 'list') {
    const values = elements(reporter, path, v);
    if (!values) return undefined;
    setup[UNNAMED] = values;
    return setup;
  }
  if (v.kind !== 'map') return (reporter.fail(path, `must be a list of values, or ${mapping(reporter)} of dimension names to lists of values`, v), undefined);
  if (v.keys.length === 0) return (reporter.fail(path, "can't be blank", v), undefined);
  if (v.keys.length > MATRIX_LIMITS.dimensions) {
    return (reporter.fail(path, `has ${v.keys.length} dimensions: a matrix has at most ${MATRIX_LIMITS.dimensions}`, v), undefined);
  }
  let ok = true;
  for (const dim of v.keys) {
    const list = v.get(dim) ?? { kind: 'null', line: v.line };
    if (!DIMENSION.test(dim) || dim.length > MAX_ELEMENT_BYTES) {
      reporter.fail(path, `has an invalid dimension name ${quote(dim)}: use letters, digits and underscores`, list);
      ok = false;
      continue;
    }
    const values =
      list.kind === 'list' ? elements(reporter, `${path}.${dim}`, list) : (reporter.fail(`${path}.${dim}`, 'must be a list of values', list), undefined);
    if (values) define(setup, dim, values);
    else ok = false;
  }
  return ok ? setup : undefined;
}

function elements(reporter: ProblemReporter, path: string, v: ConfigList): string[] | undefined {
  if (v.items.length === 0) return (reporter.fail(path, "can't be blank", v), undefined);
  if (v.items.length > MATRIX_LIMITS.elements) {
    return (reporter.fail(path, `has ${v.items.length} elements: a dimension has at most ${MATRIX_LIMITS.elements}`, v), undefined);
  }
  const values: string[] = [];
  for (const [i, item] of v.items.entries()) {
    const s = text(item);
    if (s === undefined) return (reporter.fail(`${path}[${i}]`, 'must be a string, number or boolean', item), undefined);
    if (Buffer.byteLength(s) > MAX_ELEMENT_BYTES)
      return (reporter.fail(`${path}[${i}]`, `is too long (maximum is ${MAX_ELEMENT_BYTES} bytes)`, item), undefined);
    if (values.includes(s)) return (reporter.fail(`${path}[${i}]`, `repeats ${quote(s)}`, item), undefined);
    values.push(s);
  }
  return values;
}

function adjustmentList(reporter: ProblemReporter, [path, v]: FoundProperty, dims: string[]): MatrixAdjustment[] {
  if (v.kind !== 'list') return (reporter.fail(path, `must be a list of {with, skip, soft_fail}`, v), []);
  if (v.items.length > MATRIX_LIMITS.adjustments) {
    return (reporter.fail(path, `has ${v.items.length} adjustments: a matrix has at most ${MATRIX_LIMITS.adjustments}`, v), []);
  }
  const out: MatrixAdjustment[] = [];
  const seen = new Set<string>();
  v.items.forEach((item, i) => {
    const at = `${path}[${i}]`;
    if (item.kind !== 'map') return reporter.fail(at, `must be ${mapping(reporter)} with "with" and optional "skip" or "soft_fail"`, item);
    for (const k of item.keys) {
      if (k !== 'with' && k !== 'skip' && k !== 'soft_fail')
        reporter.fail(`${at}.${k}`, 'is not an adjustment attribute: use "with", "skip" and "soft_fail"', item.get(k));
    }
    const values = combination(reporter, `${at}.with`, item.get('with'), dims, item);
    const skipped = skip(reporter, findProperty(item, ['skip'], `${at}.`));
    const soft = findProperty(item, ['soft_fail'], `${at}.`);
    const softFails = soft ? softFail(reporter, soft) : undefined;
    if (!values) return;
    const id = key(values, dims);
    if (seen.has(id)) return reporter.fail(`${at}.with`, 'repeats the combination of an earlier adjustment', item.get('with'));
    seen.add(id);
    const adjustment: MatrixAdjustment = { with: values };
    if (skipped !== undefined) adjustment.skip = skipped;
    if (softFails !== undefined) adjustment.soft_fail = softFails;
    out.push(adjustment);
  });
  return out;
}

/** `with`: a mapping of every dimension to a value; for the unnamed dimension, a value or a list of one. */
function combination(reporter: ProblemReporter, path: string, v: ConfigValue | undefined, dims: string[], at: ConfigMap): Record<string, string> | undefined {
  if (v === undefined || v.kind === 'null') return (reporter.fail(path, "can't be blank", at), undefined);
  const values: Record<string, string> = {};
  if (dims.length === 1 && dims[0] === UNNAMED) {
    const item = v.kind === 'list' && v.items.length === 1 ? v.items[0]! : v;
    const s = text(item);
    if (s === undefined || Buffer.byteLength(s) > MAX_ELEMENT_BYTES)
      return (reporter.fail(path, 'must be one value of the matrix (or a list of one)', v), undefined);
    values[UNNAMED] = s;
    return values;
  }
  if (v.kind !== 'map') return (reporter.fail(path, `must be ${mapping(reporter)} of every dimension (${dims.join(', ')}) to a value`, v), undefined);
  let ok = true;
  for (const k of v.keys) {
    if (!dims.includes(k)) {
      reporter.fail(path, `names ${quote(k)}, which is not a dimension of the matrix (${dims.join(', ')})`, v.get(k));
      ok = false;
    }
  }
  for (const dim of dims) {
    const item = v.get(dim);
    const s = item === undefined ? undefined : text(item);
    if (item === undefined) {
      reporter.fail(path, `must give a value for every dimension: ${quote(dim)} is missing`, v);
      ok = false;
    } else if (s === undefined || Buffer.byteLength(s) > MAX_ELEMENT_BYTES) {
      reporter.fail(`${path}.${dim}`, 'must be a string, number or boolean', item);
      ok = false;
    } else {
      define(values, dim, s);
    }
  }
  return ok ? values : undefined;
}

function inSetup(m: Matrix, values: Record<string, string>): boolean {
  return Object.entries(m.setup).every(([dim, list]) => list.includes(values[dim] ?? ''));
}

/** How many jobs the matrix makes, without listing them (a 20^6 setup is refused, not expanded). */
export function jobCount(m: Matrix): number {
  let n = Object.values(m.setup).reduce((product, list) => product * list.length, 1);
  for (const a of m.adjustments) {
    const existing = inSetup(m, a.with);
    if (existing && a.skip !== undefined) n--;
    else if (!existing && a.skip === undefined) n++;
  }
  return n;
}

/** Every combination in order (the first dimension varies slowest), adjusted, then the added ones. */
export function combinations(m: Matrix): Combination[] {
  const dims = Object.keys(m.setup);
  let rows: Record<string, string>[] = [{}];
  for (const dim of dims) {
    const next: Record<string, string>[] = [];
    for (const row of rows)
      for (const value of m.setup[dim]!) next.push(Object.defineProperty({ ...row }, dim, { value, enumerable: true, writable: true, configurable: true }));
    rows = next;
  }
  const adjustments = new Map(m.adjustments.map((a) => [key(a.with, dims), a]));
  const out: Combination[] = [];
  for (const values of rows) {
    const a = adjustments.get(key(values, dims));
    if (a?.skip !== undefined) continue;
    out.push(a?.soft_fail !== undefined ? { values, soft_fail: a.soft_fail } : { values });
  }
  for (const a of m.adjustments) {
    if (a.skip !== undefined || inSetup(m, a.with)) continue;
    out.push(a.soft_fail !== undefined ? { values: a.with, soft_fail: a.soft_fail } : { values: a.with });
  }
  return out;
}

/** Replaces `{{matrix}}` and `{{matrix.<name>}}` with the combination's values. */
export function interpolate(s: string, values: Record<string, string>): string {
  return s.replace(TOKEN, (token, dim: string | undefined) => (Object.hasOwn(values, dim ?? UNNAMED) ? values[dim ?? UNNAMED]! : token));
}

/** `interpolate` through a JSON value (plugin settings), keys and strings alike. */
export function interpolateJson(value: JsonValue, values: Record<string, string>): JsonValue {
  if (typeof value === 'string') return interpolate(value, values);
  if (Array.isArray(value)) return value.map((v) => interpolateJson(v, values));
  if (value && typeof value === 'object') return interpolateJsonObject(value, values);
  return value;
}

/** `interpolateJson` of a JSON object (a plugin: its name and its settings). */
export function interpolateJsonObject(value: { [key: string]: JsonValue }, values: Record<string, string>): { [key: string]: JsonValue } {
  const out: { [key: string]: JsonValue } = {};
  for (const [k, v] of Object.entries(value)) define(out, interpolate(k, values), interpolateJson(v, values));
  return out;
}

/**
 * The matrix tokens in `s` that name no dimension of `m` (or any token when the step has no
 * matrix is left alone: without a matrix `{{matrix}}` is plain text, as Buildkite leaves it).
 */
export function unknownTokens(s: string, m: Matrix): string[] {
  const bad: string[] = [];
  for (const match of s.matchAll(TOKEN)) if (!Object.hasOwn(m.setup, match[1] ?? UNNAMED)) bad.push(match[0]);
  return bad;
}
