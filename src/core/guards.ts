/**
 * Narrowing values of unknown type without casts: a parsed document, a caught error, a stored
 * JSON value. Each guard checks what it claims, so a value that passes is what the type says.
 */

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function isStringRecord(value: unknown): value is Record<string, string> {
  return isRecord(value) && Object.values(value).every((v) => typeof v === 'string');
}

export function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((v) => typeof v === 'string');
}

export function isCountArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((v) => Number.isInteger(v) && v >= 0);
}

/** An array of string pairs (`[["content-type", "application/json"]]`). */
export function isStringPairs(value: unknown): value is [string, string][] {
  return Array.isArray(value) && value.every((p) => Array.isArray(p) && p.length === 2 && typeof p[0] === 'string' && typeof p[1] === 'string');
}

/** `value[key]` when `value` is an object that has it; otherwise undefined. */
export function fieldOf(value: unknown, key: string): unknown {
  return typeof value === 'object' && value !== null && key in value ? Reflect.get(value, key) : undefined;
}

/** `value[key]` when it is a string. */
export function stringField(value: unknown, key: string): string | undefined {
  const v = fieldOf(value, key);
  return typeof v === 'string' ? v : undefined;
}

/** `value[key]` when it is a number. */
export function numberField(value: unknown, key: string): number | undefined {
  const v = fieldOf(value, key);
  return typeof v === 'number' ? v : undefined;
}

/**
 * A caught value's message: an Error's, or the value as text. Read as a field, not by
 * `instanceof Error`: Node's own errors (fs, net) come from another realm under Jest's VM.
 */
export function errorMessage(err: unknown): string {
  return stringField(err, 'message') ?? String(err);
}
