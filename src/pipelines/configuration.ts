/**
 * Pipeline steps from either source the pipelines API accepts: a YAML `configuration` (the
 * document `buildkite-agent pipeline upload` takes) or the visual `steps` list. Both become the
 * same normalised `Step[]`, so what is stored is exactly what the API returns, whichever form
 * was sent. No HTTP and no database here: every problem is reported as one ValidationError that
 * lists each fault, so a client can fix them all in one round trip.
 *
 * Both inputs are first read into a small neutral value tree (`V`) that keeps YAML line numbers,
 * so one set of step rules serves both dialects and only the wording of errors differs.
 */

import {
  isAlias,
  isMap,
  isNode,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  parseDocument,
  type Document,
  type Node as YamlNode,
  type YAMLMap,
} from 'yaml';
import { ValidationError, type FieldError } from '../http/errors';
import { parseMatrix, unknownTokens, type Matrix } from './matrix';
import { parsePlugins, type Plugin } from './plugins';
import { STEP_ATTRIBUTES, TOP_LEVEL_ATTRIBUTES, verdict, type StepType } from './step-attributes';

export type ExitStatus = number | '*';

export type ScriptStep = {
  type: 'script';
  name: string | null;
  command: string | null;
  artifact_paths: string | null;
  branch_configuration: string | null;
  env: Record<string, string>;
  timeout_in_minutes: number | null;
  agent_query_rules: string[];
  concurrency: number | null;
  parallelism: number | null;
  key: string | null;
  soft_fail: boolean | { exit_status: ExitStatus }[];
  retry: StepRetry | null;
  /** Dispatch priority of the step's jobs (the step's own, else the pipeline's top-level one). */
  priority?: number;
  /** One job per combination (src/pipelines/matrix.ts). */
  matrix?: Matrix;
  plugins?: Plugin[];
  /** On a job's copy of a matrix step only: the combination that job runs. */
  matrix_values?: Record<string, string>;
};
/** An automatic retry rule: which failures (exit status, and signal reason when given) and how often. */
export type AutomaticRetry = { exit_status: ExitStatus | number[]; limit: number; signal_reason?: string };
/** `retry.manual`: whether the retry button is allowed (with the reason when it is not), also for passed jobs. */
export type ManualRetry = { allowed: boolean; reason: string | null; permit_on_passed: boolean };
export type StepRetry = { automatic: AutomaticRetry[]; manual?: ManualRetry };
export type WaiterStep = { type: 'waiter'; continue_on_failure: boolean };
export type ManualField = {
  key: string;
  text?: string;
  select?: string;
  hint?: string;
  required?: boolean;
  default?: string | string[];
  options?: { label: string; value: string }[];
  multiple?: boolean;
};
export type ManualStep = {
  type: 'manual';
  label: string;
  prompt: string | null;
  fields: ManualField[];
  branch_configuration: string | null;
};
export type TriggerStep = {
  type: 'trigger';
  name: string | null;
  trigger_project_slug: string;
  trigger_commit: string;
  /** "" means "the target pipeline's default branch", the real API's default. */
  trigger_branch: string;
  trigger_message: string | null;
  trigger_env: Record<string, string>;
  /** Meta-data of the triggered build; absent in steps stored before it was read. */
  trigger_meta_data?: Record<string, string>;
  trigger_async: boolean;
  branch_configuration: string | null;
};
export type Step = ScriptStep | WaiterStep | ManualStep | TriggerStep;

// The caps mirror the maxima of the OpenAPI contract, so anything normalised here is also a
// valid response body.
const MAX_CONFIGURATION_BYTES = 256 * 1024;
const MAX_STEPS = 500;
const MAX_ERRORS = 20;
/**
 * Alias expansions allowed per document. Enough for 500 steps that each use a few shared
 * anchors (`<<: *defaults`, `agents: *agents`); a "billion laughs" document hits it within
 * milliseconds. Counted here rather than by the yaml library's `maxAliasCount`: that check runs
 * in `toJS`, which is itself superlinear in the number of aliases (a 250 KiB document of plain
 * aliases takes seconds there; one alias repeated inside its own anchor, minutes).
 */
const MAX_ALIAS_EXPANSIONS = 2000;
/** Collections nested deeper than this are never a valid part of a step, so they are not read. */
const MAX_DEPTH = 16;
/** Values read per call: bounds memory when aliases fan one anchor out many times. */
const MAX_VALUES = 200_000;
const MAX_LIST = 100;
const MAX_ENV = 200;
const MAX_NAME = 1000;
const MAX_TEXT = 65536;
const MAX_BRANCHES = 4096;
const MAX_PROMPT = 4096;
const MAX_KEY = 100;
const MAX_SLUG = 100;
const MAX_REF = 255;
const MAX_SIGNAL = 100;
const MAX_TIMEOUT = 100_000;
const MAX_CONCURRENCY = 100_000;
/** The jobs table's integer column holds it; Buildkite documents no bounds. */
const MAX_PRIORITY = 2_147_483_647;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const FIELD_KEY = /^[A-Za-z0-9_\-/]+$/;
// Loose on purpose: `${VAR}` interpolation is legal in a slug until the agent uploads the
// pipeline, so only what can never be part of one (blanks, slashes) is refused.
const PIPELINE_SLUG = /^[^\s/]+$/;
const STEP_KINDS = 'command, commands, wait, block, input, trigger, group, plugins';

