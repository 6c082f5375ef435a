/**
 * generated/openapi-3.0.json (the OpenAPI 3.0.3 rendering, scripts/openapi-3.0.mjs) says what the 3.1
 * document says: the same paths, operations, operationIds, parameters, request bodies, statuses,
 * security, component names and, for every object schema, the same properties and required ones.
 * And it holds nothing a 3.0 reader rejects. `npm run generate:check` keeps it fresh; this keeps it true.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';
import { describeEachDatabase } from '../support/context';

type Json = Record<string, unknown>;
const generated = path.join(__dirname, '..', '..', 'generated');
const doc31 = YAML.parse(fs.readFileSync(path.join(generated, 'openapi.yaml'), 'utf8')) as Json;
const doc30 = JSON.parse(fs.readFileSync(path.join(generated, 'openapi-3.0.json'), 'utf8')) as Json;

/** The 3.0 rendering's nullable twins (`UserNullable`: `User` or null), which the 3.1 document does not need. */
const twinsOf = (doc: Json) => Object.keys(obj(obj(doc.components).schemas)).filter((n) => n.endsWith('Nullable') && doc === doc30);
const isTwinRef = (s: Json) => typeof s.$ref === 'string' && /Nullable$/.test(s.$ref);

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});

/** Every operation, keyed `METHOD path`, with its path item's parameters first. */
function operations(doc: Json): Map<string, { op: Json; parameters: Json[] }> {
  const out = new Map<string, { op: Json; parameters: Json[] }>();
  for (const [p, item] of Object.entries(obj(doc.paths))) {
    const shared = (obj(item).parameters as Json[] | undefined) ?? [];
    for (const method of METHODS) {
      const op = obj(item)[method];
      if (op) out.set(`${method.toUpperCase()} ${p}`, { op: op as Json, parameters: [...shared, ...((obj(op).parameters as Json[]) ?? [])] });
    }
  }
  return out;
}

/** What a client sees of an operation, schemas aside (they are compared by name and properties). */
function outline(doc: Json, entry: { op: Json; parameters: Json[] }) {
  const { op, parameters } = entry;
  const responses = obj(op.responses);
  const scopes = ((op.security as Json[] | undefined) ?? []).flatMap((r) => Object.values(r).flat());
  return {
    operationId: op.operationId,
    tags: op.tags,
    parameters: parameters.map((p) => {
      const resolved = p.$ref ? obj(obj(obj(doc.components).parameters)[String(p.$ref).split('/').pop()!]) : p;
      return `${String(resolved.in)}:${String(resolved.name)}:${resolved.required === true}`;
    }),
    requestBody: op.requestBody ? { required: obj(op.requestBody).required ?? false, types: Object.keys(obj(obj(op.requestBody).content)) } : undefined,
    responses: Object.fromEntries(Object.entries(responses).map(([status, r]) => [status, Object.keys(obj(obj(r).content)).sort()])),
    securitySchemes: ((op.security as Json[] | undefined) ?? []).map((r) => Object.keys(r)),
    scopes: doc === doc30 ? ((op['x-required-scopes'] as string[] | undefined) ?? []) : scopes,
  };
}

/**
 * For every object schema in a component, `Component/path/to/object` -> its property names and
 * required names. Union branches are folded into their parent (the rendering drops `{type: 'null'}`
 * branches, which shifts their indexes), array items are `[]`.
 */
function shapes(doc: Json): Map<string, { properties: string[]; required: string[] }> {
  const out = new Map<string, { properties: Set<string>; required: Set<string> }>();
  const visit = (schema: unknown, at: string) => {
    const s = obj(schema);
    if (s.properties || s.required) {
      const entry = out.get(at) ?? { properties: new Set(), required: new Set() };
      Object.keys(obj(s.properties)).forEach((n) => entry.properties.add(n));
      ((s.required as string[] | undefined) ?? []).forEach((n) => entry.required.add(n));
      out.set(at, entry);
    }
    for (const [name, sub] of Object.entries(obj(s.properties))) visit(sub, `${at}/${name}`);
    if (s.items) visit(s.items, `${at}/[]`);
    if (typeof s.additionalProperties === 'object') visit(s.additionalProperties, `${at}/{}`);
    for (const union of ['allOf', 'oneOf', 'anyOf']) for (const branch of (s[union] as unknown[] | undefined) ?? []) visit(branch, at);
  };
  const twins = twinsOf(doc);
  for (const [name, schema] of Object.entries(obj(obj(doc.components).schemas))) if (!twins.includes(name)) visit(schema, name);
  return new Map([...out].map(([k, v]) => [k, { properties: [...v.properties].sort(), required: [...v.required].sort() }]));
}

