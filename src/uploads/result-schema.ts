/**
 * A test result checked against the spec's `TestResult` schema, one result at a time. The
 * hand-written checks of ./results give the documented reasons for the common faults (a blank
 * name, an unknown result); this is the backstop that keeps anything the schema forbids (a
 * `history.section` of 1,000 characters, a number where a string goes) out of storage, for JSON
 * bodies and multipart files alike, with the schema as the one definition.
 *
 * JSON bodies used to have their results checked by express-openapi-validator with the rest of
 * the body: one synchronous walk over every result, about 80 ms of a 50 MB upload during which no
 * other request was answered. Now the validator checks the body around `data` (see
 * `uploadJsonBody`) and the results are checked here, in the batches ./service already yields
 * between, and a bad one is rejected on its own as the Test Engine's `errors` describe.
 */
import Ajv2020, { type ValidateFunction } from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { readableReason } from '../core/schema-messages';
import { isRecord } from '../core/guards';
import { loadSpec } from '../spec';

const SPEC_ID = 'windsock:openapi';

let compiled: ValidateFunction | undefined;

type Schemas = Record<string, unknown>;

/** The named schemas `name` needs: itself and every `#/components/schemas/...` it reaches. */
function closure(schemas: Schemas, name: string, into: Schemas = {}): Schemas {
  if (name in into) return into;
  into[name] = schemas[name];
  const refs = JSON.stringify(schemas[name]).matchAll(/"#\/components\/schemas\/([^"]+)"/g);
  for (const [, ref] of refs) closure(schemas, ref!, into);
  return into;
}

/**
 * Compiled on the first upload, not at start-up (most processes never take one), from the
 * schemas TestResult reaches only: adding all of the spec's took Ajv 50 ms.
 */
function validator(): ValidateFunction {
  if (!compiled) {
    const ajv = new Ajv2020({ allErrors: false, strict: false });
    addFormats(ajv);
    const components = loadSpec().doc.components;
    const schemas = isRecord(components) ? components.schemas : undefined;
    if (!isRecord(schemas)) throw new Error('The bundled spec has no components.schemas');
    ajv.addSchema({ $id: SPEC_ID, components: { schemas: closure(schemas, 'TestResult') } });
    compiled = ajv.getSchema(`${SPEC_ID}#/components/schemas/TestResult`)!;
  }
  return compiled;
}

/** `/failure_expanded/0/expanded` -> `failure_expanded[0].expanded`. */
function fieldOf(instancePath: string): string {
  return instancePath
    .split('/')
    .filter(Boolean)
    .reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

/** The first way the result breaks the schema, as a field and a reason; null when it keeps it. */
export function schemaFault(result: unknown): { field: string; code: string } | null {
  const validate = validator();
  if (validate(result)) return null;
  const e = validate.errors![0]!;
  return { field: fieldOf(e.instancePath) || 'data', code: readableReason(e.message, `${e.keyword}.openapi.validation`) };
}