// ---------------------------------------------------------------------------------------------
// The neutral value tree. Maps are read lazily so that parts no rule looks at (plugin settings,
// top-level anchor holders) cost nothing.

type Line = number | undefined;
export type VMap = { t: 'map'; keys: string[]; get(key: string): V | undefined; line: Line };
type VList = { t: 'list'; items: V[]; line: Line };
export type V =
  | { t: 'null'; line: Line }
  | { t: 'str'; v: string; line: Line }
  // `text` is the number or boolean as written, so `commit: 0123456` keeps its leading zero.
  | { t: 'num'; v: number; text: string; line: Line }
  | { t: 'bool'; v: boolean; text: string; line: Line }
  | VList
  | VMap
  | { t: 'other'; line: Line };

class TooLarge extends Error {}

class Budget {
  private left = MAX_VALUES;
  spend(): void {
    if (--this.left < 0) throw new TooLarge();
  }
}

function lazyMap(keys: string[], line: Line, read: (key: string) => V | undefined): VMap {
  const memo = new Map<string, V>();
  return {
    t: 'map',
    keys,
    line,
    get(key) {
      let v = memo.get(key);
      if (v === undefined) {
        v = read(key);
        if (v !== undefined) memo.set(key, v);
      }
      return v;
    },
  };
}

function fromJson(x: unknown, depth: number, budget: Budget): V {
  budget.spend();
  const line = undefined;
  if (x === null) return { t: 'null', line };
  if (typeof x === 'string') return { t: 'str', v: x, line };
  if (typeof x === 'number') return { t: 'num', v: x, text: String(x), line };
  if (typeof x === 'boolean') return { t: 'bool', v: x, text: String(x), line };
  if (typeof x !== 'object' || depth >= MAX_DEPTH) return { t: 'other', line };
  if (Array.isArray(x)) {
    const items: V[] = [];
    for (let i = 0; i < x.length; i++) items.push(fromJson(x[i], depth + 1, budget));
    return { t: 'list', items, line };
  }
  const obj = x as Record<string, unknown>;
  return lazyMap(Object.keys(obj), line, (key) =>
    Object.hasOwn(obj, key) ? fromJson(obj[key], depth + 1, budget) : undefined,
  );
}

class YamlReader {
  /** Alias node -> the node it names, resolved once up front. */
  private readonly targets = new Map<unknown, YamlNode>();
  private expansions = 0;

  constructor(
    doc: Document,
    private readonly lines: LineCounter,
    private readonly budget: Budget,
  ) {
    this.vet(doc.contents);
  }

  /**
   * One linear pass over the document for what the library only checks in `toJS` (or, for
   * duplicate keys, checks quadratically): aliases without an anchor, aliases inside the
   * node they name, and duplicate keys.
   */
  private vet(root: unknown): void {
    const anchors = new Map<string, YamlNode>();
    const stack: unknown[] = [root];
    while (stack.length > 0) {
      const node = stack.pop();
      if (isPair(node)) {
        stack.push(node.value, node.key);
        continue;
      }
      if (!isNode(node)) continue;
      if (isAlias(node)) {
        const target = anchors.get(node.source);
        if (target === undefined) throw this.invalid(node, `alias *${node.source} has no anchor before it`);
        const [start, end] = target.range ?? [0, 0];
        const at = node.range?.[0] ?? 0;
        if (at >= start && at < end) throw this.invalid(node, `alias *${node.source} is inside the anchor it names`);
        this.targets.set(node, target);
        continue;
      }
      // An anchor names the closest node before the alias, so they are recorded in document
      // order (the stack yields nodes in the order they start).
      if (node.anchor) anchors.set(node.anchor, node);
      if (isMap(node)) {
        const seen = new Set<string>();
        for (const pair of node.items) {
          if (isMergeKey(pair.key) || !isScalar(pair.key)) continue;
          const key = keyText(pair.key);
          if (seen.has(key)) throw this.invalid(pair.key, 'Map keys must be unique');
          seen.add(key);
        }
      }
      if (isMap(node) || isSeq(node)) for (let i = node.items.length - 1; i >= 0; i--) stack.push(node.items[i]);
    }
  }

  private invalid(node: YamlNode, message: string): ValidationError {
    const { line, col } = this.lines.linePos(node.range?.[0] ?? 0);
    return yamlError(`is not a valid YAML document: line ${line}, column ${col}: ${message}`);
  }

  line(node: unknown): Line {
    const range = (node as { range?: [number, number, number] } | null)?.range;
    return range ? this.lines.linePos(range[0]).line : undefined;
  }

  /** `line` is where the value is used (the key of its pair, or the alias), not where an
   * anchored value was first written: errors should point at what the user can change. */
  value(node: unknown, line: Line, depth: number): V {
    this.budget.spend();
    let target = node;
    if (isAlias(node)) {
      if (++this.expansions > MAX_ALIAS_EXPANSIONS) {
        throw this.invalid(node, `aliases are expanded more than ${MAX_ALIAS_EXPANSIONS} times`);
      }
      target = this.targets.get(node);
    }
    if (target === null || target === undefined) return { t: 'null', line };
    if (isScalar(target)) {
      const v = target.value;
      const written = target.type === 'PLAIN' && typeof target.source === 'string' ? target.source : String(v);
      if (v === null || v === undefined) return { t: 'null', line };
      if (typeof v === 'string') return { t: 'str', v, line };
      if (typeof v === 'number') return { t: 'num', v, text: written, line };
      if (typeof v === 'boolean') return { t: 'bool', v, text: written, line };
      return { t: 'other', line };
    }
    if (depth >= MAX_DEPTH) return { t: 'other', line };
    if (isSeq(target)) {
      return {
        t: 'list',
        items: target.items.map((item) => this.value(item, this.line(item) ?? line, depth + 1)),
        line,
      };
    }
    if (isMap(target)) return this.map(target, line, depth);
    return { t: 'other', line };
  }

