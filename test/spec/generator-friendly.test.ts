/**
 * The contract is generator-friendly: its users generate clients from it in many languages
 * (openapi-generator, quicktype, openapi-typescript...), and every construct below once made a
 * generator invent a name (`InlineResponse200`, `OneOfDateTimestring`), clash with a language's
 * own type (`Error`), or define the same constant twice (`CREATING` of three enums in one Go
 * package). The rules, checked over the whole bundled document (generated/openapi.yaml):
 *
 * 1. Every operation has an operationId, unique, camelCase (`listPipelines`): generators make
 *    method names of it.
 * 2. Tag names are lowercase words joined by `-`, none containing `api` (generators append `Api`:
 *    the tag `agent-api` became `AgentApiApi`).
 * 3. A request or response body's schema is a named component (`$ref`), a list of one, or a
 *    schema without properties (text, binary, a free-form object).
 * 4. Inside a component, everything below its top level is either a `$ref`, or a schema without
 *    `properties`, without an `enum` of two or more values and without a union other than the
 *    nullable form of rule 5. At a component's top level, `allOf` members may be inline objects
 *    (a component extending another), but the branches of a `oneOf`/`anyOf` may not.
 * 5. Nullability is said one way: an inline schema takes null with `type: [X, 'null']`, a named one
 *    with `oneOf: [{ $ref }, { type: 'null' }]`; never `nullable`, never null in an `anyOf` or in a
 *    union of several other branches. (A field that is always null is `type: 'null'`.)
 * 6. The branches of a union hold different JSON types (string vs integer vs array...), or are all
 *    objects: a generator cannot tell two strings apart (`created_at` in two timestamp forms is one
 *    string schema with a documented pattern, `PipelineTimestamp`).
 * 7. Every enum component has `x-enum-varnames` (one per value, prefixed with the component's name:
 *    `BUILD_STATE_CREATING`), unique over the document, and no schema is named `Error`.
 * 8. An integer whose bounds pass 32 bits says `format: int64` (generators make `integer` an int32:
 *    the Go client did not compile with `maximum: 99999999999`), and every array says its `items`.
 * 9. Every schema says what it holds: a `type`, a `$ref`, an enum/const or a union of schemas that
 *    do (typescript-axios 4.3.1 wrote `AnyType`, a name it never defines, for each bare `{}`).
 *    (A pipeline upload's list of steps says each is a string or a mapping.)
 * 10. A string component referenced from elsewhere has no `pattern` (OpenAPI Generator's python
 *    4.3.1 refused to generate with one on `IsoTimestamp`); the server writes those forms itself.
 * 11. `servers` gives a usable absolute default URL, with variables a client can set
 *    (`@hey-api/openapi-ts` and orval clients took `/` as their base and called nowhere).
 * 12. A field that takes two forms of one value is one type, with the other form described and
 *    accepted by the server: `pull_request_id` is an integer (Go 4.3.1 sent `{}` for the union),
 *    and `soft_fail` (a boolean or a list) is in the JSON but not in a schema's `properties`
 *    (Go and Python 4.3.1 clients failed on `soft_fail: false` decoding the union).
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

type Json = Record<string, unknown>;
const doc = YAML.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'generated', 'openapi.yaml'), 'utf8')) as Json;
const obj = (v: unknown): Json => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Json) : {});
const list = (v: unknown): Json[] => (Array.isArray(v) ? (v as Json[]) : []);
const schemas = obj(obj(doc.components).schemas);
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

const operations = Object.entries(obj(doc.paths)).flatMap(([p, item]) =>
  METHODS.filter((m) => obj(item)[m]).map((m) => ({ where: `${m.toUpperCase()} ${p}`, op: obj(obj(item)[m]) })),
);

/** Every request and response body schema: `[where, schema]`. */
function bodies(): [string, Json][] {
  const out: [string, Json][] = [];
  const responses = obj(obj(doc.components).responses);
  for (const { where, op } of operations) {
    for (const [type, media] of Object.entries(obj(obj(op.requestBody).content))) out.push([`${where} request ${type}`, obj(obj(media).schema)]);
    for (const [status, response] of Object.entries(obj(op.responses))) {
      const r = obj(response).$ref ? obj(responses[String(obj(response).$ref).split('/').pop()!]) : obj(response);
      for (const [type, media] of Object.entries(obj(r.content))) out.push([`${where} ${status} ${type}`, obj(obj(media).schema)]);
    }
  }
  return out;
}

const isNull = (s: Json) => s.type === 'null' && Object.keys(s).length === 1;
const unionOf = (s: Json) => (s.oneOf ? 'oneOf' : s.anyOf ? 'anyOf' : undefined);
/** The nullable form of a named schema: `oneOf: [{ $ref }, { type: 'null' }]`. */
const isNullableRef = (s: Json) => list(s.oneOf).length === 2 && !!list(s.oneOf)[0]!.$ref && isNull(list(s.oneOf)[1]!);

