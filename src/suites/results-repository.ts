/**
 * Reads of what uploads stored in a suite: runs, tests and their executions totalled over a
 * time window, flaky tests, a run's failed executions and the runs of Buildkite builds. Every query is answered from an index that matches its filter and
 * order (flaky tests from `flaky_instances (suite_id, [branch,] detected_at)`).
 */
import type { Knex } from 'knex';
import { isPostgres } from '../db/knex';
import type { DbBigInt } from '../db/column-kinds';
import type { FlakyInstancesRow, SuitesRow, TestExecutionsRow, TestRunsRow, TestsRow } from '../db/tables';
import { likeContains, toDate } from '../db/values';
import { isFailureExpanded, runFromRow, windowRunFromRow } from './rows';
import { type Renamed, jsonColumn, oneOf } from '../db/row-types';
import { isStringArray, isStringRecord } from '../core/guards';
import { everyValue } from '../core/enum-values';
import { BUILT_IN_TAGS, type TagFilter } from './test-filters';
import { isTagKey } from './tag-rules';

/** A run, as the test lists' filters and links see it. */
export interface WindowRun {
  id: string;
  suiteId: string;
  key: string;
  ci: string | null;
  branch: string | null;
  commitSha: string | null;
  tags: Record<string, string>;
}

export interface Run extends WindowRun {
  /** The results it stored, of any outcome. */
  executionsCount: number;
  passedCount: number;
  failedCount: number;
  createdAt: Date;
}

export type TestState = 'enabled' | 'muted' | 'skipped';
const TEST_STATES = everyValue<TestState>()(['enabled', 'muted', 'skipped']);

export interface TestIdentity {
  id: string;
  scope: string | null;
  name: string;
  location: string | null;
  fileName: string | null;
  state: TestState;
  /** The labels given through the API (`flaky` is derived from flaky instances, not kept here). */
  labels: string[];
}

export interface FlakyTest {
  test: TestIdentity;
  instances: number;
  mostRecentInstanceAt: Date;
  /** The test's first flaky instance ever (not only in the period): how long it has been flaky. */
  firstInstanceAt: Date;
}

export type FailureExpanded = { expanded?: string[]; backtrace?: string[] }[] | null;

export interface FailedExecution {
  id: string;
  run: Run;
  testId: string;
  testName: string;
  location: string | null;
  failureReason: string | null;
  failureExpanded: FailureExpanded;
  duration: number | null;
  createdAt: Date;
  /** Its upload's tags with the result's own over them (over the run's, which only older runs hold). */
  tags: Record<string, string>;
  /** The `mut.` tags set through the execution tags API. */
  mutableTags: Record<string, string>;
}

/** An execution of a build's test, as `include=executions` and `latest_fail` show it. */
export interface TestExecution {
  id: string;
  testId: string;
  runId: string;
  /** Its upload's tags with the result's own over them (over its run's, which only older runs hold). */
  tags: Record<string, string>;
  result: string;
  createdAt: Date;
  duration: number | null;
  failureReason: string | null;
  failureExpanded: FailureExpanded;
}

/** The columns identityFromRow reads. */
const IDENTITY_COLUMNS = ['id', 'scope', 'name', 'location', 'file_name', 'state', 'labels'] as const;

/** A test's identity columns (the legacy list reads them without `state` and `labels`). */
type IdentityRow = Pick<TestsRow, 'id' | 'scope' | 'name' | 'location' | 'file_name'> & Partial<Pick<TestsRow, 'state' | 'labels'>>;

function identityFromRow(r: IdentityRow): TestIdentity {
  return {
    id: r.id,
    scope: r.scope ?? null,
    name: r.name,
    location: r.location ?? null,
    fileName: r.file_name ?? null,
    state: oneOf(TEST_STATES, r.state ?? 'enabled', 'tests.state'),
    labels: jsonColumn(r.labels, [], isStringArray, 'tests.labels'),
  };
}

/** The columns executionFromRow reads. */
const EXECUTION_COLUMNS = ['id', 'test_id', 'run_id', 'tags', 'result', 'created_at', 'duration', 'failure_reason', 'failure_expanded'] as const;

