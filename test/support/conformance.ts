/**
 * Conformance of a response to the documented examples of its operation: every key an example
 * shows is present, recursively (nested objects and each array element), with the same JSON
 * type. `null` is accepted where an example has null or where the spec documents the field as
 * nullable. Several examples of one resource are merged first (the union of their keys must
 * hold). Problems are reported by JSON path, so a failure says exactly what is missing.
 */
import { loadSpec } from '../../src/spec';

type JsonType = 'object' | 'array' | 'string' | 'number' | 'boolean' | 'null';
type Schema = Record<string, unknown>;

/** What the examples say about one position: the types seen, and for objects and arrays what is inside. */
interface Expectation {
  types: Set<JsonType>;
  props: Map<string, Expectation>;
  items?: Expectation;
}

const typeOf = (v: unknown): JsonType => (v === null ? 'null' : Array.isArray(v) ? 'array' : (typeof v as JsonType));

function expectationOf(examples: unknown[]): Expectation {
  const e: Expectation = { types: new Set(), props: new Map() };
  const add = (into: Expectation, v: unknown) => {
    into.types.add(typeOf(v));
    if (Array.isArray(v)) {
      into.items ??= { types: new Set(), props: new Map() };
      for (const item of v) add(into.items, item);
    } else if (v && typeof v === 'object') {
      for (const [k, child] of Object.entries(v)) {
        if (!into.props.has(k)) into.props.set(k, { types: new Set(), props: new Map() });
        add(into.props.get(k)!, child);
      }
    }
  };
  for (const ex of examples) add(e, ex);
  return e;
}

// ------------------------------------------------------------------------------------------
// The spec's schemas, just enough to answer "may this field be null?" and to walk inward.

function resolve(s: Schema | undefined): Schema | undefined {
  let cur = s;
  for (let i = 0; cur && typeof cur.$ref === 'string' && i < 20; i++) {
    const parts = (cur.$ref as string).replace(/^#\//, '').split('/');
    cur = parts.reduce<unknown>((o, p) => (o as Record<string, unknown>)?.[p], loadSpec().doc) as Schema | undefined;
  }
  return cur;
}

/** The schema itself and every alternative or part it is made of (oneOf, anyOf, allOf). */
function variants(s: Schema | undefined): Schema[] {
  const r = resolve(s);
  if (!r) return [];
  const nested = (['oneOf', 'anyOf', 'allOf'] as const).flatMap((k) => ((r[k] as Schema[] | undefined) ?? []).flatMap(variants));
  return [r, ...nested];
}

function allowsNull(s: Schema | undefined): boolean {
  return variants(s).some((v) => v.type === 'null' || (Array.isArray(v.type) && v.type.includes('null')) || v.nullable === true);
}

function propertySchema(s: Schema | undefined, key: string): Schema | undefined {
  for (const v of variants(s)) {
    const p = (v.properties as Record<string, Schema> | undefined)?.[key];
    if (p) return p;
  }
  for (const v of variants(s)) if (v.additionalProperties && typeof v.additionalProperties === 'object') return v.additionalProperties as Schema;
  return undefined;
}

function isMap(s: Schema | undefined): boolean {
  const vs = variants(s);
  return vs.some((v) => v.additionalProperties && typeof v.additionalProperties === 'object') && !vs.some((v) => v.properties);
}

function mergeAll(es: Expectation[]): Expectation {
  const into: Expectation = { types: new Set(), props: new Map() };
  for (const e of es) {
    for (const t of e.types) into.types.add(t);
    for (const [k, p] of e.props) into.props.set(k, into.props.has(k) ? mergeAll([into.props.get(k)!, p]) : p);
    if (e.items) into.items = into.items ? mergeAll([into.items, e.items]) : e.items;
  }
  return into;
}

function itemsSchema(s: Schema | undefined): Schema | undefined {
  for (const v of variants(s)) if (v.items) return v.items as Schema;
  return undefined;
}

/** A component schema of the spec by name (`Build`), or an array of it (`Build[]`). */
export function specSchema(name: string): Schema {
  const ref = { $ref: `#/components/schemas/${name.replace(/\[\]$/, '')}` };
  return name.endsWith('[]') ? { type: 'array', items: ref } : ref;
}

/** The JSON response schema of an operation (by operationId) for a status. */
export function responseSchema(operationId: string, status = '200'): Schema {
  const paths = loadSpec().doc.paths as Record<string, Record<string, { operationId?: string; responses?: Record<string, Schema> }>>;
  for (const item of Object.values(paths)) {
    for (const op of Object.values(item)) {
      if (op && typeof op === 'object' && op.operationId === operationId) {
        const response = resolve(op.responses?.[status]);
        const schema = (response?.content as Record<string, { schema?: Schema }> | undefined)?.['application/json']?.schema;
        if (schema) return schema;
      }
    }
  }
  throw new Error(`no JSON response ${status} for operation ${operationId}`);
}

// ------------------------------------------------------------------------------------------

/** Every difference between `actual` and what the examples show, as `path: problem` lines. */
export function conformanceProblems(actual: unknown, examples: unknown[], schema?: Schema): string[] {
  const problems: string[] = [];
  const walk = (v: unknown, e: Expectation, s: Schema | undefined, path: string) => {
    const t = typeOf(v);
    const expected = [...e.types].filter((x) => x !== 'null');
    if (t === 'null') {
      if (expected.length && !e.types.has('null') && !allowsNull(s))
        problems.push(`${path}: null, the examples show ${expected.join('|')} and the spec does not document null`);
      return;
    }
    if (!expected.length) return; // every example is null: no type to compare with
    if (!expected.includes(t)) {
      problems.push(`${path}: ${t}, the examples show ${expected.join('|')}`);
      return;
    }
    if (t === 'object') {
      const o = v as Record<string, unknown>;
      // A map (the spec gives only additionalProperties, as for job state counts): its keys are
      // data, not representation, so only the values' types are compared.
      if (isMap(s)) {
        const values = [...e.props.values()];
        for (const [k, child] of Object.entries(o)) if (values.length) walk(child, mergeAll(values), propertySchema(s, k), `${path}.${k}`);
        return;
      }
      for (const [k, child] of e.props) {
        if (!(k in o)) problems.push(`${path}.${k}: missing`);
        else walk(o[k], child, propertySchema(s, k), `${path}.${k}`);
      }
    } else if (t === 'array' && e.items) {
      const arr = v as unknown[];
      const structured = e.items.types.has('object') || e.items.types.has('array');
      if (!arr.length && structured) problems.push(`${path}: empty array, the examples have elements (set up data that fills it)`);
      arr.forEach((item, i) => walk(item, e.items!, itemsSchema(s), `${path}[${i}]`));
    }
  };
  walk(actual, expectationOf(examples), schema, '$');
  return problems;
}

/** Fails with every problem listed when `actual` does not conform to the examples. */
export function expectConforms(actual: unknown, examples: unknown[], schema?: Schema): void {
  const problems = conformanceProblems(actual, examples, schema);
  if (problems.length) throw new Error(`Response does not conform to the documented example(s):\n  ${problems.join('\n  ')}`);
}
