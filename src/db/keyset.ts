/**
 * Pages of a list ordered by a time column and an id column (newest first, or oldest first), read
 * by keyset from a cursor (src/core/time-cursor.ts): `after` reads on in the list's order,
 * `before` back. One row more than the page is read, to tell whether another page follows.
 */
import type { Knex } from 'knex';
import type { TimeCursor } from '../core/time-cursor';

export interface KeysetPage {
  after?: TimeCursor;
  before?: TimeCursor;
  limit: number;
}

/** The page's query: `q` narrowed to the rows past the cursor, in reading order, `limit` + 1 of them. */
export function keysetQuery<TRecord extends object, TResult>(
  q: Knex.QueryBuilder<TRecord, TResult>,
  columns: { at: string; id: string; oldestFirst?: boolean },
  opts: KeysetPage,
): Knex.QueryBuilder<TRecord, TResult> {
  const { at, id } = columns;
  const [on, back] = columns.oldestFirst ? (['>', '<'] as const) : (['<', '>'] as const);
  const past = (c: TimeCursor, op: '<' | '>') => q.where((w) => w.where(at, op, c.at).orWhere((x) => x.where(at, '=', c.at).andWhere(id, op, c.id)));
  if (opts.after) past(opts.after, on);
  if (opts.before) past(opts.before, back);
  const forward = columns.oldestFirst ? 'asc' : 'desc';
  const order = opts.before ? (forward === 'asc' ? 'desc' : 'asc') : forward;
  return q
    .orderBy([
      { column: at, order },
      { column: id, order },
    ])
    .limit(opts.limit + 1);
}

/** The page of `keysetQuery`'s rows in the list's order; `more`: whether another page follows in the direction read. */
export function keysetRows<Row, T>(rows: Row[], opts: KeysetPage, map: (r: Row) => T): { items: T[]; more: boolean } {
  const more = rows.length > opts.limit;
  const items = rows.slice(0, opts.limit).map(map);
  return { items: opts.before ? items.reverse() : items, more };
}
