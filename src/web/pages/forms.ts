/** Reading form fields: pages bypass the API's validator, so each field is checked here with the contract's limits. */
import { ValidationError } from '../../core/errors';

export function textField(body: Record<string, unknown>, name: string, opts: { max: number; required?: boolean }): string | undefined {
  const v = body[name];
  const s = typeof v === 'string' ? v.trim() : '';
  if (!s) {
    if (opts.required) throw ValidationError.field(name, "can't be blank");
    return undefined;
  }
  if (s.length > opts.max) throw ValidationError.field(name, `is too long (at most ${opts.max} characters)`);
  return s;
}

/** `KEY=value` lines -> an object (env, meta-data). */
export function keyValueLines(body: Record<string, unknown>, name: string): Record<string, string> | undefined {
  const text = textField(body, name, { max: 65536 });
  if (!text) return undefined;
  const out: Record<string, string> = {};
  for (const line of text.split(/\r?\n/)) {
    if (!line.trim()) continue;
    const i = line.indexOf('=');
    if (i <= 0) throw ValidationError.field(name, `line "${line.slice(0, 40)}" is not KEY=value`);
    out[line.slice(0, i).trim()] = line.slice(i + 1);
  }
  return out;
}

/** A query's page number, from 1. */
export function pageNumber(q: string | undefined): number {
  const n = Number(q);
  return Number.isInteger(n) && n >= 1 && n <= 10_000 ? n : 1;
}