function executionFromRow(r: Pick<TestExecutionsRow, (typeof EXECUTION_COLUMNS)[number]>): TestExecution {
  return {
    id: r.id,
    testId: r.test_id,
    runId: r.run_id,
    tags: jsonColumn(r.tags, {}, isStringRecord, 'test_executions.tags'),
    result: r.result,
    createdAt: toDate(r.created_at),
    duration: num(r.duration),
    failureReason: r.failure_reason ?? null,
    failureExpanded: jsonColumn(r.failure_expanded, null, isFailureExpanded, 'test_executions.failure_expanded'),
  };
}

/** An execution with tags of its own, as the tag filters weigh it (`taggedExecutions`). */
export interface TaggedExecution {
  runId: string;
  testId: string;
  result: string;
  duration: number | null;
  tags: Record<string, string>;
}

/** `listFlaky`'s groups: a test's instances in the period and the most recent one. */
type FlakyGroupRow = Pick<FlakyInstancesRow, 'test_id'> & { instances: DbBigInt; last_at: FlakyInstancesRow['detected_at'] };
/** `listFlaky`'s first instances: a test's earliest instance of all time. */
type FlakyFirstRow = Pick<FlakyInstancesRow, 'test_id'> & { first_at: FlakyInstancesRow['detected_at'] };

/** `failedExecutions`' read: the execution and its test's name and location. */
type FailedExecutionRow = Pick<
  TestExecutionsRow,
  'id' | 'test_id' | 'failure_reason' | 'failure_expanded' | 'duration' | 'created_at' | 'tags' | 'mutable_tags'
> &
  Pick<TestsRow, 'name' | 'location'>;

/** `buildRuns`' read: a run and its suite. */
type BuildRunRow = Pick<TestRunsRow, 'run_key' | 'id'> & Renamed<SuitesRow, { suite_id: 'id'; suite_slug: 'slug' }>;

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

/** A time window, both ends included. */
export interface TimeWindow {
  from: Date;
  to: Date;
}

/** The executions of one test with one result: how many, and their durations. */
export interface ResultTotals {
  count: number;
  durationCount: number;
  durationSum: number;
  durationMin: number | null;
  durationMax: number | null;
}

/** A test's executions in a window, by result. */
export type ExecutionTotals = Map<string, ResultTotals>;

/** A test's identity with its suite (a build's tests span suites). */
export interface SuiteTest extends TestIdentity {
  suiteId: string;
}

/** A Buildkite build's run in a suite (what a build's `test_engine` lists). */
export interface BuildRun {
  buildId: string;
  runId: string;
  suiteId: string;
  suiteSlug: string;
}

/** What totals by result read of executions: how many, and their durations (addTotals reads them). */
function totalsColumns(db: Knex): Knex.Raw[] {
  return [
    'count(*) as n',
    'count(duration) as duration_count',
    'sum(duration) as duration_sum',
    'min(duration) as duration_min',
    'max(duration) as duration_max',
  ].map((column) => db.raw(column));
}

/** Ids per statement in the chunked `in (...)` reads: well under both stores' parameter limits. */
const IN_CHUNK = 500;

function inChunks<T>(items: T[]): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += IN_CHUNK) out.push(items.slice(i, i + IN_CHUNK));
  return out;
}

/** The columns totalsColumns selects (aggregates: a count is a bigint on Postgres, a sum may be a numeric string). */
interface TotalsRow {
  n: DbBigInt;
  duration_count: DbBigInt;
  duration_sum: number | string | null;
  duration_min: TestExecutionsRow['duration'];
  duration_max: TestExecutionsRow['duration'];
}

function addTotals(into: ExecutionTotals, result: string, r: TotalsRow): void {
  const add: ResultTotals = {
    count: Number(r.n),
    durationCount: Number(r.duration_count),
    durationSum: Number(r.duration_sum ?? 0),
    durationMin: num(r.duration_min),
    durationMax: num(r.duration_max),
  };
  const cur = into.get(result);
  if (!cur) {
    into.set(result, add);
    return;
  }
  cur.count += add.count;
  cur.durationCount += add.durationCount;
  cur.durationSum += add.durationSum;
  if (add.durationMin !== null) cur.durationMin = cur.durationMin === null ? add.durationMin : Math.min(cur.durationMin, add.durationMin);
  if (add.durationMax !== null) cur.durationMax = cur.durationMax === null ? add.durationMax : Math.max(cur.durationMax, add.durationMax);
}

