/**
 * Ingestion of one upload in one transaction: the run (upserted by its key, counters bumped),
 * the tests (upserted by identity, totals bumped), the executions (each with the upload's tags
 * and its own over them), and flaky detection: the
 * per (test, commit) passed/failed flags are OR-ed in, and a test whose flags are both set
 * gets its flaky instance for that commit. A muted test's failures are stored (and still count
 * for flaky detection) but not in the run's failed count, so they do not fail the run. Every step is a set-based upsert in chunks, so an
 * upload of 5,000 results is a few dozen statements, and concurrent uploads on the same
 * commit meet on the same rows (upserts lock them) instead of missing each other.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import { isPostgres, withSpillingCache } from '../db/knex';
import { toBool } from '../db/values';
import type { Run } from '../suites/results-repository';
import { runFromRow } from '../suites/rows';
import { yieldToEventLoop } from './event-loop';
import type { AcceptedResult, ResultValue } from './results';

export interface RunEnvFields {
  key: string;
  ci: string | null;
  branch: string | null;
  commitSha: string | null;
  number: string | null;
  jobId: string | null;
  message: string | null;
  url: string | null;
  collector: string | null;
  version: string | null;
  testRunner: string | null;
}

interface TestAggregate {
  identityHash: string;
  scope: string | null;
  name: string;
  location: string | null;
  fileName: string | null;
  counts: Record<ResultValue, number>;
  durationCount: number;
  durationSum: number;
  durationMin: number | null;
  durationMax: number | null;
}

/** Rows per multi-row statement: well under SQLite's and Postgres's bound-parameter limits. */
const CHUNK = 500;

/** Bytes of failure text and history per executions statement: a 50 MB upload is not written in 10 statements of 5 MB. */
const CHUNK_BYTES = 1024 * 1024;

/** An upload whose executions weigh more than this is written with a spilling page cache (withSpillingCache). */
const LARGE_WRITE_BYTES = 8 * 1024 * 1024;

/** About how many bytes an execution row takes: its failure text, history and tags. */
function weight(r: AcceptedResult, tags: string | null): number {
  let n = 200 + (r.failureReason?.length ?? 0) + (tags?.length ?? 0);
  for (const f of r.failureExpanded ?? []) for (const line of [...(f.expanded ?? []), ...(f.backtrace ?? [])]) n += line.length;
  return n;
}

function chunks<T>(items: T[], size = CHUNK): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** At most CHUNK rows and, past the first row, CHUNK_BYTES of `weight` per chunk. */
function chunksByBytes<T>(items: T[], weight: (item: T) => number): T[][] {
  const out: T[][] = [];
  let part: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const w = weight(item);
    if (part.length && (part.length >= CHUNK || bytes + w > CHUNK_BYTES)) {
      out.push(part);
      part = [];
      bytes = 0;
    }
    part.push(item);
    bytes += w;
  }
  if (part.length) out.push(part);
  return out;
}

/**
 * Each result's stored tags as JSON: the upload's, with the result's own over them
 * (javascript_collectors.md: "Upload-level tags may be overwritten by execution-level tags");
 * null when neither has any. Results without tags of their own share one string.
 */
function executionTags(uploadTags: Record<string, string>, results: AcceptedResult[]): (string | null)[] {
  const shared = Object.keys(uploadTags).length ? JSON.stringify(uploadTags) : null;
  return results.map((r) => (r.tags ? JSON.stringify({ ...uploadTags, ...r.tags }) : shared));
}

/** A test is identified by suite, scope, name and location. */
export function identityHash(scope: string | null, name: string, location: string | null): string {
  return crypto
    .createHash('sha256')
    .update(JSON.stringify([scope, name, location]))
    .digest('hex');
}

function aggregate(results: AcceptedResult[]): Map<string, TestAggregate> {
  const tests = new Map<string, TestAggregate>();
  for (const r of results) {
    const hash = identityHash(r.scope, r.name, r.location);
    let t = tests.get(hash);
    if (!t) {
      t = {
        identityHash: hash,
        scope: r.scope,
        name: r.name,
        location: r.location,
        fileName: r.fileName,
        counts: { passed: 0, failed: 0, skipped: 0, pending: 0, unknown: 0 },
        durationCount: 0,
        durationSum: 0,
        durationMin: null,
        durationMax: null,
      };
      tests.set(hash, t);
    }
    t.counts[r.result] += 1;
    if (r.duration !== null) {
      t.durationCount += 1;
      t.durationSum += r.duration;
      t.durationMin = t.durationMin === null ? r.duration : Math.min(t.durationMin, r.duration);
      t.durationMax = t.durationMax === null ? r.duration : Math.max(t.durationMax, r.duration);
    }
  }
  return tests;
}

