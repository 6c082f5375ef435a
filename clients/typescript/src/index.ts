/**
 * The Windsock TypeScript SDK: an openapi-fetch client typed by the spec's paths, with the token
 * on every request, a thrown `WindsockApiError` for every 4xx and 5xx answer, back-off on
 * 429, and `paginate` following `Link: rel="next"`.
 *
 *   import { createClient } from 'windsock/client';
 *   const client = createClient({ baseUrl: 'http://localhost:3000', token });
 *   const { data: pipelines } = await client.GET('/v2/organizations/{org_slug}/pipelines', { params: { path: { org_slug: 'acme' } } });
 *
 * Errors are thrown, never returned: a resolved call's `data` is the success body (its type still
 * reads `| undefined`, as openapi-fetch types every call; `ok()` narrows it).
 */
import createFetchClient, { type Client, type ClientPathsWithMethod, type MaybeOptionalInit } from 'openapi-fetch';
import type { paths } from './schema';
import { WindsockApiError } from './errors';
import { retryMiddleware, type RetryOptions } from './retry';

export type { paths, operations } from './schema';
export { WindsockApiError, type WindsockFieldError } from './errors';
export { retryDelayMs, type RetryOptions } from './retry';

/**
 * The client: openapi-fetch's, typed by the spec's paths. Bodies are read as JSON unless a call
 * says `parseAs: 'text'` (or 'blob', 'stream'...), so `data` is typed by the JSON media type.
 */
export type WindsockClient = Client<paths, 'application/json'>;

export interface WindsockClientOptions {
  /** Where Windsock answers, without the API version: `http://localhost:3000`. */
  baseUrl: string;
  /** An API access token (`Authorization: Bearer`), or with `scheme: 'Token'` an agent's token. */
  token?: string;
  /**
   * `Bearer` (default): the REST API's access tokens. `Token`: the agent API (/v3), whose
   * registration and access tokens go as `Authorization: Token <token>`.
   */
  scheme?: 'Bearer' | 'Token';
  /** Another fetch (a proxy's, a test's). */
  fetch?: (input: Request) => Promise<Response>;
  /** Back-off on 429 (default: up to 3 retries, waits up to 60 s); `false` turns it off. */
  retry?: RetryOptions | false;
  /** More headers for every request. */
  headers?: Record<string, string>;
}

/**
 * Throws a `WindsockApiError` for every 4xx and 5xx answer (registered first: it sees the answer
 * after back-off). A 3xx is an answer: fetch follows redirects unless the call asks
 * `redirect: 'manual'`, and then the caller wants the `Location` (an artifact's download).
 */
const throwOnError = {
  async onResponse({ request, response }: { request: Request; response: Response }) {
    if (response.status >= 400) throw await WindsockApiError.from(request, response);
    return undefined;
  },
};

export function createWindsockClient(options: WindsockClientOptions): WindsockClient {
  const headers: Record<string, string> = { ...options.headers };
  if (options.token !== undefined) headers.Authorization = `${options.scheme ?? 'Bearer'} ${options.token}`;
  const client = createFetchClient<paths, 'application/json'>({ baseUrl: options.baseUrl.replace(/\/+$/, ''), fetch: options.fetch, headers });
  client.use(throwOnError);
  if (options.retry !== false) client.use(retryMiddleware(options.retry));
  return client;
}

/** The package's documented entry point (`import { createClient } from 'windsock/client'`): the same function. */
export const createClient = createWindsockClient;

/** A call's success body, for callers that want it typed without `| undefined` (it is `undefined` for a 204 or an empty body). */
export async function ok<T>(call: Promise<{ data?: T; response: Response }>): Promise<T> {
  return (await call).data as T;
}

type GetPath = ClientPathsWithMethod<WindsockClient, 'get'>;
type SuccessBody<P extends GetPath> = paths[P]['get'] extends { responses: { 200: { content: { 'application/json': infer B } } } } ? B : never;
/** The paths whose GET answers a list: the ones `paginate` pages through. */
export type ListPath = { [P in GetPath]: SuccessBody<P> extends readonly unknown[] ? P : never }[GetPath];
/** One item of a list path's answer. */
export type ListItem<P extends ListPath> = SuccessBody<P> extends readonly (infer I)[] ? I : never;

/** The URL of `Link`'s `rel="next"`, if any (a URL may hold commas: each link runs from its `<` to the next). */
export function nextLink(link: string | null): URL | undefined {
  for (const [, url, params] of (link ?? '').matchAll(/<([^>]*)>([^<]*)/g)) {
    if (/;\s*rel\s*=\s*"?([^";]*\s)?next(\s[^";]*)?"?\s*(;|,|$)/i.test(params!)) return new URL(url!);
  }
  return undefined;
}

/**
 * Every item of a list, page after page: each page is asked for as the first was (same path,
 * same parameters and token, to the client's own `baseUrl`) with the query of the `rel="next"`
 * link the previous page named, until a page names none.
 *
 *   for await (const build of paginate(client, '/v2/builds', { params: { query: { per_page: 100 } } })) ...
 */
export async function* paginate<P extends ListPath>(client: WindsockClient, path: P, init?: MaybeOptionalInit<paths[P], 'get'>): AsyncGenerator<ListItem<P>> {
  // Typed at the call; inside, one call shape serves every list path.
  const get = client.GET as unknown as (
    path: string,
    init: { params?: { query?: Record<string, unknown> } },
  ) => Promise<{ data?: unknown; response: Response }>;
  const first = (init ?? {}) as { params?: { query?: Record<string, unknown> } };
  let query = first.params?.query;
  for (;;) {
    const { data, response } = await get(path, { ...first, params: { ...first.params, query } });
    yield* (data ?? []) as ListItem<P>[];
    const next = nextLink(response.headers.get('Link'));
    if (!next) return;
    // The link's query is the next page's; it is asked of this client's baseUrl, so the token
    // never goes to another origin (the service's public URL may differ behind a proxy).
    query = queryOf(next.searchParams);
  }
}

/** A link's query as openapi-fetch takes one: a name given twice (`state[]=a&state[]=b`) is an array. */
function queryOf(params: URLSearchParams): Record<string, string | string[]> {
  const query: Record<string, string | string[]> = {};
  for (const name of new Set(params.keys())) {
    const values = params.getAll(name);
    query[name] = values.length > 1 ? values : values[0]!;
  }
  return query;
}
