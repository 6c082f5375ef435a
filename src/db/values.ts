/**
 * Column value helpers where the two stores differ: better-sqlite3 gives timestamps back as
 * epoch milliseconds and booleans as 0/1, pg gives Date and boolean. Rows are read through
 * these so domain objects look the same on both.
 */

export function toDate(value: unknown): Date {
  if (value instanceof Date) return value;
  if (typeof value === 'number') return new Date(value);
  if (typeof value === 'string') return /^\d+$/.test(value) ? new Date(Number(value)) : new Date(value);
  throw new TypeError(`not a timestamp: ${String(value)}`);
}

export function toDateOrNull(value: unknown): Date | null {
  return value === null || value === undefined ? null : toDate(value);
}

export function toBool(value: unknown): boolean {
  return value === true || value === 1 || value === '1' || value === 't';
}

export function parseJson<T>(value: unknown, fallback: T): T {
  if (value === null || value === undefined) return fallback;
  // cast: unchecked, the caller names the type (a checked read: jsonColumn in row-types.ts); a driver may give JSON parsed.
  if (typeof value !== 'string') return value as T;
  // cast: as above.
  return JSON.parse(value) as T;
}

/** A `like ? escape '\\'` pattern matching `text` anywhere, lower-cased: `%` and `_` in a user's text are matched literally. */
export function likeContains(text: string): string {
  return `%${text.toLowerCase().replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}
