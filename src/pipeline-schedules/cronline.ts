/**
 * A schedule's cronline, as the real API reads it: a predefined interval (`@hourly`, `@daily`
 * ...) or five crontab fields, optionally followed by a time zone (an IANA name or an offset
 * such as `+09:00`). Parsing and the next occurrence are croner's (a maintained cron library);
 * this file splits off the time zone, spells `last` as croner's `L`, turns what croner refuses
 * into a reason the API can give, and reads the docs' day extensions croner lacks (days from the
 * month's end, `-2-L`; the day of week's modulo, `0%3+1`: ./cron-days.ts) by filtering croner's
 * days. No HTTP, no SQL.
 */
import { Cron } from 'croner';
import { clock } from '../core/clock';
import { errorMessage } from '../core/guards';
import { hasDayExtension, parseDayFields, type DayMatcher, type LocalDay } from './cron-days';

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
  let days: DayMatcher | undefined;
  if (hasDayExtension(fields[2], fields[4]!)) {
    try {
      days = parseDayFields(fields[2], fields[4]!);
    } catch (err) {
      throw new Error(`is not a valid cron expression: ${errorMessage(err)}`);
    }
    // croner finds the minutes of every day; the day fields are matched here.
    fields[2] = '*';
    fields[4] = '*';
  }
  return fromPattern(fields.join(' '), zoneOf(zone), days);
}

function zoneOf(zone: string | undefined): { timezone?: string; utcOffset?: number } {
  if (zone === undefined) return {};
  const offset = OFFSET.exec(zone);
  if (offset) {
    const minutes = Number(offset[2]) * 60 + Number(offset[3]);
    if (Number(offset[2]) > 14 || Number(offset[3]) > 59) throw new Error(`has an invalid UTC offset ${zone}`);
    return { utcOffset: offset[1] === '-' ? -minutes : minutes };
  }
  if (!isTimeZone(zone)) throw new Error(`has an unknown time zone ${zone}`);
  return { timezone: zone };
}

/** The calendar day and time of day of `at` in the zone. */
function localTime(at: Date, zone: { timezone?: string; utcOffset?: number }): LocalDay & { hour: number; minute: number } {
  if (zone.timezone === undefined) {
    const d = new Date(at.getTime() + (zone.utcOffset ?? 0) * 60_000);
    return {
      year: d.getUTCFullYear(),
      month: d.getUTCMonth() + 1,
      day: d.getUTCDate(),
      weekday: d.getUTCDay(),
      hour: d.getUTCHours(),
      minute: d.getUTCMinutes(),
    };
  }
  const parts = Object.fromEntries(
    new Intl.DateTimeFormat('en-US', {
      timeZone: zone.timezone,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
    })
      .formatToParts(at)
      .map((p) => [p.type, p.value]),
  );
  const [year, month, day] = [Number(parts.year), Number(parts.month), Number(parts.day)];
  return { year, month, day, weekday: new Date(Date.UTC(year, month - 1, day)).getUTCDay(), hour: Number(parts.hour), minute: Number(parts.minute) };
}

/**
 * How many of croner's runs a day-filtered cronline looks at for its next one: two or three a
 * day skipped, so some eight years of days (the largest modulo is five years); a cronline whose
 * days never come in them never fires.
 */
const MAX_CANDIDATES = 6_000;

function isTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

function fromPattern(pattern: string, zone: { timezone?: string; utcOffset?: number }, days?: DayMatcher): ParsedCronline {
  let cron: Cron;
  try {
    // 5-part: minute precision (seconds are always 0); day of month and day of week together
    // match when either does, as in standard cron (domAndDow false).
    cron = new Cron(pattern, { ...zone, paused: true, mode: pattern.startsWith('@') ? 'auto' : '5-part', domAndDow: false });
  } catch (err) {
    throw new Error(`is not a valid cron expression: ${errorMessage(err).replace(/^CronPattern: /, '')}`);
  }
  const parsed: ParsedCronline = {
    nextAfter: days
      ? (after) => {
          let from = after;
          for (let i = 0; i < MAX_CANDIDATES; i++) {
            const run = cron.nextRun(from);
            if (!run) return null;
            const t = localTime(run, zone);
            if (days.matches(t)) return run;
            // On to the day's last minute (in two steps, an hour short first, so that a daylight
            // saving change in the day never carries the search past the next day's first runs).
            const left = (23 - t.hour) * 60 + (59 - t.minute);
            from = new Date(run.getTime() + (left > 90 ? left - 60 : left) * 60_000);
          }
          return null;
        }
      : (after) => cron.nextRun(after),
  };
  // A cronline that never fires (31 February) schedules nothing: refused like a malformed one.
  if (!parsed.nextAfter(clock.now())) throw new Error('never fires');
  return parsed;
}