/** The JSON type a schema holds ('mixed' for a union of several), following `$ref`s. */
function jsonType(s: Json, seen = new Set<string>()): string {
  if (s.$ref) {
    const name = String(s.$ref).split('/').pop()!;
    return seen.has(name) ? 'object' : jsonType(obj(schemas[name]), new Set([...seen, name]));
  }
  if (typeof s.type === 'string') return s.type;
  if (Array.isArray(s.type)) return s.type.filter((t) => t !== 'null').length === 1 ? String(s.type.find((t) => t !== 'null')) : 'mixed';
  if (s.properties || s.allOf) return 'object';
  const union = unionOf(s);
  if (union) {
    const types = new Set(
      list(s[union])
        .filter((b) => !isNull(b))
        .map((b) => jsonType(b, seen)),
    );
    return types.size === 1 ? [...types][0]! : 'mixed';
  }
  return 'any';
}

/** Every schema inside a component schema (not the top one), with where it is. */
function* nested(s: Json, at: string): Generator<[Json, string]> {
  for (const [name, sub] of Object.entries(obj(s.properties))) yield* withSelf(obj(sub), `${at}.${name}`);
  if (s.items) yield* withSelf(obj(s.items), `${at}[]`);
  if (typeof s.additionalProperties === 'object') yield* withSelf(obj(s.additionalProperties), `${at}{}`);
  for (const key of ['oneOf', 'anyOf', 'allOf']) for (const [i, b] of list(s[key]).entries()) yield* withSelf(b, `${at}|${key}${i}`);
}
function* withSelf(s: Json, at: string): Generator<[Json, string]> {
  yield [s, at];
  if (!s.$ref) yield* nested(s, at);
}

/** Every schema object of the document: components, bodies, parameters and headers. */
function* everySchema(): Generator<[Json, string]> {
  for (const [name, s] of Object.entries(schemas)) yield* withSelf(obj(s), `#${name}`);
  for (const [where, s] of bodies()) yield* withSelf(s, where);
  for (const { where, op } of operations) for (const p of list(op.parameters)) if (p.schema) yield* withSelf(obj(p.schema), `${where} ${String(p.name)}`);
  for (const [name, p] of Object.entries(obj(obj(doc.components).parameters))) if (obj(p).schema) yield* withSelf(obj(obj(p).schema), `parameter ${name}`);
}

