/**
 * Which of the spec's operations a request path names, before any route runs: the operation id
 * that request logs and metrics carry (never the raw path: it holds slugs and ids), and the
 * methods an `OPTIONS` answer (`Allow`) and a CORS preflight (`Access-Control-Allow-Methods`)
 * list, both read from the spec rather than from whichever Express routes happen to match.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { METHODS, specOperations, type Method, type SpecDoc } from './spec-operations';
import { isOneOf } from '../../db/row-types';
import { routeKey } from './route-table';

interface PathTemplate {
  /** The path's key in route tables (route-table.ts): the spec path with its parameters unnamed. */
  route: string;
  pattern: RegExp;
  /** Literal segments win over parameters (`/builds/{number}` vs a literal sibling). */
  params: number;
  operations: Map<Method, string>;
}

export interface SpecPathIndex {
  /** The spec's operations on the path, by method; undefined when the spec has no such path. */
  lookup(path: string): Map<Method, string> | undefined;
  /** The spec path a request path names (its route-table key) and its operations; undefined outside the spec. */
  match(path: string): { route: string; operations: Map<Method, string> } | undefined;
}

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

export function specPathIndex(doc: SpecDoc): SpecPathIndex {
  const byPath = new Map<string, PathTemplate>();
  for (const { method, specPath, operation } of specOperations(doc)) {
    let template = byPath.get(specPath);
    if (!template) {
      const parts = specPath.split(/\{[^}]+\}/);
      template = {
        route: routeKey(specPath),
        pattern: new RegExp(`^${parts.map(escape).join('[^/]+')}/?$`),
        params: parts.length - 1,
        operations: new Map(),
      };
      byPath.set(specPath, template);
    }
    template.operations.set(method, operation.operationId ?? `${method} ${specPath}`);
  }
  // By segment count (a template's parameters match one segment each, and an optional trailing
  // slash), so a lookup tests the few templates of its length, not all ~175; literals first.
  const bySegments = new Map<number, PathTemplate[]>();
  for (const t of [...byPath.values()].sort((a, b) => a.params - b.params)) {
    const n = segments(t.route);
    bySegments.set(n, [...(bySegments.get(n) ?? []), t]);
  }
  const cache = new Map<string, PathTemplate | undefined>();
  const find = (path: string): PathTemplate | undefined => {
    if (cache.has(path)) return cache.get(path);
    const trimmed = path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path;
    const found = bySegments.get(segments(trimmed))?.find((t) => t.pattern.test(path));
    // Paths carry ids: keep the cache bounded, the match itself is cheap.
    if (cache.size >= 5_000) cache.clear();
    cache.set(path, found);
    return found;
  };
  return {
    lookup: (path) => find(path)?.operations,
    match(path) {
      const t = find(path);
      return t && { route: t.route, operations: t.operations };
    },
  };
}

const segments = (path: string) => path.split('/').length;

/** The HTTP methods a path answers: its operations', with HEAD beside GET, and OPTIONS. */
export function allowedMethods(operations: Map<Method, string>): string[] {
  const methods = [...operations.keys()].map((m) => m.toUpperCase());
  if (methods.includes('GET')) methods.push('HEAD');
  return [...methods, 'OPTIONS'];
}

/**
 * `res.locals.operationId`: the spec operation the request names (unset outside the spec), and
 * `res.locals.specRoute`: the spec path it names, whatever the method (null outside the spec),
 * by which the route tables (route-table.ts) pick the one route a request runs.
 */
export function tagOperation(index: SpecPathIndex) {
  return (req: Request, res: Response, next: NextFunction) => {
    const method = req.method === 'HEAD' ? 'get' : req.method.toLowerCase();
    const found = index.match(req.path);
    res.locals.specRoute = found?.route ?? null;
    if (found) {
      const id = isOneOf(METHODS, method) ? found.operations.get(method) : undefined;
      if (id) res.locals.operationId = id;
    }
    next();
  };
}

/**
 * `OPTIONS` on a path of the spec: 204 with `Allow` listing exactly the methods the spec declares
 * there. `cors`, when configured, runs in between: a preflight from an allowed origin is answered
 * by it (with the same `Allow`), and its headers go on every other response.
 */
export function answerOptions(index: SpecPathIndex, cors?: RequestHandler) {
  return (req: Request, res: Response, next: NextFunction) => {
    const operations = req.method === 'OPTIONS' ? index.lookup(req.path) : undefined;
    if (operations) res.setHeader('Allow', allowedMethods(operations).join(', '));
    const finish = () => (operations ? res.status(204).end() : next());
    if (!cors) return finish();
    cors(req, res, (err?: unknown) => (err ? next(err) : finish()));
  };
}
