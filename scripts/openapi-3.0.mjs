// The OpenAPI 3.0.3 rendering of the bundled 3.1 document, for the client generators and dynamic
// clients that do not read 3.1 yet (OpenAPI Generator 4.x, Perl's OpenAPI::Client...).
// `npm run generate` writes it to generated/openapi-3.0.json; the server serves it at /openapi-3.0.json.
//
// It says the same thing as the 3.1 document (same paths, operations, parameters, statuses, schema
// names and properties: test/spec/openapi-3.0.test.ts checks it) in 3.0's words:
// - `type: [X, 'null']` -> `type: X, nullable: true`; `type: [X, Y(, 'null')]` -> a `oneOf` of the types;
// - `oneOf`/`anyOf` with a `{type: 'null'}` branch -> the other branch, `nullable: true` (a lone `$ref`
//   becomes `allOf: [$ref]`, as a `$ref` takes no siblings in 3.0);
// - `const: v` -> `enum: [v]`; schema `examples: [a, ...]` -> `example: a`;
// - numeric `exclusiveMinimum`/`exclusiveMaximum` -> `minimum`/`maximum` with the boolean form;
// - keywords 3.0 does not have are dropped (`$schema`, `$id`, `propertyNames`, `unevaluatedProperties`,
//   `contentMediaType`...): they only narrow what the 3.1 document accepts, so the rendering is looser
//   there, never stricter;
// - scopes named in the security requirements of `bearerAuth` (3.1 allows role names for schemes that
//   are not OAuth, 3.0 does not) move to the operation's `x-required-scopes`;
// - `type: array` without `items` gets `items: {}` (3.0 requires it);
// - `webhooks`, `jsonSchemaDialect`, `info.summary` and `license.identifier` are dropped.

/** Keywords of JSON Schema 2020-12 that OpenAPI 3.0's schema object does not have. */
const DROPPED_KEYWORDS = [
  '$schema',
  '$id',
  '$anchor',
  '$dynamicAnchor',
  '$dynamicRef',
  '$defs',
  '$comment',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contentMediaType',
  'contentEncoding',
  'contentSchema',
  'propertyNames',
  'patternProperties',
  'dependentRequired',
  'dependentSchemas',
  'prefixItems',
  'contains',
  'minContains',
  'maxContains',
  'if',
  'then',
  'else',
];

const isNullSchema = (s) => s && typeof s === 'object' && s.type === 'null' && Object.keys(s).length === 1;

/** The JSON type a schema (or the component it names) holds, when it holds one. */
function typeOf(schema, schemas, seen = new Set()) {
  if (!schema || typeof schema !== 'object') return undefined;
  if (schema.$ref) {
    const name = schema.$ref.replace('#/components/schemas/', '');
    if (seen.has(name) || !schemas[name]) return undefined;
    return typeOf(schemas[name], schemas, new Set([...seen, name]));
  }
  if (typeof schema.type === 'string') return schema.type;
  if (Array.isArray(schema.type)) {
    const types = schema.type.filter((t) => t !== 'null');
    return types.length === 1 ? types[0] : undefined;
  }
  for (const union of ['allOf', 'oneOf', 'anyOf']) {
    const types = new Set((schema[union] ?? []).filter((s) => !isNullSchema(s)).map((s) => typeOf(s, schemas, seen)));
    if (types.size === 1) return [...types][0];
  }
  if (schema.properties) return 'object';
  return undefined;
}

/**
 * A schema that also takes null. A `$ref` to a string, number... (a timestamp) becomes a copy of what
 * it names, as 3.0 cannot add null to a referenced schema; a `$ref` to an object or a named enum
 * becomes `allOf: [$ref]` with its `type` and `nullable: true` (what generators read as "this type or
 * null"); a `$ref` to a union of several types becomes a copy whose first branch takes the null.
 */
function nullableBranch(schema, schemas) {
  if (!schema.$ref) {
    if (schema.type || !(schema.oneOf ?? schema.anyOf)) return { ...schema, nullable: true };
    // A union of several types: its first branch takes the null.
    const union = schema.oneOf ? 'oneOf' : 'anyOf';
    const [first, ...rest] = schema[union];
    return { ...schema, [union]: [nullableBranch(first, schemas), ...rest] };
  }
  const type = typeOf(schema, schemas);
  const target = schemas[schema.$ref.replace('#/components/schemas/', '')];
  // A named enum keeps its name (generators make it a type); a plain string, number... is copied.
  if (type && type !== 'object' && type !== 'array' && target && !target.$ref && !target.enum) {
    return { ...convertSchema(target, schemas), nullable: true };
  }
  if (!type && target && (target.oneOf || target.anyOf)) return nullableBranch(convertSchema(target, schemas), schemas);
  // An object or a named enum: a reference to its nullable twin (`UserNullable`, added to the
  // components by toOpenApi30), as 3.0 cannot add null beside a `$ref`, and `nullable` beside
  // `allOf: [$ref]` still fails the referenced schema for a null (3.0.3 validators flag it).
  const name = schema.$ref.replace('#/components/schemas/', '');
  nullableTwins.add(name);
  return { $ref: `#/components/schemas/${name}${NULLABLE_SUFFIX}` };
}

