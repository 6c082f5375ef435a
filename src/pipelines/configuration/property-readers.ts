/**
 * Readers for property values. Each reports what is wrong and returns a fallback, so that one
 * pass finds every problem.
 */
import { ENV_NAME, FIELD_KEY, MAX_ENV, MAX_KEY, MAX_LIST, MAX_NAME, MAX_PROMPT, MAX_REF, MAX_SIGNAL, MAX_SKIP_REASON, MAX_TEXT } from './limits';
import { define, mapping, quote, tooLong, tooMany, type ProblemReporter } from './problems';
import type { AutomaticRetry, ExitStatus, ManualField, ManualRetry, ScriptStep } from './step-types';
import type { ConfigValue, ConfigMap } from './value-tree';

export type FoundProperty = [path: string, value: ConfigValue];

/** The first of `names` that is set to something other than null; null means "not given". */
export function findProperty(map: ConfigMap | undefined, names: readonly string[], prefix = ''): FoundProperty | undefined {
  if (!map) return undefined;
  for (const name of names) {
    const v = map.get(name);
    if (v !== undefined && v.kind !== 'null') return [prefix + name, v];
  }
  return undefined;
}

/** YAML types plain scalars, but a label of `1.0` or a commit of `0123456` is meant as text. */
export function text(v: ConfigValue): string | undefined {
  if (v.kind === 'str') return v.value;
  if (v.kind === 'num' || v.kind === 'bool') return v.text;
  return undefined;
}

/** Optional text; blank counts as not given, so the stored form has one way to say "none". */
export function optionalText(reporter: ProblemReporter, found: FoundProperty | undefined, max: number): string | null {
  if (!found) return null;
  const [path, v] = found;
  const s = text(v);
  if (s === undefined) return (reporter.fail(path, 'must be a string', v), null);
  if (s.length > max) return (reporter.fail(path, tooLong(max), v), null);
  return s.trim() === '' ? null : s;
}

/** A string, or a list of strings (as the docs' retry rules take `signal` and `signal_reason`); blank or empty counts as not given. */
function textOrList(reporter: ProblemReporter, found: FoundProperty | undefined, max: number): string | string[] | null {
  if (!found) return null;
  const [path, v] = found;
  if (v.kind !== 'list') return optionalText(reporter, found, max);
  if (v.items.length > MAX_LIST) return (reporter.fail(path, tooMany(MAX_LIST), v), null);
  const items = v.items.map((item, i) => optionalText(reporter, [`${path}[${i}]`, item], max)).filter((s): s is string => s !== null);
  return items.length > 0 ? items : null;
}

/** A string, or a list of strings joined with `sep`; blank counts as not given. */
export function joined(reporter: ProblemReporter, found: FoundProperty | undefined, sep: string, max: number): string | null {
  if (!found) return null;
  const [path, v] = found;
  let s: string | undefined;
  if (v.kind === 'list') {
    const parts = v.items.map(text);
    if (parts.every((p): p is string => p !== undefined)) s = parts.join(sep);
  } else {
    s = text(v);
  }
  if (s === undefined) return (reporter.fail(path, 'must be a string or a list of strings', v), null);
  if (s.length > max) return (reporter.fail(path, tooLong(max), v), null);
  return s.trim() === '' ? null : s;
}

export function bool(reporter: ProblemReporter, found: FoundProperty | undefined, fallback: boolean): boolean {
  if (!found) return fallback;
  const [path, v] = found;
  if (v.kind === 'bool') return v.value;
  reporter.fail(path, 'must be true or false', v);
  return fallback;
}

/**
 * A `skip` (a step's, a group's, a matrix adjustment's): `true`, or a reason of at most 70
 * characters (documented); `false` and an empty reason (documented: "equivalent to false") are
 * undefined, as is a missing one.
 */
