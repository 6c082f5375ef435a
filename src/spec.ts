/** The OpenAPI document, read once: parsed for the validator and the scope guards, and as served text. */
import fs from 'node:fs';
import path from 'node:path';
import YAML from 'yaml';

export interface Spec {
  doc: Record<string, unknown>;
  yaml: string;
  json: string;
}

let cached: Spec | undefined;

/** Works from the TypeScript sources (src/) and from the compiled output (dist/src/). */
function specPath(): string {
  for (const up of ['..', '../..']) {
    const candidate = path.resolve(__dirname, up, 'openapi', 'openapi.yaml');
    if (fs.existsSync(candidate)) return candidate;
  }
  throw new Error('openapi/openapi.yaml not found');
}

export function loadSpec(): Spec {
  if (!cached) {
    const yaml = fs.readFileSync(specPath(), 'utf8');
    const doc = YAML.parse(yaml) as Record<string, unknown>;
    cached = { doc, yaml, json: JSON.stringify(doc) };
  }
  return cached;
}