  private map(node: YAMLMap, line: Line, depth: number): VMap {
    const readers = new Map<string, () => V | undefined>();
    const explicit = new Set<string>();
    for (const pair of node.items) if (!isMergeKey(pair.key)) explicit.add(keyText(pair.key));
    // `<<` merges give way to the map's own keys, and earlier sources to later ones (YAML 1.1).
    for (const pair of node.items) {
      const keyLine = this.line(pair.key) ?? line;
      if (isMergeKey(pair.key)) {
        const from = this.value(pair.value, keyLine, depth + 1);
        for (const source of from.t === 'list' ? from.items : [from]) {
          if (source.t !== 'map') {
            throw this.invalid(pair.key as YamlNode, '"<<" must merge a mapping or a list of mappings');
          }
          for (const key of source.keys) {
            if (!explicit.has(key) && !readers.has(key)) readers.set(key, () => source.get(key));
          }
        }
      } else {
        const key = keyText(pair.key);
        if (!readers.has(key)) readers.set(key, () => this.value(pair.value, keyLine, depth + 1));
      }
    }
    return lazyMap([...readers.keys()], line, (key) => readers.get(key)?.());
  }
}

function isMergeKey(key: unknown): boolean {
  return isScalar(key) && typeof key.value === 'symbol';
}

function keyText(key: unknown): string {
  if (key === null || key === undefined) return '';
  if (!isScalar(key)) return '[complex key]';
  const v = key.value;
  if (typeof v === 'string') return v;
  if (v === null || v === undefined) return '';
  if (key.type === 'PLAIN' && typeof key.source === 'string') return key.source;
  return String(v);
}

// ---------------------------------------------------------------------------------------------
// Error reporting. The rules below say what is wrong with which property; a Ctx turns that
// into a FieldError in the dialect of the input.

class Problems {
  private readonly list: { error: FieldError; line: number }[] = [];
  /** Attributes accepted but not acted on, one line each (see step-attributes.ts). */
  readonly notices: string[] = [];
  notice(message: string): void {
    if (this.notices.length < MAX_ERRORS && !this.notices.includes(message)) this.notices.push(message);
  }
  /** `line` orders YAML errors as they appear in the document, not as the rules ran. */
  add(field: string, code: string, line = 0): void {
    if (this.list.length < MAX_ERRORS) this.list.push({ error: { field, code }, line });
  }
  get full(): boolean {
    return this.list.length >= MAX_ERRORS;
  }
  throwIfAny(): void {
    if (this.list.length === 0) return;
    throw new ValidationError(this.list.sort((a, b) => a.line - b.line).map((p) => p.error));
  }
}

type Dialect = 'yaml' | 'visual';

export interface Ctx {
  readonly dialect: Dialect;
  /** A property is at fault; `at` locates it in YAML (the step itself when omitted). */
  fail(path: string, message: string, at?: V): void;
  /** The step as a whole is at fault. */
  failStep(message: string): void;
  /** A property is accepted but not acted on. */
  notice(path: string, message: string): void;
}

class YamlCtx implements Ctx {
  readonly dialect = 'yaml';
  constructor(
    private readonly problems: Problems,
    /** "2", or "3.1" for the first step of the group at step 3; null for top-level keys. */
    private readonly label: string | null,
    private readonly line: Line,
  ) {}
  fail(path: string, message: string, at?: V): void {
    const line = at?.line ?? this.line ?? 1;
    const where = this.label === null ? `line ${line}` : `step ${this.label} (line ${line})`;
    this.problems.add('configuration', `${where}: "${path}" ${message}`, line);
  }
  failStep(message: string): void {
    const line = this.line ?? 1;
    this.problems.add('configuration', `step ${this.label ?? '?'} (line ${line}) ${message}`, line);
  }
  notice(path: string, message: string): void {
    const where = this.label === null ? 'top level' : `step ${this.label}`;
    this.problems.notice(`${where}: "${path}" is accepted but not acted on: ${message}`);
  }
}

class VisualCtx implements Ctx {
  readonly dialect = 'visual';
  constructor(
    private readonly problems: Problems,
    private readonly index: number,
  ) {}
  fail(path: string, message: string): void {
    this.problems.add(`steps[${this.index}].${path}`, message);
  }
  failStep(message: string): void {
    this.problems.add(`steps[${this.index}]`, message);
  }
  notice(path: string, message: string): void {
    this.problems.notice(`steps[${this.index}].${path} is accepted but not acted on: ${message}`);
  }
}

const tooLong = (max: number) => `is too long (maximum is ${max} characters)`;
const tooMany = (max: number) => `must have at most ${max} items`;
export const mapping = (c: Ctx) => (c.dialect === 'yaml' ? 'a mapping' : 'an object');

