/**
 * The day fields of the docs' cron extensions that croner does not read, matched here: in the day
 * of month, days counted from the month's end (`-1` is the last day, `-2-L` the last two), and in
 * the day of week, the modulo of Fugit (the library Buildkite's schedules use): `tue%2` is a
 * Tuesday whose `rweek` is even, `0%3+1` a Sunday where `(rweek + 1) % 3 == 0`, `rweek` being the
 * week count since 2019-01-01 (that day's week is 1). Each field is read whole, standard items
 * too (`1,-1`, `1-5`, `MON`, `*\/2`), so the two fields combine as in standard cron: either
 * matches when both are restricted. Pure.
 */

/** A calendar day in the schedule's zone. */
export interface LocalDay {
  year: number;
  /** 1-12 */
  month: number;
  /** 1-31 */
  day: number;
  /** 0 (Sunday) to 6 */
  weekday: number;
}

export interface DayMatcher {
  matches(d: LocalDay): boolean;
}

const WEEKDAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];
const DAY_MS = 86_400_000;
const RWEEK_START = Date.UTC(2019, 0, 1);
/** The largest modulo of a day of week: every fifth year (a schedule's next run is looked for within some years). */
const MAX_MODULO = 260;

/** Whether a field uses an extension read here (croner reads every other field). */
export function hasDayExtension(dayOfMonth: string, dayOfWeek: string): boolean {
  return dayOfMonth.split(',').some((i) => i.startsWith('-')) || dayOfWeek.includes('%');
}

type Test = (value: number, d: LocalDay) => boolean;

/** `A`, `A-B`, `*`, with an optional `/S`, over `min..max`; `value(token)` reads one bound. */
function standardItem(item: string, min: number, max: number, value: (token: string) => number): Test {
  const [range = '', stepText] = item.split('/');
  const step = stepText === undefined ? 1 : whole(stepText, 1, max, item);
  let [lo, hi] = [min, max];
  if (range !== '*') {
    const [a = '', b] = range.split('-');
    lo = value(a);
    hi = b === undefined ? (stepText === undefined ? lo : max) : value(b);
    if (hi < lo) throw new Error(`has a range that ends before it starts: ${item}`);
  }
  return (v) => v >= lo && v <= hi && (v - lo) % step === 0;
}

function whole(text: string, min: number, max: number, item: string): number {
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= min && n <= max)) throw new Error(`has ${item}, which is not a value from ${min} to ${max}`);
  return n;
}

const lastDay = (d: LocalDay) => new Date(Date.UTC(d.year, d.month, 0)).getUTCDate();

/** One item of the day of month: standard, `L`, `-N` (the Nth day from the end) or `-N-L`. */
function dayOfMonthItem(item: string): Test {
  const fromEnd = /^-(\d+)(-L)?$/i.exec(item);
  if (fromEnd) {
    const n = whole(fromEnd[1]!, 1, 31, item);
    return fromEnd[2] ? (v, d) => v >= lastDay(d) - n + 1 : (v, d) => v === lastDay(d) - n + 1;
  }
  if (/^(L|last)$/i.test(item)) return (v, d) => v === lastDay(d);
  return standardItem(item, 1, 31, (t) => whole(t, 1, 31, item));
}

/** A day of week as written: 0-7 (7 is Sunday again) or a name. */
const weekday = (token: string, item: string) => {
  const named = WEEKDAYS.indexOf(token.toUpperCase());
  return named >= 0 ? named : whole(token, 0, 7, item);
};

/** Fugit's week count: 2019-01-01 to 2019-01-07 is week 1. */
export function rweek(d: LocalDay): number {
  return Math.floor((Date.UTC(d.year, d.month - 1, d.day) - RWEEK_START) / DAY_MS / 7) + 1;
}

/** One item of the day of week: standard (numbers 0-7, names), or `D%N` / `D%N+O`. */
function dayOfWeekItem(item: string): Test {
  const modulo = /^([a-z]+|\d+)%(\d+)(?:\+(\d+))?$/i.exec(item);
  if (modulo) {
    const day = weekday(modulo[1]!, item) % 7;
    const n = whole(modulo[2]!, 1, MAX_MODULO, item);
    const offset = modulo[3] === undefined ? 0 : whole(modulo[3], 0, MAX_MODULO, item);
    return (v, d) => v === day && (rweek(d) + offset) % n === 0;
  }
  const test = standardItem(item, 0, 7, (t) => weekday(t, item));
  // Sunday is both 0 and 7 (`5-7`).
  return (v, d) => test(v, d) || (v === 0 && test(7, d));
}

/** Reads the two day fields; throws an Error whose message says what is wrong with them. */
export function parseDayFields(dayOfMonth: string, dayOfWeek: string): DayMatcher {
  const field = (text: string, item: (i: string) => Test, value: (d: LocalDay) => number) => {
    if (text === '*' || text === '?') return null;
    const tests = text.split(',').map(item);
    return (d: LocalDay) => tests.some((t) => t(value(d), d));
  };
  const dom = field(dayOfMonth, dayOfMonthItem, (d) => d.day);
  const dow = field(dayOfWeek, dayOfWeekItem, (d) => d.weekday);
  return {
    matches: (d) => {
      if (dom && dow) return dom(d) || dow(d);
      return (dom ?? dow ?? (() => true))(d);
    },
  };
}
