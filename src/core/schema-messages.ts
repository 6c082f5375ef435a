/**
 * JSON Schema violations (Ajv's wording, as express-openapi-validator and the upload checks
 * report them) in the API's own words: `can't be blank`, `is too long (maximum is N
 * characters)`. Used for request validation errors and for test results rejected one by one.
 */

/** `integer,string` -> `a whole number or a string`. */
function typeWords(list: string): string {
  const words: Record<string, string> = {
    integer: 'a whole number',
    number: 'a number',
    string: 'a string',
    boolean: 'true or false',
    object: 'an object',
    array: 'a list',
    null: 'null',
  };
  const parts = list.split(',').map((t) => words[t.trim()] ?? t.trim());
  return parts.length > 1 ? `${parts.slice(0, -1).join(', ')} or ${parts[parts.length - 1]}` : parts[0]!;
}

const FORMAT_WORDS: Record<string, string> = {
  uuid: 'must be a UUID',
  'date-time': 'must be an ISO 8601 date and time, such as 2026-01-01T00:00:00Z',
  date: 'must be a date, such as 2026-01-01',
  email: 'must be an email address',
  uri: 'must be a URL',
};

/**
 * The validator's (Ajv's) wording rewritten into a reason a person can act on, in the API's own
 * words where it has them (`can't be blank`, `is too long (maximum is N characters)`). Anything
 * not recognised keeps the validator's text.
 */
export function readableReason(message: string | undefined, errorCode?: string): string {
  const msg = message ?? 'is invalid';
  const code = errorCode ?? '';
  if (code.startsWith('required')) return "can't be blank";
  let m: RegExpExecArray | null;
  if (code.startsWith('enum') || /^must be equal to one of the allowed values/.test(msg)) {
    const allowed = msg.replace(/^must be equal to one of the allowed values:?\s*/, '');
    return allowed ? `is not included in the list (${allowed})` : 'is not included in the list';
  }
  if ((m = /^must NOT have more than (\d+) characters/.exec(msg))) return `is too long (maximum is ${m[1]} characters)`;
  if ((m = /^must NOT have fewer than (\d+) characters/.exec(msg))) return m[1] === '1' ? "can't be blank" : `is too short (minimum is ${m[1]} characters)`;
  if ((m = /^must NOT have more than (\d+) items/.exec(msg))) return `has too many items (maximum is ${m[1]})`;
  if ((m = /^must NOT have fewer than (\d+) items/.exec(msg))) return `has too few items (minimum is ${m[1]})`;
  if ((m = /^must NOT have more than (\d+) properties/.exec(msg))) return `has too many keys (maximum is ${m[1]})`;
  if ((m = /^must be >= (\S+)/.exec(msg))) return `must be at least ${m[1]}`;
  if ((m = /^must be <= (\S+)/.exec(msg))) return `must be at most ${m[1]}`;
  if ((m = /^must be > (\S+)/.exec(msg))) return `must be greater than ${m[1]}`;
  if ((m = /^must be < (\S+)/.exec(msg))) return `must be less than ${m[1]}`;
  if ((m = /^must match format "([^"]+)"/.exec(msg))) return FORMAT_WORDS[m[1]!] ?? `must be a valid ${m[1]}`;
  if ((m = /^must match pattern "([^"]+)"/.exec(msg))) return `is invalid (must match ${m[1]})`;
  if ((m = /^must be ([a-z,]+)$/.exec(msg))) return `must be ${typeWords(m[1]!)}`;
  if (/^must match exactly one schema in oneOf/.test(msg) || /^must match a schema in anyOf/.test(msg)) return 'is invalid';
  if (/^has an invalid key: /.test(msg)) return msg;
  if ((m = /^Unknown query parameter '([^']+)'/.exec(msg))) return `is not a parameter of this operation (${m[1]})`;
  return msg;
}
