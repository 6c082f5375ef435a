/**
 * Test Engine benchmark (`npm run bench:suites`), per store (SQLite, then Postgres):
 *
 * 1. Seeds one suite, straight into the database with INSERT ... SELECT over a number series,
 *    with BENCH_TESTS tests (default 100,000) and BENCH_EXECUTIONS executions (default
 *    1,000,000) in runs of 5,000 on two runs per commit, the per (test, commit) flags and the
 *    flaky instances the ingestion would have written (1% of the tests flip on every commit
 *    they run on), spread over the last 28 days.
 * 2. Measures uploads through the real service over HTTP on 127.0.0.1: one upload of 5,000
 *    results in the JavaScript collector's shape (all new tests), then the same tests again on
 *    the same commit with 10% of them flipped (updates plus flaky detection).
 * 3. Measures the flaky-tests list (default period, with `search`, with `branch`, page 10) with
 *    BENCH_REQUESTS sequential requests each (default 200), p50 and p99.
 *
 * The service runs in this process and requests are sequential, so every figure includes the
 * client's share of one event loop. Not part of CI or `npm test`; BENCHMARKS.md has figures.
 *
 * Settings (environment): BENCH_TESTS, BENCH_EXECUTIONS, BENCH_REQUESTS, BENCH_STORES
 * (sqlite,postgres; Postgres is skipped with a note when unreachable), BENCH_PG_URL (server,
 * default postgres://postgres@127.0.0.1:5432; the database windsock_bench_suites_<pid> is created and
 * dropped).
 */
import crypto from 'node:crypto';
import type { Server } from 'node:http';
import type { Knex } from 'knex';
import { migrateLatest } from '../src/db/knex';
import { intEnv } from './bench-env';
import { benchAdmin, benchDatabase, benchServices, benchStores, listenApp, percentile, storeSections, PG_URL, type Store } from './bench-support';

const RUN_SIZE = 5000;
const TESTS = Math.max(RUN_SIZE, Math.floor(intEnv('BENCH_TESTS', 100_000) / RUN_SIZE) * RUN_SIZE);
const EXECUTIONS = Math.max(2 * RUN_SIZE, Math.floor(intEnv('BENCH_EXECUTIONS', 1_000_000) / (2 * RUN_SIZE)) * 2 * RUN_SIZE);
const REQUESTS = intEnv('BENCH_REQUESTS', 200);
const STORES = benchStores();
const FLAKY_EVERY = 100; // 1% of the tests flip on every commit they run on
const DAY = 86_400_000;

const RUNS = EXECUTIONS / RUN_SIZE;
const COMMITS = RUNS / 2;
const BLOCKS = TESTS / RUN_SIZE;

/** The SQL that differs between the stores, for the seed statements. */
function dialect(kind: Store) {
  const sqlite = kind === 'sqlite';
  return {
    /** A derived table `seq(n)` of 0..count-1. */
    series: (count: number) =>
      sqlite
        ? `(with recursive s(n) as (select 0 union all select n + 1 from s where n < ${count - 1}) select n from s) seq`
        : `(select generate_series(0::bigint, ${count - 1}) as n) seq`,
    uuid: (kind: number, n: string) =>
      sqlite
        ? `printf('%08x-0000-4000-8000-%012x', ${kind}, ${n})`
        : `(lpad(to_hex(${kind}), 8, '0') || '-0000-4000-8000-' || lpad(to_hex(${n}), 12, '0'))::uuid`,
    hex: (n: string, width: number) => (sqlite ? `printf('%0${width}x', ${n})` : `lpad(to_hex(${n}), ${width}, '0')`),
    ts: (ms: string) => (sqlite ? `(${ms})` : `to_timestamp((${ms})::double precision / 1000)`),
    bool: (cond: string) => (sqlite ? `(case when ${cond} then 1 else 0 end)` : `(${cond})`),
  };
}

