/**
 * Reads requests the way real clients send them, before express-openapi-validator sees them,
 * driven by the spec so every operation gets the same rules:
 *
 * - Integer parameters (query and path) are decimal digits within the schema's range: no
 *   `Infinity`, `1e3`, `0x1` or `1.0`, which JavaScript's number parsing (and so the validator's
 *   type coercion) would take. Malformed or out of range: 400 in the query, 404 in the path
 *   (a path that names nothing that can exist).
 * - Date-time query parameters are real calendar dates and times (no 30 February). A space
 *   before the UTC offset (`+02:00` sent unencoded, which form decoding turns into a space) is
 *   read as the `+` it was. A time without a zone (Python's `datetime.isoformat()` of a naive
 *   value) is UTC, and a date alone is its midnight UTC, as the real API reads them.
 * - Boolean query parameters are `true` or `false` in any case (Python sends `True`), or `1` /
 *   `0`; they reach the validator as `true` / `false`. Enumerated ones name their allowed
 *   values, in a single value and in bracket arrays alike.
 * - In a JSON body, `null` on an optional property that the spec does not mark nullable means
 *   "not given" (clients generated in other languages send it for unset fields): the property is
 *   removed before validation, at any depth the schema describes.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { routeTable } from './route-table';
import { BadRequestError, NotFoundError } from '../../core/errors';
import { resolveRef as resolve, specOperations, type Method, type SpecDoc } from './spec-operations';

type Schema = {
  $ref?: string;
  type?: string | string[];
  enum?: unknown[];
  format?: string;
  minimum?: number;
  maximum?: number;
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  allOf?: Schema[];
  oneOf?: Schema[];
  anyOf?: Schema[];
  additionalProperties?: boolean | Schema;
  nullable?: boolean;
};

interface Parameter {
  $ref?: string;
  name: string;
  in: 'query' | 'path' | 'header' | 'cookie';
  schema?: Schema;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { $ref?: string; content?: Record<string, { schema?: Schema }> };
}

/** The API's word for what each path parameter names (404 `No <thing> found`). */
export const PATH_THINGS: Record<string, string> = {
  org_slug: 'organization',
  pipeline_slug: 'pipeline',
  build_number: 'build',
  suite_slug: 'suite',
  run_id: 'run',
  test_id: 'test',
  token: 'pipeline',
  agent_id: 'agent',
  job_id: 'job',
  artifact_id: 'artifact',
  build_id: 'build',
  step_upload_id: 'step upload',
};

/** Every branch a value of this schema may take: itself, or its oneOf/anyOf alternatives. */
function alternatives(doc: SpecDoc, schema: Schema | undefined): Schema[] {
  const s = resolve(doc, schema);
  if (!s) return [];
  const alts = s.oneOf ?? s.anyOf;
  return alts ? alts.flatMap((a) => alternatives(doc, a)) : [s];
}

function typesOf(s: Schema): string[] {
  return s.type === undefined ? [] : Array.isArray(s.type) ? s.type : [s.type];
}

/** Whether the schema lets `null` through (a `'null'` type, a `{type: 'null'}` branch, `nullable`). */
export function acceptsNull(doc: SpecDoc, schema: Schema | undefined): boolean {
  const s = resolve(doc, schema);
  if (!s) return true;
  if (s.nullable) return true;
  if (s.allOf) return s.allOf.every((a) => acceptsNull(doc, a));
  const alts = s.oneOf ?? s.anyOf;
  if (alts) return alts.some((a) => acceptsNull(doc, a));
  const types = typesOf(s);
  if (s.enum) return s.enum.includes(null);
  return types.length === 0 || types.includes('null');
}

