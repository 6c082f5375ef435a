/**
 * The contract documents itself (issue 14): every operation says what it does, every request body
 * and every 2xx JSON response shows an example, and every example in the document (of a media
 * type, a parameter or a header, and a schema's own `examples`) is valid for the schema beside it.
 * Checked with Ajv's JSON Schema 2020-12, the dialect of OpenAPI 3.1, over the bundled document
 * the service loads, so a `$ref` to a shared example is followed as clients follow it.
 */
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { loadSpec } from '../../src/spec';

type Node = Record<string, unknown>;

const SPEC_ID = 'windsock:openapi';
const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
const doc = structuredClone(loadSpec().doc) as Node;

/** Follows local `$ref`s (the bundle has no other kind). */
function resolve(node: unknown): Node {
  let n = node as Node;
  while (typeof n?.$ref === 'string') {
    n = (n.$ref as string)
      .slice(2)
      .split('/')
      .map((k) => k.replace(/~1/g, '/').replace(/~0/g, '~'))
      .reduce<unknown>((o, k) => (o as Node)[k], doc) as Node;
  }
  return n;
}

const pointer = (...keys: string[]) => keys.map((k) => k.replace(/~/g, '~0').replace(/\//g, '~1')).join('/');

interface Operation {
  where: string;
  op: Node;
}
const operations: Operation[] = Object.entries(doc.paths as Record<string, Node>).flatMap(([path, item]) =>
  METHODS.filter((m) => item[m]).map((m) => ({ where: `${m.toUpperCase()} ${path}`, op: item[m] as Node })),
);

/** The example values an example holder (media type, parameter, header) gives: `example`, or each of `examples`. */
function examplesOf(holder: Node): unknown[] {
  if ('example' in holder) return [holder.example];
  return Object.values((holder.examples as Record<string, unknown> | undefined) ?? {}).map((e) => resolve(e).value);
}

interface Example {
  /** Where the example is, for the failure message. */
  where: string;
  /** JSON pointer (in the document) of the schema it must satisfy. */
  schema: string;
  value: unknown;
}

/**
 * Every example of the document with the schema it belongs to. A node with a `schema` and an
 * `example`/`examples` map holds examples for that schema; a node whose `examples` is an array is a
 * schema with examples of itself. Named examples (`components/examples`) are checked where used.
 */
function collect(node: unknown, at: string[], out: Example[] = []): Example[] {
  if (Array.isArray(node)) node.forEach((v, i) => collect(v, [...at, String(i)], out));
  if (!node || typeof node !== 'object' || Array.isArray(node)) return out;
  const n = node as Node;
  if (at.join('/') === 'components/examples') return out;
  if (n.schema && ('example' in n || 'examples' in n)) {
    for (const value of examplesOf(n)) out.push({ where: at.join(' > '), schema: pointer(...at, 'schema'), value });
  } else if (Array.isArray(n.examples)) {
    for (const value of n.examples) out.push({ where: at.join(' > '), schema: pointer(...at), value });
  }
  for (const [k, v] of Object.entries(n)) collect(v, [...at, k], out);
  return out;
}

describe('the spec documents every operation', () => {
  it('has a description on every operation', () => {
    expect(operations.length).toBeGreaterThan(50);
    expect(operations.filter(({ op }) => typeof op.description !== 'string' || !op.description.trim()).map((o) => o.where)).toEqual([]);
  });

  it('has an example for every request body, in each of its media types', () => {
    const missing = operations.flatMap(({ where, op }) =>
      Object.entries((resolve(op.requestBody ?? {}).content as Record<string, Node> | undefined) ?? {})
        .filter(([, media]) => examplesOf(media).length === 0)
        .map(([type]) => `${where} ${type}`),
    );
    expect(operations.filter(({ op }) => op.requestBody).length).toBeGreaterThan(10);
    expect(missing).toEqual([]);
  });

  it('has an example for every 2xx JSON response', () => {
    const responses = operations.flatMap(({ where, op }) =>
      Object.entries(op.responses as Record<string, unknown>)
        .filter(([status]) => status.startsWith('2'))
        .map(([status, r]) => ({ where: `${where} ${status}`, media: (resolve(r).content as Record<string, Node> | undefined)?.['application/json'] }))
        .filter((r): r is { where: string; media: Node } => r.media !== undefined),
    );
    expect(responses.length).toBeGreaterThan(50);
    expect(responses.filter((r) => examplesOf(r.media).length === 0).map((r) => r.where)).toEqual([]);
  });
});

describe('every example in the spec', () => {
  const ajv = new Ajv2020({ allErrors: true, strict: false });
  addFormats(ajv);
  // OpenAPI's own format for a file part of a multipart body; any string is one.
  ajv.addFormat('binary', true);
  ajv.addSchema({ ...doc, $id: SPEC_ID });
  const examples = collect(doc, []);

  it('is found: request bodies, responses and schemas all have some', () => {
    expect(examples.filter((e) => e.where.includes('requestBody')).length).toBeGreaterThan(10);
    expect(examples.filter((e) => e.where.includes('responses')).length).toBeGreaterThan(45);
    expect(examples.filter((e) => e.where.startsWith('components > schemas')).length).toBeGreaterThan(0);
  });

  it('is valid for its schema (JSON Schema 2020-12)', () => {
    const faults = examples.flatMap(({ where, schema, value }) => {
      const validate = ajv.getSchema(`${SPEC_ID}#/${schema}`);
      if (!validate) return [`${where}: no schema at ${schema}`];
      return validate(value) ? [] : validate.errors!.map((e) => `${where}: ${e.instancePath || '(root)'} ${e.message} ${JSON.stringify(e.params)}`);
    });
    expect(faults).toEqual([]);
  });

  it('fails on an example that breaks its schema, so the check above has teeth', () => {
    const validate = ajv.getSchema(`${SPEC_ID}#/components/schemas/Build`)!;
    expect(validate({ id: 'not-a-uuid' })).toBe(false);
  });
});
