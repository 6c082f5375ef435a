/**
 * A job's environment as `KEY=VALUE` lines (`.../env.txt`, `Accept: text/plain`), for dotenv and
 * similar tools, as the docs describe it. Sorted by name. A value that a dotenv reader would
 * otherwise cut or change (spaces, quotes, `#`, `$`, backslashes, line breaks) is double-quoted,
 * with `\`, `"`, `$` and line breaks escaped.
 */
import type { Response } from 'express';

const PLAIN = /^[A-Za-z0-9_./:@%+,=-]*$/;

function quoted(value: string): string {
  if (PLAIN.test(value)) return value;
  const escaped = value
    .replace(/[\\"$]/g, (c) => `\\${c}`)
    .replace(/\r/g, '\\r')
    .replace(/\n/g, '\\n');
  return `"${escaped}"`;
}

export function jobEnvText(env: Record<string, string>): string {
  return Object.keys(env)
    .sort()
    .map((key) => `${key}=${quoted(env[key]!)}\n`)
    .join('');
}

export function sendEnvText(res: Response, env: Record<string, string>): void {
  res.status(200).type('text/plain; charset=utf-8').send(jobEnvText(env));
}
