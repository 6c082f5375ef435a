/**
 * Bulk seeding for the builds benchmark, straight into the database the running service uses
 * (after its migrations ran), with one SQL statement per table where possible.
 *
 * Rows are never invented column by column: one pipeline, one build and its job are created
 * through the HTTP API first, and every other row is a copy of those templates with the
 * columns that must differ (ids, slugs, numbers, states, branches, times) overridden. A
 * column added by a later migration is therefore copied from a real row instead of guessed.
 *
 * SQLite: better-sqlite3 on its own connection (foreign keys are off on a fresh connection,
 * which is fine: every reference is to an existing row), a big page cache, one transaction
 * per table, then a WAL checkpoint. Postgres: a pg client with session_replication_role =
 * replica (skips the per-row foreign-key triggers), then VACUUM ANALYZE, as autovacuum would do
 * shortly after such a load.
 */
import crypto from 'node:crypto';
import Database from 'better-sqlite3';
import pg from 'pg';

export interface SeedPlan {
  kind: 'sqlite' | 'postgres';
  /** SQLite file path or postgres:// URL of the service's database. */
  url: string;
  organizationId: string;
  templatePipelineId: string;
  templateBuildId: string;
  /** 1,000 in the standard run. */
  pipelines: number;
  buildsPerPipeline: number;
  /** Id, slug, name and webhook token hash of each further pipeline (index 1..pipelines-1). */
  extraPipelines: { id: string; slug: string; name: string; webhookTokenHash: string }[];
  /** Run ANALYZE on SQLite too (the service never does; off by default). */
  sqliteAnalyze: boolean;
  log: (message: string) => void;
}

export interface SeedResult {
  ms: { pipelines: number; builds: number; jobs: number; finish: number; total: number };
  builds: number;
  jobs: number;
}

/** The minimal surface both stores offer: run a statement, read rows. `?` placeholders. */
interface Sql {
  dialect: 'sqlite' | 'postgres';
  run(sql: string, params?: unknown[]): Promise<void>;
  all<T>(sql: string, params?: unknown[]): Promise<T[]>;
  columns(table: string): Promise<string[]>;
  /** An expression of epoch milliseconds -> the column type of a timestamp. */
  ts(ms: string): string;
  uuid: string;
  commitSha: string;
  close(): Promise<void>;
}

function sqliteSql(file: string): Sql {
  const db = new Database(file);
  db.pragma('busy_timeout = 10000');
  db.pragma('cache_size = -1048576'); // 1 GiB: the uuid indexes are written in random order
  db.pragma('temp_store = MEMORY');
  // Non-deterministic, called once per row.
  db.function('bench_uuid', { deterministic: false }, () => crypto.randomUUID());
  return {
    dialect: 'sqlite',
    run: async (sql, params = []) => {
      db.prepare(sql).run(...params);
    },
    all: async <T>(sql: string, params: unknown[] = []) => db.prepare(sql).all(...params) as T[],
    columns: async (table) => (db.prepare(`pragma table_info(${table})`).all() as { name: string }[]).map((c) => c.name),
    ts: (ms) => `(${ms})`,
    uuid: 'bench_uuid()',
    commitSha: 'lower(hex(randomblob(20)))',
    close: async () => {
      db.close();
    },
  };
}

async function postgresSql(url: string): Promise<Sql> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const toPg = (sql: string) => {
    let i = 0;
    return sql.replace(/\?/g, () => `$${++i}`);
  };
  return {
    dialect: 'postgres',
    run: async (sql, params = []) => {
      await client.query(toPg(sql), params);
    },
    all: async <T>(sql: string, params: unknown[] = []) => (await client.query(toPg(sql), params)).rows as T[],
    columns: async (table) =>
      (
        await client.query<{ column_name: string }>(
          'select column_name from information_schema.columns where table_schema = current_schema() and table_name = $1 order by ordinal_position',
          [table],
        )
      ).rows.map((r) => r.column_name),
    ts: (ms) => `to_timestamp((${ms})::double precision / 1000)`,
    uuid: 'gen_random_uuid()',
    commitSha: 'md5(random()::text) || substr(md5(random()::text), 1, 8)',
    close: () => client.end(),
  };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
function uuidLiteral(id: string): string {
  if (!UUID.test(id)) throw new Error(`not a uuid: ${id}`);
  return `'${id}'`;
}

/** INSERT INTO table (every column) SELECT <override or template column> ... */
function insertSelect(table: string, columns: string[], overrides: Record<string, string>, templateAlias: string, rest: string, prefix = ''): string {
  const exprs = columns.map((c) => overrides[c] ?? `${templateAlias}.${quote(c)}`);
  return `${prefix}insert into ${table} (${columns.map(quote).join(', ')}) select ${exprs.join(', ')} ${rest}`;
}
const quote = (c: string) => `"${c}"`;

