/** A test run row (as the suites' reads and the upload's upsert return it) into a Run (or the WindowRun the test lists read). */
import type { TestRunsRow } from '../db/tables';
import { toDate } from '../db/values';
import type { FailureExpanded, Run, WindowRun } from './results-repository';
import { jsonColumn } from '../db/row-types';
import { isRecord, isStringArray, isStringRecord } from '../core/guards';

/** The columns windowRunFromRow reads. */
export type WindowRunRow = Pick<TestRunsRow, 'id' | 'suite_id' | 'run_key' | 'ci' | 'branch' | 'commit_sha' | 'tags'>;

export function windowRunFromRow(r: WindowRunRow): WindowRun {
  return {
    id: r.id,
    suiteId: r.suite_id,
    key: r.run_key,
    ci: r.ci ?? null,
    branch: r.branch ?? null,
    commitSha: r.commit_sha ?? null,
    tags: jsonColumn(r.tags, {}, isStringRecord, 'test_runs.tags'),
  };
}

export function runFromRow(r: WindowRunRow & Pick<TestRunsRow, 'executions_count' | 'passed_count' | 'failed_count' | 'created_at'>): Run {
  return {
    ...windowRunFromRow(r),
    executionsCount: Number(r.executions_count),
    passedCount: Number(r.passed_count),
    failedCount: Number(r.failed_count),
    createdAt: toDate(r.created_at),
  };
}

/** An execution's `failure_expanded` as uploads store it (src/uploads/results.ts checks it on the way in). */
export function isFailureExpanded(v: unknown): v is FailureExpanded {
  return (
    v === null ||
    (Array.isArray(v) &&
      v.every(
        (item) =>
          isRecord(item) && (item.expanded === undefined || isStringArray(item.expanded)) && (item.backtrace === undefined || isStringArray(item.backtrace)),
      ))
  );
}