/** `least`/`greatest` that ignore nulls, written the same for both stores (SQLite's min() of a null is null). */
function pick(table: string, col: string, op: '<' | '>'): string {
  return `case when excluded.${col} is null then ${table}.${col} when ${table}.${col} is null or excluded.${col} ${op} ${table}.${col} then excluded.${col} else ${table}.${col} end`;
}

export class UploadRepository {
  constructor(private readonly db: Knex) {}

  /**
   * `tags`: the upload's, which apply to each of its executions (javascript_collectors.md: "applied
   * server-side to every execution therein"). They are stored with each execution, under its own,
   * not on the run: the uploads of one run may each carry different tags.
   */
  async ingest(suiteId: string, env: RunEnvFields, tags: Record<string, string>, results: AcceptedResult[], now: Date): Promise<Run> {
    const tagged = executionTags(tags, results);
    const weights = results.map((r, i) => weight(r, tagged[i] ?? null));
    const large = weights.reduce((a, b) => a + b, 0) > LARGE_WRITE_BYTES;
    return large
      ? withSpillingCache(this.db, () => this.write(suiteId, env, results, tagged, weights, now))
      : this.write(suiteId, env, results, tagged, weights, now);
  }

  private async write(suiteId: string, env: RunEnvFields, results: AcceptedResult[], tagged: (string | null)[], weights: number[], now: Date): Promise<Run> {
    return this.db.transaction(async (trx) => {
      const passed = results.filter((r) => r.result === 'passed').length;
      // A muted test's failures are kept as executions but do not fail the run.
      const muted = await this.mutedTests(trx, suiteId, results);
      const failed = results.filter((r) => r.result === 'failed' && !muted.has(identityHash(r.scope, r.name, r.location))).length;
      const add = (col: string) => trx.raw(`test_runs.${col} + excluded.${col}`);
      const [runRow] = await trx('test_runs')
        .insert({
          id: crypto.randomUUID(),
          suite_id: suiteId,
          run_key: env.key,
          ci: env.ci,
          branch: env.branch,
          commit_sha: env.commitSha,
          number: env.number,
          job_id: env.jobId,
          message: env.message,
          url: env.url,
          collector: env.collector,
          version: env.version,
          test_runner: env.testRunner,
          // The upload's tags are its executions' (below); the run's column stays empty for new runs.
          tags: '{}',
          executions_count: results.length,
          passed_count: passed,
          failed_count: failed,
          created_at: now,
          updated_at: now,
        })
        .onConflict(['suite_id', 'run_key'])
        .merge({ executions_count: add('executions_count'), passed_count: add('passed_count'), failed_count: add('failed_count'), updated_at: now })
        .returning('*');
      if (!runRow) throw new Error('the run upsert returned no row');
      let run = runFromRow({ ...runRow });
      if (Object.keys(run.tags).length) run = await this.moveRunTagsToExecutions(trx, run);
      if (!results.length) return run;
      const firstPosition = Number(runRow.executions_count) - results.length;

      const tests = aggregate(results);
      const testIds = new Map<string, string>();
      const sum = (col: string) => trx.raw(`tests.${col} + excluded.${col}`);
      // Rows are locked in one order (by identity, then by test id below), so concurrent uploads
      // touching the same tests wait for each other instead of deadlocking on Postgres.
      for (const part of chunks([...tests.values()].sort((a, b) => (a.identityHash < b.identityHash ? -1 : 1)))) {
        await yieldToEventLoop();
        const rows = await trx('tests')
          .insert(
            part.map((t) => ({
              id: crypto.randomUUID(),
              suite_id: suiteId,
              identity_hash: t.identityHash,
              scope: t.scope,
              name: t.name,
              location: t.location,
              file_name: t.fileName,
              created_at: now,
              executions_count: t.counts.passed + t.counts.failed + t.counts.skipped + t.counts.pending + t.counts.unknown,
              passed_count: t.counts.passed,
              failed_count: t.counts.failed,
              skipped_count: t.counts.skipped,
              pending_count: t.counts.pending,
              unknown_count: t.counts.unknown,
              duration_count: t.durationCount,
              duration_sum: t.durationSum,
              duration_min: t.durationMin,
              duration_max: t.durationMax,
            })),
          )
          .onConflict(['suite_id', 'identity_hash'])
          .merge({
            executions_count: sum('executions_count'),
            passed_count: sum('passed_count'),
            failed_count: sum('failed_count'),
            skipped_count: sum('skipped_count'),
            pending_count: sum('pending_count'),
            unknown_count: sum('unknown_count'),
            duration_count: sum('duration_count'),
            duration_sum: sum('duration_sum'),
            duration_min: trx.raw(pick('tests', 'duration_min', '<')),
            duration_max: trx.raw(pick('tests', 'duration_max', '>')),
          })
          .returning(['id', 'identity_hash']);
        for (const r of rows) testIds.set(r.identity_hash, r.id);
      }

      const indexed = results.map((r, i) => ({ r, i, bytes: weights[i]! }));
      for (const part of chunksByBytes(indexed, (x) => x.bytes)) {
        await yieldToEventLoop();
        // Serialized a chunk at a time, so no one step holds the event loop for the whole upload.
        const rows = part.map(({ r, i }) => ({
          id: crypto.randomUUID(),
          run_id: run.id,
          test_id: testIds.get(identityHash(r.scope, r.name, r.location))!,
          client_id: r.clientId,
          result: r.result,
          failure_reason: r.failureReason,
          failure_expanded: r.failureExpanded ? JSON.stringify(r.failureExpanded) : null,
          duration: r.duration,
          history: r.history ? JSON.stringify(r.history) : null,
          tags: tagged[i],
          position: firstPosition + i,
          created_at: now,
        }));
        await trx('test_executions').insert(rows);
      }

      if (run.commitSha) await this.detectFlaky(trx, suiteId, run, tests, testIds, now);
      return run;
    });
  }

