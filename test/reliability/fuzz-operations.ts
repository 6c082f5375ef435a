/**
 * The operations of the parsed spec (src/spec.ts) as fuzz targets: for each path × method, its
 * parameters, request body and documented responses with every `$ref` resolved; fast-check
 * arbitraries derived from those schemas, for valid inputs and for inputs mutated to be invalid
 * by construction (wrong type, missing required, over maxLength, out of range, not in the enum);
 * and an independent Ajv validator of response bodies against the documented schemas.
 */
import fc from 'fast-check';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import type { ValidateFunction } from 'ajv';
import { loadSpec } from '../../src/spec';

// A JSON Schema node of the spec, loosely typed: the spec is data here.
export type Schema = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any

export interface Param {
  name: string;
  in: 'path' | 'query' | 'header';
  required: boolean;
  schema: Schema;
  style?: string;
}

export interface Operation {
  id: string;
  method: 'get' | 'put' | 'post' | 'delete' | 'patch';
  /** The spec's path template, e.g. /v2/organizations/{org_slug}/pipelines */
  path: string;
  params: Param[];
  body: Schema | undefined;
  /** Whether the body must be sent (`requestBody.required`): without one it is invalid input. */
  bodyRequired: boolean;
  /** Whether the operation also takes `multipart/form-data`. */
  multipart: boolean;
  /** `bearer`: an access token; `suite`: a test suite's upload token; `agent`: an agent's token (or a registration token); `none`: public. */
  auth: 'bearer' | 'suite' | 'agent' | 'none';
  statuses: string[];
  /** The JSON schema of each documented status's body, if it has one. */
  responseSchemas: Record<string, Schema | undefined>;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

/** Every `$ref` replaced by what it points at (the spec has no recursive schemas). */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export function deref(doc: Schema, node: unknown, depth = 0): any {
  if (depth > 50) throw new Error('schema too deep: recursive $ref?');
  if (Array.isArray(node)) return node.map((n) => deref(doc, n, depth + 1));
  if (!node || typeof node !== 'object') return node;
  const obj = node as Schema;
  if (typeof obj.$ref === 'string') {
    const target = obj.$ref
      .replace(/^#\//, '')
      .split('/')
      .reduce((acc: Schema, k: string) => acc[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
    const { $ref: _ref, ...siblings } = obj;
    return deref(doc, { ...target, ...siblings }, depth + 1);
  }
  return Object.fromEntries(Object.entries(obj).map(([k, v]) => [k, deref(doc, v, depth + 1)]));
}

export function operationsFromSpec(): Operation[] {
  const doc = loadSpec().doc as Schema;
  const ops: Operation[] = [];
  for (const [path, rawItem] of Object.entries(doc.paths as Record<string, Schema>)) {
    const item = deref(doc, rawItem);
    for (const method of METHODS) {
      const op = item[method] as Schema | undefined;
      if (!op) continue;
      const params = new Map<string, Param>();
      for (const p of [...(item.parameters ?? []), ...(op.parameters ?? [])]) params.set(`${p.in}:${p.name}`, { required: false, ...p });
      const security: Schema[] = op.security ?? doc.security ?? [];
      const auth = security.some((s) => 'bearerAuth' in s)
        ? 'bearer'
        : security.some((s) => 'suiteToken' in s)
          ? 'suite'
          : security.some((s) => 'agentToken' in s)
            ? 'agent'
            : 'none';
      const responseSchemas: Record<string, Schema | undefined> = {};
      for (const [status, r] of Object.entries(op.responses as Record<string, Schema>)) {
        responseSchemas[status] = r.content?.['application/json']?.schema;
      }
      ops.push({
        id: op.operationId,
        method,
        path,
        params: [...params.values()],
        body: op.requestBody?.content?.['application/json']?.schema,
        bodyRequired: op.requestBody?.required === true,
        multipart: Boolean(op.requestBody?.content?.['multipart/form-data']),
        auth,
        statuses: Object.keys(op.responses),
        responseSchemas,
      });
    }
  }
  return ops;
}

/** Ajv over the documented response schemas (OpenAPI 3.1 is JSON Schema 2020-12). */
export function responseValidator(): (op: Operation, status: number, body: unknown) => string | null {
  const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true });
  addFormats(ajv);
  ajv.addFormat('binary', true);
  const cache = new Map<string, ValidateFunction | null>();
  return (op, status, body) => {
    const key = `${op.id} ${status}`;
    if (!cache.has(key)) {
      const schema = op.responseSchemas[String(status)];
      cache.set(key, schema ? ajv.compile(stripDiscriminators(schema) as Schema) : null);
    }
    const validate = cache.get(key);
    if (!validate) return null;
    return validate(body) ? null : ajv.errorsText(validate.errors);
  };
}

/** `discriminator` is an OpenAPI annotation; the `oneOf` beside it does the validating. */
function stripDiscriminators(s: unknown): unknown {
  if (Array.isArray(s)) return s.map(stripDiscriminators);
  if (!s || typeof s !== 'object') return s;
  return Object.fromEntries(
    Object.entries(s as Schema)
      .filter(([k]) => k !== 'discriminator')
      .map(([k, v]) => [k, stripDiscriminators(v)]),
  );
}

// ---------------------------------------------------------------------------------------------
// Arbitraries from schemas

/** Strings that have broken services before: NUL, bidi overrides, BOM, lone surrogates, emoji, combining marks. */
const ODD = ['\u0000', '\u202e', '\ufeff', '\ud800', '\udfff', '😀', 'e\u0301', 'ǅ', '\u2028', '../..', '%00', "'; drop table x; --", '${x}', '{{x}}', ' '];

function stringArb(min: number, max: number): fc.Arbitrary<string> {
  const cap = Math.min(max, 40);
  if (cap < min) return fc.constant('x'.repeat(min));
  return fc.oneof(
    { weight: 4, arbitrary: fc.string({ minLength: min, maxLength: cap }) },
    { weight: 2, arbitrary: fc.string({ minLength: min, maxLength: cap, unit: 'grapheme' }) },
    { weight: 1, arbitrary: fc.string({ minLength: min, maxLength: cap, unit: 'binary' }) },
    {
      weight: 2,
      arbitrary: fc
        .array(fc.constantFrom(...ODD), { minLength: 1, maxLength: 3 })
        .map((a) => a.join(''))
        .filter((s) => [...s].length >= min && [...s].length <= max),
    },
  );
}

/** Merges `allOf` members of object schemas into one object schema. */
export function mergeAllOf(s: Schema): Schema {
  if (!s.allOf) return s;
  const parts = (s.allOf as Schema[]).map(mergeAllOf);
  return {
    type: 'object',
    properties: Object.assign({}, ...parts.map((p) => p.properties ?? {})),
    required: parts.flatMap((p) => p.required ?? []),
  };
}

export type Hints = Record<string, fc.Arbitrary<unknown>>;

/** Values valid against `s` (mostly: grapheme strings may overshoot a maxLength, which only makes them a 4xx). */
export function validArb(s: Schema, hints: Hints = {}, depth = 0): fc.Arbitrary<unknown> {
  s = mergeAllOf(s);
  if ('const' in s) return fc.constant(s.const);
  if (s.enum) return fc.constantFrom(...(s.enum as unknown[]));
  const alts = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alts) return fc.oneof(...alts.map((a) => validArb(a, hints, depth + 1)));
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : ['object'];
  if (types.length > 1) return fc.oneof(...types.map((t) => validArb({ ...s, type: t }, hints, depth + 1)));
  switch (types[0]) {
    case 'null':
      return fc.constant(null);
    case 'boolean':
      return fc.boolean();
    case 'integer':
      return fc.integer({ min: s.minimum ?? -(2 ** 31), max: s.maximum ?? 2 ** 31 - 1 });
    case 'number':
      return fc.double({ min: s.minimum ?? -1e9, max: s.maximum ?? 1e9, noNaN: true, noDefaultInfinity: true });
    case 'string':
      if (s.format === 'date-time')
        return fc.date({ min: new Date('2000-01-01'), max: new Date('2100-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
      if (s.format === 'uuid') return fc.uuid();
      if (s.pattern) return fc.stringMatching(new RegExp(s.pattern)).filter((v) => v.length <= (s.maxLength ?? Infinity));
      return stringArb(s.minLength ?? 0, s.maxLength ?? 1000);
    case 'array':
      if (depth > 4) return fc.constant([]);
      return fc.array(validArb(s.items ?? {}, hints, depth + 1), { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 5, 5) });
    default: {
      if (depth > 4) return fc.constant({});
      const props = (s.properties ?? {}) as Record<string, Schema>;
      const model: Record<string, fc.Arbitrary<unknown>> = {};
      for (const [k, v] of Object.entries(props)) {
        if (v.readOnly) continue;
        model[k] =
          k in hints && depth === 0
            ? fc.oneof({ weight: 3, arbitrary: hints[k]! }, { weight: 1, arbitrary: validArb(v, {}, depth + 1) })
            : validArb(v, {}, depth + 1);
      }
      const required = ((s.required ?? []) as string[]).filter((k) => k in model);
      const record = fc.record(model, { requiredKeys: required });
      const extraValue: fc.Arbitrary<unknown> | undefined =
        s.additionalProperties === true || (s.additionalProperties === undefined && !s.properties)
          ? fc.jsonValue({ maxDepth: 2 })
          : s.additionalProperties && typeof s.additionalProperties === 'object'
            ? validArb(s.additionalProperties, {}, depth + 1)
            : undefined;
      if (!extraValue) return record;
      const key = s.propertyNames?.pattern
        ? fc.stringMatching(new RegExp(s.propertyNames.pattern)).filter((k) => k.length <= (s.propertyNames.maxLength ?? 255) && !(k in props))
        : fc.string({ minLength: 1, maxLength: 20 }).filter((k) => !(k in props));
      const extra = fc.dictionary(key, extraValue, { maxKeys: Math.min(s.maxProperties ?? 4, 4) });
      return fc.tuple(record, extra).map(([r, e]) => ({ ...e, ...r }));
    }
  }
}

/** The JSON types a schema admits, or null when it admits anything (no way to be wrong). */
export function typesOf(s: Schema): Set<string> | null {
  s = mergeAllOf(s);
  if ('const' in s || s.enum) return null;
  const alts = (s.oneOf ?? s.anyOf) as Schema[] | undefined;
  if (alts) {
    const all = new Set<string>();
    for (const a of alts) {
      const t = typesOf(a);
      if (!t) return null;
      t.forEach((x) => all.add(x));
    }
    return all;
  }
  if (!s.type) return null;
  const t = new Set<string>(Array.isArray(s.type) ? s.type : [s.type]);
  if (t.has('integer')) t.add('number-integral');
  return t;
}

/**
 * A value of a JSON type the schema does not admit. `nullMeansAbsent`: the value is an optional
 * body property, where null means "not given" (src/http/contract/parameters.ts), so null is not wrong.
 */
export function wrongTypeArb(s: Schema, nullMeansAbsent = false): fc.Arbitrary<unknown> | null {
  const t = typesOf(s);
  if (!t) return null;
  const candidates: fc.Arbitrary<unknown>[] = [];
  if (!t.has('string')) candidates.push(fc.string({ maxLength: 10 }));
  if (!t.has('boolean')) candidates.push(fc.boolean());
  if (!t.has('null') && !nullMeansAbsent) candidates.push(fc.constant(null));
  if (!t.has('number')) candidates.push(t.has('integer') ? fc.double({ min: 0.1, max: 0.9, noNaN: true }) : fc.integer());
  if (!t.has('array')) candidates.push(fc.array(fc.integer(), { maxLength: 2 }));
  if (!t.has('object')) candidates.push(fc.constant({ x: 1 }));
  return candidates.length ? fc.oneof(...candidates) : null;
}

/** A value that breaks one rule of a schema whose type it keeps (length, range, enum, format), or null. */
export function outOfBoundsArb(s: Schema): fc.Arbitrary<unknown> | null {
  s = mergeAllOf(s);
  const alts: fc.Arbitrary<unknown>[] = [];
  const types: string[] = Array.isArray(s.type) ? s.type : s.type ? [s.type] : [];
  if (s.enum && s.enum.every((v: unknown) => typeof v === 'string' || v === null)) {
    alts.push(fc.string({ minLength: 1, maxLength: 20 }).filter((v) => !s.enum.includes(v)));
  }
  if (types.includes('string') && s.maxLength !== undefined) {
    // Over the limit: just over, or huge (still far under the body limit).
    alts.push(
      fc
        .oneof(fc.integer({ min: 1, max: 50 }), fc.integer({ min: 1000, max: 200_000 }))
        .map((n) => 'x'.repeat(Math.min(s.maxLength + n, s.maxLength + 200_000))),
    );
  }
  if (types.includes('string') && s.format === 'date-time') alts.push(fc.constantFrom('yesterday', '2026-13-45T00:00:00Z', '1', 'not-a-date'));
  if (types.includes('string') && s.format === 'uuid') alts.push(fc.constantFrom('not-a-uuid', '1234', 'zzzzzzzz-zzzz-zzzz-zzzz-zzzzzzzzzzzz'));
  if (types.includes('string') && (s.minLength ?? 0) > 0) alts.push(fc.constant(''));
  if (types.includes('integer') && s.maximum !== undefined) alts.push(fc.integer({ min: s.maximum + 1, max: Math.max(s.maximum + 1, 2 ** 53 - 1) }));
  if (types.includes('integer') && s.minimum !== undefined) alts.push(fc.integer({ min: -(2 ** 31), max: s.minimum - 1 }));
  // Over maxItems only where that stays small (not the 5,000 results of an upload).
  if (types.includes('array') && s.maxItems !== undefined && s.maxItems <= 500) {
    const item = validArb(s.items ?? {}, {}, 3);
    alts.push(fc.array(item, { minLength: s.maxItems + 1, maxLength: s.maxItems + 3 }));
  }
  return alts.length ? fc.oneof(...alts) : null;
}