describe('the contract is generator-friendly', () => {
  it('1. every operation has a unique camelCase operationId', () => {
    expect(operations.length).toBeGreaterThan(150);
    const ids = operations.map(({ op }) => op.operationId);
    expect(operations.filter(({ op }) => typeof op.operationId !== 'string' || !/^[a-z][a-zA-Z0-9]*$/.test(op.operationId)).map((o) => o.where)).toEqual([]);
    expect(ids.filter((id, i) => ids.indexOf(id) !== i)).toEqual([]);
  });

  it('2. tag names are lowercase words, none containing "api"', () => {
    const names = [...list(doc.tags).map((t) => String(t.name)), ...operations.flatMap(({ op }) => (op.tags as string[] | undefined) ?? [])];
    expect(names.filter((n) => !/^[a-z]+(-[a-z]+)*$/.test(n) || /api/.test(n))).toEqual([]);
  });

  it('3. every request and response body is a named schema, a list of one, or has no properties', () => {
    const all = bodies();
    expect(all.length).toBeGreaterThan(300);
    const inline = all.filter(([, s]) => {
      if (s.$ref) return false;
      const items = obj(s.items);
      if (s.type === 'array' && items.$ref) return false;
      return !!(s.properties || s.oneOf || s.anyOf || s.allOf || s.enum || s.items);
    });
    expect(inline.map(([where]) => where)).toEqual([]);
  });

  it('4. below a component top level, no inline object, enum or union: each is a named component', () => {
    const offending: string[] = [];
    for (const [name, top] of Object.entries(schemas)) {
      const s = obj(top);
      const union = unionOf(s);
      if (union) for (const [i, b] of list(s[union]).entries()) if (b.properties) offending.push(`#${name}|${union}${i}: inline object branch`);
      for (const [sub, at] of nested(s, `#${name}`)) {
        if (sub.$ref || (/\|allOf\d+$/.test(at.split('.')[0]!) && !at.includes('.'))) continue;
        if (sub.properties) offending.push(`${at}: inline object`);
        if (list(sub.enum).filter((v) => v !== null).length > 1) offending.push(`${at}: inline enum`);
        if (unionOf(sub) && !isNullableRef(sub)) offending.push(`${at}: inline union`);
      }
    }
    expect(offending).toEqual([]);
  });

  it("5. nullability is said one way: type [X, 'null'] inline, oneOf [$ref, null] for a named schema", () => {
    const offending: string[] = [];
    let nullable = 0;
    for (const [s, at] of everySchema()) {
      if ('nullable' in s) offending.push(`${at}: nullable`);
      if (list(s.anyOf).some(isNull)) offending.push(`${at}: null in anyOf`);
      if (list(s.oneOf).some(isNull) && !isNullableRef(s)) offending.push(`${at}: null in a union that is not [$ref, null]`);
      if (Array.isArray(s.type) && s.type.includes('null')) nullable++;
      if (isNullableRef(s)) nullable++;
    }
    expect(offending).toEqual([]);
    expect(nullable).toBeGreaterThan(100);
  });

  it('6. the branches of a union hold different JSON types, or are all objects', () => {
    const offending: string[] = [];
    for (const [s, at] of everySchema()) {
      const union = unionOf(s);
      if (!union) continue;
      const types = list(s[union])
        .filter((b) => !isNull(b))
        .map((b) => jsonType(b));
      if (types.every((t) => t === 'object')) continue;
      if (new Set(types).size !== types.length) offending.push(`${at}: ${types.join(' | ')}`);
    }
    expect(offending).toEqual([]);
  });

  it('7. every enum component has x-enum-varnames, prefixed and unique; no schema is named Error', () => {
    const varnames: string[] = [];
    const offending: string[] = [];
    for (const [name, s] of Object.entries(schemas).map(([n, v]) => [n, obj(v)] as const)) {
      if (!Array.isArray(s.enum)) continue;
      const values = s.enum.filter((v) => v !== null);
      const names = (s['x-enum-varnames'] as string[] | undefined) ?? [];
      const prefix = name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase() + '_';
      if (names.length !== values.length || names.some((n) => !n.startsWith(prefix) || !/^[A-Z][A-Z0-9_]*$/.test(n))) offending.push(name);
      varnames.push(...names);
    }
    expect(offending).toEqual([]);
    expect(varnames.length).toBeGreaterThan(100);
    expect(varnames.filter((n, i) => varnames.indexOf(n) !== i)).toEqual([]);
    expect(Object.keys(schemas)).not.toContain('Error');
  });

  it('8. integers past 32 bits say format int64; every array has items; examples are examples', () => {
    const offending: string[] = [];
    const int32 = (n: unknown) => typeof n !== 'number' || (n >= -2147483648 && n <= 2147483647);
    for (const [s, at] of everySchema()) {
      if (s.type === 'integer' && s.format !== 'int64' && !(int32(s.minimum) && int32(s.maximum))) offending.push(`${at}: integer past int32`);
      if ((s.type === 'array' || (Array.isArray(s.type) && s.type.includes('array'))) && !('items' in s)) offending.push(`${at}: array without items`);
    }
    for (const [name, e] of Object.entries(obj(obj(doc.components).examples))) if (!('value' in obj(e))) offending.push(`example ${name}: no value`);
    expect(offending).toEqual([]);
  });

  it('9. every schema says what it holds: a type, a $ref, an enum or const, or a union', () => {
    const offending: string[] = [];
    for (const [s, at] of everySchema()) {
      if ('type' in s || s.$ref || 'const' in s || Array.isArray(s.enum) || s.oneOf || s.anyOf || s.allOf) continue;
      offending.push(at);
    }
    expect(offending).toEqual([]);
  });

  it('10. no pattern on a string component that other schemas reference', () => {
    const offending = Object.entries(schemas)
      .filter(([, s]) => obj(s).type === 'string' && 'pattern' in obj(s))
      .map(([name]) => name);
    expect(offending).toEqual([]);
  });

  it('11. servers: an absolute default URL, with variables a client can set', () => {
    const servers = list(doc.servers);
    expect(servers.length).toBeGreaterThan(0);
    const first = servers[0]!;
    const variables = obj(first.variables);
    const url = String(first.url).replace(/\{(\w+)\}/g, (_, name: string) => String(obj(variables[name]).default));
    expect(new URL(url).host).not.toBe('');
    expect(Object.keys(variables).length).toBeGreaterThan(0);
    for (const v of Object.values(variables)) expect(typeof obj(v).default).toBe('string');
  });

  it('12. a field taking two forms of one value is one type: pull_request_id an integer, soft_fail out of properties', () => {
    const createBuild = obj(schemas.CreateBuildRequest);
    const pr = obj(obj(createBuild.properties).pull_request_id);
    expect(jsonType(pr)).toBe('integer');
    for (const name of ['ScriptStep', 'MatrixAdjustment']) {
      expect(Object.keys(obj(obj(schemas[name]).properties))).not.toContain('soft_fail');
      expect(String(obj(schemas[name]).description)).toContain('soft_fail');
    }
    expect(Object.keys(schemas)).not.toContain('SoftFail');
  });
});
