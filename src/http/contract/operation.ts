/**
 * Handlers bound to the contract's operations. `operationRouter().on('createBuild', handler)`
 * mounts the handler on the method and path the spec gives `createBuild`, and types its request
 * and response from `generated/api.ts`: `req.params`, `req.query` and `req.body` are that
 * operation's, and `res.json` / `res.status(n).json` take only the JSON body the spec documents
 * for that status. A handler therefore cannot be mounted on another operation's path, and a
 * change of the spec that a handler relies on fails `npm run typecheck` (test/types/ shows it).
 *
 * The types are true at run time because of what app.ts runs before the routes:
 * http/parameters.ts reads integers, dates, booleans and enums strictly and drops the nulls of
 * optional body fields, then express-openapi-validator checks the request, coerces the query
 * and fills its defaults. Path parameters are matched again by each router (Express keeps no
 * coercion across routers): the integer ones are converted here, by the spec's schema.
 * Modelled on Backstage's `createValidatedOpenApiRouterFromGeneratedEndpointMap`.
 */
import type { Request, RequestHandler, Response } from 'express';
import { routeTable } from './route-table';
// Express's own response type: the one with the status-code parameter `express` does not re-export.
import type { Response as CoreResponse } from 'express-serve-static-core';
import type { operations } from '../../../generated/api';
import { loadSpec } from '../../spec';
import { resolveRef, specOperations, type Method, type SpecDoc } from './spec-operations';

export type OperationId = keyof operations;

type Operation<Id extends OperationId> = operations[Id];

/** No parameters: an object without keys, so reading one does not compile. */
type None = Record<never, never>;

/** The spec's path parameters of the operation. */
export type PathParams<Id extends OperationId> = Id extends unknown ? (Operation<Id>['parameters'] extends { path: infer P } ? P : None) : never;

/**
 * The spec's query parameters, as the validator leaves them (coerced, defaults filled; the
 * generated types keep defaulted ones optional). Unknown parameters are let through
 * (`allowUnknownQueryParameters`) but not typed, so no handler reads one.
 */
export type QueryParams<Id extends OperationId> = Operation<Id>['parameters'] extends { query?: infer Q }
  ? [NonNullable<Q>] extends [never]
    ? None
    : NonNullable<Q>
  : never;

type ContentOf<B> = B extends { content: infer C } ? C : never;

/** The request body by media type; an optional body (`requestBody?`) may be absent. */
export type RequestContent<Id extends OperationId> = ContentOf<NonNullable<Operation<Id>['requestBody']>>;

/** The request body: JSON, or each media type's when the operation takes several (see `bodyIn`). */
export type RequestBody<Id extends OperationId> =
  RequestContent<Id>[keyof RequestContent<Id>] | (undefined extends Operation<Id>['requestBody'] ? undefined : never);

type Responses<Id extends OperationId> = Operation<Id>['responses'];

/** The statuses the spec documents for the operation. */
export type ResponseStatus<Id extends OperationId> = keyof Responses<Id> & number;

/** The JSON body the spec documents for that status (never: it has none). */
export type ResponseBody<Id extends OperationId, S extends ResponseStatus<Id>> = S extends unknown
  ? Responses<Id>[S] extends { content: { 'application/json': infer B } }
    ? B
    : never
  : never;

export type OperationRequest<Id extends OperationId> = Request<PathParams<Id>, unknown, RequestBody<Id>, QueryParams<Id>>;

/** What a handler answers when it sets no status: Express sends 200. */
type DefaultBody<Id extends OperationId> = [ResponseBody<Id, ResponseStatus<Id> & 200>] extends [never]
  ? undefined
  : ResponseBody<Id, ResponseStatus<Id> & 200>;

/**
 * Express's response, with `status` limited to the statuses the spec documents and `json` to
 * the body of the status set: 200's until `status` is called (what Express sends by default).
 * Still an Express `Response`, so it goes wherever one is taken.
 */
