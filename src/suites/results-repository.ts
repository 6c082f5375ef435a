/**
 * Reads of what uploads stored in a suite: runs, tests with their totals, flaky tests and a
 * run's failed executions. Every query is answered from an index that matches its filter and
 * order (flaky tests from `flaky_instances (suite_id, [branch,] detected_at)`).
 */
import type { Knex } from 'knex';
import { likeContains, parseJson, toDate } from '../db/values';

export interface Run {
  id: string;
  suiteId: string;
  key: string;
  ci: string | null;
  branch: string | null;
  commitSha: string | null;
  tags: Record<string, string>;
  passedCount: number;
  failedCount: number;
  createdAt: Date;
}

export interface TestIdentity {
  id: string;
  scope: string | null;
  name: string;
  location: string | null;
  fileName: string | null;
}

export interface TestTotals extends TestIdentity {
  flaky: boolean;
  executionsCount: number;
  passedCount: number;
  failedCount: number;
  skippedCount: number;
  pendingCount: number;
  unknownCount: number;
  durationCount: number;
  durationSum: number;
  durationMin: number | null;
  durationMax: number | null;
}

export interface FlakyTest {
  test: TestIdentity;
  instances: number;
  mostRecentInstanceAt: Date;
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
}

export function runFromRow(r: Record<string, unknown>): Run {
  return {
    id: r.id as string,
    suiteId: r.suite_id as string,
    key: r.run_key as string,
    ci: (r.ci as string | null) ?? null,
    branch: (r.branch as string | null) ?? null,
    commitSha: (r.commit_sha as string | null) ?? null,
    tags: parseJson<Record<string, string>>(r.tags, {}),
    passedCount: Number(r.passed_count),
    failedCount: Number(r.failed_count),
    createdAt: toDate(r.created_at),
  };
}

function identityFromRow(r: Record<string, unknown>): TestIdentity {
  return {
    id: r.id as string,
    scope: (r.scope as string | null) ?? null,
    name: r.name as string,
    location: (r.location as string | null) ?? null,
    fileName: (r.file_name as string | null) ?? null,
  };
}

const num = (v: unknown) => (v === null || v === undefined ? null : Number(v));

export interface FlakyFilter {
  suiteId: string;
  since: Date;
  branch?: string;
  search?: string;
}

export class SuiteResultsRepository {
  constructor(private readonly db: Knex) {}

  /** Newest first; one row more than asked tells whether there is a next page. */
  async listRuns(suiteId: string, offset: number, limit: number): Promise<{ items: Run[]; hasNext: boolean }> {
    const rows = await this.db('test_runs')
      .where({ suite_id: suiteId })
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

  async findTest(suiteId: string, id: string): Promise<TestTotals | null> {
    const row = await this.db('tests').where({ suite_id: suiteId, id }).first();
    if (!row) return null;
    const flaky = await this.db('flaky_instances').where({ test_id: id }).first('test_id');
    return {
      ...identityFromRow(row),
      flaky: Boolean(flaky),
      executionsCount: Number(row.executions_count),
      passedCount: Number(row.passed_count),
      failedCount: Number(row.failed_count),
      skippedCount: Number(row.skipped_count),
      pendingCount: Number(row.pending_count),
      unknownCount: Number(row.unknown_count),
      durationCount: Number(row.duration_count),
      durationSum: Number(row.duration_sum),
      durationMin: num(row.duration_min),
      durationMax: num(row.duration_max),
    };
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
      .select('fi.test_id', this.db.raw('count(*) as instances'), this.db.raw('max(fi.detected_at) as last_at'))
      .orderBy([
        { column: 'last_at', order: 'desc' },
        { column: 'fi.test_id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit + 1);
    if (f.branch !== undefined) q.andWhere('fi.branch', f.branch);
    if (f.search) {
      // Joined rather than a subquery over the suite's tests: the text is matched only against
      // the tests with instances in the period, not against every test of the suite.
      const like = likeContains(f.search);
      q.join('tests as t', 't.id', 'fi.test_id').andWhere((w) => {
        w.whereRaw(`lower(t.name) like ? escape '\\'`, [like]).orWhereRaw(`lower(t.scope) like ? escape '\\'`, [like]);
      });
    }
    const groups = (await q) as { test_id: string; instances: number | string; last_at: unknown }[];
    const page = groups.slice(0, limit);
    const tests = page.length
      ? await this.db('tests')
          .whereIn(
            'id',
            page.map((g) => g.test_id),
          )
          .select('id', 'scope', 'name', 'location', 'file_name')
      : [];
    const byId = new Map(tests.map((t) => [t.id as string, identityFromRow(t)]));
    return {
      items: page.map((g) => ({ test: byId.get(g.test_id)!, instances: Number(g.instances), mostRecentInstanceAt: toDate(g.last_at) })),
      hasNext: groups.length > limit,
    };
  }

  async failedExecutions(run: Run, limit: number): Promise<FailedExecution[]> {
    const rows = await this.db('test_executions as e')
      .join('tests as t', 't.id', 'e.test_id')
      .where({ 'e.run_id': run.id, 'e.result': 'failed' })
      .orderBy('e.position')
      .limit(limit)
      .select('e.id', 'e.test_id', 'e.failure_reason', 'e.failure_expanded', 'e.duration', 'e.created_at', 't.name', 't.location');
    return rows.map((r) => ({
      id: r.id as string,
      run,
      testId: r.test_id as string,
      testName: r.name as string,
      location: (r.location as string | null) ?? null,
      failureReason: (r.failure_reason as string | null) ?? null,
      failureExpanded: parseJson<FailureExpanded>(r.failure_expanded, null),
      duration: num(r.duration),
      createdAt: toDate(r.created_at),
    }));
  }
}