/** Echoes a user-supplied name in an error without letting it flood or break the message. */
export function quote(s: string): string {
  return JSON.stringify(s.length > 40 ? `${s.slice(0, 40)}…` : s);
}

/** Sets `key` as an own property even when it is `__proto__` (a valid variable name). */
export function define(target: Record<string, string>, key: string, value: string): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
}

// ---------------------------------------------------------------------------------------------
// Readers for property values. Each reports what is wrong and returns a fallback, so that one
// pass finds every problem.

export type Found = [path: string, value: V];

/** The first of `names` that is set to something other than null; null means "not given". */
export function pick(map: VMap | undefined, names: readonly string[], prefix = ''): Found | undefined {
  if (!map) return undefined;
  for (const name of names) {
    const v = map.get(name);
    if (v !== undefined && v.t !== 'null') return [prefix + name, v];
  }
  return undefined;
}

/** YAML types plain scalars, but a label of `1.0` or a commit of `0123456` is meant as text. */
export function text(v: V): string | undefined {
  if (v.t === 'str') return v.v;
  if (v.t === 'num' || v.t === 'bool') return v.text;
  return undefined;
}

/** Optional text; blank counts as not given, so the stored form has one way to say "none". */
export function optText(c: Ctx, found: Found | undefined, max: number): string | null {
  if (!found) return null;
  const [path, v] = found;
  const s = text(v);
  if (s === undefined) return c.fail(path, 'must be a string', v), null;
  if (s.length > max) return c.fail(path, tooLong(max), v), null;
  return s.trim() === '' ? null : s;
}

/** A string, or a list of strings joined with `sep`; blank counts as not given. */
function joined(c: Ctx, found: Found | undefined, sep: string, max: number): string | null {
  if (!found) return null;
  const [path, v] = found;
  let s: string | undefined;
  if (v.t === 'list') {
    const parts = v.items.map(text);
    if (parts.every((p): p is string => p !== undefined)) s = parts.join(sep);
  } else {
    s = text(v);
  }
  if (s === undefined) return c.fail(path, 'must be a string or a list of strings', v), null;
  if (s.length > max) return c.fail(path, tooLong(max), v), null;
  return s.trim() === '' ? null : s;
}

export function bool(c: Ctx, found: Found | undefined, fallback: boolean): boolean {
  if (!found) return fallback;
  const [path, v] = found;
  if (v.t === 'bool') return v.v;
  c.fail(path, 'must be true or false', v);
  return fallback;
}

function wholeNumber(c: Ctx, found: Found | undefined, min: number, max: number, message: string): number | null {
  if (!found) return null;
  const [path, v] = found;
  if (v.t === 'num' && Number.isInteger(v.v) && v.v >= min && v.v <= max) return v.v;
  c.fail(path, message, v);
  return null;
}

function positive(c: Ctx, found: Found | undefined, max: number): number | null {
  if (!found) return null;
  const [path, v] = found;
  if (v.t !== 'num' || !Number.isInteger(v.v) || v.v < 1) {
    return c.fail(path, 'must be a positive whole number', v), null;
  }
  if (v.v > max) return c.fail(path, `must be at most ${max}`, v), null;
  return v.v;
}

function env(c: Ctx, found: Found | undefined, what: 'variables' | 'keys' = 'variables'): Record<string, string> {
  const out: Record<string, string> = {};
  if (!found) return out;
  const [path, v] = found;
  if (v.t !== 'map') return c.fail(path, `must be ${mapping(c)} of names to values`, v), out;
  if (v.keys.length > MAX_ENV) return c.fail(path, `must have at most ${MAX_ENV} ${what}`, v), out;
  for (const name of v.keys) {
    const value = v.get(name) ?? { t: 'null', line: v.line };
    // Meta-data keys are any non-blank text; variable names are shell names.
    const valid = what === 'keys' ? name.trim() !== '' : ENV_NAME.test(name);
    if (!valid || name.length > MAX_REF) {
      const rule = what === 'keys' ? 'keys must not be blank' : 'use letters, digits and underscores, not starting with a digit';
      c.fail(path, `has an invalid name ${quote(name)}: ${rule}`, value);
      continue;
    }
    const s = text(value);
    if (s === undefined) c.fail(`${path}.${name}`, 'must be a string, number or boolean', value);
    else if (s.length > MAX_TEXT) c.fail(`${path}.${name}`, tooLong(MAX_TEXT), value);
    else define(out, name, s);
  }
  return out;
}

/** Agent query rules; YAML also takes the `{queue: deploy}` mapping form. */
function agents(c: Ctx, found: Found | undefined): string[] {
  if (!found) return [];
  const [path, v] = found;
  const message =
    c.dialect === 'yaml' ? 'must be a mapping or a list of key=value strings' : 'must be a list of key=value strings';
  const rules: string[] = [];
  if (v.t === 'map' && c.dialect === 'yaml') {
    if (v.keys.length > MAX_LIST) return c.fail(path, tooMany(MAX_LIST), v), [];
    for (const key of v.keys) {
      const value = v.get(key) ?? { t: 'null', line: v.line };
      const s = text(value);
      if (s === undefined || key.trim() === '' || key.includes('=')) c.fail(path, message, value);
      else if (key.length + s.length >= MAX_NAME) c.fail(path, `has a rule that ${tooLong(MAX_NAME)}`, value);
      else rules.push(`${key}=${s}`);
    }
  } else if (v.t === 'list') {
    if (v.items.length > MAX_LIST) return c.fail(path, tooMany(MAX_LIST), v), [];
    for (const item of v.items) {
      const s = text(item);
      if (s === undefined || !/^[^=\s][^=]*=/.test(s)) c.fail(path, message, item);
      else if (s.length > MAX_NAME) c.fail(path, `has a rule that ${tooLong(MAX_NAME)}`, item);
      else rules.push(s);
    }
  } else {
    c.fail(path, message, v);
    return [];
  }
  return rules;
}