export type OperationResponse<Id extends OperationId> = {
  status<C extends ResponseStatus<Id>>(code: C): CoreResponse<ResponseBody<Id, C>, Record<string, unknown>, C>;
} & CoreResponse<DefaultBody<Id>, Record<string, unknown>, ResponseStatus<Id>>;

export type OperationHandler<Id extends OperationId> = (req: OperationRequest<Id>, res: OperationResponse<Id>) => unknown;

/**
 * The body as the media type the request came in, when it came in that one: for an operation
 * that takes several (the upload API's JSON and multipart). The validator checked it against
 * that media type's schema.
 */
export function bodyIn<Id extends OperationId, M extends keyof RequestContent<Id> & string>(
  req: OperationRequest<Id>,
  media: M,
): RequestContent<Id>[M] | undefined {
  // cast: the validator checked the body against this media type's schema, which the type is generated from.
  return req.is(media) ? (req.body as RequestContent<Id>[M]) : undefined;
}

type Parameter = { $ref?: string; name?: string; in?: string; schema?: { $ref?: string; type?: string } };

/** Where an operation is mounted and which of its path parameters are integers. */
interface Binding {
  method: Method;
  path: string;
  integerParams: string[];
}

const bindingsByDoc = new WeakMap<object, Map<string, Binding>>();

function bindingsOf(doc: SpecDoc): Map<string, Binding> {
  let bindings = bindingsByDoc.get(doc);
  if (bindings) return bindings;
  bindings = new Map();
  for (const { method, path, operation, pathItem } of specOperations<{ parameters?: Parameter[] }>(doc)) {
    if (!operation.operationId) continue;
    // cast: a path item's shared parameters, in the spec's shape (as specOperations reads operations).
    const params = [...((pathItem.parameters as Parameter[] | undefined) ?? []), ...(operation.parameters ?? [])].map((p) => resolveRef(doc, p));
    const integerParams = params.filter((p) => p?.in === 'path' && resolveRef(doc, p.schema)?.type === 'integer').map((p) => p!.name!);
    bindings.set(operation.operationId, { method, path, integerParams });
  }
  bindingsByDoc.set(doc, bindings);
  return bindings;
}

export interface OperationRouter {
  /**
   * Mount it with `app.use`: a request runs the handler of the operation it names (found once
   * by `tagOperation`, route-table.ts), not every route of every area's router in turn.
   */
  router: RequestHandler;
  /** Mounts `handler` on the spec's method and path of `operationId`. */
  on<Id extends OperationId>(operationId: Id, handler: OperationHandler<Id>): void;
}

/** A router whose routes are the spec's operations (default: the spec the app serves). */
export function operationRouter(doc: SpecDoc = loadSpec().doc): OperationRouter {
  const table = routeTable();
  const bindings = bindingsOf(doc);
  const bound = new Set<string>();
  return {
    router: table.handler,
    on(operationId, handler) {
      const binding = bindings.get(operationId);
      if (!binding) throw new Error(`No operation ${operationId} in the spec`);
      if (bound.has(operationId)) throw new Error(`Operation ${operationId} is bound twice`);
      bound.add(operationId);
      const { integerParams } = binding;
      table.add(binding.method, binding.path, (req: Request, res: Response) => {
        // http/parameters.ts has refused (404) anything but decimal digits within the schema's
        // range, so the conversion is exact.
        if (integerParams.length) {
          const params: Record<string, unknown> = { ...req.params };
          for (const name of integerParams) params[name] = Number(params[name]);
          // cast: Express types path parameters as strings; these are the operation's integers.
          req.params = params as Request['params'];
        }
        // The one place the request and response become the operation's: the validator (above)
        // checked them against the same spec the types are generated from.
        // cast: Express's request and response, as the operation's types (see above).
        return handler(req as unknown as OperationRequest<typeof operationId>, res as unknown as OperationResponse<typeof operationId>);
      });
    },
  };
}