/** Every schema object of the document (components and inline in operations), with where it is. */
function* schemaObjects(node: unknown, at: string, inSchema = false): Generator<[Json, string]> {
  if (Array.isArray(node)) {
    for (const [i, v] of node.entries()) yield* schemaObjects(v, `${at}/${i}`, inSchema);
    return;
  }
  if (!node || typeof node !== 'object') return;
  const n = node as Json;
  if (inSchema) yield [n, at];
  for (const [key, value] of Object.entries(n)) {
    // Examples are data, not schemas.
    if (key === 'example' || key === 'examples') continue;
    if (inSchema) {
      if (key === 'properties') for (const [name, s] of Object.entries(obj(value))) yield* schemaObjects(s, `${at}/properties/${name}`, true);
      else if (['items', 'additionalProperties', 'not'].includes(key)) yield* schemaObjects(value, `${at}/${key}`, typeof value === 'object');
      else if (['allOf', 'oneOf', 'anyOf'].includes(key)) yield* schemaObjects(value, `${at}/${key}`, true);
    } else if (key === 'schema') yield* schemaObjects(value, `${at}/schema`, true);
    else if (key === 'schemas' && at === '#/components')
      for (const [name, s] of Object.entries(obj(value))) yield* schemaObjects(s, `${at}/schemas/${name}`, true);
    else yield* schemaObjects(value, `${at}/${key}`, false);
  }
}

