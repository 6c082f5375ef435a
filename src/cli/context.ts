/**
 * What every `windsock` command shares: where it prints, its two kinds of failure (usage: exit 2;
 * the command itself: exit 1), opening the database the server uses (never a new empty one), the
 * lookups by slug and email, the option parsers that check input as the API does, and tables.
 */
import fs from 'node:fs';
import path from 'node:path';
import { InvalidArgumentError } from 'commander';
import { loadConfig, type Config } from '../config';
import { EMAIL } from '../pipelines/configuration/notify';
import { isValidSlug, MAX_SLUG_LENGTH } from '../pipelines/slug';
import { hasMigrationTable, migrateLatest } from '../db/knex';
import { createLogger } from '../http/middleware/logger';
import { servicesFromConfig, type Services } from '../services';
import type { Organization } from '../core/identity';
import type { Operator } from '../teams/service';
import { isUuid } from '../core/uuid';

/** A mistake in the command line (unknown command, missing or bad option): exit code 2, with the command's help. */
export class UsageError extends Error {
  constructor(
    message: string,
    readonly help = '',
  ) {
    super(message);
  }
}

/** A failure of the command itself (not its usage): the message, exit code 1. */
export class CommandError extends Error {}

/** Where a command writes: results to `out` (scripts read it), notes such as the database it opened to `err`. */
export interface Cli {
  out: NodeJS.WritableStream;
  err: NodeJS.WritableStream;
  /** Set by `serve`: the process goes on after the command returns. */
  running?: boolean;
}

export function print(cli: Cli, line: string): void {
  cli.out.write(line + '\n');
}

/** The database a configuration names, as a person reads it: a SQLite file's absolute path, a Postgres URL without its password. */
export function describeDatabase(config: Config): string {
  if (config.databaseKind === 'sqlite') return `SQLite database ${config.databaseUrl === ':memory:' ? ':memory:' : path.resolve(config.databaseUrl)}`;
  try {
    const url = new URL(config.databaseUrl);
    url.password = '';
    url.searchParams.delete('password');
    return `Postgres database ${url.toString()}`;
  } catch {
    return 'Postgres database (DATABASE_URL)';
  }
}

const HOW_TO_START = 'start the service there once (`windsock serve`, or `windsock migrate`), or set DATA_DIR or DATABASE_URL to the database the server uses';

/**
 * Runs `fn` on the database the server would open (the same settings, read by loadConfig), after
 * saying which on stderr. `create`: `migrate` may make a new database; an administration command
 * refuses to, since one run from another directory would otherwise make an empty database
 * there and act on it.
 */
export async function withServices<T>(cli: Cli, fn: (s: Services, config: Config) => Promise<T>, opts: { create?: boolean } = {}): Promise<T> {
  const config = loadConfig();
  const where = describeDatabase(config);
  if (config.databaseKind === 'sqlite' && !opts.create) {
    if (config.databaseUrl === ':memory:') throw new CommandError(`an in-memory database lives only in its server's process; ${HOW_TO_START}`);
    if (!fs.existsSync(config.databaseUrl)) {
      throw new CommandError(`no database at ${path.resolve(config.databaseUrl)} (DATA_DIR is ${config.dataDir}); ${HOW_TO_START}`);
    }
  }
  cli.err.write(`windsock: using ${where}\n`);
  const logger = createLogger(config.logLevel === 'info' ? 'warn' : config.logLevel);
  const s = servicesFromConfig(config, logger);
  try {
    // knex's own bookkeeping table: a Postgres database without it was never set up by Windsock.
    if (config.databaseKind === 'postgres' && !opts.create && !(await hasMigrationTable(s.db))) {
      throw new CommandError(`the ${where} has no Windsock tables; ${HOW_TO_START}`);
    }
    // A database made by an older version gets this version's migrations, as the server would apply them.
    await migrateLatest(s.db);
    return await fn(s, config);
  } finally {
    await s.db.destroy();
  }
}

