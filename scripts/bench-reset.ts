/**
 * How long `POST /_windsock/reset` takes to return the database to a fixture of 1,000 builds
 * (`npm run bench:reset`). A generated fixture file (BENCH_BUILDS builds, default 1,000, over 10
 * pipelines, each build with two command jobs, one log, meta-data; a suite with a run of results
 * per pipeline; agents and a token) is loaded as `windsock serve --fixtures` loads it, the
 * snapshot is taken, and then, BENCH_RUNS times (default 20), a few builds and a pipeline are
 * made and the reset is timed (TestControls.reset: the endpoint's work without HTTP).
 * On SQLite (a file in a temporary directory, as `serve` uses it) and on Postgres
 * (BENCH_POSTGRES_URL, default the local `test` database, in a schema of its own); BENCH_DATABASES
 * picks (default `sqlite,postgres`). Prints load time and reset min / median / max.
 * Not part of CI or `npm test`; BENCHMARKS.md has figures.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import knexFactory from 'knex';
import { bootstrapIfEmpty } from '../src/bootstrap';
import { clock } from '../src/core/clock';
import { SCOPES } from '../src/core/identity';
import { migrateLatest, type DatabaseKind } from '../src/db/knex';
import { loadFixtureFile } from '../src/fixtures/load';
import { TestControls } from '../src/test-controls/service';
import { intEnv } from './bench-env';
import { benchServices } from './bench-support';

const BUILDS = intEnv('BENCH_BUILDS', 1000);
const RUNS = intEnv('BENCH_RUNS', 20);
const PIPELINES = 10;
const PG_URL = process.env.BENCH_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const ADMIN = `bench-admin-${crypto.randomBytes(16).toString('hex')}`;

function fixtureYaml(): string {
  const lines = [
    'organizations: [{ slug: bench, name: Bench }]',
    'users: [{ name: Bench, email: bench@example.com, organizations: { bench: admin } }]',
    `tokens: [{ user: bench@example.com, secret: bench-user-${'x'.repeat(32)} }]`,
    'agents:',
    '  - { organization: bench, name: agent-1, meta_data: [queue=default] }',
    '  - { organization: bench, name: agent-2, meta_data: [queue=default] }',
    'pipelines:',
  ];
  const per = Math.ceil(BUILDS / PIPELINES);
  for (let p = 0; p < PIPELINES; p++) {
    lines.push(
      `  - organization: bench`,
      `    name: Pipeline ${p}`,
      `    repository: git@github.com:bench/p${p}.git`,
      `    configuration: "steps:\\n  - command: make test\\n  - command: make lint\\n"`,
      `    builds:`,
    );
    for (let b = 0; b < per && p * per + b < BUILDS; b++) {
      const failed = b % 7 === 3;
      lines.push(
        `      - message: Build ${b}`,
        `        meta_data: { release: "${b}" }`,
        `        jobs: [{ agent: agent-${1 + (b % 2)}, log: "ran ${b}\\n" }, { agent: agent-1, exit_status: ${failed ? 1 : 0} }]`,
      );
    }
  }
  lines.push('suites:', '  - organization: bench', '    name: Unit', '    runs:');
  for (let p = 0; p < PIPELINES; p++) {
    lines.push(`      - build: { pipeline: pipeline-${p}, number: 1 }`, '        results:');
    for (let t = 0; t < 20; t++) {
      lines.push(
        `          - { id: ${crypto.randomUUID()}, scope: S${p}, name: test ${t}, location: ./t_spec.rb:${t}, result: passed, history: { duration: 0.01 } }`,
      );
    }
  }
  return lines.join('\n') + '\n';
}

async function bench(kind: DatabaseKind, file: string): Promise<void> {
  const schema = kind === 'postgres' ? `bench_reset_${crypto.randomBytes(4).toString('hex')}` : undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-reset-'));
  if (schema) {
    const admin = knexFactory({ client: 'pg', connection: PG_URL });
    await admin.raw(`create schema ${schema}`);
    await admin.destroy();
  }
  const services = benchServices(kind === 'sqlite' ? { kind, url: path.join(dir, 'windsock.db') } : { kind, url: PG_URL, schema }, {
    artifacts: { dir: path.join(dir, 'artifacts') },
  });
  try {
    await migrateLatest(services.db);
    let started = performance.now();
    const loaded = await loadFixtureFile(services, file);
    const loadMs = performance.now() - started;
    await bootstrapIfEmpty(services, { adminToken: ADMIN });
    const controls = new TestControls(services.db, services.tokens);
    started = performance.now();
    await controls.takeSnapshot(true);
    const snapshotMs = performance.now() - started;
    const org = (await services.orgs.findBySlug('bench'))!;
    const user = (await services.users.findByEmail('bench@example.com'))!;
    const times: number[] = [];
    let rows = 0;
    for (let i = 0; i < RUNS; i++) {
      // A test case's worth of changes: a token, builds, a pipeline.
      await services.tokens.create({ userId: user.id, organizationIds: [org.id], scopes: [...SCOPES], expiresAt: new Date(clock.nowMs() + 3600_000) });
      await services.db('users').insert({ id: crypto.randomUUID(), name: `u${i}`, email: `u${i}@example.com`, created_at: clock.now() });
      started = performance.now();
      const r = await controls.reset();
      times.push(performance.now() - started);
      rows = r.rows;
    }
    times.sort((a, b) => a - b);
    const f = (n: number) => n.toFixed(1);
    process.stdout.write(
      `reset [${kind}] ${loaded.builds} builds, ${rows} rows: load ${f(loadMs)} ms, snapshot ${f(snapshotMs)} ms, ` +
        `reset min ${f(times[0]!)} / median ${f(times[Math.floor(times.length / 2)]!)} / max ${f(times[times.length - 1]!)} ms (${RUNS} runs)\n`,
    );
    await controls.dispose();
  } finally {
    await services.db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
    if (schema) {
      const admin = knexFactory({ client: 'pg', connection: PG_URL });
      await admin.raw(`drop schema if exists ${schema} cascade`);
      await admin.destroy();
    }
  }
}

async function main(): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-fixture-'));
  const file = path.join(dir, 'windsock.yaml');
  fs.writeFileSync(file, fixtureYaml());
  try {
    for (const kind of (process.env.BENCH_DATABASES ?? 'sqlite,postgres').split(',') as DatabaseKind[]) await bench(kind, file);
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exitCode = 1;
});