export function skip(reporter: ProblemReporter, found: FoundProperty | undefined): true | string | undefined {
  if (!found) return undefined;
  const [path, v] = found;
  if (v.kind === 'bool') return v.value ? true : undefined;
  if (v.kind === 'str') {
    if (v.value.length > MAX_SKIP_REASON) return (reporter.fail(path, tooLong(MAX_SKIP_REASON), v), undefined);
    return v.value.trim() === '' ? undefined : v.value;
  }
  if (v.kind === 'null') return undefined;
  return (reporter.fail(path, 'must be true, false or a reason', v), undefined);
}

export function wholeNumber(reporter: ProblemReporter, found: FoundProperty | undefined, min: number, max: number, message: string): number | null {
  if (!found) return null;
  const [path, v] = found;
  if (v.kind === 'num' && Number.isInteger(v.value) && v.value >= min && v.value <= max) return v.value;
  reporter.fail(path, message, v);
  return null;
}

export function positive(reporter: ProblemReporter, found: FoundProperty | undefined, max: number): number | null {
  if (!found) return null;
  const [path, v] = found;
  if (v.kind !== 'num' || !Number.isInteger(v.value) || v.value < 1) {
    return (reporter.fail(path, 'must be a positive whole number', v), null);
  }
  if (v.value > max) return (reporter.fail(path, `must be at most ${max}`, v), null);
  return v.value;
}

export function env(reporter: ProblemReporter, found: FoundProperty | undefined, what: 'variables' | 'keys' = 'variables'): Record<string, string> {
  const out: Record<string, string> = {};
  if (!found) return out;
  const [path, v] = found;
  if (v.kind !== 'map') return (reporter.fail(path, `must be ${mapping(reporter)} of names to values`, v), out);
  if (v.keys.length > MAX_ENV) return (reporter.fail(path, `must have at most ${MAX_ENV} ${what}`, v), out);
  for (const name of v.keys) {
    const value = v.get(name) ?? { kind: 'null', line: v.line };
    // Meta-data keys are any non-blank text; variable names are shell names.
    const valid = what === 'keys' ? name.trim() !== '' : ENV_NAME.test(name);
    if (!valid || name.length > MAX_REF) {
      const rule = what === 'keys' ? 'keys must not be blank' : 'use letters, digits and underscores, not starting with a digit';
      reporter.fail(path, `has an invalid name ${quote(name)}: ${rule}`, value);
      continue;
    }
    const s = text(value);
    if (s === undefined) reporter.fail(`${path}.${name}`, 'must be a string, number or boolean', value);
    else if (s.length > MAX_TEXT) reporter.fail(`${path}.${name}`, tooLong(MAX_TEXT), value);
    else define(out, name, s);
  }
  return out;
}

/** Agent query rules; YAML also takes the `{queue: deploy}` mapping form. */
export function agents(reporter: ProblemReporter, found: FoundProperty | undefined): string[] {
  if (!found) return [];
  const [path, v] = found;
  const message = reporter.dialect === 'yaml' ? 'must be a mapping or a list of key=value strings' : 'must be a list of key=value strings';
  const rules: string[] = [];
  if (v.kind === 'map' && reporter.dialect === 'yaml') {
    if (v.keys.length > MAX_LIST) return (reporter.fail(path, tooMany(MAX_LIST), v), []);
    for (const key of v.keys) {
      const value = v.get(key) ?? { kind: 'null', line: v.line };
      const s = text(value);
      if (s === undefined || key.trim() === '' || key.includes('=')) reporter.fail(path, message, value);
      else if (key.length + s.length >= MAX_NAME) reporter.fail(path, `has a rule that ${tooLong(MAX_NAME)}`, value);
      else rules.push(`${key}=${s}`);
    }
  } else if (v.kind === 'list') {
    if (v.items.length > MAX_LIST) return (reporter.fail(path, tooMany(MAX_LIST), v), []);
    for (const item of v.items) {
      const s = text(item);
      if (s === undefined || !/^[^=\s][^=]*=/.test(s)) reporter.fail(path, message, item);
      else if (s.length > MAX_NAME) reporter.fail(path, `has a rule that ${tooLong(MAX_NAME)}`, item);
      else rules.push(s);
    }
  } else {
    reporter.fail(path, message, v);
    return [];
  }
  return rules;
}

