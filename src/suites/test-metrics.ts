/**
 * A test's metrics over a time window, as the Test Engine's test answers show them: the
 * `Buildkite-Version` that asks for them, the window (`period`, `min_timestamp`,
 * `max_timestamp`), totals by result -> reliability, durations and counts, the `result` tag's
 * group operators, and the order of a list. No HTTP, no SQL.
 */
import type { operations } from '../../generated/api';
import { BadRequestError, UnprocessableError } from '../core/errors';
import type { ExecutionTotals, TestIdentity, TimeWindow } from './results-repository';
import { resultPasses, type TestFilters } from './test-filters';
import { clock } from '../core/clock';

export type ListTestsQuery = NonNullable<operations['listTests']['parameters']['query']>;
type Period = NonNullable<ListTestsQuery['period']>;

/** The `period` values of the test lists and the flaky tests list (the same set), in milliseconds. */
export const PERIOD_MS: Record<Period, number> = {
  '1hour': 3_600_000,
  '4hours': 4 * 3_600_000,
  '1day': 86_400_000,
  '7days': 7 * 86_400_000,
  '14days': 14 * 86_400_000,
  '28days': 28 * 86_400_000,
};

/** The `Buildkite-Version` from which the tests' answers carry metrics. */
export const METRICS_VERSION = '2026-08-01';
/** The window of a suite's tests and a test's metrics when the request names none. */
const DEFAULT_WINDOW_MS = PERIOD_MS['7days'];
/** A build's window ends at most this long after the build was created. */
export const BUILD_WINDOW_MS = 24 * 3_600_000;

export type WindowQuery = Pick<ListTestsQuery, 'period' | 'min_timestamp' | 'max_timestamp'>;
export type SortBy = NonNullable<ListTestsQuery['sort_by']>;

/** A test's metrics over a window, as the answers show them. */
export interface TestMetrics {
  executionsCount: number;
  /** passed and failed always; the other results only when not zero. */
  byResult: Record<string, number>;
  reliability: number | null;
  durationAvg: number | null;
  durationSum: number | null;
  durationMin: number | null;
  durationMax: number | null;
}

/** A test with its labels and metrics, and the slug of its suite (for its URLs). */
export interface MeasuredTest {
  test: TestIdentity;
  suiteSlug: string;
  labels: string[];
  metrics: TestMetrics;
}

export type TestList =
  { versioned: false; items: { test: TestIdentity; labels: string[] }[]; total: number } | { versioned: true; items: MeasuredTest[]; total: number };

/**
 * Whether the answer carries metrics: `Buildkite-Version` at or after 2026-08-01. Blank or
 * absent is the legacy answer; anything but a real `YYYY-MM-DD` date is the documented 400.
 */
export function wantsMetrics(header: string | undefined): boolean {
  const v = (header ?? '').trim();
  if (!v) return false;
  const d = /^\d{4}-\d{2}-\d{2}$/.test(v) ? new Date(`${v}T00:00:00Z`) : null;
  if (!d || Number.isNaN(d.getTime()) || d.toISOString().slice(0, 10) !== v) throw new BadRequestError('Buildkite-Version must be in format YYYY-MM-DD');
  return v >= METRICS_VERSION;
}

/** Totals by result -> metrics, counting only the executions whose result the filters keep. */
export function metricsOf(totals: ExecutionTotals, f: TestFilters = {}): TestMetrics {
  const byResult: Record<string, number> = { passed: 0, failed: 0 };
  let count = 0;
  let durationCount = 0;
  let durationSum = 0;
  let durationMin: number | null = null;
  let durationMax: number | null = null;
  for (const [result, t] of totals) {
    if (!resultPasses(result, f) || t.count === 0) continue;
    byResult[result] = (byResult[result] ?? 0) + t.count;
    count += t.count;
    durationCount += t.durationCount;
    durationSum += t.durationSum;
    if (t.durationMin !== null) durationMin = durationMin === null ? t.durationMin : Math.min(durationMin, t.durationMin);
    if (t.durationMax !== null) durationMax = durationMax === null ? t.durationMax : Math.max(durationMax, t.durationMax);
  }
  const decided = byResult.passed! + byResult.failed!;
  return {
    executionsCount: count,
    byResult,
    reliability: decided ? byResult.passed! / decided : null,
    durationAvg: durationCount ? durationSum / durationCount : null,
    durationSum: durationCount ? durationSum : null,
    durationMin,
    durationMax,
  };
}

/** The `result` tag's group operators: `~x` at least one execution with x, `^x` every one. */
export function groupPasses(m: TestMetrics, f: TestFilters): boolean {
  if (!f.result || (f.result.op !== 'contains' && f.result.op !== 'only')) return true;
  const n = m.byResult[f.result.value] ?? 0;
  return f.result.op === 'contains' ? n > 0 : n > 0 && n === m.executionsCount;
}

const SORT_KEY: Record<SortBy, Exclude<keyof TestMetrics, 'byResult'>> = {
  duration_avg: 'durationAvg',
  duration_sum: 'durationSum',
  duration_min: 'durationMin',
  duration_max: 'durationMax',
  reliability: 'reliability',
};

/** By the metric in the order asked, tests without a value last, then by id (a stable page order). */
export function sortTests(items: MeasuredTest[], sortBy: SortBy, order: 'asc' | 'desc'): MeasuredTest[] {
  const key = SORT_KEY[sortBy];
  const dir = order === 'asc' ? 1 : -1;
  return items.sort((a, b) => {
    const x = a.metrics[key];
    const y = b.metrics[key];
    if (x !== y) {
      if (x === null) return 1;
      if (y === null) return -1;
      return (x - y) * dir;
    }
    return a.test.id < b.test.id ? -1 : a.test.id > b.test.id ? 1 : 0;
  });
}

/**
 * The window of a suite's tests or a test's metrics: `period` before now, or `min_timestamp`
 * (default 7 days before now) to `max_timestamp` (default now). `period` with either timestamp,
 * or a start after the end, is a 422.
 */
export function windowOf(q: WindowQuery, now = clock.now()): TimeWindow {
  if (q.period !== undefined) {
    if (q.min_timestamp !== undefined) throw new UnprocessableError('period cannot be combined with min_timestamp');
    if (q.max_timestamp !== undefined) throw new UnprocessableError('period cannot be combined with max_timestamp');
    return { from: new Date(now.getTime() - PERIOD_MS[q.period]), to: now };
  }
  const time = (name: string, v: string | undefined) => {
    if (v === undefined) return undefined;
    const d = new Date(v);
    if (Number.isNaN(d.getTime())) throw new BadRequestError(`Invalid parameter ${name}: must be an ISO 8601 time`);
    return d;
  };
  const min = time('min_timestamp', q.min_timestamp);
  const max = time('max_timestamp', q.max_timestamp);
  if (min && max && min > max) throw new UnprocessableError('min_timestamp must be before max_timestamp');
  return { from: min ?? new Date(now.getTime() - DEFAULT_WINDOW_MS), to: max ?? now };
}
