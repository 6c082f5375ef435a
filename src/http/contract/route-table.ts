/**
 * Middleware mounted per operation of the spec, reached through one table lookup instead of
 * Express walking every route. An Express router tries each of its routes in turn and, when one
 * calls `next()`, goes on trying the rest: the scope guards, the parameter rules, the body
 * parsers, the validators and the handlers, one route per operation each, were some 500 path
 * matches per request (issue 31: about a tenth of a get-a-build's CPU). `tagOperation`
 * (spec-paths.ts) finds the request's spec path once; a table runs the one small router
 * registered for that path (and method), which still matches it with Express's own expression,
 * so `req.params` are what they were. A request outside the spec runs nothing of a table; an app
 * without `tagOperation` routes through every route in order, as before.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response, type Router } from 'express';
import type { Method } from './spec-operations';

/** A path's key: `/v2/organizations/{org_slug}` and `/v2/organizations/:org` are both `/v2/organizations/{}`. */
export const routeKey = (path: string): string => path.replace(/\{[^}]+\}|:[A-Za-z0-9_]+/g, '{}');

export interface RouteTable {
  /**
   * Mounts `handlers` on `method` and `path` (the spec's or Express's spelling) as
   * `router[method](path, ...handlers)` would. `all`: whatever the method (a table holds either
   * `all` routes or per-method ones).
   */
  add(method: Method | 'all', path: string, ...handlers: RequestHandler[]): void;
  /** The table as middleware: the request's route's handlers, or nothing. */
  handler: RequestHandler;
}

interface Entry {
  method: Method | 'all';
  path: string;
  handlers: RequestHandler[];
}

/** What each table was given, in order, by its handler: how `joinRouteTables` rebuilds them as one. */
const entriesOf = new WeakMap<RequestHandler, Entry[]>();

interface Route {
  pattern: RegExp;
  names: string[];
  handlers: RequestHandler[];
}

export function routeTable(): RouteTable {
  const routes = new Map<string, Route>();
  const entries: Entry[] = [];
  // Every route in order, as one router: for an app without `tagOperation` (a unit's own), which
  // then routes as Express always did. Built on its first use: the service tags every request,
  // and a table joined into another (joinRouteTables) is never asked itself.
  let untagged: Router | undefined;
  const untaggedRouter = (): Router => {
    if (!untagged) {
      untagged = express.Router();
      for (const e of entries) untagged[e.method](e.path, ...e.handlers);
    }
    return untagged;
  };
  const table: RouteTable = {
    add(method, path, ...handlers) {
      entries.push({ method, path, handlers });
      const key = `${method} ${routeKey(path)}`;
      const route = routes.get(key);
      if (route) route.handlers.push(...handlers);
      else routes.set(key, { ...compile(path), handlers: [...handlers] });
      untagged?.[method](path, ...handlers);
    },
    handler(req: Request, res: Response, next: NextFunction) {
      const key = res.locals.specRoute;
      if (key === undefined) return untaggedRouter()(req, res, next);
      if (key === null) return next();
      // Express routes HEAD to GET's handlers; so does the table.
      const method = req.method === 'HEAD' ? 'get' : req.method.toLowerCase();
      const route = routes.get(`${method} ${key}`) ?? routes.get(`all ${key}`);
      if (!route) return next();
      run(route, req, res, next);
    },
  };
  entriesOf.set(table.handler, entries);
  return table;
}

/**
 * Several tables as one, their routes added in the order given: what the app mounts for the
 * areas' operation routers, so that a request costs one table lookup, not one Express layer
 * per area (about 35 of them, each entered and left: a sixth of a small request's CPU, issue
 * 31). A request two tables both answer runs the first's handlers, then, when they call
 * `next()`, the second's, as the tables mounted in turn would.
 */
export function joinRouteTables(handlers: RequestHandler[]): RequestHandler {
  const joined = routeTable();
  for (const handler of handlers) {
    const entries = entriesOf.get(handler);
    if (!entries) throw new Error('joinRouteTables: a handler that is no route table');
    for (const e of entries) joined.add(e.method, e.path, ...e.handlers);
  }
  return joined.handler;
}

/** The path as Express matches it (parameters are one segment, a trailing slash is allowed), parameters by name. */
function compile(path: string): Omit<Route, 'handlers'> {
  const names: string[] = [];
  const source = path
    .split(/(\{[^}]+\}|:[A-Za-z0-9_]+)/)
    .map((part, i) => {
      if (i % 2 === 0) return part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      names.push(part.startsWith(':') ? part.slice(1) : part.slice(1, -1));
      return '([^/]+)';
    })
    .join('');
  return { pattern: new RegExp(`^${source}/?$`), names };
}

/**
 * The route's handlers in turn, as an Express route runs them: `req.params` from its path
 * (decoded; a malformed escape is a 400, as Express answers it), a thrown error or a rejected
 * promise passed to `next`, `next('route')` and `next('router')` leaving the route, and the
 * parameters put back as they were when the route is left.
 */
function run(route: Route, req: Request, res: Response, done: NextFunction): void {
  const found = route.pattern.exec(req.path);
  if (!found) return done();
  const params: Record<string, string> = {};
  try {
    route.names.forEach((name, i) => {
      const raw = found[i + 1]!;
      params[name] = raw.includes('%') ? decodeURIComponent(raw) : raw;
    });
  } catch (err) {
    // A URIError with Express's status and words, so the error handler answers it as it answers
    // Express's own (a 404: a parameter that is not UTF-8 names nothing).
    if (err instanceof URIError) return done(Object.assign(new URIError(`Failed to decode param '${found.slice(1).join('/')}'`), { status: 400 }));
    return done(err);
  }
  const outer = req.params;
  req.params = params;
  runHandlers(route.handlers, req, res, (err?: unknown) => {
    req.params = outer;
    if (err === 'route' || err === 'router') done();
    else done(err);
  });
}

/**
 * `handlers` in turn, as an Express router runs its middleware: a thrown error or a rejected
 * promise ends the run with that error, as does `next(err)`; `done` when the last calls `next()`.
 * Unlike a router, it does not leave through `setImmediate` at the end (a turn of the event loop
 * per request for each router passed through).
 */
export function runHandlers(handlers: RequestHandler[], req: Request, res: Response, done: NextFunction): void {
  let i = 0;
  const next: NextFunction = (err?: unknown) => {
    if (err !== undefined && err !== null) return done(err);
    const handler = handlers[i++];
    if (!handler) return done();
    try {
      const result: unknown = handler(req, res, next);
      if (result instanceof Promise) result.catch((e: unknown) => next(e ?? new Error('Rejected promise')));
    } catch (e) {
      next(e);
    }
  };
  next();
}

/**
 * `handler` (an Express router) for the paths under `prefix` only, matched as Express matches
 * them (whatever the case). A router that matches nothing leaves through `setImmediate`: each
 * one mounted for all paths cost every other request a turn of the event loop.
 */
export function onlyUnder(prefix: string, handler: RequestHandler): RequestHandler {
  const lower = prefix.toLowerCase();
  return (req, res, next) => {
    const path = req.path.toLowerCase();
    return path === lower || path.startsWith(`${lower}/`) ? handler(req, res, next) : next();
  };
}
