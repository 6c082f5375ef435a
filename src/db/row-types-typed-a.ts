/**
 * Helpers for reading rows without casts: the shapes of joined and aliased selections built from
 * the generated row types (src/db/tables.ts), and checks that narrow a column's text to the
 * values the domain knows.
 */
import type { Knex } from 'knex';

/** The columns of `T` selected under a prefix (`u.name as creator_name`: `Prefixed<UsersRow, 'creator_'>`). */
export type Prefixed<T, P extends string> = { [K in keyof T & string as `${P}${K}`]: T[K] };

/** The columns of a left join's other side: null when no row matched. */
export type Nullable<T> = { [K in keyof T]: T[K] | null };

/**
 * A row as Postgres's `json_agg`/`row_to_json` gives it inside another row: timestamps become
 * ISO strings (`toDate` reads both), everything else keeps its JSON type.
 */
export type JsonRow<T> = { [K in keyof T]: Date extends T[K] ? Exclude<T[K], Date> | string : T[K] };

/** A list of every value of the union `T`: compiles only when none is missing. */
export function valuesOf<T extends string>() {
  return <const V extends readonly T[]>(...values: V & ([T] extends [V[number]] ? unknown : never)): readonly T[] => values;
}

/** `value` is one of `values`. */
export function isOneOf<T extends string>(values: readonly T[], value: unknown): value is T {
  return values.some((v) => v === value);
}

/** `value` narrowed to one of `values`, or a TypeError naming the column (`what`) when a row holds something else. */
export function oneOf<T extends string>(values: readonly T[], value: unknown, what: string): T {
  if (isOneOf(values, value)) return value;
  throw new TypeError(`${what}: unknown value ${JSON.stringify(value)}`);
}

/** As `oneOf`, null staying null. */
export function oneOfOrNull<T extends string>(values: readonly T[], value: unknown, what: string): T | null {
  return value === null || value === undefined ? null : oneOf(values, value, what);
}

/** A plain object (a parsed JSON object), not an array or null. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A JSON column's text parsed and checked by `check` (a type guard), `fallback` when null; a TypeError naming the column when the value is not what `check` accepts. */
export function parseJsonColumn<T>(value: string | null | undefined, check: (v: unknown) => v is T, fallback: T, what: string): T {
  if (value === null || value === undefined) return fallback;
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (!check(parsed)) throw new TypeError(`${what}: unexpected JSON ${value.slice(0, 80)}`);
  return parsed;
}

/** A JSON object of strings (env, meta-data). */
export function isStringRecord(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((v) => typeof v === 'string');
}

/** A JSON array of strings. */
export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/**
 * The rows of a raw query as each driver returns them (better-sqlite3: the array; pg: the
 * result's `rows`), typed as the caller's SQL selects them: the one place a raw query's rows get
 * their type, which the caller states as `Row` (the columns of its select list).
 */
export function rawRows<Row>(result: unknown): Row[] {
  if (Array.isArray(result)) return result;
  if (isRecord(result) && Array.isArray(result.rows)) return result.rows;
  throw new TypeError('not the result of a raw query');
}

/** `db` is a transaction (Knex marks one with `isTransaction`). */
export function isTransaction(db: Knex): db is Knex.Transaction {
  return db.isTransaction === true;
}

/** A nullable column's value where the domain needs one (backfilled, or set by every write): a TypeError naming the column when a row has none. */
export function required<T>(value: T | null | undefined, what: string): T {
  if (value === null || value === undefined) throw new TypeError(`${what}: no value`);
  return value;
}