async function seed(db: Knex, kind: Store, suiteId: string, now: number): Promise<number> {
  const d = dialect(kind);
  const started = Date.now();
  // Run i (two per commit, commit c = i / 2) covers block (c % BLOCKS) of RUN_SIZE tests; a
  // run's time walks from 28 days ago to now.
  const runAt = (i: string) => `${now - 28 * DAY} + (${i}) * ${Math.floor((28 * DAY) / RUNS)}`;
  const branch = (c: string) => `case when (${c}) % 3 = 0 then 'feature' else 'main' end`;
  const flaky = (n: string) => `(${n}) % ${FLAKY_EVERY} = 0`;
  const perTest = (RUNS / BLOCKS) | 0; // executions of each test
  const step = async (label: string, sql: string) => {
    const t = Date.now();
    // The service's 15 s statement timeout is for requests; a million-row seed may take longer.
    if (kind === 'postgres') {
      await db.transaction(async (trx) => {
        await trx.raw('set local statement_timeout = 0');
        await trx.raw(sql);
      });
    } else await db.raw(sql);
    process.stdout.write(`  seeded ${label} in ${((Date.now() - t) / 1000).toFixed(1)} s\n`);
  };
  await step(
    `${TESTS} tests`,
    `insert into tests (id, suite_id, identity_hash, scope, name, location, file_name, created_at, executions_count, passed_count, failed_count,
       skipped_count, pending_count, unknown_count, duration_count, duration_sum, duration_min, duration_max)
     select ${d.uuid(1, 'n')}, '${suiteId}', ${d.hex('n', 64)}, 'Scope ' || (n / 100), 'test ' || n,
       'spec/file_' || (n / 100) || '_spec.rb:' || (n % 100), 'spec/file_' || (n / 100) || '_spec.rb', ${d.ts(String(now - 28 * DAY))},
       ${perTest}, case when ${flaky('n')} then ${perTest / 2} else ${perTest} end, case when ${flaky('n')} then ${perTest / 2} else 0 end,
       0, 0, 0, ${perTest}, ${perTest} * 0.05, 0.05, 0.05
     from ${d.series(TESTS)}`,
  );
  await step(
    `${RUNS} runs`,
    `insert into test_runs (id, suite_id, run_key, ci, branch, commit_sha, tags, executions_count, passed_count, failed_count, created_at, updated_at)
     select ${d.uuid(2, 'n')}, '${suiteId}', 'seed-' || n, 'generic', ${branch('n / 2')}, ${d.hex('n / 2', 40)}, '{}', ${RUN_SIZE},
       ${RUN_SIZE} - case when n % 2 = 0 then ${RUN_SIZE / FLAKY_EVERY} else 0 end, case when n % 2 = 0 then ${RUN_SIZE / FLAKY_EVERY} else 0 end,
       ${d.ts(runAt('n'))}, ${d.ts(runAt('n'))}
     from ${d.series(RUNS)}`,
  );
  // Execution m: run m / RUN_SIZE, test (block of its commit) * RUN_SIZE + m % RUN_SIZE; a
  // flaky test fails in the first run of each commit and passes in the second.
  const test = (m: string) => `(((${m}) / ${RUN_SIZE} / 2) % ${BLOCKS}) * ${RUN_SIZE} + (${m}) % ${RUN_SIZE}`;
  await step(
    `${EXECUTIONS} executions`,
    `insert into test_executions (id, run_id, test_id, result, failure_reason, duration, position, created_at)
     select ${d.uuid(3, 'n')}, ${d.uuid(2, `n / ${RUN_SIZE}`)}, ${d.uuid(1, test('n'))},
       case when ${flaky(test('n'))} and (n / ${RUN_SIZE}) % 2 = 0 then 'failed' else 'passed' end,
       case when ${flaky(test('n'))} and (n / ${RUN_SIZE}) % 2 = 0 then 'seeded failure' else null end,
       0.05, n % ${RUN_SIZE}, ${d.ts(runAt(`n / ${RUN_SIZE}`))}
     from ${d.series(EXECUTIONS)}`,
  );
  const pair = (j: string) => `(((${j}) / ${RUN_SIZE}) % ${BLOCKS}) * ${RUN_SIZE} + (${j}) % ${RUN_SIZE}`;
  await step(
    `${COMMITS * RUN_SIZE} (test, commit) flags`,
    `insert into test_commit_results (test_id, commit_sha, passed, failed)
     select ${d.uuid(1, pair('n'))}, ${d.hex(`n / ${RUN_SIZE}`, 40)}, ${d.bool('1 = 1')}, ${d.bool(flaky(pair('n')))}
     from ${d.series(COMMITS * RUN_SIZE)}`,
  );
  const perCommit = RUN_SIZE / FLAKY_EVERY;
  await step(
    `${COMMITS * perCommit} flaky instances`,
    `insert into flaky_instances (test_id, commit_sha, suite_id, branch, detected_at)
     select ${d.uuid(1, `((n / ${perCommit}) % ${BLOCKS}) * ${RUN_SIZE} + (n % ${perCommit}) * ${FLAKY_EVERY}`)}, ${d.hex(`n / ${perCommit}`, 40)}, '${suiteId}',
       ${branch(`n / ${perCommit}`)}, ${d.ts(runAt(`(n / ${perCommit}) * 2 + 1`))}
     from ${d.series(COMMITS * perCommit)}`,
  );
  if (kind === 'postgres') await db.raw('vacuum analyze');
  return Date.now() - started;
}

function collectorResults(count: number, prefix: string, failEvery: number) {
  return Array.from({ length: count }, (_, i) => {
    const failed = failEvery > 0 && i % failEvery === 0;
    return {
      id: crypto.randomUUID(),
      scope: `Bench ${prefix} ${Math.floor(i / 50)}`,
      name: `does thing ${i}`,
      location: `./spec/bench_${Math.floor(i / 50)}.test.js:${(i % 50) + 1}`,
      file_name: `./spec/bench_${Math.floor(i / 50)}.test.js`,
      result: failed ? 'failed' : 'passed',
      ...(failed
        ? {
            failure_reason: 'Error: expect(received).toBe(expected)',
            failure_expanded: [{ expanded: ['Expected: 3', 'Received: 4', '    at Object.<anonymous> (spec/bench.test.js:12:5)'] }],
          }
        : { failure_expanded: [{ expanded: [] }] }),
      history: { section: 'top', start_at: 1700000000000 + i, end_at: 1700000000010 + i, duration: 0.01 },
    };
  });
}