/** An object schema's properties and required names, allOf parts merged. */
function objectShape(
  doc: SpecDoc,
  schema: Schema | undefined,
  depth = 0,
): { properties: Record<string, Schema>; required: Set<string>; additional?: Schema } | null {
  const s = resolve(doc, schema);
  if (!s || depth > 20) return null;
  const properties: Record<string, Schema> = { ...(s.properties ?? {}) };
  const required = new Set(s.required ?? []);
  let additional = typeof s.additionalProperties === 'object' ? s.additionalProperties : undefined;
  for (const part of s.allOf ?? []) {
    const shape = objectShape(doc, part, depth + 1);
    if (!shape) continue;
    Object.assign(properties, shape.properties);
    shape.required.forEach((r) => required.add(r));
    additional ??= shape.additional;
  }
  if (!Object.keys(properties).length && !additional) return null;
  return { properties, required, additional };
}

/** What removing nulls does at one schema: compiled once per schema, then applied to each body. */
interface NullPlan {
  /** Whether anything at or below this schema can be removed: an inactive plan is not walked. */
  active: boolean;
  items?: NullPlan;
  properties?: Map<string, { removable: boolean; plan?: NullPlan }>;
  additional?: NullPlan;
}

/** Plans by resolved schema object: the spec is parsed once, so each schema is compiled once. */
const nullPlans = new WeakMap<object, NullPlan>();

function nullPlan(doc: SpecDoc, schema: Schema | undefined, reached: Set<NullPlan>): NullPlan | undefined {
  const s = resolve(doc, schema);
  if (!s) return undefined;
  let plan = nullPlans.get(s);
  if (plan) {
    reached.add(plan);
    return plan;
  }
  plan = { active: false };
  nullPlans.set(s, plan);
  reached.add(plan);
  const alts = alternatives(doc, s);
  const items = alts.find((a) => a.items)?.items;
  if (items) plan.items = nullPlan(doc, items, reached);
  const shape = alts.map((a) => objectShape(doc, a)).find((x) => x !== null);
  if (shape) {
    plan.properties = new Map();
    for (const [key, prop] of Object.entries(shape.properties)) {
      const removable = !shape.required.has(key) && !acceptsNull(doc, prop);
      plan.properties.set(key, { removable, plan: nullPlan(doc, prop, reached) });
      if (removable) plan.active = true;
    }
    if (shape.additional) plan.additional = nullPlan(doc, shape.additional, reached);
  }
  return plan;
}

/** The plan for a schema, with `active` settled over everything it reaches (schemas may be recursive). */
function compiledNullPlan(doc: SpecDoc, schema: Schema | undefined): NullPlan | undefined {
  const reached = new Set<NullPlan>();
  const root = nullPlan(doc, schema, reached);
  const children = (p: NullPlan) => [p.items, p.additional, ...[...(p.properties?.values() ?? [])].map((x) => x.plan)];
  for (let changed = true; changed;) {
    changed = false;
    for (const p of reached) {
      if (p.active || !children(p).some((c) => c?.active)) continue;
      p.active = true;
      changed = true;
    }
  }
  return root;
}

function applyNullPlan(plan: NullPlan, value: unknown, depth: number): void {
  if (!plan.active || depth > 32 || value === null || typeof value !== 'object') return;
  if (Array.isArray(value)) {
    if (plan.items?.active) for (const v of value) applyNullPlan(plan.items, v, depth + 1);
    return;
  }
  if (!plan.properties) return;
  for (const key of Object.keys(value)) {
    const prop = plan.properties.get(key);
    const v: unknown = Reflect.get(value, key);
    if (v === null) {
      if (prop?.removable) Reflect.deleteProperty(value, key);
      continue;
    }
    const child = prop ? prop.plan : plan.additional;
    if (child) applyNullPlan(child, v, depth + 1);
  }
}

/**
 * Removes `null` from optional properties whose schema does not accept it, here and in nested
 * objects and arrays of objects the schema describes. A oneOf/anyOf property is descended only
 * when one of its branches is an object with properties. What to do is worked out once per
 * schema, and parts of a body under which the schema removes nothing are not walked: a 50 MB
 * upload's results (nullable fields, string arrays) cost nothing here.
 */
