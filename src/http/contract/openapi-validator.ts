/**
 * express-openapi-validator as the app installs it: one validator per documented path, mounted
 * on that path only and built on the path's first request.
 *
 * Why not one validator for the whole spec: the validator (5.6.2, and 6.0.0-alpha.9) finds a
 * request's operation by compiling the regular expression of every route it knows, on every
 * request, and keeping none (`lookupRoute` in its openapi.metadata.js; a cache is proposed
 * upstream in cdimascio/express-openapi-validator#1217, open). With all ~50 paths that was about
 * 20% of a get-a-build's CPU (BENCHMARKS.md, `npm run bench:routes`). Here the route table
 * (route-table.ts) picks the path from the spec path `tagOperation` found, and the validator
 * behind it knows that one route.
 * Only the library's public API is used (`middleware`, `error.NotFound`): no patch to carry.
 *
 * Each validator gets the document with its one path and the components that path reaches:
 * with every component each, they held about 260 MB between them. Building one takes tens of
 * milliseconds, so they are built when first needed: an app that serves a few paths (a test)
 * builds only those.
 *
 * A built validator depends on nothing but its document and options, so it is kept by a
 * digest of both and reused by every app of the process that serves the same path the same
 * way (the test suites build a few hundred apps; each paid 0.3 to 0.7 s per path it served).
 * Jest loads this module anew for each test file: its test environment hands in, through
 * `shareValidators`, a factory that outlives the files (test/support/environment.ts).
 * The library installs its path-parameter hook (`app.param`) on the first app a validator
 * serves only, as it did per validator before; the hook rewrites `req.params` for the app's
 * own routes with parameters that run after validation, and this app has none (its routers
 * are mounted without a path), so no app's answers depend on it.
 *
 * What a single validator did, kept: literal segments win over parameters (the spec-path
 * lookup's order; without `tagOperation`, paths are tried in the validator's order) and only
 * the first path that matches validates; a documented path with another method
 * is its validator's 405 (HEAD is validated as GET); a path no operation documents is the validator's 404 (unless the
 * options say `ignoreUndocumented`).
 */
import crypto from 'node:crypto';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import * as OpenApiValidator from 'express-openapi-validator';
import { specOperations, type SpecDoc as Paths } from './spec-operations';
import { routeTable, runHandlers } from './route-table';
import { compileMetaSchemaOnDemand } from './meta-schema';

compileMetaSchemaOnDemand();

type ValidatorOptions = Omit<Parameters<typeof OpenApiValidator.middleware>[0], 'apiSpec'>;
type SpecDoc = Paths & { components?: Record<string, Record<string, unknown> | undefined> };
/** What express-openapi-validator's `middleware` returns: the handlers one validator runs. */
export type ValidatorHandlers = ReturnType<typeof OpenApiValidator.middleware>;
/**
 * The validator for `apiSpec` with `options`, built once per `key` (a digest of both) and
 * returned as built after that.
 */
export type ValidatorFactory = (key: string, apiSpec: SpecDoc, options: ValidatorOptions) => ValidatorHandlers;

const built = new Map<string, ValidatorHandlers>();
let factory: ValidatorFactory = (key, apiSpec, options) => {
  let handlers = built.get(key);
  if (!handlers) {
    // cast: the validator types its document as openapi-types' OpenAPIV3.Document; ours is the same JSON, typed loosely.
    handlers = OpenApiValidator.middleware({ ...options, apiSpec: apiSpec as never });
    built.set(key, handlers);
  }
  return handlers;
};

/** Validators come from `shared` from now on (a factory that outlives this module: see the header). */
export function shareValidators(shared: ValidatorFactory): void {
  factory = shared;
}

/**
 * The validator of one path's document. Options that hold a function (a custom format, a
 * security handler) have no digest that says what they do: those validators are not shared.
 */
function validatorFor(apiSpec: SpecDoc, options: ValidatorOptions): ValidatorHandlers {
  const text = shareableJson([apiSpec, options]);
  // cast: as in the factory above.
  if (text === undefined) return OpenApiValidator.middleware({ ...options, apiSpec: apiSpec as never });
  return factory(crypto.createHash('sha256').update(text).digest('base64url'), apiSpec, options);
}

/** `value` as JSON, or undefined when it holds a function (which no text describes). */
function shareableJson(value: unknown): string | undefined {
  try {
    return JSON.stringify(value, (_key, v: unknown) => {
      if (typeof v === 'function') throw new TypeError('not shareable');
      return v;
    });
  } catch {
    return undefined;
  }
}

