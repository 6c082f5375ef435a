/** Suites, runs, tests, flaky tests and failed executions -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import type { Suite } from './repository';
import type { BuildRun, FailedExecution, FlakyTest, Run, TestExecution, TestIdentity } from './results-repository';
import type { BuildTestIncludes } from './service';
import type { TestMetrics } from './test-metrics';
import { oneOf } from '../db/row-types';
import { everyValue } from '../core/enum-values';

type Schemas = components['schemas'];

/** Where a suite's API and web pages live: `/v2/analytics/organizations/{org}/suites/{slug}` and the web's `/organizations/{org}/analytics/suites/{slug}`. */
export interface SuiteUrls {
  api: string;
  web: string;
}

export function suiteUrls(publicUrl: string, orgSlug: string, suiteSlug: string): SuiteUrls {
  return {
    api: `${publicUrl}/v2/analytics/organizations/${orgSlug}/suites/${suiteSlug}`,
    web: `${publicUrl}/organizations/${orgSlug}/analytics/suites/${suiteSlug}`,
  };
}

/** The organization's and the suite's slugs of a suite's web URL (suiteUrls' `web`), or null for any other. */
export function suiteOfUrl(publicUrl: string, url: string): { orgSlug: string; suiteSlug: string } | null {
  const prefix = `${publicUrl}/organizations/`;
  if (!url.startsWith(prefix)) return null;
  const m = /^([^/?#]+)\/analytics\/suites\/([^/?#]+)\/?$/.exec(url.slice(prefix.length));
  return m ? { orgSlug: m[1]!, suiteSlug: m[2]! } : null;
}

export function serializeSuite(s: Suite, urls: SuiteUrls, apiToken?: string): Schemas['Suite'] {
  return {
    id: s.id,
    graphql_id: graphqlId('Suite', s.id),
    organization_id: s.organizationId,
    slug: s.slug,
    name: s.name,
    url: urls.api,
    web_url: urls.web,
    default_branch: s.defaultBranch,
    application_name: s.applicationName,
    color: s.color,
    emoji: s.emoji,
    oidc_policy: s.oidcPolicy,
    ...(apiToken !== undefined ? { api_token: apiToken } : {}),
  };
}

/** How long a run may go without a result before its `result` is `stale` (runs.md: "within a reasonable time period"). */
export const RUN_STALE_AFTER_MS = 60 * 60 * 1000;

/**
 * runs.md: `pending` until a result is processed, then `passed`, or `failed` once any failed
 * (a failure of a test muted at upload does not count); `stale` when none came in time.
 */
function runResult(r: Run, now: Date): Schemas['RunResult'] {
  if (r.failedCount > 0) return 'failed';
  if (r.executionsCount > 0) return 'passed';
  return now.getTime() - r.createdAt.getTime() >= RUN_STALE_AFTER_MS ? 'stale' : 'pending';
}

export function serializeRun(r: Run, urls: SuiteUrls, now: Date): Schemas['Run'] {
  return {
    id: r.id,
    url: `${urls.api}/runs/${r.id}`,
    web_url: `${urls.web}/runs/${r.id}`,
    branch: r.branch,
    commit_sha: r.commitSha,
    state: 'finished',
    result: runResult(r, now),
    // The Buildkite collectors send the build's UUID as the run key.
    build_id: r.ci === 'buildkite' ? r.key : null,
    created_at: isoTime(r.createdAt),
  };
}

export function serializeFlakyTest(f: FlakyTest, urls: SuiteUrls): Schemas['FlakyTest'] {
  return {
    id: f.test.id,
    web_url: `${urls.web}/tests/${f.test.id}`,
    scope: f.test.scope,
    name: f.test.name,
    location: f.test.location,
    file_name: f.test.fileName,
    instances: f.instances,
    most_recent_instance_at: isoTime(f.mostRecentInstanceAt),
    latest_occurrence_at: isoTime(f.mostRecentInstanceAt),
    last_resolved_at: null,
    ownership_team_ids: [],
  };
}

/** A test as the legacy answer shows it: `id` through `labels`. */
export function serializeTest(t: TestIdentity, labels: string[], urls: SuiteUrls): Schemas['Test'] {
  return {
    id: t.id,
    url: `${urls.api}/tests/${t.id}`,
    web_url: `${urls.web}/tests/${t.id}`,
    scope: t.scope,
    name: t.name,
    location: t.location,
    file_name: t.fileName,
    labels,
  };
}

/** A test as quarantine and find answer it: `id` through `file_name`. */
export function serializeTestSummary(t: TestIdentity, urls: SuiteUrls): Schemas['TestSummary'] {
  const { labels: _labels, ...summary } = serializeTest(t, [], urls);
  return summary;
}

/** A build's test: its metrics, its state, and what `include` asked for. */
export function serializeBuildTest(t: TestIdentity, labels: string[], m: TestMetrics, extra: BuildTestIncludes, urls: SuiteUrls): Schemas['BuildTest'] {
  const { labels: shown, ...rest } = serializeTestWithMetrics(t, labels, m, urls);
  return {
    ...rest,
    labels: shown,
    state: t.state,
    ...(extra.executions ? { executions: extra.executions.map((e) => serializeBuildTestExecution(e, t)) } : {}),
    ...(extra.latestFail !== undefined ? { latest_fail: extra.latestFail && serializeBuildTestExecution(extra.latestFail, t) } : {}),
  };
}

const EXECUTION_STATUSES = everyValue<Schemas['BuildTestExecutionStatus']>()(['passed', 'failed', 'skipped', 'pending', 'unknown']);

function serializeBuildTestExecution(e: TestExecution, t: TestIdentity): Schemas['BuildTestExecution'] {
  return {
    id: e.id,
    status: oneOf(EXECUTION_STATUSES, e.result, 'test_executions.result'),
    timestamp: isoTime(e.createdAt),
    duration: e.duration,
    location: t.location,
    failure_reason: e.failureReason,
    failure_expanded: e.failureExpanded,
  };
}

/** A test with its metrics over a window (the versioned answer, and a build's tests). */
export function serializeTestWithMetrics(t: TestIdentity, labels: string[], m: TestMetrics, urls: SuiteUrls): Schemas['TestWithMetrics'] {
  return {
    ...serializeTest(t, labels, urls),
    reliability: m.reliability,
    duration_avg: m.durationAvg,
    duration_sum: m.durationSum,
    duration_min: m.durationMin,
    duration_max: m.durationMax,
    executions_count: m.executionsCount,
    executions_count_by_result: { passed: m.byResult.passed ?? 0, failed: m.byResult.failed ?? 0, ...nonZero(m.byResult) },
  };
}

/** skipped, pending and unknown, each only when not zero (passed and failed are always shown). */
function nonZero(byResult: Record<string, number>): { skipped?: number; pending?: number; unknown?: number } {
  const out: { skipped?: number; pending?: number; unknown?: number } = {};
  for (const k of ['skipped', 'pending', 'unknown'] as const) if (byResult[k]) out[k] = byResult[k];
  return out;
}

/** A build's `test_engine`: its Buildkite runs, each with its suite. */
export function serializeTestEngine(runs: BuildRun[]): { runs: { id: string; suite: { id: string; slug: string } }[] } {
  return { runs: runs.map((r) => ({ id: r.runId, suite: { id: r.suiteId, slug: r.suiteSlug } })) };
}

export function serializeFailedExecution(e: FailedExecution, urls: SuiteUrls, withExpanded: boolean): Schemas['FailedExecution'] {
  const testUrl = `${urls.web}/tests/${e.testId}`;
  return {
    execution_id: e.id,
    run_id: e.run.id,
    test_id: e.testId,
    run_name: e.run.key,
    commit_sha: e.run.commitSha,
    created_at: isoTime(e.createdAt),
    branch: e.run.branch,
    failure_reason: e.failureReason,
    ...(withExpanded ? { failure_expanded: e.failureExpanded } : {}),
    duration: e.duration,
    location: e.location,
    test_name: e.testName,
    run_url: `${urls.web}/runs/${e.run.id}`,
    test_url: testUrl,
    test_execution_url: `${testUrl}?execution_id=${e.id}`,
    tags: executionTagsOf(e),
  };
}

/** Tags the failed executions' answer leaves out: runs.md, "Tags that duplicate other fields already present in the response". */
const DUPLICATED_TAGS = new Set(['result', 'scm.branch', 'scm.commit_sha']);

/**
 * An execution's tags: the ones stored with it at upload (its upload's, its result's own over
 * them) over its run's (which only runs stored before upload tags moved to executions hold: their
 * first upload's), then its mutable `mut.` tags.
 */
function executionTagsOf(e: FailedExecution): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries({ ...e.run.tags, ...e.tags, ...e.mutableTags })) if (!DUPLICATED_TAGS.has(k)) out[k] = v;
  return out;
}
