/**
 * The filters of the Test Engine's test lists (a suite's tests, a build's tests), read from
 * their query strings and applied: `labels`, `owners` and `state` to tests; `branch` to the
 * runs whose executions are counted, the `tags` to each execution (its own tags, which hold its
 * upload's, over its run's, which only runs stored before that hold);
 * the `result` tag to executions (`!` and `*`)
 * or to a test's executions as a group (`~` contains, `^` only). Operators: a leading `!` (not
 * equal), a trailing `*` (starts with), and for `result` a leading `~` or `^`; at most one.
 */
import { UnprocessableError } from '../core/errors';

export type Operator = 'eq' | 'not' | 'prefix' | 'contains' | 'only';

export interface Operand {
  op: Operator;
  value: string;
}

/** One `key:value` of the `tags` filter (not `result`). */
export interface TagFilter {
  key: string;
  match: Operand;
}

/** What a test list is filtered by (every part optional). */
export interface TestFilters {
  labels?: Operand[];
  owners?: Operand[];
  state?: 'enabled' | 'muted' | 'skipped';
  branch?: Operand;
  /** Tags other than `result`, matched against each execution (its own tags over its run's). */
  tags?: TagFilter[];
  /** The `result` tag. */
  result?: Operand;
  minExecutions?: number;
}

export interface RawFilters {
  labels?: string;
  owners?: string;
  state?: 'enabled' | 'muted' | 'skipped';
  branch?: string;
  tags?: string;
  min_executions?: number;
  /** The result filter older clients send for a build's tests: `failed` as `result:~failed`, `^failed` as `result:^failed`. */
  result?: string;
}

/** What a run offers the filters: its branch, and its tags with the built-in ones. */
export interface FilterableRun {
  branch: string | null;
  commitSha: string | null;
  key: string;
  ci: string | null;
  tags: Record<string, string>;
}

function operand(raw: string, param: string, allowed: Operator[]): Operand {
  let value = raw.trim();
  const ops: Operator[] = [];
  if (value.startsWith('!')) ops.push('not');
  else if (value.startsWith('~')) ops.push('contains');
  else if (value.startsWith('^')) ops.push('only');
  if (ops.length) value = value.slice(1);
  if (allowed.includes('prefix') && value.endsWith('*')) {
    ops.push('prefix');
    value = value.slice(0, -1);
  }
  if (ops.length > 1) throw new UnprocessableError(`${param} must use at most one operator per value: ${raw}`);
  const op = ops[0] ?? 'eq';
  if (!allowed.includes(op)) {
    throw new UnprocessableError(
      op === 'contains' || op === 'only'
        ? `${param}: the ~ and ^ operators are only available for the result tag: ${raw}`
        : `${param} does not support that operator: ${raw}`,
    );
  }
  if (!value) throw new UnprocessableError(`${param} has an empty value: ${raw}`);
  return { op, value };
}

const list = (raw: string, param: string, allowed: Operator[]) =>
  raw
    .split(',')
    .filter((s) => s.trim() !== '')
    .map((s) => operand(s, param, allowed));

/** The query strings as filters; a malformed one is a 422 naming it. */
export function parseFilters(q: RawFilters): TestFilters {
  const f: TestFilters = {};
  if (q.labels !== undefined) f.labels = list(q.labels, 'labels', ['eq', 'not']);
  if (q.owners !== undefined) f.owners = list(q.owners, 'owners', ['eq', 'not']);
  if (q.state !== undefined) f.state = q.state;
  if (q.branch !== undefined) f.branch = operand(q.branch, 'branch', ['eq', 'not', 'prefix']);
  if (q.min_executions !== undefined) f.minExecutions = q.min_executions;
  if (q.tags !== undefined) {
    for (const pair of q.tags.split(',').filter((s) => s.trim() !== '')) {
      const at = pair.indexOf(':');
      const key = at > 0 ? pair.slice(0, at).trim() : '';
      if (!key) throw new UnprocessableError(`tags must be key:value pairs: ${pair}`);
      const raw = pair.slice(at + 1);
      if (key === 'result') {
        if (f.result) throw new UnprocessableError('tags may name the result tag at most once');
        f.result = operand(raw, 'tags', ['eq', 'not', 'prefix', 'contains', 'only']);
      } else {
        (f.tags ??= []).push({ key, match: operand(raw, 'tags', ['eq', 'not', 'prefix']) });
      }
    }
  }
  if (q.result !== undefined) {
    if (f.result) throw new UnprocessableError('result cannot be combined with a result tag in tags');
    const raw = q.result.trim();
    if (/^!|\*$/.test(raw)) throw new UnprocessableError(`result takes a result, with ^ (only) or ~ (contains, the default): ${q.result}`);
    f.result = operand(/^[~^]/.test(raw) ? raw : `~${raw}`, 'result', ['contains', 'only']);
  }
  return f;
}