/**
 * A block or input step's `allowed_teams`: team slugs or ids, one or a list (none when absent).
 * Kept as written: teams are looked up when someone unblocks, so a team made later counts.
 */
export function allowedTeams(reporter: ProblemReporter, found: FoundProperty | undefined): string[] | undefined {
  if (!found || found[1].kind === 'null') return undefined;
  const [path, v] = found;
  const items = v.kind === 'list' ? v.items : [v];
  if (items.length > MAX_LIST) return void reporter.fail(path, tooMany(MAX_LIST), v);
  const teams: string[] = [];
  for (const item of items) {
    const s = text(item)?.trim();
    if (!s) return void reporter.fail(path, 'must be a list of team slugs or ids, such as ["deployers"]', item);
    if (s.length > MAX_NAME) return void reporter.fail(path, `has a team that ${tooLong(MAX_NAME)}`, item);
    teams.push(s);
  }
  return teams.length ? teams : undefined;
}

function exitStatus(reporter: ProblemReporter, path: string, v: ConfigValue | undefined, fallback?: ExitStatus): ExitStatus | undefined {
  if ((v === undefined || v.kind === 'null') && fallback !== undefined) return fallback;
  if (v?.kind === 'str' && v.value === '*') return '*';
  // Quoted numbers are common in YAML written by hand and mean the same thing.
  const n = v?.kind === 'num' ? v.value : v?.kind === 'str' && /^-?\d{1,10}$/.test(v.value) ? Number(v.value) : NaN;
  if (Number.isInteger(n) && Math.abs(n) <= 2 ** 31 - 1) return n;
  reporter.fail(path, 'must be a whole number or "*"', v);
  return undefined;
}

export function softFail(reporter: ProblemReporter, found: FoundProperty | undefined): ScriptStep['soft_fail'] {
  if (!found) return false;
  const [path, v] = found;
  if (v.kind === 'bool') return v.value;
  if (v.kind !== 'list') return (reporter.fail(path, 'must be true, false or a list of exit_status rules', v), false);
  if (v.items.length > MAX_LIST) return (reporter.fail(path, tooMany(MAX_LIST), v), false);
  const rules: { exit_status: ExitStatus }[] = [];
  v.items.forEach((item, i) => {
    if (item.kind !== 'map') return reporter.fail(`${path}[${i}]`, `must be ${mapping(reporter)} with "exit_status"`, item);
    const found = findProperty(item, ['exit_status'], `${path}[${i}].`);
    if (!found) return reporter.fail(`${path}[${i}].exit_status`, "can't be blank", item);
    const status = exitStatus(reporter, found[0], found[1]);
    if (status !== undefined) rules.push({ exit_status: status });
  });
  return rules.length > 0 ? rules : false;
}

export function retry(reporter: ProblemReporter, found: FoundProperty | undefined): ScriptStep['retry'] {
  if (!found) return null;
  const [path, v] = found;
  if (v.kind !== 'map') return (reporter.fail(path, `must be ${mapping(reporter)} with "automatic" and/or "manual" rules`, v), null);
  const automatic = automaticRetry(reporter, `${path}.automatic`, v.get('automatic'));
  const manual = manualRetry(reporter, `${path}.manual`, v.get('manual'));
  if (!automatic.length && !manual) return null;
  return manual ? { automatic, manual } : { automatic };
}