/** The suffix of a component's nullable twin in the 3.0 rendering. */
export const NULLABLE_SUFFIX = 'Nullable';
/** The components a rendering needs a nullable twin of (filled while converting). */
let nullableTwins = new Set();

/** The nullable twin of a converted component: the same schema, taking null too. */
function nullableTwin(name, converted) {
  const twin = { ...converted, nullable: true };
  if (!twin.type) twin.type = 'object';
  twin.description = `${converted.description ? `${converted.description}\n\n` : ''}\`${name}\`, or null.`;
  // 3.0.3: `nullable` does not widen an `enum`; the null has to be one of its values.
  if (Array.isArray(twin.enum)) {
    twin.enum = [...twin.enum, null];
    // Its own constant names: a Go package holds both enums' constants.
    const prefix = `${name.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toUpperCase()}_`;
    const varnames = twin['x-enum-varnames'];
    if (Array.isArray(varnames)) twin['x-enum-varnames'] = [...varnames.map((v) => v.replace(prefix, `${prefix}NULLABLE_`)), `${prefix}NULLABLE_NULL`];
  }
  return twin;
}

/**
 * One schema object (and every schema inside it), converted; the input is not modified. `schemas` are
 * the 3.1 document's component schemas: a nullable `$ref` takes the `type` of the schema it names, as
 * 3.0 ignores `nullable` without a `type`.
 */
export function convertSchema(schema, schemas = {}) {
  if (!schema || typeof schema !== 'object' || Array.isArray(schema)) return schema;
  if (schema.$ref) return { $ref: schema.$ref };
  const sub = (s) => convertSchema(s, schemas);
  const out = {};
  let nullableUnion;
  for (const [key, value] of Object.entries(schema)) {
    if (DROPPED_KEYWORDS.includes(key)) continue;
    switch (key) {
      case 'properties':
        out.properties = Object.fromEntries(Object.entries(value).map(([name, s]) => [name, sub(s)]));
        break;
      case 'items':
      case 'not':
        out[key] = sub(value);
        break;
      case 'additionalProperties':
        out[key] = typeof value === 'object' ? sub(value) : value;
        break;
      case 'oneOf':
      case 'anyOf':
        if (value.some(isNullSchema)) nullableUnion = key;
        out[key] = value.filter((s) => !isNullSchema(s)).map(sub);
        break;
      case 'allOf':
        out[key] = value.map(sub);
        break;
      case 'const':
        out.enum = [value];
        break;
      case 'examples':
        if (Array.isArray(value) && value.length > 0) out.example = value[0];
        break;
      case 'exclusiveMinimum':
      case 'exclusiveMaximum':
        if (typeof value === 'number') {
          out[key === 'exclusiveMinimum' ? 'minimum' : 'maximum'] = value;
          out[key] = true;
        } else out[key] = value;
        break;
      default:
        out[key] = value;
    }
  }
  // 3.0 requires `items` with `type: array` (3.1 reads a missing one as "anything").
  if (out.type === 'array' && !('items' in out)) out.items = {};
  if (out.type === 'null') {
    // Always null (a field the real API keeps but Windsock never fills): 3.0 has no null type.
    out.type = 'string';
    out.nullable = true;
    out['x-always-null'] = true;
  }
  if (Array.isArray(out.type)) {
    const types = out.type.filter((t) => t !== 'null');
    const nullable = types.length < out.type.length;
    if (types.length === 1) {
      out.type = types[0];
      if (nullable) out.nullable = true;
    } else {
      delete out.type;
      out.oneOf = types.map((type, i) => (nullable && i === 0 ? { type, nullable: true } : { type }));
    }
  }
  if (nullableUnion) {
    const union = nullableUnion;
    const branches = out[union];
    delete out[union];
    const type = typeOf({ [union]: branches }, schemas);
    if (branches.length === 1) {
      const branch = nullableBranch(branches[0], schemas);
      // A `$ref` takes no siblings in 3.0: with a description or readOnly beside it, `allOf: [$ref]`.
      // `nullable` beside it too (the twin takes null already): generators that read a property's
      // own `nullable` (OpenAPI Generator's python) otherwise refuse a null in a required property.
      if (branch.$ref && Object.keys(out).length > 0) {
        const twinOf = branch.$ref.endsWith(NULLABLE_SUFFIX) ? { $ref: branch.$ref.slice(0, -NULLABLE_SUFFIX.length) } : undefined;
        const nullable = twinOf ? { type: typeOf(twinOf, schemas) ?? 'object', nullable: true } : {};
        return { allOf: [branch], ...out, ...nullable };
      }
      return { ...branch, ...out };
    }
    if (type) Object.assign(out, { type, nullable: true, [union]: branches });
    // Branches of different types: the first one takes the null.
    else out[union] = [nullableBranch(branches[0], schemas), ...branches.slice(1)];
  }
  return out;
}

