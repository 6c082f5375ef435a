import { fieldOf } from '../../core/guards';
/**
 * Walking the spec's operations: which method and path each is mounted on, with the `$ref`s of
 * its parts followed. Shared by what the app derives from the spec: the scope guards
 * (http/auth.ts), the parameter rules (http/parameters.ts), the validators
 * (http/openapi-validator.ts) and the handlers' bindings (http/operation.ts), so all four read
 * the paths the same way.
 */

export const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;
export type Method = (typeof METHODS)[number];

export type SpecDoc = { paths?: Record<string, Record<string, unknown>> } & Record<string, unknown>;

/** One operation of the spec, where it is mounted. */
export interface SpecOperation<T> {
  method: Method;
  /** As the spec writes it: `/v2/organizations/{org_slug}`. */
  specPath: string;
  /** As Express matches it: `/v2/organizations/:org_slug`. */
  path: string;
  operation: T & { operationId?: string };
  /** The path item: its `parameters` are shared by its operations. */
  pathItem: Record<string, unknown>;
}

/** Every operation of the spec, in the order it lists them. */
export function specOperations<T = Record<string, unknown>>(doc: SpecDoc): SpecOperation<T>[] {
  const found: SpecOperation<T>[] = [];
  for (const [specPath, pathItem] of Object.entries(doc.paths ?? {})) {
    for (const method of METHODS) {
      // cast: the spec's own shape (checked by Redocly's lint and the validator's load), as the caller reads it.
      const operation = pathItem[method] as (T & { operationId?: string }) | undefined;
      if (operation) found.push({ method, specPath, path: specPath.replace(/\{([^}]+)\}/g, ':$1'), operation, pathItem });
    }
  }
  return found;
}

/** A schema, parameter or body with its `$ref` (local, `#/...`) followed. */
export function resolveRef<T extends { $ref?: string }>(doc: SpecDoc, node: T | undefined, depth = 0): T | undefined {
  if (!node || !node.$ref || depth > 20) return node;
  const target = node.$ref
    .replace(/^#\//, '')
    .split('/')
    .reduce<unknown>((acc, key) => fieldOf(acc, key.replace(/~1/g, '/').replace(/~0/g, '~')), doc);
  // cast: a local $ref names a node of the same kind as the one that holds it.
  return resolveRef(doc, target as T, depth + 1);
}