function automaticRetry(reporter: ProblemReporter, at: string, automatic: ConfigValue | undefined): AutomaticRetry[] {
  if (automatic === undefined || automatic.kind === 'null') return [];
  if (automatic.kind === 'bool') return automatic.value ? [{ exit_status: '*', limit: 2 }] : [];
  const items = automatic.kind === 'map' ? [automatic] : automatic.kind === 'list' ? automatic.items : undefined;
  if (!items) return (reporter.fail(at, 'must be true, false, or one or a list of {exit_status, signal, signal_reason, limit} rules', automatic), []);
  if (items.length > MAX_LIST) return (reporter.fail(at, tooMany(MAX_LIST), automatic), []);
  const rules: AutomaticRetry[] = [];
  items.forEach((item, i) => {
    const itemPath = automatic.kind === 'list' ? `${at}[${i}]` : at;
    if (item.kind !== 'map') return reporter.fail(itemPath, `must be ${mapping(reporter)} with "exit_status" and "limit"`, item);
    const statusValue = item.get('exit_status');
    let status: ExitStatus | number[] | undefined;
    if (statusValue?.kind === 'list') {
      if (statusValue.items.length > MAX_LIST) return reporter.fail(`${itemPath}.exit_status`, tooMany(MAX_LIST), statusValue);
      const list = statusValue.items.map((s, j) => exitStatus(reporter, `${itemPath}.exit_status[${j}]`, s));
      status = list.every((s): s is number => typeof s === 'number') ? list : undefined;
      if (list.includes('*')) reporter.fail(`${itemPath}.exit_status`, 'must be "*" or whole numbers, not a list with "*"', statusValue);
    } else {
      status = exitStatus(reporter, `${itemPath}.exit_status`, statusValue, '*');
    }
    const limitFound = findProperty(item, ['limit'], `${itemPath}.`);
    // The docs: 0 prevents a retry of what the rule matches (a `stack_error`, say).
    const limit = limitFound ? wholeNumber(reporter, limitFound, 0, 10, 'must be a whole number from 0 to 10') : 2;
    const reason = textOrList(reporter, findProperty(item, ['signal_reason'], `${itemPath}.`), MAX_SIGNAL);
    const signal = textOrList(reporter, findProperty(item, ['signal'], `${itemPath}.`), MAX_SIGNAL);
    if (status !== undefined && limit !== null)
      rules.push({ exit_status: status, limit, ...(signal === null ? {} : { signal }), ...(reason === null ? {} : { signal_reason: reason }) });
  });
  return rules;
}

/** `retry.manual`: `false` forbids the retry button; a mapping says `allowed`, `reason` and `permit_on_passed`. */
function manualRetry(reporter: ProblemReporter, at: string, manual: ConfigValue | undefined): ManualRetry | undefined {
  if (manual === undefined || manual.kind === 'null') return undefined;
  if (manual.kind === 'bool') return { allowed: manual.value, reason: null, permit_on_passed: false };
  if (manual.kind !== 'map')
    return (reporter.fail(at, `must be true, false or ${mapping(reporter)} with "allowed", "reason" and "permit_on_passed"`, manual), undefined);
  return {
    allowed: bool(reporter, findProperty(manual, ['allowed'], `${at}.`), true),
    reason: optionalText(reporter, findProperty(manual, ['reason'], `${at}.`), MAX_PROMPT),
    permit_on_passed: bool(reporter, findProperty(manual, ['permit_on_passed'], `${at}.`), false),
  };
}

/** Whether `format` compiles as the browser compiles a pattern attribute (`^(?:format)$`, unicode sets). */
function isPattern(format: string): boolean {
  try {
    new RegExp(`^(?:${format})$`, 'v');
    return true;
  } catch {
    return false;
  }
}