async function timeRequests(url: string, headers: Record<string, string>, n: number) {
  const ms: number[] = [];
  let count = -1;
  for (let i = 0; i < n; i++) {
    const t = process.hrtime.bigint();
    const res = await fetch(url, { headers });
    const body = (await res.json()) as unknown[];
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
    if (res.status !== 200) throw new Error(`${url}: ${res.status} ${JSON.stringify(body)}`);
    count = body.length;
  }
  ms.sort((a, b) => a - b);
  return { p50: percentile(ms, 50), p99: percentile(ms, 99), items: count };
}

async function benchStore(kind: Store): Promise<string[] | null> {
  const store = await benchDatabase(kind, 'suites', (message) => `Postgres at ${PG_URL} is unreachable (${message}): skipped\n`);
  if (!store) return null;
  const services = benchServices({ kind, url: store.url });
  let server: Server | undefined;
  try {
    await migrateLatest(services.db);
    const listening = await listenApp(services);
    server = listening.server;
    // The client keeps its connection across the seeding pause: the server must not close it meanwhile.
    server.keepAliveTimeout = 600_000;
    const base = listening.base;

    const { jwt } = await benchAdmin(services);
    const bearer = { Authorization: `Bearer ${jwt}`, 'Content-Type': 'application/json' };
    const created = await fetch(`${base}/v2/analytics/organizations/bench/suites`, {
      method: 'POST',
      headers: bearer,
      body: JSON.stringify({ name: 'Bench', show_api_token: true }),
    });
    const suite = (await created.json()) as { id: string; slug: string; api_token: string };

    process.stdout.write(`\n[${kind}] seeding ${TESTS} tests and ${EXECUTIONS} executions\n`);
    const seedMs = await seed(services.db, kind, suite.id, Date.now());

    const upload = async (label: string, data: unknown[]) => {
      const body = JSON.stringify({
        format: 'json',
        run_env: { ci: 'generic', key: label, branch: 'main', commit_sha: 'f00dfeed', collector: 'js-buildkite-test-collector' },
        tags: {},
        data,
      });
      const t = process.hrtime.bigint();
      const res = await fetch(`${base}/v1/uploads`, {
        method: 'POST',
        headers: { Authorization: `Token token="${suite.api_token}"`, 'Content-Type': 'application/json' },
        body,
      });
      const answer = (await res.json()) as { queued: number };
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if (res.status !== 202 || answer.queued !== data.length) throw new Error(`upload ${label}: ${res.status} ${JSON.stringify(answer).slice(0, 500)}`);
      return { ms, bytes: Buffer.byteLength(body) };
    };
    const fresh = await upload('bench-upload-1', collectorResults(RUN_SIZE, 'x', 20));
    const again = await upload(
      'bench-upload-2',
      collectorResults(RUN_SIZE, 'x', 10).map((r, i) => ({ ...r, result: i % 10 === 0 ? 'passed' : r.result })),
    );
    const flakyAfter = (await services.db('flaky_instances').where({ suite_id: suite.id, commit_sha: 'f00dfeed' }).count({ n: '*' }).first())?.n;

    const auth = { Authorization: `Bearer ${jwt}` };
    const list = `${base}/v2/analytics/organizations/bench/suites/${suite.slug}/flaky-tests`;
    const scenarios: [string, string][] = [
      ['flaky list, default (7 days)', list],
      ['flaky list, `period=28days`', `${list}?period=28days`],
      ['flaky list, `search=scope 12`', `${list}?period=28days&search=scope%2012`],
      ['flaky list, `branch=feature`', `${list}?period=28days&branch=feature`],
      ['flaky list, page 10', `${list}?period=28days&page=10`],
    ];
    const lines = [
      `| seed (${TESTS.toLocaleString('en')} tests, ${EXECUTIONS.toLocaleString('en')} executions, SQL) | ${(seedMs / 1000).toFixed(1)} s | |`,
      `| upload 5,000 results, all new tests (${(fresh.bytes / 1e6).toFixed(1)} MB JSON) | ${fresh.ms.toFixed(0)} ms | |`,
      `| upload the same 5,000 again on the same commit, 10% flipped (${flakyAfter} flaky instances found) | ${again.ms.toFixed(0)} ms | |`,
    ];
    for (const [label, url] of scenarios) {
      await timeRequests(url, auth, 10); // warm-up
      const r = await timeRequests(url, auth, REQUESTS);
      lines.push(`| ${label} (${r.items} items) | ${r.p50.toFixed(1)} ms | ${r.p99.toFixed(1)} ms |`);
    }
    process.stdout.write(`${lines.join('\n')}\n`);
    return lines;
  } finally {
    if (server) await new Promise((resolve) => server!.close(resolve));
    await services.db.destroy();
    await store.cleanup();
  }
}

async function main() {
  const report = await storeSections(STORES, ['| measurement | time (p50) | p99 |', '| --- | --- | --- |'], benchStore);
  process.stdout.write(`\n## Report\n${report.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
