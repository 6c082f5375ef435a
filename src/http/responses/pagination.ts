/** Page/per_page paging and the GitHub-style Link header the official clients read. */
import type { Request } from 'express';
import type { components } from '../../../generated/api';

export interface PageRequest {
  page: number;
  perPage: number;
  offset: number;
}

/** The paging parameters every list operation shares (components.parameters Page and PerPage). */
export interface PageQuery {
  page?: components['parameters']['Page'];
  per_page?: components['parameters']['PerPage'];
}

/**
 * From the validated query (the spec bounds both and supplies defaults, which the validator
 * fills). `page=0`, pybuildkite's default on every list, is page 1: the real API reads it so.
 */
export function pageRequest(req: { query: PageQuery }): PageRequest {
  const page = Math.max(1, req.query.page ?? 1);
  const perPage = req.query.per_page ?? 30;
  return { page, perPage, offset: (page - 1) * perPage };
}

/** Where `Link` is set: an Express response, or anything else that takes a header. */
type LinkHeaderSink = { setHeader(name: string, value: string): unknown };

/**
 * Sets `Link` with the relations that apply. `hasNext` decides `next` when the total is not
 * known (seek pagination); `total`, when known, also gives `last`. Every other query parameter
 * of the request is kept.
 */
export function setLinkHeader(
  req: Pick<Request, 'originalUrl' | 'baseUrl' | 'path'>,
  res: LinkHeaderSink,
  publicUrl: string,
  p: PageRequest,
  opts: { total?: number; hasNext?: boolean },
): void {
  const lastPage = opts.total !== undefined ? Math.max(1, Math.ceil(opts.total / p.perPage)) : undefined;
  const hasNext = opts.hasNext ?? (lastPage !== undefined && p.page < lastPage);
  const query = req.originalUrl.includes('?') ? req.originalUrl.slice(req.originalUrl.indexOf('?') + 1) : '';
  const link = (page: number, rel: string) => {
    const params = new URLSearchParams(query);
    params.set('page', String(page));
    params.set('per_page', String(p.perPage));
    return `<${publicUrl}${req.baseUrl}${req.path}?${params.toString()}>; rel="${rel}"`;
  };
  const links: string[] = [];
  if (p.page > 1) {
    links.push(link(1, 'first'));
    links.push(link(lastPage !== undefined ? Math.min(p.page - 1, lastPage) : p.page - 1, 'prev'));
  }
  if (hasNext) {
    links.push(link(p.page + 1, 'next'));
    if (lastPage !== undefined) links.push(link(lastPage, 'last'));
  }
  if (links.length) res.setHeader('Link', links.join(', '));
}

/** What a list handler's request and response give the two helpers below. */
type ListRequest = { query: PageQuery } & Pick<Request, 'originalUrl' | 'baseUrl' | 'path'>;

/**
 * The requested page of a list whose total is counted: `Link` set (with `last`) and the page's
 * items given back for the handler to serialize (its `res.json` is typed by its operation).
 */
export async function countedPage<T>(
  req: ListRequest,
  res: LinkHeaderSink,
  publicUrl: string,
  read: (offset: number, limit: number) => Promise<{ items: T[]; total: number }>,
): Promise<T[]> {
  const page = pageRequest(req);
  const { items, total } = await read(page.offset, page.perPage);
  setLinkHeader(req, res, publicUrl, page, { total });
  return items;
}

/**
 * The requested page of a list that is not counted: read one row past the page, whose presence
 * alone tells whether a next page exists (`Link`'s `next`); the page is given back without it.
 */
export async function uncountedPage<T>(
  req: ListRequest,
  res: LinkHeaderSink,
  publicUrl: string,
  read: (offset: number, limit: number) => Promise<T[]>,
): Promise<T[]> {
  const page = pageRequest(req);
  const items = await read(page.offset, page.perPage + 1);
  setLinkHeader(req, res, publicUrl, page, { hasNext: items.length > page.perPage });
  return items.slice(0, page.perPage);
}

export interface CursorLinks {
  self: string;
  first?: string;
  prev?: string;
  next?: string;
}

/**
 * The `links` of a cursor-paginated list (`{ items, links }`, as the docs' newer pages have it):
 * `self` is the request's own URL; `next` the same with `after` set to the next page's cursor
 * (`before` dropped) and `per_page` kept, absent on the last page. Given the cursor of a page
 * before this one (`prev`, where the list offers it), `prev` reads back from it (`before`) and
 * `first` is the list's first page.
 */
export function cursorLinks(
  req: Pick<Request, 'originalUrl'>,
  publicUrl: string,
  next: string | null,
  perPage: number,
  prev: string | null = null,
): CursorLinks {
  const [path = '', query = ''] = req.originalUrl.split('?', 2);
  const at = (cursor: { after: string } | { before: string } | null) => {
    const params = new URLSearchParams(query);
    params.delete('after');
    params.delete('before');
    if (cursor) for (const [k, v] of Object.entries(cursor)) params.set(k, v);
    params.set('per_page', String(perPage));
    return `${publicUrl}${path}?${params.toString()}`;
  };
  return {
    self: `${publicUrl}${req.originalUrl}`,
    ...(prev ? { first: at(null), prev: at({ before: prev }) } : {}),
    ...(next ? { next: at({ after: next }) } : {}),
  };
}

/** The same links in the `Link` header (`first`, `prev`, `next`: those present), as the docs' cursor lists also give them. */
export function setCursorLinkHeader(res: LinkHeaderSink, links: CursorLinks): void {
  const rels = (['first', 'prev', 'next'] as const).flatMap((rel) => (links[rel] ? [`<${links[rel]}>; rel="${rel}"`] : []));
  if (rels.length) res.setHeader('Link', rels.join(', '));
}