const HTTP_METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'];

function convertParameter(parameter, schemas) {
  if (parameter.$ref) return parameter;
  const out = { ...parameter };
  if (out.schema) out.schema = convertSchema(out.schema, schemas);
  if (out.content) out.content = convertContent(out.content, schemas);
  return out;
}

function convertContent(content, schemas) {
  return Object.fromEntries(
    Object.entries(content).map(([type, media]) => [type, media.schema ? { ...media, schema: convertSchema(media.schema, schemas) } : media]),
  );
}

function convertHeaders(headers, schemas) {
  return Object.fromEntries(Object.entries(headers).map(([name, h]) => [name, convertParameter(h, schemas)]));
}

function convertResponse(response, schemas) {
  if (response.$ref) return response;
  const out = { ...response };
  if (out.content) out.content = convertContent(out.content, schemas);
  if (out.headers) out.headers = convertHeaders(out.headers, schemas);
  return out;
}

function convertRequestBody(body, schemas) {
  if (body.$ref) return body;
  return body.content ? { ...body, content: convertContent(body.content, schemas) } : body;
}

/** 3.0 takes scope names only for OAuth2 and OpenID Connect schemes: the others' move to an extension. */
function convertSecurity(security, schemes, operation) {
  const scopes = new Set();
  const requirements = security.map((requirement) =>
    Object.fromEntries(
      Object.entries(requirement).map(([name, names]) => {
        const type = schemes[name]?.type;
        if (type === 'oauth2' || type === 'openIdConnect') return [name, names];
        names.forEach((n) => scopes.add(n));
        return [name, []];
      }),
    ),
  );
  if (scopes.size > 0) operation['x-required-scopes'] = [...scopes];
  return requirements;
}

function convertOperation(operation, schemes, schemas) {
  const out = { ...operation };
  if (out.parameters) out.parameters = out.parameters.map((p) => convertParameter(p, schemas));
  if (out.requestBody) out.requestBody = convertRequestBody(out.requestBody, schemas);
  if (out.responses) out.responses = mapValues(out.responses, (r) => convertResponse(r, schemas));
  if (out.security) out.security = convertSecurity(out.security, schemes, out);
  delete out.callbacks;
  return out;
}

const mapValues = (object, f) => Object.fromEntries(Object.entries(object ?? {}).map(([k, v]) => [k, f(v)]));

/** The whole 3.1 document (parsed) as a 3.0.3 document; the input is not modified. */
export function toOpenApi30(doc) {
  nullableTwins = new Set();
  const { webhooks, jsonSchemaDialect, ...rest } = doc;
  void webhooks;
  void jsonSchemaDialect;
  const out = { ...rest, openapi: '3.0.3' };
  const { summary, license, ...info } = doc.info;
  out.info = { ...info };
  if (summary) out.info.description = info.description ? `${summary}\n\n${info.description}` : summary;
  if (license) {
    const { identifier, ...licenseRest } = license;
    out.info.license = { ...licenseRest };
    if (identifier && !licenseRest.url) out.info.license.url = `https://spdx.org/licenses/${identifier}.html`;
  }
  const components = doc.components ?? {};
  const schemes = components.securitySchemes ?? {};
  const schemas = components.schemas ?? {};
  out.paths = mapValues(doc.paths, (item) =>
    Object.fromEntries(
      Object.entries(item).map(([key, value]) => {
        if (HTTP_METHODS.includes(key)) return [key, convertOperation(value, schemes, schemas)];
        if (key === 'parameters') return [key, value.map((p) => convertParameter(p, schemas))];
        return [key, value];
      }),
    ),
  );
  if (doc.security) out.security = convertSecurity(doc.security, schemes, {});
  const { pathItems, ...otherComponents } = components;
  void pathItems;
  out.components = { ...otherComponents };
  const convert = (f) => (v) => f(v, schemas);
  if (components.schemas) out.components.schemas = mapValues(schemas, convert(convertSchema));
  if (components.parameters) out.components.parameters = mapValues(components.parameters, convert(convertParameter));
  if (components.headers) out.components.headers = mapValues(components.headers, convert(convertParameter));
  if (components.responses) out.components.responses = mapValues(components.responses, convert(convertResponse));
  if (components.requestBodies) out.components.requestBodies = mapValues(components.requestBodies, convert(convertRequestBody));
  for (const name of [...nullableTwins].sort()) {
    if (schemas[`${name}${NULLABLE_SUFFIX}`])
      throw new Error(`${name}${NULLABLE_SUFFIX}: a component of that name exists; the 3.0 rendering names nullable twins so`);
    out.components.schemas[`${name}${NULLABLE_SUFFIX}`] = nullableTwin(name, out.components.schemas[name]);
  }
  return out;
}