/** Adds one execution to its test's totals (the tag-filtered executions, counted one by one). */
export function addExecution(into: Map<string, ExecutionTotals>, e: Pick<TaggedExecution, 'testId' | 'result' | 'duration'>): void {
  let totals = into.get(e.testId);
  if (!totals) into.set(e.testId, (totals = new Map()));
  const timed = e.duration !== null;
  addTotals(totals, e.result, { n: 1, duration_count: timed ? 1 : 0, duration_sum: e.duration, duration_min: e.duration, duration_max: e.duration });
}

export interface FlakyFilter {
  suiteId: string;
  since: Date;
  branch?: string;
  search?: string;
}

export class SuiteResultsRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Newest first; one row more than asked tells whether there is a next page. `buildId`: the
   * runs whose `build_id` it is, which serializeRun derives from a Buildkite run's key, so the
   * filter is the same rule (and an equality on the `suite_id, run_key` unique index).
   */
  async listRuns(suiteId: string, filter: { buildId?: string }, offset: number, limit: number): Promise<{ items: Run[]; hasNext: boolean }> {
    const q = this.db('test_runs').where({ suite_id: suiteId });
    if (filter.buildId !== undefined) q.andWhere({ run_key: filter.buildId, ci: 'buildkite' });
    const rows = await q
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit + 1);
    return { items: rows.slice(0, limit).map(runFromRow), hasNext: rows.length > limit };
  }

  async findRun(suiteId: string, id: string): Promise<Run | null> {
    const row = await this.db('test_runs').where({ suite_id: suiteId, id }).first();
    return row ? runFromRow(row) : null;
  }

  /**
   * Tests with flaky instances matching the filter, most recent instance first. Grouping runs
   * over the instances of the period only (an index range), never over executions.
   */
  async listFlaky(f: FlakyFilter, offset: number, limit: number): Promise<{ items: FlakyTest[]; hasNext: boolean }> {
    const q = this.db('flaky_instances as fi')
      .where('fi.suite_id', f.suiteId)
      .andWhere('fi.detected_at', '>=', f.since)
      .groupBy('fi.test_id')
      .select<FlakyGroupRow[]>('fi.test_id', this.db.raw('count(*) as instances'), this.db.raw('max(fi.detected_at) as last_at'))
      .orderBy([
        { column: 'last_at', order: 'desc' },
        { column: 'fi.test_id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit + 1);
    if (f.branch !== undefined) q.andWhere('fi.branch', f.branch);
    if (f.search) {
      // Joined rather than a subquery over the suite's tests: the text is matched only against
      // the tests with instances in the period, not against every test of the suite. The
      // location too (_flaky_tests_query_strings.md: `?search="/billing_spec"`), whatever the
      // collector: Windsock stores it from every upload form.
      const like = likeContains(f.search);
      q.join('tests as t', 't.id', 'fi.test_id').andWhere((w) => {
        w.whereRaw(`lower(t.name) like ? escape '\\'`, [like])
          .orWhereRaw(`lower(t.scope) like ? escape '\\'`, [like])
          .orWhereRaw(`lower(t.location) like ? escape '\\'`, [like]);
      });
    }
    const groups = await q;
    const page = groups.slice(0, limit);
    const tests = page.length
      ? await this.db('tests')
          .whereIn(
            'id',
            page.map((g) => g.test_id),
          )
          .select(...IDENTITY_COLUMNS)
      : [];
    const byId = new Map(tests.map((t) => [t.id, identityFromRow(t)]));
    const firsts = page.length
      ? await this.db('flaky_instances')
          .where('suite_id', f.suiteId)
          .whereIn(
            'test_id',
            page.map((g) => g.test_id),
          )
          .groupBy('test_id')
          .select<FlakyFirstRow[]>('test_id', this.db.raw('min(detected_at) as first_at'))
      : [];
    const firstById = new Map(firsts.map((r) => [r.test_id, toDate(r.first_at)]));
    return {
      items: page.map((g) => ({
        test: byId.get(g.test_id)!,
        instances: Number(g.instances),
        mostRecentInstanceAt: toDate(g.last_at),
        firstInstanceAt: firstById.get(g.test_id) ?? toDate(g.last_at),
      })),
      hasNext: groups.length > limit,
    };
  }

  /** A test's latest executions, newest first, each with its run: the test's history (the `test_id, created_at` index). */
  async recentExecutionsOfTest(testId: string, limit: number): Promise<(TestExecution & { run: Run })[]> {
    const rows = await this.db('test_executions')
      .where('test_id', testId)
      .orderBy([
        { column: 'created_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .limit(limit)
      .select('id', 'test_id', 'run_id', 'tags', 'result', 'created_at', 'duration', 'failure_reason', 'failure_expanded');
    const runIds = [...new Set(rows.map((r) => r.run_id))];
    const runs = new Map<string, Run>();
    for (const part of inChunks(runIds)) for (const r of await this.db('test_runs').whereIn('id', part)) runs.set(r.id, runFromRow(r));
    return rows.flatMap((r) => {
      const run = runs.get(r.run_id);
      if (!run) return [];
      return [
        {
          ...executionFromRow(r),
          run,
        },
      ];
    });
  }

  /**
   * A run's failed executions in upload order (the `run_id, result, position` index; a position
   * is unique within its run, so the order is total and pages neither skip nor repeat).
   */
  async failedExecutions(run: Run, offset: number, limit: number): Promise<FailedExecution[]> {
    const rows = await this.db('test_executions as e')
      .join('tests as t', 't.id', 'e.test_id')
      .where({ 'e.run_id': run.id, 'e.result': 'failed' })
      .orderBy('e.position')
      .offset(offset)
      .limit(limit)
      .select<FailedExecutionRow[]>(
        'e.id',
        'e.test_id',
        'e.failure_reason',
        'e.failure_expanded',
        'e.duration',
        'e.created_at',
        'e.tags',
        'e.mutable_tags',
        't.name',
        't.location',
      );
    return rows.map((r) => ({
      id: r.id,
      run,
      testId: r.test_id,
      testName: r.name,
      location: r.location ?? null,
      failureReason: r.failure_reason ?? null,
      failureExpanded: jsonColumn(r.failure_expanded, null, isFailureExpanded, 'test_executions.failure_expanded'),
      duration: num(r.duration),
      createdAt: toDate(r.created_at),
      tags: jsonColumn(r.tags, {}, isStringRecord, 'test_executions.tags'),
      mutableTags: jsonColumn(r.mutable_tags, {}, isStringRecord, 'test_executions.mutable_tags'),
    }));
  }

  /** A test of the suite with whether it has been flaky, or null. */
  async findTestIdentity(suiteId: string, id: string): Promise<(TestIdentity & { flaky: boolean }) | null> {
    const row = await this.db('tests')
      .where({ suite_id: suiteId, id })
      .first(...IDENTITY_COLUMNS);
    if (!row) return null;
    const flaky = await this.db('flaky_instances').where({ test_id: id }).first('test_id');
    return { ...identityFromRow(row), flaky: Boolean(flaky) };
  }

  /**
   * Every test of a suite, newest first (the legacy list). `label`: only the tests with it
   * (`flaky`: also the tests that have been flaky).
   */
  async listTestIdentities(
    suiteId: string,
    label: string | undefined,
    offset: number,
    limit: number,
  ): Promise<{ items: (TestIdentity & { flaky: boolean })[]; total: number }> {
    const filtered = () => {
      const q = this.db('tests as t').where('t.suite_id', suiteId);
      // A given label is a quoted string of the JSON list.
      const given = (l: string) => [`%${JSON.stringify(l).replace(/[\\%_]/g, (c) => `\\${c}`)}%`];
      if (label === 'flaky')
        q.where((w) =>
          w
            .whereExists(this.db('flaky_instances as fi').whereRaw('fi.test_id = t.id').select(this.db.raw('1')))
            .orWhereRaw(`t.labels like ? escape '\\'`, given(label)),
        );
      else if (label !== undefined) q.whereRaw(`t.labels like ? escape '\\'`, given(label));
      return q;
    };
    const [countRow, rows] = await Promise.all([
      filtered().count<{ n: number | string }[]>({ n: '*' }).first(),
      filtered()
        .orderBy([
          { column: 't.created_at', order: 'desc' },
          { column: 't.id', order: 'desc' },
        ])
        .offset(offset)
        .limit(limit)
        .select<IdentityRow[]>('t.id', 't.scope', 't.name', 't.location', 't.file_name'),
    ]);
    const flakyIds = await this.flakyTestIds(rows.map((r) => r.id));
    return { items: rows.map((r) => ({ ...identityFromRow(r), flaky: flakyIds.has(r.id) })), total: Number(countRow?.n ?? 0) };
  }

  /** The runs of these suites that took an upload in the window (runs of one build's key, when given). */
  async runsInWindow(suiteIds: string[], window: TimeWindow, buildKey?: string): Promise<WindowRun[]> {
    if (!suiteIds.length) return [];
    const out: WindowRun[] = [];
    for (const part of inChunks(suiteIds)) {
      const q = this.db('test_runs')
        .whereIn('suite_id', part)
        .andWhere('updated_at', '>=', window.from)
        .andWhere('created_at', '<=', window.to)
        .select('id', 'suite_id', 'run_key', 'ci', 'branch', 'commit_sha', 'tags');
      if (buildKey !== undefined) q.andWhere({ run_key: buildKey, ci: 'buildkite' });
      for (const r of await q) out.push(windowRunFromRow(r));
    }
    return out;
  }

  /**
   * The executions of these runs in the window, totalled by test and result. `exceptOwnTags`:
   * only those whose own tags hold none of these keys (a tag filter's: such an execution counts
   * as its run does).
   */
  async totalsByTest(runIds: string[], window: TimeWindow, opts: { exceptOwnTags?: readonly string[] } = {}): Promise<Map<string, ExecutionTotals>> {
    const byTest = new Map<string, ExecutionTotals>();
    for (const part of inChunks(runIds)) {
      const q = this.db('test_executions')
        .whereIn('run_id', part)
        .andWhere('created_at', '>=', window.from)
        .andWhere('created_at', '<=', window.to)
        .groupBy('test_id', 'result')
        .select<(Pick<TestExecutionsRow, 'test_id' | 'result'> & TotalsRow)[]>('test_id', 'result', ...totalsColumns(this.db));
      if (opts.exceptOwnTags) {
        const holds = this.ownTagsHoldAny(opts.exceptOwnTags);
        q.whereRaw(`not ${holds.sql}`, holds.bindings);
      }
      const rows = await q;
      for (const r of rows) {
        let totals = byTest.get(r.test_id);
        if (!totals) byTest.set(r.test_id, (totals = new Map()));
        addTotals(totals, r.result, r);
      }
    }
    return byTest;
  }

  /**
   * The executions of these runs in the window whose own tags hold one of the filtered keys, one
   * by one: only they can weigh differently from their run, each against its own tags over its
   * run's. Read only when a request filters by tags. Since an upload's tags are stored with each
   * of its executions, that is most of them; so those whose own value of a filtered tag already
   * fails it are left out in SQL (`ownTagMayPass`), and the service weighs the rest.
   */
  async taggedExecutions(runIds: string[], window: TimeWindow, tags: readonly TagFilter[]): Promise<TaggedExecution[]> {
    const out: TaggedExecution[] = [];
    const holds = this.ownTagsHoldAny([...new Set(tags.map((t) => t.key))]);
    const mayPass = tags.flatMap((t) => this.ownTagMayPass(t) ?? []);
    for (const part of inChunks(runIds)) {
      const q = this.db('test_executions')
        .whereIn('run_id', part)
        .andWhere('created_at', '>=', window.from)
        .andWhere('created_at', '<=', window.to)
        .whereRaw(holds.sql, holds.bindings)
        .select('run_id', 'test_id', 'result', 'duration', 'tags');
      for (const m of mayPass) q.whereRaw(m.sql, m.bindings);
      for (const r of await q) {
        out.push({
          runId: r.run_id,
          testId: r.test_id,
          result: r.result,
          duration: num(r.duration),
          tags: jsonColumn(r.tags, {}, isStringRecord, 'test_executions.tags'),
        });
      }
    }
    return out;
  }

  /**
   * SQL that holds where an execution may pass one tag filter: its own tags lack the key (its run
   * decides), or their value passes. An own value is the one the filter weighs (it is over the
   * run's), except for the built-in tags, whose run fields win (test-filters.ts, `tagValue`):
   * those, and keys that could not be written into a JSON path as they are, are not narrowed
   * (null). Only ever leaves out executions the service would not count.
   */
  private ownTagMayPass(t: TagFilter): { sql: string; bindings: (string | number)[] } | null {
    // A key the tagging rules allow goes into a JSON path (`$."key"`) as it is; no other is stored.
    if (BUILT_IN_TAGS.has(t.key) || !isTagKey(t.key)) return null;
    const [own, key] = isPostgres(this.db) ? ['(test_executions.tags::jsonb ->> ?)', t.key] : ['json_extract(test_executions.tags, ?)', `$."${t.key}"`];
    const { op, value } = t.match;
    if (op === 'prefix') {
      // substr counts characters (code points) on both stores.
      return { sql: `(${own} is null or substr(${own}, 1, ?) = ?)`, bindings: [key, key, [...value].length, value] };
    }
    if (op === 'eq' || op === 'not') return { sql: `(${own} is null or ${own} ${op === 'eq' ? '=' : '<>'} ?)`, bindings: [key, key, value] };
    return null;
  }

  /** SQL that holds where an execution's own tags (a JSON object, or null for none) have one of `keys`. */
  private ownTagsHoldAny(keys: readonly string[]): { sql: string; bindings: string[] } {
    if (!keys.length) return { sql: '1 = 0', bindings: [] };
    if (isPostgres(this.db)) {
      return {
        sql: `exists (select 1 from jsonb_object_keys(test_executions.tags::jsonb) as k(key) where k.key in (${keys.map(() => '?').join(', ')}))`,
        bindings: [...keys],
      };
    }
    return { sql: `exists (select 1 from json_each(test_executions.tags) as k where k.key in (${keys.map(() => '?').join(', ')}))`, bindings: [...keys] };
  }

  /** One test's executions in the window, totalled by result. */
  async totalsOfTest(testId: string, window: TimeWindow): Promise<ExecutionTotals> {
    const rows = await this.db('test_executions')
      .where('test_id', testId)
      .andWhere('created_at', '>=', window.from)
      .andWhere('created_at', '<=', window.to)
      .groupBy('result')
      .select<(Pick<TestExecutionsRow, 'result'> & TotalsRow)[]>('result', ...totalsColumns(this.db));
    const totals: ExecutionTotals = new Map();
    for (const r of rows) addTotals(totals, r.result, r);
    return totals;
  }

  /** Which of these tests have been flaky. */
  async flakyTestIds(testIds: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (const part of inChunks(testIds)) {
      for (const r of await this.db('flaky_instances').whereIn('test_id', part).distinct('test_id')) out.add(r.test_id);
    }
    return out;
  }

  /** These tests' identities and suites. */
  async testsByIds(ids: string[]): Promise<Map<string, SuiteTest>> {
    const out = new Map<string, SuiteTest>();
    for (const part of inChunks(ids)) {
      for (const r of await this.db('tests')
        .whereIn('id', part)
        .select('suite_id', ...IDENTITY_COLUMNS)) {
        out.set(r.id, { ...identityFromRow(r), suiteId: r.suite_id });
      }
    }
    return out;
  }

  /** Puts a test in a quarantine state (or back to enabled), noting when. */
  async setTestState(testId: string, state: TestState, now: Date): Promise<void> {
    await this.db('tests').where({ id: testId }).update({ state, state_changed_at: now });
  }

  /** A suite's tests in a state, most recently changed first; one row more than asked tells whether there is a next page. */
  async listTestsInState(suiteId: string, state: TestState, offset: number, limit: number): Promise<{ items: TestIdentity[]; hasNext: boolean }> {
    const rows = await this.db('tests')
      .where({ suite_id: suiteId, state })
      .orderBy([
        { column: 'state_changed_at', order: 'desc' },
        { column: 'id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit + 1)
      .select(...IDENTITY_COLUMNS);
    return { items: rows.slice(0, limit).map(identityFromRow), hasNext: rows.length > limit };
  }

  /** The suite's oldest test with this name and scope (null: a test without a scope, or a blank one). */
  async findTestByName(suiteId: string, scope: string | null, name: string): Promise<TestIdentity | null> {
    const q = this.db('tests').where({ suite_id: suiteId, name });
    if (scope === null) q.andWhere((w) => w.whereNull('scope').orWhere('scope', ''));
    else q.andWhere('scope', scope);
    const row = await q
      .orderBy([
        { column: 'created_at', order: 'asc' },
        { column: 'id', order: 'asc' },
      ])
      .first(...IDENTITY_COLUMNS);
    return row ? identityFromRow(row) : null;
  }

  async setTestLabels(testId: string, labels: string[]): Promise<void> {
    await this.db('tests')
      .where({ id: testId })
      .update({ labels: labels.length ? JSON.stringify(labels) : null });
  }

  /**
   * Replaces the mutable tags of these executions of the suite, in one transaction. Returns the
   * ids that are not executions of the suite, and changes nothing when there are any.
   */
  async replaceMutableTags(suiteId: string, entries: { id: string; tags: Record<string, string> }[]): Promise<{ unknown: string[] }> {
    return this.db.transaction(async (trx) => {
      const ids = [...new Set(entries.map((e) => e.id))];
      const found = new Set<string>();
      for (const part of inChunks(ids)) {
        const rows = await trx('test_executions as e')
          .join('test_runs as r', 'r.id', 'e.run_id')
          .where('r.suite_id', suiteId)
          .whereIn('e.id', part)
          .select<Pick<TestExecutionsRow, 'id'>[]>('e.id');
        for (const r of rows) found.add(r.id);
      }
      const unknown = ids.filter((id) => !found.has(id));
      if (unknown.length) return { unknown };
      // The last entry for an id wins; executions with the same tags are updated together.
      const last = new Map(entries.map((e) => [e.id, e.tags]));
      const byTags = new Map<string, string[]>();
      for (const [id, tags] of last) {
        const key = Object.keys(tags).length ? JSON.stringify(tags) : '';
        const list = byTags.get(key);
        if (list) list.push(id);
        else byTags.set(key, [id]);
      }
      for (const [key, group] of byTags) {
        for (const part of inChunks(group))
          await trx('test_executions')
            .whereIn('id', part)
            .update({ mutable_tags: key || null });
      }
      return { unknown: [] };
    });
  }

  /**
   * The executions of these tests in these runs and window, oldest first (`result`: only
   * that result). At most `perTest` of each test are kept, the newest when `newest`.
   */
  async executionsOf(
    runIds: string[],
    testIds: string[],
    window: TimeWindow,
    opts: { result?: string; perTest: number; newest?: boolean },
  ): Promise<Map<string, TestExecution[]>> {
    const out = new Map<string, TestExecution[]>();
    if (!runIds.length || !testIds.length) return out;
    for (const tests of inChunks(testIds)) {
      for (const runs of inChunks(runIds)) {
        const q = this.db('test_executions')
          .whereIn('test_id', tests)
          .whereIn('run_id', runs)
          .andWhere('created_at', '>=', window.from)
          .andWhere('created_at', '<=', window.to)
          .orderBy([
            { column: 'created_at', order: 'asc' },
            { column: 'position', order: 'asc' },
            { column: 'id', order: 'asc' },
          ])
          .select(...EXECUTION_COLUMNS);
        if (opts.result !== undefined) q.andWhere('result', opts.result);
        for (const r of await q) {
          const e = executionFromRow(r);
          const list = out.get(e.testId);
          if (list) list.push(e);
          else out.set(e.testId, [e]);
        }
      }
    }
    for (const [id, list] of out) {
      // Runs were read in chunks: order again across them before keeping the first or last few.
      list.sort((a, b) => a.createdAt.getTime() - b.createdAt.getTime());
      out.set(id, opts.newest ? list.slice(-opts.perTest) : list.slice(0, opts.perTest));
    }
    return out;
  }

  /**
   * The Buildkite runs (run key = build UUID, `ci` buildkite) of these builds in the
   * organization's suites, oldest first; `visibleToUserId`: only suites granted to one of the
   * user's teams.
   */
  async buildRuns(organizationId: string, buildIds: string[], visibleToUserId?: string): Promise<BuildRun[]> {
    const out: BuildRun[] = [];
    for (const part of inChunks(buildIds)) {
      const q = this.db('test_runs as r')
        .join('suites as s', 's.id', 'r.suite_id')
        .where('s.organization_id', organizationId)
        .andWhere('r.ci', 'buildkite')
        .whereIn('r.run_key', part)
        .orderBy([
          { column: 'r.created_at', order: 'asc' },
          { column: 'r.id', order: 'asc' },
        ])
        .select<BuildRunRow[]>('r.run_key', 'r.id', 's.id as suite_id', 's.slug as suite_slug');
      if (visibleToUserId) {
        q.whereIn(
          's.id',
          this.db('suite_teams as st').join('team_members as tm', 'tm.team_id', 'st.team_id').where('tm.user_id', visibleToUserId).select('st.suite_id'),
        );
      }
      for (const r of await q) {
        out.push({ buildId: r.run_key, runId: r.id, suiteId: r.suite_id, suiteSlug: r.suite_slug });
      }
    }
    return out;
  }
}
