/**
 * Reading rows through the generated row types (src/db/tables.ts) without casts: the shapes of
 * joined and aliased rows built from them, and checks that narrow a column's value to a domain
 * type, throwing with the column's name when a stored value is not one the code knows (an
 * enum-like text column: `oneOf`; a JSON text column: `jsonColumn`; a raw query's rows: `rawRows`).
 */
import type { Knex } from 'knex';
import { isRecord } from '../core/guards';

/** A row's columns as a join selects them under a prefix: `Prefixed<UsersRow, 'creator_'>` has `creator_id`, `creator_name`... */
export type Prefixed<Row, P extends string> = { [K in keyof Row & string as `${P}${K}`]: Row[K] };

/** A left join's columns: each null when nothing matched. */
export type Nullable<Row> = { [K in keyof Row]: Row[K] | null };

/** Columns selected under other names: `Renamed<UsersRow, { creator_name: 'name' }>`. */
export type Renamed<Row, Names extends Record<string, keyof Row>> = { [A in keyof Names]: Row[Names[A]] };

/** A row as Postgres gives it as JSON (`json_agg` inside another row, `row_to_json`): timestamps become ISO strings. */
export type JsonRow<T> = { [K in keyof T]: Date extends T[K] ? Exclude<T[K], Date> | string : T[K] };

/** A row as either driver gives it, or as Postgres gives it as JSON (`JsonRow`): what a row reader takes. */
export type StoredRow<T> = T | JsonRow<T>;

/** A query's rows (or its first row, or none) as `StoredRow`s. */
export type StoredRows<T> = T extends readonly (infer R)[] ? StoredRow<R>[] : T extends undefined ? undefined : StoredRow<T>;

/** Whether `value` is one of `values`. */
export function isOneOf<V extends string>(values: readonly V[], value: unknown): value is V {
  return values.some((v) => v === value);
}

/** `value` if it is one of `values`; otherwise throws, naming the `column` (`'jobs.state'`): how an enum-like text column is read. */
export function oneOf<V extends string>(values: readonly V[], value: unknown, column: string): V {
  if (isOneOf(values, value)) return value;
  throw new TypeError(`${column}: ${JSON.stringify(value)} is not one of ${values.join(', ')}`);
}

/** `oneOf` for a nullable column: null stays null. */
export function oneOfOrNull<V extends string>(values: readonly V[], value: unknown, column: string): V | null {
  return value === null || value === undefined ? null : oneOf(values, value, column);
}

/** The keys of a record over a union (`Record<Role, ...>`), as a list: a union's values, complete by construction. */
export function keysOf<K extends string>(record: Record<K, unknown>): K[] {
  return Object.keys(record).filter((k): k is K => Object.prototype.hasOwnProperty.call(record, k));
}

/**
 * A JSON column's value (text on both stores; an already parsed value is taken as it is), checked
 * by `check`: `fallback` when the column is null, a TypeError naming the `column` when the JSON is
 * not what `check` accepts.
 */
export function jsonColumn<T>(value: unknown, fallback: T, check: (v: unknown) => v is T, column: string): T {
  if (value === null || value === undefined) return fallback;
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (check(parsed)) return parsed;
  throw new TypeError(`${column}: unexpected JSON ${typeof value === 'string' ? value.slice(0, 80) : typeof value}`);
}

/** The rows of a raw query, from either driver (better-sqlite3 gives the array, pg a result with `rows`). */
export function rawRows<Row>(result: unknown): Row[] {
  if (Array.isArray(result)) return result;
  if (isRecord(result) && Array.isArray(result.rows)) return result.rows;
  throw new TypeError('not the result of a raw query');
}

/** Whether the handle is a transaction (a repository made `withTransaction`). */
export function isTransaction(db: Knex): db is Knex.Transaction {
  return db.isTransaction === true;
}

/** `value`, which a query that just wrote it must find; a TypeError naming `what` if it is missing. */
export function required<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new TypeError(`${what}: no value`);
  return value;
}