export function fields(reporter: ProblemReporter, found: FoundProperty | undefined): ManualField[] {
  if (!found) return [];
  const [path, v] = found;
  if (v.kind !== 'list') return (reporter.fail(path, 'must be a list of text or select fields', v), []);
  if (v.items.length > MAX_LIST) return (reporter.fail(path, tooMany(MAX_LIST), v), []);
  const out: ManualField[] = [];
  const keys = new Set<string>();
  v.items.forEach((item, i) => {
    const at = `${path}[${i}]`;
    if (item.kind !== 'map') return reporter.fail(at, `must be ${mapping(reporter)} with "key" and "text" or "select"`, item);
    const key = optionalText(reporter, findProperty(item, ['key'], `${at}.`), MAX_KEY);
    if (key === null) {
      if (!findProperty(item, ['key'])) reporter.fail(`${at}.key`, "can't be blank", item);
    } else if (!FIELD_KEY.test(key)) {
      reporter.fail(`${at}.key`, 'may only contain letters, digits, "_", "-" and "/"', item.get('key'));
    } else if (keys.has(key)) {
      reporter.fail(`${at}.key`, 'is already used by another field of this step', item.get('key'));
    } else {
      keys.add(key);
    }
    const textLabel = optionalText(reporter, findProperty(item, ['text'], `${at}.`), MAX_NAME);
    const selectLabel = optionalText(reporter, findProperty(item, ['select'], `${at}.`), MAX_NAME);
    if ((textLabel === null) === (selectLabel === null)) {
      reporter.fail(at, 'must have exactly one of "text" or "select"', item);
      return;
    }
    const field: ManualField = { key: key ?? '' };
    if (textLabel !== null) field.text = textLabel;
    if (selectLabel !== null) field.select = selectLabel;
    const hint = optionalText(reporter, findProperty(item, ['hint'], `${at}.`), MAX_PROMPT);
    if (hint !== null) field.hint = hint;
    const requiredFound = findProperty(item, ['required'], `${at}.`);
    if (requiredFound) field.required = bool(reporter, requiredFound, true);
    const defaultFound = findProperty(item, ['default'], `${at}.`);
    if (textLabel !== null) {
      const d = optionalText(reporter, defaultFound, MAX_PROMPT);
      if (d !== null) field.default = d;
      // block_step.md, "Input validation": a regular expression, anchored, as HTML's pattern attribute is.
      const formatFound = findProperty(item, ['format'], `${at}.`);
      const format = optionalText(reporter, formatFound, MAX_PROMPT);
      if (format !== null) {
        if (isPattern(format)) field.format = format;
        else reporter.fail(formatFound?.[0] ?? `${at}.format`, 'must be a regular expression', formatFound?.[1]);
      }
    } else {
      // Assigned one by one to keep the documented key order in the stored JSON.
      const parts = selectParts(reporter, at, item, defaultFound);
      if (parts.default !== undefined) field.default = parts.default;
      if (parts.options !== undefined) field.options = parts.options;
      if (parts.multiple !== undefined) field.multiple = parts.multiple;
    }
    out.push(field);
  });
  return out;
}

function selectParts(reporter: ProblemReporter, at: string, item: ConfigMap, defaultFound: FoundProperty | undefined): Partial<ManualField> {
  const parts: Partial<ManualField> = {};
  const options = findProperty(item, ['options'], `${at}.`);
  if (!options || options[1].kind !== 'list' || options[1].items.length === 0) {
    reporter.fail(`${at}.options`, `must be a non-empty list of {label, value}`, options?.[1] ?? item);
    return parts;
  }
  const list = options[1];
  if (list.items.length > MAX_LIST) return (reporter.fail(options[0], tooMany(MAX_LIST), list), parts);
  parts.options = [];
  list.items.forEach((option, j) => {
    const op = `${options[0]}[${j}]`;
    if (option.kind !== 'map') return reporter.fail(op, `must be ${mapping(reporter)} with "label" and "value"`, option);
    const label = optionalText(reporter, findProperty(option, ['label'], `${op}.`), MAX_NAME);
    const value = optionalText(reporter, findProperty(option, ['value'], `${op}.`), MAX_NAME);
    if (label === null) reporter.fail(`${op}.label`, "can't be blank", option);
    if (value === null) reporter.fail(`${op}.value`, "can't be blank", option);
    if (label !== null && value !== null) parts.options?.push({ label, value });
  });
  const multiple = findProperty(item, ['multiple'], `${at}.`);
  if (multiple) parts.multiple = bool(reporter, multiple, false);
  if (defaultFound) {
    const [path, v] = defaultFound;
    const values = new Set(parts.options.map((o) => o.value));
    const chosen = v.kind === 'list' && parts.multiple ? v.items.map(text) : [text(v)];
    if (!chosen.every((s): s is string => s !== undefined && values.has(s))) {
      reporter.fail(path, parts.multiple ? 'must be one or more of the option values' : 'must be one of the option values', v);
    } else {
      parts.default = v.kind === 'list' ? chosen : chosen[0];
    }
  }
  return parts;
}