export function stripNulls(doc: SpecDoc, schema: Schema | undefined, value: unknown): void {
  const s = resolve(doc, schema);
  if (!s) return;
  const plan = nullPlans.get(s) ?? compiledNullPlan(doc, s);
  if (plan) applyNullPlan(plan, value, 0);
}

const DATE_TIME = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d{1,9})?([Zz]|[+-](\d{2}):(\d{2}))$/;

/** RFC 3339 date-time naming a moment that exists: months have their days, leap years theirs. */
export function isRealDateTime(v: string): boolean {
  const m = DATE_TIME.exec(v);
  if (!m) return false;
  const [year = NaN, month = NaN, day = NaN, hour = NaN, minute = NaN, second = NaN] = m.slice(1, 7).map(Number);
  const daysInMonth = new Date(Date.UTC(year, month, 0)).getUTCDate();
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth) return false;
  if (hour > 23 || minute > 59 || second > 59) return false;
  if (m[9] !== undefined && (Number(m[9]) > 23 || Number(m[10]) > 59)) return false;
  return true;
}

const ZONELESS_DATE_TIME = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?$/;
const DATE_ONLY = /^\d{4}-\d{2}-\d{2}$/;

/**
 * The RFC 3339 form of a date filter as clients send it: a time without a zone is UTC, a date
 * alone is its midnight UTC; anything else is returned as it came (and checked as it is).
 */
export function completeDateTime(v: string): string {
  if (ZONELESS_DATE_TIME.test(v)) return `${v.slice(0, 10)}T${v.slice(11)}Z`;
  if (DATE_ONLY.test(v)) return `${v}T00:00:00Z`;
  return v;
}

/** `true`/`false` in any case, `1`/`0`: the boolean it spells, or null. */
export function queryBoolean(v: string): boolean | null {
  const lower = v.toLowerCase();
  if (lower === 'true' || lower === '1') return true;
  if (lower === 'false' || lower === '0') return false;
  return null;
}

const DATE_TIME_HINT = 'must be an ISO 8601 date and time that exists, such as 2026-01-01T00:00:00Z';

/** `must be a whole number from 1 to 100` (or `at least 1`, or `a whole number`). */
function wholeNumberHint(s: Schema): string {
  if (s.minimum !== undefined && s.maximum !== undefined) return `must be a whole number from ${s.minimum} to ${s.maximum}`;
  if (s.minimum !== undefined) return `must be a whole number, at least ${s.minimum}`;
  if (s.maximum !== undefined) return `must be a whole number, at most ${s.maximum}`;
  return 'must be a whole number';
}

function isWholeNumberIn(raw: string, s: Schema): boolean {
  if (!/^-?\d{1,20}$/.test(raw)) return false;
  const n = Number(raw);
  return (s.minimum === undefined || n >= s.minimum) && (s.maximum === undefined || n <= s.maximum);
}

interface Check {
  name: string;
  in: 'query' | 'path';
  /** The reason a bad value gets, or null when it is fine; may rewrite the value it is given. */
  check: (value: unknown, set: (v: unknown) => void) => string | null;
}