export async function orgBySlug(s: Services, slug: string): Promise<Organization> {
  const org = await s.orgs.findBySlug(slug);
  if (!org) throw new CommandError(`no organization with slug "${slug}"`);
  return org;
}

export async function userByEmail(s: Services, email: string) {
  const user = await s.users.findByEmail(email);
  if (!user) throw new CommandError(`no user with email "${email}"`);
  return user;
}

/** The command line acts on teams and services as the installation's operator: an admin of the organization, with no user of its own. */
export function operatorIn(organization: Organization): Operator {
  return { operator: true, organization };
}

// Option parsers: commander reports what they throw as `option '--x <X>' argument 'v' is invalid. <reason>`.

/** Text that must not be blank (a name, a description). */
export function text(value: string): string {
  if (value.trim() === '') throw new InvalidArgumentError('must not be blank');
  return value.trim();
}

/** An email address as the API takes one (at most 255 characters). */
export function email(value: string): string {
  const v = value.trim();
  if (!EMAIL.test(v) || v.length > 255) throw new InvalidArgumentError('must be an email address (NAME@DOMAIN), at most 255 characters');
  return v;
}

/** A slug as the API makes them: lower-case letters, digits and single dashes, as a URL path segment takes it unescaped. */
export function slug(value: string): string {
  if (!isValidSlug(value)) throw new InvalidArgumentError(`must be lower-case letters, digits and single dashes, at most ${MAX_SLUG_LENGTH} characters`);
  return value;
}

/** An id as the API gives them (a UUID). */
export function uuid(value: string): string {
  if (!isUuid(value.trim())) throw new InvalidArgumentError('must be a UUID, such as 01234567-89ab-4def-8123-456789abcdef');
  return value.trim().toLowerCase();
}

/** A whole number from `min` to `max`. */
export function wholeNumber(min: number, max: number): (value: string) => number {
  return (value) => {
    if (!/^\d+$/.test(value.trim()) || Number(value) < min || Number(value) > max) {
      throw new InvalidArgumentError(`must be a whole number from ${min} to ${max}`);
    }
    return Number(value);
  };
}

/** An absolute http(s) URL. */
export function httpUrl(value: string): string {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('must be an absolute http(s) URL, such as http://127.0.0.1:8080');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('must be an http or https URL');
  return value;
}

/** A comma-separated list, its items trimmed, empty ones left out. */
export function list(value: string): string[] {
  return value
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);
}

/** A comma-separated list that names at least one item. */
export function someOf(value: string): string[] {
  const items = list(value);
  if (!items.length) throw new InvalidArgumentError('must name at least one');
  return items;
}

/** For an option that may repeat: each value (and each comma-separated item, when `split`) is added. */
export function repeated(split: boolean): (value: string, previous: string[] | undefined) => string[] {
  return (value, previous) => [...(previous ?? []), ...(split ? list(value) : [value])];
}

/** Rows under a header, each column as wide as its widest cell; `--json` prints the objects instead. */
export function printRows<T extends Record<string, unknown>>(cli: Cli, rows: T[], columns: { [K in keyof T]?: string }, json: boolean): void {
  if (json) return print(cli, JSON.stringify(rows, null, 2));
  const keys = Object.keys(columns).filter((k): k is Extract<keyof T, string> => k in columns);
  const cell = (v: unknown) => (v === null || v === undefined ? '-' : v instanceof Date ? v.toISOString() : Array.isArray(v) ? v.join(',') || '-' : String(v));
  const table = [keys.map((k) => columns[k]!), ...rows.map((r) => keys.map((k) => cell(r[k])))];
  const widths = keys.map((_, i) => Math.max(...table.map((line) => line[i]!.length)));
  for (const line of table) print(cli, line.map((c, i) => (i === line.length - 1 ? c : c.padEnd(widths[i]!))).join('  '));
}
