import {
  ENV_NAME,
  FIELD_KEY,
  MAX_ENV,
  MAX_KEY,
  MAX_LIST,
  MAX_NAME,
  MAX_PROMPT,
  MAX_REF,
  MAX_SIGNAL,
  MAX_TEXT,
} from './limits';
import { define, mapping, quote, tooLong, tooMany, type Ctx } from './problems';
import type { AutomaticRetry, ExitStatus, ManualField, ManualRetry, ScriptStep } from './step-types';
import type { V, VMap } from './value-tree';

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
export function joined(c: Ctx, found: Found | undefined, sep: string, max: number): string | null {
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

export function wholeNumber(c: Ctx, found: Found | undefined, min: number, max: number, message: string): number | null {
  if (!found) return null;
  const [path, v] = found;
  if (v.t === 'num' && Number.isInteger(v.v) && v.v >= min && v.v <= max) return v.v;
  c.fail(path, message, v);
  return null;
}

export function positive(c: Ctx, found: Found | undefined, max: number): number | null {
  if (!found) return null;
  const [path, v] = found;
  if (v.t !== 'num' || !Number.isInteger(v.v) || v.v < 1) {
    return c.fail(path, 'must be a positive whole number', v), null;
  }
  if (v.v > max) return c.fail(path, `must be at most ${max}`, v), null;
  return v.v;
}

export function env(c: Ctx, found: Found | undefined, what: 'variables' | 'keys' = 'variables'): Record<string, string> {
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
export function agents(c: Ctx, found: Found | undefined): string[] {
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

export function retry(c: Ctx, found: Found | undefined): ScriptStep['retry'] {
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

export function fields(c: Ctx, found: Found | undefined): ManualField[] {
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