function exitStatus(c: Ctx, path: string, v: V | undefined, fallback?: ExitStatus): ExitStatus | undefined {
  if ((v === undefined || v.t === 'null') && fallback !== undefined) return fallback;
  if (v?.t === 'str' && v.v === '*') return '*';
  // Quoted numbers are common in YAML written by hand and mean the same thing.
  const n = v?.t === 'num' ? v.v : v?.t === 'str' && /^-?\d{1,10}$/.test(v.v) ? Number(v.v) : NaN;
  if (Number.isInteger(n) && Math.abs(n) <= 2 ** 31 - 1) return n;
  c.fail(path, 'must be a whole number or "*"', v);
  return undefined;
}

export function softFail(c: Ctx, found: Found | undefined): ScriptStep['soft_fail'] {
  if (!found) return false;
  const [path, v] = found;
  if (v.t === 'bool') return v.v;
  if (v.t !== 'list') return c.fail(path, 'must be true, false or a list of exit_status rules', v), false;
  if (v.items.length > MAX_LIST) return c.fail(path, tooMany(MAX_LIST), v), false;
  const rules: { exit_status: ExitStatus }[] = [];
  v.items.forEach((item, i) => {
    if (item.t !== 'map') return c.fail(`${path}[${i}]`, `must be ${mapping(c)} with "exit_status"`, item);
    const found = pick(item, ['exit_status'], `${path}[${i}].`);
    if (!found) return c.fail(`${path}[${i}].exit_status`, "can't be blank", item);
    const status = exitStatus(c, found[0], found[1]);
    if (status !== undefined) rules.push({ exit_status: status });
  });
  return rules.length > 0 ? rules : false;
}

function retry(c: Ctx, found: Found | undefined): ScriptStep['retry'] {
  if (!found) return null;
  const [path, v] = found;
  if (v.t !== 'map') return c.fail(path, `must be ${mapping(c)} with "automatic" and/or "manual" rules`, v), null;
  const automatic = automaticRetry(c, `${path}.automatic`, v.get('automatic'));
  const manual = manualRetry(c, `${path}.manual`, v.get('manual'));
  if (!automatic.length && !manual) return null;
  return manual ? { automatic, manual } : { automatic };
}

function automaticRetry(c: Ctx, at: string, automatic: V | undefined): AutomaticRetry[] {
  if (automatic === undefined || automatic.t === 'null') return [];
  if (automatic.t === 'bool') return automatic.v ? [{ exit_status: '*', limit: 2 }] : [];
  const items = automatic.t === 'map' ? [automatic] : automatic.t === 'list' ? automatic.items : undefined;
  if (!items) return c.fail(at, 'must be true, false, or one or a list of {exit_status, signal_reason, limit} rules', automatic), [];
  if (items.length > MAX_LIST) return c.fail(at, tooMany(MAX_LIST), automatic), [];
  const rules: AutomaticRetry[] = [];
  items.forEach((item, i) => {
    const itemPath = automatic.t === 'list' ? `${at}[${i}]` : at;
    if (item.t !== 'map') return c.fail(itemPath, `must be ${mapping(c)} with "exit_status" and "limit"`, item);
    const statusValue = item.get('exit_status');
    let status: ExitStatus | number[] | undefined;
    if (statusValue?.t === 'list') {
      if (statusValue.items.length > MAX_LIST) return c.fail(`${itemPath}.exit_status`, tooMany(MAX_LIST), statusValue);
      const list = statusValue.items.map((s, j) => exitStatus(c, `${itemPath}.exit_status[${j}]`, s));
      status = list.every((s): s is number => typeof s === 'number') ? list : undefined;
      if (list.includes('*')) c.fail(`${itemPath}.exit_status`, 'must be "*" or whole numbers, not a list with "*"', statusValue);
    } else {
      status = exitStatus(c, `${itemPath}.exit_status`, statusValue, '*');
    }
    const limitFound = pick(item, ['limit'], `${itemPath}.`);
    const limit = limitFound ? wholeNumber(c, limitFound, 1, 10, 'must be a whole number from 1 to 10') : 2;
    const signal = optText(c, pick(item, ['signal_reason'], `${itemPath}.`), MAX_SIGNAL);
    if (status !== undefined && limit !== null) rules.push(signal === null ? { exit_status: status, limit } : { exit_status: status, limit, signal_reason: signal });
  });
  return rules;
}

