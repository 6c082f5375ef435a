/**
 * Whether a string is a UUID in its textual form, either case: ids from paths, bodies and the
 * command line are checked before they reach a uuid column (Postgres refuses a comparison with
 * anything else) and lower-cased where they are stored or looked up.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

export function isUuid(value: string | undefined): value is string {
  return value !== undefined && UUID.test(value);
}
