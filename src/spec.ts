/**
 * The OpenAPI document, read once: parsed for the validator and the scope guards, and as served text.
 * It is the bundle `npm run generate` writes (generated/openapi.yaml: openapi/openapi.yaml with the
 * area files it references in one document), so start-up resolves no file references and needs no
 * devDependency. The document is parsed from the bundle's JSON twin (generated/openapi.json):
 * parsing the YAML took about a second of every start (BENCHMARKS.md, "Start-up").
 */
import fs from 'node:fs';
import path from 'node:path';
import { isRecord } from './core/guards';

export interface Spec {
  doc: Record<string, unknown>;
  yaml: string;
  json: string;
  /** The OpenAPI 3.0.3 rendering (generated/openapi-3.0.json) as served text. */
  json30: string;
}

let cached: Spec | undefined;

/** Works from the TypeScript sources (src/) and from the compiled output (dist/src/). */
function generatedDir(): string {
  for (const up of ['..', '../..']) {
    const candidate = path.resolve(__dirname, up, 'generated');
    if (fs.existsSync(path.join(candidate, 'openapi.json'))) return candidate;
  }
  throw new Error('generated/openapi.json not found: run `npm run generate`');
}

export function loadSpec(): Spec {
  if (!cached) {
    const dir = generatedDir();
    const doc: unknown = JSON.parse(fs.readFileSync(path.join(dir, 'openapi.json'), 'utf8'));
    if (!isRecord(doc)) throw new Error(`${path.join(dir, 'openapi.json')} is not a JSON object`);
    cached = {
      doc,
      yaml: fs.readFileSync(path.join(dir, 'openapi.yaml'), 'utf8'),
      json: JSON.stringify(doc),
      json30: fs.readFileSync(path.join(dir, 'openapi-3.0.json'), 'utf8'),
    };
  }
  return cached;
}