/** `retry.manual`: `false` forbids the retry button; a mapping says `allowed`, `reason` and `permit_on_passed`. */
function manualRetry(c: Ctx, at: string, manual: V | undefined): ManualRetry | undefined {
  if (manual === undefined || manual.t === 'null') return undefined;
  if (manual.t === 'bool') return { allowed: manual.v, reason: null, permit_on_passed: false };
  if (manual.t !== 'map') return c.fail(at, `must be true, false or ${mapping(c)} with "allowed", "reason" and "permit_on_passed"`, manual), undefined;
  return {
    allowed: bool(c, pick(manual, ['allowed'], `${at}.`), true),
    reason: optText(c, pick(manual, ['reason'], `${at}.`), MAX_PROMPT),
    permit_on_passed: bool(c, pick(manual, ['permit_on_passed'], `${at}.`), false),
  };
}

function fields(c: Ctx, found: Found | undefined): ManualField[] {
  if (!found) return [];
  const [path, v] = found;
  if (v.t !== 'list') return c.fail(path, 'must be a list of text or select fields', v), [];
  if (v.items.length > MAX_LIST) return c.fail(path, tooMany(MAX_LIST), v), [];
  const out: ManualField[] = [];
  const keys = new Set<string>();
  v.items.forEach((item, i) => {
    const at = `${path}[${i}]`;
    if (item.t !== 'map') return c.fail(at, `must be ${mapping(c)} with "key" and "text" or "select"`, item);
    const key = optText(c, pick(item, ['key'], `${at}.`), MAX_KEY);
    if (key === null) {
      if (!pick(item, ['key'])) c.fail(`${at}.key`, "can't be blank", item);
    } else if (!FIELD_KEY.test(key)) {
      c.fail(`${at}.key`, 'may only contain letters, digits, "_", "-" and "/"', item.get('key'));
    } else if (keys.has(key)) {
      c.fail(`${at}.key`, 'is already used by another field of this step', item.get('key'));
    } else {
      keys.add(key);
    }
    const textLabel = optText(c, pick(item, ['text'], `${at}.`), MAX_NAME);
    const selectLabel = optText(c, pick(item, ['select'], `${at}.`), MAX_NAME);
    if ((textLabel === null) === (selectLabel === null)) {
      c.fail(at, 'must have exactly one of "text" or "select"', item);
      return;
    }
    const field: ManualField = { key: key ?? '' };
    if (textLabel !== null) field.text = textLabel;
    if (selectLabel !== null) field.select = selectLabel;
    const hint = optText(c, pick(item, ['hint'], `${at}.`), MAX_PROMPT);
    if (hint !== null) field.hint = hint;
    const requiredFound = pick(item, ['required'], `${at}.`);
    if (requiredFound) field.required = bool(c, requiredFound, true);
    const defaultFound = pick(item, ['default'], `${at}.`);
    if (textLabel !== null) {
      const d = optText(c, defaultFound, MAX_PROMPT);
      if (d !== null) field.default = d;
    } else {
      // Assigned one by one to keep the documented key order in the stored JSON.
      const parts = selectParts(c, at, item, defaultFound);
      if (parts.default !== undefined) field.default = parts.default;
      if (parts.options !== undefined) field.options = parts.options;
      if (parts.multiple !== undefined) field.multiple = parts.multiple;
    }
    out.push(field);
  });
  return out;
}

function selectParts(c: Ctx, at: string, item: VMap, defaultFound: Found | undefined): Partial<ManualField> {
  const parts: Partial<ManualField> = {};
  const options = pick(item, ['options'], `${at}.`);
  if (!options || options[1].t !== 'list' || options[1].items.length === 0) {
    c.fail(`${at}.options`, `must be a non-empty list of {label, value}`, options?.[1] ?? item);
    return parts;
  }
  const list = options[1];
  if (list.items.length > MAX_LIST) return c.fail(options[0], tooMany(MAX_LIST), list), parts;
  parts.options = [];
  list.items.forEach((option, j) => {
    const op = `${options[0]}[${j}]`;
    if (option.t !== 'map') return c.fail(op, `must be ${mapping(c)} with "label" and "value"`, option);
    const label = optText(c, pick(option, ['label'], `${op}.`), MAX_NAME);
    const value = optText(c, pick(option, ['value'], `${op}.`), MAX_NAME);
    if (label === null) c.fail(`${op}.label`, "can't be blank", option);
    if (value === null) c.fail(`${op}.value`, "can't be blank", option);
    if (label !== null && value !== null) parts.options?.push({ label, value });
  });
  const multiple = pick(item, ['multiple'], `${at}.`);
  if (multiple) parts.multiple = bool(c, multiple, false);
  if (defaultFound) {
    const [path, v] = defaultFound;
    const values = new Set(parts.options.map((o) => o.value));
    const chosen = v.t === 'list' && parts.multiple ? v.items.map(text) : [text(v)];
    if (!chosen.every((s): s is string => s !== undefined && values.has(s))) {
      c.fail(path, parts.multiple ? 'must be one or more of the option values' : 'must be one of the option values', v);
    } else {
      parts.default = v.t === 'list' ? (chosen as string[]) : (chosen[0] as string);
    }
  }
  return parts;
}

// ---------------------------------------------------------------------------------------------
// Steps. YAML takes both its own property names and the REST API's (so the visual form can be
// written as YAML); the visual form takes only the API's.

