/**
 * A schedule's cronline, as the real API reads it: a predefined interval (`@hourly`, `@daily`
 * ...) or five crontab fields, optionally followed by a time zone (an IANA name or an offset
 * such as `+09:00`). Parsing and the next occurrence are croner's (a maintained cron library);
 * this file only splits off the time zone, spells `last` as croner's `L`, and turns what croner
 * refuses into a reason the API can give. No HTTP, no SQL.
 */
import { Cron } from 'croner';
import { clock } from '../core/clock';
import { errorMessage } from '../core/guards';

export interface ParsedCronline {
  /** The first minute strictly after `after` the cronline fires at, or null if it never does again. */
  nextAfter(after: Date): Date | null;
}

const OFFSET = /^([+-])(\d{2}):?(\d{2})$/;

/** Parses `cronline`; throws an Error whose message says what is wrong with it. */
export function parseCronline(cronline: string): ParsedCronline {
  const parts = cronline.trim().split(/\s+/);
  if (parts.length === 1 && parts[0]!.startsWith('@')) return fromPattern(parts[0]!.toLowerCase(), {});
  if (parts.length !== 5 && parts.length !== 6) {
    throw new Error('must be a predefined interval (such as @daily) or five crontab fields, optionally followed by a time zone');
  }
  const zone = parts.length === 6 ? parts[5]! : undefined;
  const fields = parts.slice(0, 5);
  // `last` in the day of month is the docs' other spelling of `L`.
  fields[2] = fields[2]!.replace(/^last$/i, 'L');
  if (fields[4]!.includes('%')) throw new Error('the modulo extension (%) of the day of week is not supported');
  if (zone === undefined) return fromPattern(fields.join(' '), {});
  const offset = OFFSET.exec(zone);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3]);
    if (Number(offset[2]) > 14 || Number(offset[3]) > 59) throw new Error(`has an invalid UTC offset ${zone}`);
    return fromPattern(fields.join(' '), { utcOffset: offset[1] === '-' ? -minutes : minutes });
  }
  if (!isTimeZone(zone)) throw new Error(`has an unknown time zone ${zone}`);
  return fromPattern(fields.join(' '), { timezone: zone });
}

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function fromPattern(pattern: string, zone: { timezone?: string; utcOffset?: number }): ParsedCronline {
  let cron: Cron;
  try {
    // 5-part: minute precision (seconds are always 0); day of month and day of week together
    // match when either does, as in standard cron (domAndDow false).
    cron = new Cron(pattern, { ...zone, paused: true, mode: pattern.startsWith('@') ? 'auto' : '5-part', domAndDow: false });
  } catch (err) {
    throw new Error(`is not a valid cron expression: ${errorMessage(err).replace(/^CronPattern: /, '')}`);
  }
  const parsed: ParsedCronline = { nextAfter: (after) => cron.nextRun(after) };
  // A cronline that never fires (31 February) schedules nothing: refused like a malformed one.
  if (!parsed.nextAfter(clock.now())) throw new Error('never fires');
  return parsed;
}