describe('the OpenAPI 3.0.3 rendering', () => {
  it('is OpenAPI 3.0.3 and keeps the title and version', () => {
    expect(doc30.openapi).toBe('3.0.3');
    expect(obj(doc30.info).title).toBe(obj(doc31.info).title);
    expect(obj(doc30.info).version).toBe(obj(doc31.info).version);
  });

  it('has the same paths and operations, each with the same id, parameters, body, statuses and security', () => {
    const ops31 = operations(doc31);
    const ops30 = operations(doc30);
    expect([...ops30.keys()]).toEqual([...ops31.keys()]);
    expect(ops31.size).toBeGreaterThan(100);
    for (const [key, entry] of ops31) expect({ key, ...outline(doc30, ops30.get(key)!) }).toEqual({ key, ...outline(doc31, entry) });
  });

  it('has the same components, and every object schema has the same properties and required ones', () => {
    const components31 = obj(doc31.components);
    const components30 = obj(doc30.components);
    expect(Object.keys(components30).sort()).toEqual(Object.keys(components31).sort());
    const twins = twinsOf(doc30);
    for (const kind of Object.keys(components31)) {
      const names30 = Object.keys(obj(components30[kind])).filter((n) => kind !== 'schemas' || !twins.includes(n));
      expect(names30).toEqual(Object.keys(obj(components31[kind])));
    }
    const shapes31 = shapes(doc31);
    expect(shapes31.size).toBeGreaterThan(100);
    expect(Object.fromEntries(shapes(doc30))).toEqual(Object.fromEntries(shapes31));
  });

  it("gives a nullable reference a nullable twin of the component: the component's schema, taking null too", () => {
    const schemas30 = obj(obj(doc30.components).schemas);
    const twins = twinsOf(doc30);
    expect(twins.length).toBeGreaterThan(5);
    for (const twin of twins) {
      const base = obj(schemas30[twin.replace(/Nullable$/, '')]);
      const { nullable, description, enum: values, 'x-enum-varnames': varnames, type, ...rest } = obj(schemas30[twin]);
      const { description: baseDescription, enum: baseValues, 'x-enum-varnames': baseVarnames, type: baseType, ...baseRest } = base;
      void description;
      void baseDescription;
      void baseVarnames;
      expect({ twin, nullable, rest }).toEqual({ twin, nullable: true, rest: baseRest });
      expect(type).toBe(baseType ?? 'object');
      // 3.0.3: an enum that takes null lists it.
      if (baseValues) expect({ twin, values }).toEqual({ twin, values: [...(baseValues as unknown[]), null] });
      if (baseValues) expect((varnames as unknown[]).length).toBe((values as unknown[]).length);
    }
    // Every twin is used, and each one is a nullable reference of the 3.1 document.
    const used = new Set([...JSON.stringify(doc30).matchAll(/"#\/components\/schemas\/(\w+Nullable)"/g)].map((m) => m[1]));
    expect([...used].sort()).toEqual([...twins].sort());
  });

  it('keeps every enum and every nullable field', () => {
    const facts = (doc: Json) => {
      const enums: string[] = [];
      const nullable: string[] = [];
      const twins = twinsOf(doc).map((n) => `#/components/schemas/${n}`);
      for (const [s, at] of schemaObjects(doc, '#')) {
        if (twins.some((t) => at === t || at.startsWith(`${t}/`))) continue;
        const where = at.replace(/\/(oneOf|anyOf|allOf)\/\d+/g, '');
        if (Array.isArray(s.enum) && s.enum.length > 1) enums.push(`${where}=${JSON.stringify(s.enum)}`);
        const takesNull =
          s.nullable === true ||
          isTwinRef(s) ||
          (Array.isArray(s.type) && s.type.includes('null')) ||
          ((s.oneOf ?? s.anyOf) as Json[] | undefined)?.some((b) => b.type === 'null' && Object.keys(b).length === 1) ||
          s.type === 'null';
        if (takesNull) nullable.push(where);
      }
      return { enums: [...new Set(enums)].sort(), nullable: [...new Set(nullable)].sort() };
    };
    const facts31 = facts(doc31);
    expect(facts31.nullable.length).toBeGreaterThan(50);
    expect(facts(doc30)).toEqual(facts31);
  });

  it('holds no 3.1-only construct: type arrays, null types, const, schema examples, numeric exclusive bounds', () => {
    const offending: string[] = [];
    for (const [s, at] of schemaObjects(doc30, '#')) {
      if (Array.isArray(s.type) || s.type === 'null') offending.push(`${at}: type ${JSON.stringify(s.type)}`);
      if (s.nullable !== undefined && typeof s.type !== 'string') offending.push(`${at}: nullable without a type`);
      if (s.$ref && Object.keys(s).length > 1) offending.push(`${at}: $ref with siblings`);
      // 3.0.3 validators check the null against the referenced schema too, and it fails there.
      // The one exception: `allOf: [$ref]` to a nullable twin, which takes the null itself (the
      // `nullable` beside it is for generators that read only a property's own, OpenAPI Generator's python).
      const twinRef = Array.isArray(s.allOf) && s.allOf.length === 1 && String(obj(s.allOf[0]).$ref ?? '').endsWith('Nullable');
      if (s.nullable && (s.allOf || s.oneOf || s.anyOf) && !twinRef) offending.push(`${at}: nullable beside a union or allOf`);
      for (const k of ['const', 'examples', '$schema', '$id', 'propertyNames', 'unevaluatedProperties', 'contentMediaType', 'prefixItems']) {
        if (k in s) offending.push(`${at}: ${k}`);
      }
      for (const k of ['exclusiveMinimum', 'exclusiveMaximum']) if (k in s && typeof s[k] !== 'boolean') offending.push(`${at}: numeric ${k}`);
    }
    expect(offending).toEqual([]);
    expect(doc30.webhooks).toBeUndefined();
    expect(obj(doc30.info).summary).toBeUndefined();
    expect(obj(obj(doc30.info).license).identifier).toBeUndefined();
  });
});

describeEachDatabase('GET /openapi-3.0.json', (ctx) => {
  it('serves the committed rendering as JSON, without authentication', async () => {
    const res = await ctx()
      .http()
      .get('/openapi-3.0.json')
      .expect(200)
      .expect('Content-Type', /application\/json/);
    expect(res.text).toBe(fs.readFileSync(path.join(generated, 'openapi-3.0.json'), 'utf8'));
  });
});
