/**
 * Row shapes of joins and aliased columns, built from the generated row types (src/db/tables.ts),
 * and checking narrows for what a column holds beyond its driver type (an enum-like string, JSON).
 */

/** A row's columns selected under a prefix (`u.name as creator_name`): `Prefixed<UsersRow, 'creator_'>`. */
export type Prefixed<Row, P extends string> = { [K in keyof Row & string as `${P}${K}`]: Row[K] };

/** A left join's columns: each null when no row matched. */
export type Nullable<Row> = { [K in keyof Row]: Row[K] | null };

/** Columns selected under other names (`q.key as queue_key`): `Renamed<ClusterQueuesRow, { queue_key: 'key' }>`. */
export type Renamed<Row, Names extends Record<string, keyof Row>> = { [A in keyof Names]: Row[Names[A]] };

/** Whether `value` is one of `values`. */
export function isOneOf<T extends string>(values: readonly T[], value: unknown): value is T {
  return values.some((v) => v === value);
}

/** `value` as one of `values`; throws (naming `column`) on anything else: a row the code does not know. */
export function oneOf<T extends string>(values: readonly T[], value: unknown, column: string): T {
  if (isOneOf(values, value)) return value;
  throw new TypeError(`${column}: ${JSON.stringify(value)} is not one of ${values.join(', ')}`);
}

/** Every value of the union `T`, checked complete at compile time: `allOf<Role>()(['admin', 'member'])`. */
export function allOf<T extends string>() {
  return <const A extends readonly T[]>(values: A & ([T] extends [A[number]] ? unknown : never)): readonly T[] => values;
}

/** Whether `value` is a plain object (not null, not an array). */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Whether `value` is an object of strings. */
export function isStringRecord(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((v) => typeof v === 'string');
}

/** Whether `value` is an array of strings. */
export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

/**
 * A JSON column (text on both stores; a driver that parsed it already gives the value) checked by
 * `is`: `fallback` when null, and a TypeError naming `column` when it holds something else.
 */
export function jsonColumn<T>(value: unknown, fallback: T, is: (v: unknown) => v is T, column: string): T {
  if (value === null || value === undefined) return fallback;
  const parsed: unknown = typeof value === 'string' ? JSON.parse(value) : value;
  if (is(parsed)) return parsed;
  throw new TypeError(`${column}: unexpected JSON ${JSON.stringify(parsed)}`);
}