/** The checks one parameter gets from its schema; none when the validator's own suffice. */
function checkFor(doc: SpecDoc, p: Parameter): Check | null {
  if (p.in !== 'query' && p.in !== 'path') return null;
  const alts = alternatives(doc, p.schema);
  const scalars = alts.flatMap((a) => (typesOf(a).includes('array') ? alternatives(doc, a.items) : [a]));
  const allowsArray = alts.some((a) => typesOf(a).includes('array'));
  const each = (value: unknown, one: (v: string, i: number | null) => string | null): string | null => {
    if (typeof value === 'string') return one(value, null);
    if (allowsArray && Array.isArray(value)) {
      for (const [i, v] of value.entries()) {
        const reason = typeof v === 'string' ? one(v, i) : 'must be a list of values';
        if (reason) return reason;
      }
      return null;
    }
    return allowsArray ? 'must be one value, or several as `name[]=a&name[]=b`' : 'must be a single value';
  };

  const integer = scalars.find((a) => typesOf(a).includes('integer'));
  if (integer && scalars.every((a) => typesOf(a).includes('integer'))) {
    return { name: p.name, in: p.in, check: (value) => each(value, (v) => (isWholeNumberIn(v, integer) ? null : wholeNumberHint(integer))) };
  }
  if (p.in !== 'query') return null;
  if (scalars.length && scalars.every((a) => a.format === 'date-time')) {
    return {
      name: p.name,
      in: p.in,
      check: (value, set) => {
        if (typeof value === 'string') {
          // `+02:00` sent unencoded arrives as ` 02:00`: form decoding made the `+` a space.
          const read = completeDateTime(value.replace(/(\d{2}:\d{2}:\d{2}(?:\.\d+)?) (\d{2}:\d{2})$/, '$1+$2'));
          if (read !== value) set((value = read));
        }
        return each(value, (v) => (isRealDateTime(v) ? null : DATE_TIME_HINT));
      },
    };
  }
  if (scalars.length && scalars.every((a) => typesOf(a).includes('boolean'))) {
    return {
      name: p.name,
      in: p.in,
      check: (value, set) => {
        if (typeof value !== 'string') return each(value, () => 'must be true or false');
        const b = queryBoolean(value);
        if (b === null) return 'must be true, false, 1 or 0';
        set(String(b));
        return null;
      },
    };
  }
  const allowed = [...new Set(scalars.flatMap((a) => a.enum ?? []))];
  if (scalars.length && scalars.every((a) => a.enum)) {
    return { name: p.name, in: p.in, check: (value) => each(value, (v) => (allowed.includes(v) ? null : `must be one of ${allowed.join(', ')}`)) };
  }
  return null;
}

interface OperationRules {
  method: Method;
  path: string;
  checks: Check[];
  body?: Schema;
}

export function parameterRulesFromSpec(doc: SpecDoc): OperationRules[] {
  const rules: OperationRules[] = [];
  for (const { method, path, operation: op, pathItem } of specOperations<Operation>(doc)) {
    // cast: a path item's shared parameters, in the spec's shape (as specOperations reads operations).
    const shared = ((pathItem.parameters as Parameter[] | undefined) ?? []).map((p) => resolve(doc, p)!);
    const own = (op.parameters ?? []).map((p) => resolve(doc, p)!);
    const byKey = new Map([...shared, ...own].map((p) => [`${p.in}:${p.name}`, p]));
    const checks = [...byKey.values()].map((p) => checkFor(doc, p)).filter((c): c is Check => c !== null);
    const body = resolve(doc, op.requestBody)?.content?.['application/json']?.schema;
    if (!checks.length && !body) continue;
    rules.push({ method, path, checks, body });
  }
  return rules;
}

/** One route per operation that has rules; it runs them and passes on. */
export function parameterRouter(doc: SpecDoc): RequestHandler {
  const table = routeTable();
  for (const rule of parameterRulesFromSpec(doc)) {
    table.add(rule.method, rule.path, (req: Request, _res: Response, next: NextFunction) => {
      for (const c of rule.checks) {
        const source: Record<string, unknown> = c.in === 'query' ? req.query : req.params;
        const value = source[c.name];
        if (value === undefined) continue;
        const reason = c.check(value, (v) => (source[c.name] = v));
        if (!reason) continue;
        if (c.in === 'path') throw new NotFoundError(PATH_THINGS[c.name] ?? c.name);
        throw new BadRequestError(`Invalid parameter ${c.name}: ${reason}`);
      }
      if (rule.body && req.body && typeof req.body === 'object' && req.is('json')) stripNulls(doc, rule.body, req.body);
      next();
    });
  }
  return table.handler;
}