export async function seed(plan: SeedPlan): Promise<SeedResult> {
  const sql = plan.kind === 'sqlite' ? sqliteSql(plan.url) : await postgresSql(plan.url);
  const started = Date.now();
  const ms = { pipelines: 0, builds: 0, jobs: 0, finish: 0, total: 0 };
  const P = plan.pipelines;
  const B = plan.buildsPerPipeline;
  try {
    if (sql.dialect === 'postgres') {
      // Foreign keys are checked by per-row triggers; the copies only reference existing rows.
      await sql.run('set session_replication_role = replica');
      await sql.run("set maintenance_work_mem = '512MB'");
    }
    const begin = () => sql.run(sql.dialect === 'sqlite' ? 'begin immediate' : 'begin');
    const commit = () => sql.run('commit');

    // Templates, kept in temp tables; the template build and job are then removed so that
    // every pipeline gets the same generated numbers 1..B.
    const org = uuidLiteral(plan.organizationId);
    await sql.run(`create temp table tpl_p as select * from pipelines where id = ${uuidLiteral(plan.templatePipelineId)}`);
    await sql.run(`create temp table tpl_b as select * from builds where id = ${uuidLiteral(plan.templateBuildId)}`);
    await sql.run(`create temp table tpl_j as select * from jobs where build_id = ${uuidLiteral(plan.templateBuildId)} order by position limit 1`);
    const [counts] = await sql.all<{ p: number | string; b: number | string; j: number | string }>(
      'select (select count(*) from tpl_p) as p, (select count(*) from tpl_b) as b, (select count(*) from tpl_j) as j',
    );
    if (Number(counts!.p) !== 1 || Number(counts!.b) !== 1 || Number(counts!.j) !== 1) throw new Error(`templates not found: ${JSON.stringify(counts)}`);

    // The outbox's last event before the seed: on SQLite its triggers (which Postgres's replica
    // role skips) record one event per copied build and job; those are history, not changes to
    // deliver, and are removed below, as the fixture loader does (else the server's notification
    // worker renders two events per seeded build during the measurements).
    const [outbox] = await sql.all<{ seq: number | string }>('select coalesce(max(seq), 0) as seq from outbox_events');
    const outboxBefore = Number(outbox!.seq);

    // Pipelines: the template is index 0, copies 1..P-1.
    let t = Date.now();
    await begin();
    await sql.run(`delete from jobs where build_id = ${uuidLiteral(plan.templateBuildId)}`);
    await sql.run(`delete from build_meta_data where build_id = ${uuidLiteral(plan.templateBuildId)}`);
    await sql.run(`delete from builds where id = ${uuidLiteral(plan.templateBuildId)}`);
    await sql.run('create temp table bench_p (idx integer not null, id text not null, slug text not null, name text not null, hash text not null)');
    await sql.run('insert into bench_p (idx, id, slug, name, hash) select 0, id, slug, name, webhook_token_hash from tpl_p');
    for (let i = 0; i < plan.extraPipelines.length; i += 500) {
      const chunk = plan.extraPipelines.slice(i, i + 500);
      await sql.run(
        `insert into bench_p (idx, id, slug, name, hash) values ${chunk.map(() => '(?, ?, ?, ?, ?)').join(', ')}`,
        chunk.flatMap((p, k) => [i + k + 1, p.id, p.slug, p.name, p.webhookTokenHash]),
      );
    }
    const pipelineColumns = await sql.columns('pipelines');
    const pid = sql.dialect === 'postgres' ? 'bp.id::uuid' : 'bp.id';
    // Created a minute apart, the oldest first, all before the template.
    const pCreated = sql.ts(`${Date.now() - (P + 1) * 60_000} + bp.idx * 60000`);
    await sql.run(
      insertSelect(
        'pipelines',
        pipelineColumns,
        { id: pid, slug: 'bp.slug', name: 'bp.name', webhook_token_hash: 'bp.hash', created_at: pCreated, builds_counter: String(B) },
        't',
        'from bench_p bp cross join tpl_p t where bp.idx > 0 order by bp.idx',
      ),
    );
    await sql.run(`update pipelines set builds_counter = ${B} where organization_id = ${org}`);
    await commit();
    ms.pipelines = Date.now() - t;
    plan.log(`  pipelines: ${P} in ${ms.pipelines} ms`);

    // Builds: numbers 1..B per pipeline, created one minute apart across the organization
    // (build n of every pipeline before build n+1 of any), inserted in creation order.
    // Per pipeline: the newest is running, the two before it scheduled; otherwise 1 in 10
    // failed, about 1 in 97 canceled, the rest passed. Branches: 50% main, 20% dev, 30% feature-0..36.
    const t0 = Date.now() - (B * P + 1440) * 60_000;
    const series =
      sql.dialect === 'sqlite'
        ? `with recursive series(n) as (select 1 union all select n + 1 from series where n < ${B}) `
        : `with series(n) as (select generate_series(1, ${B})) `;
    const inner = `select s.n as n, bp.idx as pidx, bp.id as pid,
        case when s.n = ${B} then 'running' when s.n > ${B - 3} then 'scheduled' when s.n % 10 = 3 then 'failed' when s.n % 97 = 5 then 'canceled' else 'passed' end as st,
        ${t0} + cast((s.n - 1) * ${P} + bp.idx as bigint) * 60000 as tms,
        case when s.n % 10 < 5 then 'main' when s.n % 10 < 7 then 'dev' else 'feature-' || (s.n % 37) end as br
      from series s cross join bench_p bp`;
    const buildColumns = await sql.columns('builds');
    // Per-organization sequence (when the schema has one): the creation order, 1..P*B.
    const orgSequence: Record<string, string> = buildColumns.includes('org_number') ? { org_number: `(g.n - 1) * ${P} + g.pidx + 1` } : {};
    t = Date.now();
    await begin();
    await sql.run(
      insertSelect(
        'builds',
        buildColumns,
        {
          id: sql.uuid,
          pipeline_id: sql.dialect === 'postgres' ? 'g.pid::uuid' : 'g.pid',
          number: 'g.n',
          state: 'g.st',
          message: "'Bench build ' || g.n",
          commit: sql.commitSha,
          branch: 'g.br',
          source: "case when g.n % 7 = 0 then 'webhook' else 'api' end",
          created_at: sql.ts('g.tms'),
          scheduled_at: sql.ts('g.tms'),
          started_at: `case when g.st = 'scheduled' then null else ${sql.ts('g.tms + 5000')} end`,
          failing_at: `case when g.st = 'failed' then ${sql.ts('g.tms + 35000')} else null end`,
          finished_at: `case when g.st in ('scheduled', 'running') then null else ${sql.ts('g.tms + 65000 + (g.n % 600) * 1000')} end`,
          cancel_reason: 'null',
          ...orgSequence,
        },
        't',
        `from (${inner}) g cross join tpl_b t`,
        series,
      ),
    );
    // The organization's counters, where the schema keeps them (the template build bumped them).
    const orgColumns = await sql.columns('organizations');
    const orgCounters = ['builds_counter', 'builds_count'].filter((c) => orgColumns.includes(c));
    if (orgCounters.length) await sql.run(`update organizations set ${orgCounters.map((c) => `${c} = ${P * B}`).join(', ')} where id = ${org}`);
    await commit();
    ms.builds = Date.now() - t;
    plan.log(`  builds: ${P * B} in ${ms.builds} ms`);

    // One job per build, in the build's state and with its times.
    const jobColumns = await sql.columns('jobs');
    t = Date.now();
    await begin();
    await sql.run(
      insertSelect(
        'jobs',
        jobColumns,
        {
          id: sql.uuid,
          build_id: 'b.id',
          pipeline_id: 'b.pipeline_id',
          state: 'b.state',
          step_id: sql.uuid,
          exit_status: "case b.state when 'passed' then 0 when 'failed' then 1 else null end",
          created_at: 'b.created_at',
          dispatch_at: 'b.created_at',
          scheduled_at: 'b.scheduled_at',
          runnable_at: 'b.scheduled_at',
          started_at: 'b.started_at',
          finished_at: 'b.finished_at',
        },
        't',
        `from builds b cross join tpl_j t where b.organization_id = ${org}`,
      ),
    );
    await sql.run(`delete from outbox_events where seq > ${outboxBefore}`);
    await commit();
    ms.jobs = Date.now() - t;
    plan.log(`  jobs: ${P * B} in ${ms.jobs} ms`);

    t = Date.now();
    if (sql.dialect === 'sqlite') {
      await sql.run('pragma wal_checkpoint(TRUNCATE)');
      if (plan.sqliteAnalyze) await sql.run('analyze');
    } else {
      await sql.run('set session_replication_role = origin');
      await sql.run('vacuum analyze pipelines');
      await sql.run('vacuum analyze builds');
      await sql.run('vacuum analyze jobs');
      await sql.run('checkpoint');
    }
    ms.finish = Date.now() - t;
    plan.log(`  ${sql.dialect === 'sqlite' ? `wal checkpoint${plan.sqliteAnalyze ? ' + analyze' : ''}` : 'vacuum analyze + checkpoint'} in ${ms.finish} ms`);

    const [totals] = await sql.all<{ b: number | string; j: number | string }>(
      `select (select count(*) from builds where organization_id = ${org}) as b, (select count(*) from jobs j where j.pipeline_id in (select id from pipelines where organization_id = ${org})) as j`,
    );
    ms.total = Date.now() - started;
    return { ms, builds: Number(totals!.b), jobs: Number(totals!.j) };
  } finally {
    await sql.close();
  }
}