const NAMES = {
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

function scriptStep(c: Ctx, m: VMap, defaultAgents: readonly string[], defaultPriority?: number): ScriptStep {
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
function checkAttributes(c: Ctx, m: VMap, type: StepType): void {
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

function waiterStep(c: Ctx, m: VMap): WaiterStep {
  if (c.dialect === 'yaml') {
    // The label of a wait step is only shown in Buildkite's UI; a waiter has nowhere to keep it.
    const label = pick(m, ['wait', 'waiter']);
    if (label && text(label[1]) === undefined) c.fail(label[0], 'must be empty or a label', label[1]);
  }
  return { type: 'waiter', continue_on_failure: bool(c, pick(m, ['continue_on_failure']), false) };
}

function manualStep(c: Ctx, m: VMap, keyword?: 'block' | 'input'): ManualStep {
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

function triggerStep(c: Ctx, m: VMap): TriggerStep {
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

// ---------------------------------------------------------------------------------------------
// YAML configuration

type Kind = 'script' | 'waiter' | 'manual' | 'trigger';

const EXPLICIT_TYPES = new Map<string, Kind>([
  ['script', 'script'],
  ['command', 'script'],
  ['waiter', 'waiter'],
  ['wait', 'waiter'],
  ['manual', 'manual'],
  ['block', 'manual'],
  ['input', 'manual'],
  ['trigger', 'trigger'],
]);

const KIND_KEYS: [Kind, string[]][] = [
  ['script', ['command', 'commands']],
  ['waiter', ['wait', 'waiter']],
  ['manual', ['block', 'input']],
  ['trigger', ['trigger']],
];

type Defaults = { agents: readonly string[]; priority?: number };

function yamlStep(c: YamlCtx, v: V, defaults: Defaults): Step | undefined {
  if (v.t === 'str') {
    if (v.v === 'wait' || v.v === 'waiter') return { type: 'waiter', continue_on_failure: false };
    if (v.v === 'block' || v.v === 'input') return manualStep(c, lazyMap([], v.line, () => undefined), v.v);
  }
  if (v.t !== 'map') return void c.failStep(`is not a known step type: expected one of ${STEP_KINDS}`);

  const type = v.get('type');
  let kind: Kind | undefined;
  if (type !== undefined) {
    // An explicit type wins over any step-type keys, as in the visual form it comes from.
    kind = EXPLICIT_TYPES.get(text(type) ?? '');
    if (!kind) return void c.fail('type', 'must be one of script, waiter, manual, trigger', type);
  } else {
    const present = KIND_KEYS.filter(([, keys]) => keys.some((k) => v.get(k) !== undefined));
    if (present.length > 1) {
      const found = present.map(([, keys]) => `"${keys.find((k) => v.get(k) !== undefined)}"`);
      return void c.failStep(`mixes step types: ${found.join(' and ')} cannot be in the same step`);
    }
    kind = present[0]?.[0] ?? (v.get('plugins') !== undefined ? 'script' : undefined);
    if (!kind) return void c.failStep(`is not a known step type: expected one of ${STEP_KINDS}`);
  }
  const keyword = kind === 'manual' ? (['block', 'input'] as const).find((k) => v.get(k) !== undefined) : undefined;
  // `type: manual` without a keyword reads as a block step, as the visual form has it.
  checkAttributes(c, v, kind === 'script' ? 'command' : kind === 'waiter' ? 'wait' : kind === 'manual' ? (keyword ?? 'block') : 'trigger');
  switch (kind) {
    case 'script':
      return scriptStep(c, v, defaults.agents, defaults.priority);
    case 'waiter':
      return waiterStep(c, v);
    case 'manual':
      return manualStep(c, v, keyword);
    case 'trigger':
      return triggerStep(c, v);
  }
}

function yamlError(message: string): ValidationError {
  return ValidationError.field('configuration', message);
}

function firstLine(message: string): string {
  const line = message.split('\n', 1)[0]?.trim() ?? '';
  return /call stack/i.test(line) ? 'it is nested too deeply' : line;
}

/** Parse a pipeline YAML configuration (the `configuration` field of the pipelines API). */
/** Steps and env of a pipeline configuration, and a line for each attribute accepted but not acted on. */
export type ParsedConfiguration = { steps: Step[]; env: Record<string, string>; notices: string[] };

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
    const message =
      parseError.code === 'MULTIPLE_DOCS'
        ? 'only one document is allowed, remove the "---" that starts another'
        : firstLine(parseError.message);
    throw yamlError(`is not a valid YAML document: line ${line}, column ${col}: ${message}`);
  }
  const reader = new YamlReader(doc, lines, new Budget());
  const root = reader.value(doc.contents, reader.line(doc.contents) ?? 1, 0);
  const problems = new Problems();
  const top = new YamlCtx(problems, null, root.line);

  let stepsFound: Found | undefined;
  let pipelineEnv: Record<string, string> = {};
  const defaults: Defaults = { agents: [] };
  if (root.t === 'list') {
    stepsFound = ['steps', root];
  } else if (root.t === 'map' && root.get('steps') !== undefined) {
    stepsFound = ['steps', root.get('steps') as V];
    pipelineEnv = env(top, pick(root, ['env']));
    defaults.agents = agents(top, pick(root, ['agents']));
    const priority = wholeNumber(top, pick(root, ['priority']), -MAX_PRIORITY, MAX_PRIORITY, `must be a whole number from -${MAX_PRIORITY} to ${MAX_PRIORITY}`);
    if (priority !== null) defaults.priority = priority;
    // Keys the documentation does not define are anchor holders and the like: left alone.
    for (const key of root.keys) {
      const value = root.get(key);
      if (value === undefined || value.t === 'null') continue;
      const found = verdict(TOP_LEVEL_ATTRIBUTES, key);
      if (found.state === 'reported') top.notice(key, found.why);
      else if (found.state === 'refused') top.fail(key, `is not supported by Windsock: ${found.why}`, value);
    }
  } else {
    throw yamlError('must contain a "steps" list');
  }

  const stepsValue = stepsFound[1];
  if (stepsValue.t === 'null' || (stepsValue.t === 'list' && stepsValue.items.length === 0)) {
    throw yamlError(`line ${stepsValue.line ?? 1}: steps must not be empty`);
  }
  if (stepsValue.t !== 'list') throw yamlError(`line ${stepsValue.line ?? 1}: "steps" must be a list`);

  const steps: Step[] = [];
  const keys = new Map<string, string>();
  const add = (c: YamlCtx, label: string, item: V) => {
    const step = yamlStep(c, item, defaults);
    if (!step) return;
    if (step.type === 'script' && step.key !== null) {
      const owner = keys.get(step.key);
      const at = item.t === 'map' ? pick(item, NAMES.yaml.key)?.[1] : undefined;
      if (owner !== undefined) c.fail('key', `${quote(step.key)} is already used by step ${owner}`, at);
      else keys.set(step.key, label);
    }
    steps.push(step);
  };

  for (const [i, item] of stepsValue.items.entries()) {
    if (problems.full || steps.length > MAX_STEPS) break;
    const label = String(i + 1);
    const c = new YamlCtx(problems, label, item.line);
    if (item.t !== 'map' || item.get('group') === undefined) {
      add(c, label, item);
      continue;
    }
    // Groups only organise the UI; their steps run as if they were written in place.
    const children = item.get('steps');
    if (children === undefined || children.t === 'null' || (children.t === 'list' && children.items.length === 0)) {
      c.fail('steps', 'must not be empty', children);
      continue;
    }
    if (children.t !== 'list') {
      c.fail('steps', 'must be a list', children);
      continue;
    }
    optText(c, pick(item, ['group', 'label', 'name']), MAX_NAME); // checked, though not kept
    checkAttributes(c, item, 'group');
    for (const [j, child] of children.items.entries()) {
      if (problems.full || steps.length > MAX_STEPS) break;
      const childLabel = `${label}.${j + 1}`;
      const cc = new YamlCtx(problems, childLabel, child.line);
      if (child.t === 'map' && child.get('group') !== undefined) {
        cc.failStep('is a group inside a group: groups cannot be nested');
      } else {
        add(cc, childLabel, child);
      }
    }
  }
  if (steps.length > MAX_STEPS) throw yamlError(`has too many steps (maximum is ${MAX_STEPS})`);
  problems.throwIfAny();
  return { steps, env: pipelineEnv, notices: problems.notices };
}

// ---------------------------------------------------------------------------------------------
// Visual steps

const VISUAL_TYPES = new Set<string>(['script', 'waiter', 'manual', 'trigger']);

/** Validate and normalise the visual `steps` array of the pipelines API (JSON objects already parsed). */
export function normaliseVisualSteps(input: unknown[]): Step[] {
  try {
    return normaliseVisualStepsOrThrow(input);
  } catch (error) {
    throw asValidationError(error, 'steps', 'is too large');
  }
}

function normaliseVisualStepsOrThrow(input: unknown[]): Step[] {
  if (!Array.isArray(input)) throw ValidationError.field('steps', 'must be a list of steps');
  if (input.length === 0) throw ValidationError.field('steps', "can't be blank");
  if (input.length > MAX_STEPS) throw ValidationError.field('steps', `is too long (maximum is ${MAX_STEPS} steps)`);

  const budget = new Budget();
  const problems = new Problems();
  const steps: Step[] = [];
  const keys = new Set<string>();
  for (let i = 0; i < input.length && !problems.full; i++) {
    const c = new VisualCtx(problems, i);
    const v = fromJson(input[i], 0, budget);
    if (v.t !== 'map') {
      c.failStep('must be an object');
      continue;
    }
    const type = v.get('type');
    const typeText = type === undefined ? undefined : text(type);
    if (typeText === undefined || typeText.trim() === '') {
      const missing = type === undefined || type.t === 'null' || typeText !== undefined;
      c.fail('type', missing ? "can't be blank" : 'is not included in the list');
      continue;
    }
    if (!VISUAL_TYPES.has(typeText)) {
      c.fail('type', 'is not included in the list');
      continue;
    }
    const step =
      typeText === 'script'
        ? scriptStep(c, v, [])
        : typeText === 'waiter'
          ? waiterStep(c, v)
          : typeText === 'manual'
            ? manualStep(c, v)
            : triggerStep(c, v);
    if (step.type === 'script' && step.key !== null) {
      if (keys.has(step.key)) c.fail('key', 'has already been taken by another step');
      keys.add(step.key);
    }
    steps.push(step);
  }
  problems.throwIfAny();
  return steps;
}

/** The contract is "a ValidationError or a result": anything else escaping would be a 500 on
 * input the client controls, e.g. a stack overflow on something nested deeper than expected. */
function asValidationError(error: unknown, field: string, tooLarge: string): ValidationError {
  if (error instanceof ValidationError) return error;
  if (error instanceof TooLarge) return ValidationError.field(field, tooLarge);
  return ValidationError.field(field, 'could not be read: it may be too large or nested too deeply');
}
