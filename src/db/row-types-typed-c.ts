/**
 * Typed reading of rows (issue 29): the shapes of joined rows built from the generated row types
 * (src/db/tables.ts), and checks that narrow a column's value to a domain type without a cast:
 * an enum-like text column (`oneOf`), a JSON text column (`jsonColumn`).
 */

/** A row's columns as a join selects them under a prefix: `Prefixed<UsersRow, 'creator_'>` has `creator_id`, `creator_name`... */
export type Prefixed<Row, P extends string> = { [K in keyof Row & string as `${P}${K}`]: Row[K] };

/** A left join's columns: each null when nothing matched. */
export type Nullable<Row> = { [K in keyof Row]: Row[K] | null };

/** Whether `value` is one of `values`. */
export function isOneOf<V extends string>(values: readonly V[], value: unknown): value is V {
  return values.some((v) => v === value);
}

/** `value` if it is one of `values`; otherwise throws, naming the `column` (`'jobs.state'`): how an enum-like text column is read. */
export function oneOf<V extends string>(values: readonly V[], value: unknown, column: string): V {
  if (isOneOf(values, value)) return value;
  throw new TypeError(`${column}: unexpected value ${JSON.stringify(value)}`);
}

/** `oneOf` for a nullable column: null stays null. */
export function oneOfOrNull<V extends string>(values: readonly V[], value: unknown, column: string): V | null {
  return value === null || value === undefined ? null : oneOf(values, value, column);
}

/** The keys of a record over a union (`Record<Role, ...>`), as a list: a union's values, complete by construction. */
export function keysOf<K extends string>(record: Record<K, unknown>): K[] {
  return Object.keys(record).filter((k): k is K => Object.prototype.hasOwnProperty.call(record, k));
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/** An array of string pairs (`[["content-type", "application/json"]]`). */
export function isStringPairs(value: unknown): value is [string, string][] {
  return Array.isArray(value) && value.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string');
}

/**
 * A JSON column's value (text on both stores; an already parsed value is taken as it is), checked
 * by `check`: `fallback` when the column is null, a TypeError naming the `column` when the JSON is not
 * what `check` accepts.
 */
export function jsonColumn<T>(value: unknown, fallback: T, check: (v: unknown) => v is T, column: string): T {
  if (value === null || value === undefined) return fallback;
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (check(parsed)) return parsed;
  throw new TypeError(`${column}: unexpected JSON ${typeof value === 'string' ? value.slice(0, 80) : typeof value}`);
}
