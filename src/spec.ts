/**
 * The OpenAPI document, read once: parsed for the validator and the scope guards, and as served text.
 * It is the bundle `npm run generate` writes (generated/openapi.yaml: openapi/openapi.yaml with the
 * area files it references in one document), so start-up resolves no file references and needs no
 * devDependency.
 */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export interface Spec {
  doc: Record<string, unknown>;
  yaml: string;
  json: string;
  /** The OpenAPI 3.0.3 rendering (generated/openapi-3.0.json) as served text. */
  json30: string;
}

let cached: Spec | undefined;

/** Works from the TypeScript sources (src/) and from the compiled output (dist/src/). */
function generatedPath(file: string): string {
  for (const up of ['..', '../..']) {
    const candidate = path.resolve(__dirname, up, 'generated', file);
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error(`generated/${file} not found: run \`npm run generate\``);
}

export function loadSpec(): Spec {
  if (!cached) {
    const yaml = fs.readFileSync(generatedPath('openapi.yaml'), 'utf8');
    const doc = YAML.parse(yaml) as Record<string, unknown>;
    const json30 = fs.readFileSync(generatedPath('openapi-3.0.json'), 'utf8');
    cached = { doc, yaml, json: JSON.stringify(doc), json30 };
  }
  return cached;
}