/** Whether a value (null: absent) passes one operand: `!` passes an absent value. */
export function matches(value: string | null | undefined, m: Operand): boolean {
  switch (m.op) {
    case 'not':
      return value !== m.value;
    case 'prefix':
      return value != null && value.startsWith(m.value);
    default:
      return value === m.value;
  }
}

/** The tags a run's own fields give, which win over custom tags of the same names (`tagValue`). */
export const BUILT_IN_TAGS: ReadonlySet<string> = new Set(['scm.branch', 'scm.commit_sha', 'build.id']);

/**
 * A run's value for an execution tag: the built-in `scm.branch`, `scm.commit_sha` and `build.id`
 * (BUILT_IN_TAGS) where the run has them, else its tags (a custom tag of those names stands in
 * only where the run has no such field).
 */
export function tagValue(run: FilterableRun, key: string): string | null {
  // The run's own fields win over a custom tag of the same name (the failed executions' `tags`
  // leave such duplicates out): an upload tagged `scm.branch: x` is still on its own branch.
  const builtIn = key === 'scm.branch' ? run.branch : key === 'scm.commit_sha' ? run.commitSha : key === 'build.id' && run.ci === 'buildkite' ? run.key : null;
  if (builtIn !== null) return builtIn;
  return Object.prototype.hasOwnProperty.call(run.tags, key) ? (run.tags[key] ?? null) : null;
}

/** Whether a run's executions are counted: its branch and tags pass. */
export function runPasses(run: FilterableRun, f: TestFilters): boolean {
  if (f.branch && !matches(run.branch, f.branch)) return false;
  return (f.tags ?? []).every((t) => matches(tagValue(run, t.key), t.match));
}

/** Whether the filters name tags other than `result`: then an execution's own tags can decide. */
export function filtersTags(f: TestFilters): boolean {
  return (f.tags ?? []).length > 0;
}

/** Whether an execution is counted: its run's branch, and its own tags over its run's (importing_json.md: upload-level tags "may be overwritten by execution-level tags"). */
export function executionPasses(run: FilterableRun, tags: Record<string, string>, f: TestFilters): boolean {
  return runPasses(Object.keys(tags).length ? { ...run, tags: { ...run.tags, ...tags } } : run, f);
}

/** Whether a run may have counted executions: its branch passes (its executions' own tags may still pass the tags). */
export function branchPasses(run: FilterableRun, f: TestFilters): boolean {
  return !f.branch || matches(run.branch, f.branch);
}

/** Whether an execution's result is counted (`result` with no operator, `!` or `*`). */
export function resultPasses(result: string, f: TestFilters): boolean {
  return !f.result || f.result.op === 'contains' || f.result.op === 'only' || matches(result, f.result);
}

/** Whether a test passes the label, owner and state filters. Windsock keeps no owners. */
export function testPasses(labels: string[], state: 'enabled' | 'muted' | 'skipped', f: TestFilters): boolean {
  if (f.labels && !f.labels.every((l) => (l.op === 'not' ? !labels.includes(l.value) : labels.includes(l.value)))) return false;
  if (f.owners && !f.owners.every((o) => o.op === 'not')) return false;
  if (f.state && f.state !== state) return false;
  return true;
}
