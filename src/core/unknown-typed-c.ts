/**
 * Reading values of unknown type (a caught error, a parsed document) without casts: a field of
 * an object if it has it, an error's message.
 */

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
