/** A test run row (as the suites' reads and the upload's upsert return it) into a Run (or the WindowRun the test lists read). */
import { parseJson, toDate } from '../db/values';
import type { Run, WindowRun } from './results-repository';

export function windowRunFromRow(r: Record<string, unknown>): WindowRun {
  return {
    id: r.id as string,
    suiteId: r.suite_id as string,
    key: r.run_key as string,
    ci: (r.ci as string | null) ?? null,
    branch: (r.branch as string | null) ?? null,
    commitSha: (r.commit_sha as string | null) ?? null,
    tags: parseJson<Record<string, string>>(r.tags, {}),
  };
}

export function runFromRow(r: Record<string, unknown>): Run {
  return {
    ...windowRunFromRow(r),
    passedCount: Number(r.passed_count),
    failedCount: Number(r.failed_count),
    createdAt: toDate(r.created_at),
  };
}