  /**
   * A run written before upload tags were stored with executions has its first upload's tags on
   * its row, and readers put them under each execution's own (src/suites/serialize.ts,
   * test-filters.ts). A later upload to it would inherit them that way, so they are moved into its
   * executions so far (their own tags winning, as they did when read) and the run's are emptied,
   * once, in this upload's transaction (the run's row is locked by the upsert, so a concurrent
   * upload waits and finds them moved).
   */
  private async moveRunTagsToExecutions(trx: Knex.Transaction, run: Run): Promise<Run> {
    const runTags = JSON.stringify(run.tags);
    const merged = isPostgres(trx)
      ? trx.raw(`(?::jsonb || coalesce(test_executions.tags::jsonb, '{}'::jsonb))::text`, [runTags])
      : trx.raw(`json_patch(?, coalesce(test_executions.tags, '{}'))`, [runTags]);
    await trx('test_executions').where({ run_id: run.id }).update({ tags: merged });
    await trx('test_runs').where({ id: run.id }).update({ tags: '{}' });
    return { ...run, tags: {} };
  }

  /** The identity hashes of the suite's muted tests among this upload's failed results. */
  private async mutedTests(trx: Knex.Transaction, suiteId: string, results: AcceptedResult[]): Promise<Set<string>> {
    const hashes = [...new Set(results.filter((r) => r.result === 'failed').map((r) => identityHash(r.scope, r.name, r.location)))];
    const out = new Set<string>();
    for (const part of chunks(hashes)) {
      const rows = await trx('tests').where({ suite_id: suiteId, state: 'muted' }).whereIn('identity_hash', part).select('identity_hash');
      for (const r of rows) out.add(r.identity_hash);
    }
    return out;
  }

  /** OR this upload's outcomes into the (test, commit) flags; both set -> one flaky instance per commit. */
  private async detectFlaky(trx: Knex.Transaction, suiteId: string, run: Run, tests: Map<string, TestAggregate>, testIds: Map<string, string>, now: Date) {
    const commitSha = run.commitSha;
    if (!commitSha) return;
    const outcomes = [...tests.values()]
      .filter((t) => t.counts.passed > 0 || t.counts.failed > 0)
      .map((t) => ({ test_id: testIds.get(t.identityHash)!, commit_sha: commitSha, passed: t.counts.passed > 0, failed: t.counts.failed > 0 }))
      .sort((a, b) => (a.test_id < b.test_id ? -1 : 1));
    const flakyTestIds: string[] = [];
    for (const part of chunks(outcomes)) {
      await yieldToEventLoop();
      const rows = await trx('test_commit_results')
        .insert(part)
        .onConflict(['test_id', 'commit_sha'])
        .merge({
          passed: trx.raw('test_commit_results.passed or excluded.passed'),
          failed: trx.raw('test_commit_results.failed or excluded.failed'),
        })
        .returning(['test_id', 'passed', 'failed']);
      for (const r of rows) if (toBool(r.passed) && toBool(r.failed)) flakyTestIds.push(r.test_id);
    }
    for (const part of chunks(flakyTestIds)) {
      await trx('flaky_instances')
        .insert(part.map((testId) => ({ test_id: testId, commit_sha: commitSha, suite_id: suiteId, branch: run.branch, detected_at: now })))
        .onConflict(['test_id', 'commit_sha'])
        .ignore();
    }
  }
}