/**
 * Each document's path validators by options and path. An app built again on the same document
 * and options (each test context builds one) takes the path's validator from here, without
 * copying and digesting the path's document again (about 4% of a request-heavy test file's CPU
 * went to that).
 */
const byDocument = new WeakMap<SpecDoc, Map<string, ValidatorHandlers>>();

function pathValidator(doc: SpecDoc, path: string, options: ValidatorOptions, optionsJson: string | undefined): ValidatorHandlers {
  if (optionsJson === undefined) return validatorFor(documentFor(doc, path), options);
  let known = byDocument.get(doc);
  if (!known) byDocument.set(doc, (known = new Map()));
  const key = `${optionsJson} ${path}`;
  let handlers = known.get(key);
  if (!handlers) {
    handlers = validatorFor(documentFor(doc, path), options);
    known.set(key, handlers);
  }
  return handlers;
}

export function openApiValidator(doc: SpecDoc, options: ValidatorOptions): RequestHandler {
  // Each documented path once, as the spec writes it and as Express matches it, reached through
  // the request's spec path (route-table.ts), which prefers literal segments as the validator does.
  const table = routeTable();
  const validated = new WeakSet<Request>();
  const optionsJson = shareableJson(options);
  const routes = new Map(specOperations(doc).map((o) => [o.specPath, o.path]));
  for (const [path, route] of [...routes].sort(([, a], [, b]) => validatorOrder(a, b))) {
    let validate: RequestHandler[] | undefined;
    table.add('all', route, (req: Request, res: Response, next: NextFunction) => {
      // Only the first path that matches validates (an app without `tagOperation` tries them in turn).
      if (validated.has(req)) return next();
      // Each handler's promise becomes one of this module's realm: a shared validator may come
      // from another (the test environment's), whose promises Express's router warns about.
      validate ??= pathValidator(doc, path, options, optionsJson).map((h) => (q: Request, s: Response, n: NextFunction) => Promise.resolve(h(q, s, n)));
      // HEAD is GET without the body (Express routes it to the GET handlers): the validator
      // knows only the spec's methods and would answer HEAD its 405, so it validates a HEAD as
      // the GET it is, and the request goes on as HEAD.
      const head = req.method === 'HEAD';
      if (head) req.method = 'GET';
      runHandlers(validate, req, res, (err?: unknown) => {
        if (head) req.method = 'HEAD';
        if (err === undefined || err === null) validated.add(req);
        next(err);
      });
    });
  }
  return (req: Request, res: Response, next: NextFunction) => {
    table.handler(req, res, (err?: unknown) => {
      if (err !== undefined && err !== null) return next(err);
      if (validated.has(req) || options.ignoreUndocumented) return next();
      next(new OpenApiValidator.error.NotFound({ path: req.path, message: 'not found' }));
    });
  };
}

/** The validator's route order (its sortRoutes): a route before those it is a prefix of, literals before `:parameters`. */
function validatorOrder(a: string, b: string): number {
  const [x, y] = [a.replace(/\/:/g, '/~'), b.replace(/\/:/g, '/~')];
  if (x.startsWith(y)) return -1;
  if (y.startsWith(x)) return 1;
  return x > y ? 1 : -1;
}

/**
 * The document with only `path`, and of the components only those it reaches, directly or
 * through other components (by `$ref` or a discriminator mapping: any `#/components/...`
 * string). Security schemes are kept whole (operations name them without a reference). A copy:
 * the validator changes the document it is given.
 */
export function documentFor(doc: SpecDoc, path: string): SpecDoc {
  const paths = { [path]: doc.paths![path]! };
  const components: Record<string, Record<string, unknown>> = {};
  const visit = (node: unknown): void => {
    if (typeof node === 'string') {
      const ref = /^#\/components\/([^/]+)\/([^/]+)/.exec(node);
      if (!ref) return;
      const [kind, name] = [ref[1]!, ref[2]!.replace(/~1/g, '/').replace(/~0/g, '~')];
      const target = doc.components?.[kind]?.[name];
      if (target === undefined || components[kind]?.[name] !== undefined) return;
      (components[kind] ??= {})[name] = target;
      visit(target);
    } else if (node && typeof node === 'object') {
      for (const value of Object.values(node)) visit(value);
    }
  };
  visit(paths);
  if (doc.components?.securitySchemes) components.securitySchemes = doc.components.securitySchemes;
  return structuredClone({ ...doc, paths, components });
}
