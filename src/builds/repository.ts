/**
 * Builds and their meta data: Knex queries, rows in and domain objects out (./rows.ts maps them;
 * the jobs a build embeds are mapped by src/builds/jobs/rows.ts). The build number comes from the
 * pipeline's counter, bumped by UPDATE ... RETURNING as the first statement of the create: the
 * row lock (Postgres) or the write lock (SQLite) serialises concurrent creates, and the unique
 * (pipeline_id, number) index backs it. A build is created with the jobs planned for it, in the
 * same statement (Postgres) or transaction; every later change to a job is ./jobs/'s.
 *
 * Queries only: the rules that move builds (state machine, cancel, supersede, triggers) are in
 * src/builds/progress/, which runs these queries on a transaction of its own (withTransaction).
 */
import type { Knex } from 'knex';
import { isPostgres, orWhereMatches, whereAnyOf } from '../db/knex';
import { compiledQuery } from '../db/compiled';
import { parseJson, toBool, toDateOrNull } from '../db/values';
import type { NotifyEntry } from '../pipelines/configuration';
import type { PipelineAlong } from '../pipelines/repository';
import type { PlannedJob } from './jobs/plan';
import type { Job } from './jobs/model';
import { jobFromRow, toJobRow } from './jobs/rows';
import type { User } from '../core/identity';
import type { Build, BuildFilter, BuildState, JobState, JobStateCounts, NewBuild } from './model';
import { buildFromRow, toBuildRow, type BuildCreatorColumns } from './rows';
import { BLOCKED_ONLY_BUILD_STATES, BUILD_STATES, buildTransition, CONCLUDED_BUILD_STATES, SELF_MOVING_JOB_STATES, UNFINISHED_BUILD_STATES } from './states';
import type { BuildsRow, JobsRow, OrganizationsRow, PipelinesRow } from '../db/tables';
import { type JsonRow, type StoredRow, isTransaction, oneOf, rawRows } from '../db/row-types';

const SELECT = ['b.*', 'u.name as creator_name', 'u.email as creator_email', 'u.created_at as creator_created_at'];

/** What SELECT reads: the build's row with its creator's columns (null without one). */
type BuildRow = BuildsRow & BuildCreatorColumns;

/**
 * A build's row with its jobs as one JSON column (`jobs_json`, Postgres's `json_agg`), or only
 * how many of them are in each state (`job_state_counts_json`, without the jobs), when asked for.
 */
type BuildWithJobsRow = BuildRow & { jobs_json?: JsonRow<JobsRow>[]; job_state_counts_json?: JobStateCounts };

/**
 * A build with its jobs; read without them (`exclude_jobs`), `jobs` is empty and
 * `jobStateCounts` still counts them, as the real API's `job_state_counts` always does.
 */
export interface BuildAndJobs {
  build: Build;
  jobs: Job[];
  jobStateCounts?: JobStateCounts;
}

/**
 * The order of a build's jobs, in every read of them: by position, and where a job and its
 * retries share one, the retried original first, then the retries as they were made.
 */
const JOB_ORDER: { column: 'position' | 'retried' | 'created_at'; order?: 'desc' }[] = [
  { column: 'position' },
  { column: 'retried', order: 'desc' },
  { column: 'created_at' },
];

/**
 * Postgres: a build's jobs as one JSON column of its row (see `withJobs`), evaluated for the rows
 * the query answers.
 */
function jobsJsonColumn(db: Knex, includeRetried: boolean): Knex.Raw {
  const retried = includeRetried ? '' : ' and not j.retried';
  const order = JOB_ORDER.map((o) => `j.${o.column}${o.order ? ` ${o.order}` : ''}`).join(', ');
  return db.raw(`(select coalesce(json_agg(j order by ${order}), '[]') from jobs j where j.build_id = b.id${retried}) as jobs_json`);
}

/** Postgres: how many of a build's jobs are in each state, as one JSON column (the reads without the jobs). */
function jobStateCountsColumn(db: Knex, includeRetried: boolean): Knex.Raw {
  const retried = includeRetried ? '' : ' and not j.retried';
  return db.raw(
    `(select coalesce(json_object_agg(s.state, s.n), '{}') from (select j.state, count(*)::int as n from jobs j where j.build_id = b.id${retried} group by j.state) s) as job_state_counts_json`,
  );
}

/** The `branch` filter: each value a branch name, or a pattern with `*` (`*dev*`, `feature/*`), as the real API takes it. */
function whereBranchIn(q: Knex.QueryBuilder, branches: readonly string[]): void {
  const exact = branches.filter((b) => !b.includes('*'));
  q.where((any) => {
    if (exact.length) any.whereIn('b.branch', exact);
    for (const p of branches.filter((b) => b.includes('*'))) orWhereMatches(any, 'b.branch', p);
  });
}

/** A build and its jobs from a row that carries them as `jobs_json` (`jobsJsonColumn`), or their counts (`jobStateCountsColumn`). */
const withJobsFromJson = (r: StoredRow<BuildWithJobsRow>): BuildAndJobs => ({
  build: buildFromRow(r),
  jobs: (r.jobs_json ?? []).map(jobFromRow),
  ...(r.job_state_counts_json && { jobStateCounts: r.job_state_counts_json }),
});

/**
 * A build by its number (with its jobs' JSON on Postgres), and one build's jobs (SQLite): the
 * reads of every GET build, compiled once (src/db/compiled.ts), with and without retried jobs.
 */
const byNumber = (db: Knex, param: (name: 'pipelineId' | 'number') => string) =>
  db('builds as b')
    .leftJoin('users as u', 'u.id', 'b.creator_id')
    .where({ 'b.pipeline_id': param('pipelineId'), 'b.number': param('number') })
    .limit(1);
const BY_NUMBER = compiledQuery((db, param: (name: 'pipelineId' | 'number') => string) => byNumber(db, param).select<BuildRow[]>(SELECT));
const byNumberWithJobsJson = (includeRetried: boolean) =>
  compiledQuery(
    (db, param: (name: 'pipelineId' | 'number') => string) => byNumber(db, param).select<BuildWithJobsRow[]>([...SELECT, jobsJsonColumn(db, includeRetried)]),
    { jsonRows: true },
  );
const jobsOfBuild = (includeRetried: boolean) =>
  compiledQuery((db, param: (name: 'buildId') => string) => {
    const q = db('jobs').where('build_id', param('buildId')).orderBy(JOB_ORDER);
    return includeRetried ? q : q.where('retried', false);
  });
const WITH_JOBS_JSON = { all: byNumberWithJobsJson(true), latest: byNumberWithJobsJson(false) };

/**
 * The build named by its pipeline's organization and slug and its number (with its jobs' JSON,
 * when asked): the Postgres read of a GET build that runs in the pipeline's own statement
 * (`byNumberAlong`). Postgres only: the jobs' JSON is `json_agg`.
 */
type AlongParam = (name: 'organizationId' | 'slug' | 'number') => string;
const bySlugAndNumber = (db: Knex, param: AlongParam) =>
  db('builds as b')
    .leftJoin('users as u', 'u.id', 'b.creator_id')
    .where(
      'b.pipeline_id',
      db('pipelines')
        .where({ organization_id: param('organizationId'), slug: param('slug') })
        .select('id'),
    )
    .where('b.number', param('number'));
const bySlugAndNumberWithJobs = (includeRetried: boolean) =>
  compiledQuery((db, param: AlongParam) => bySlugAndNumber(db, param).first<BuildWithJobsRow | undefined>([...SELECT, jobsJsonColumn(db, includeRetried)]));
const bySlugAndNumberWithCounts = (includeRetried: boolean) =>
  compiledQuery((db, param: AlongParam) =>
    bySlugAndNumber(db, param).first<BuildWithJobsRow | undefined>([...SELECT, jobStateCountsColumn(db, includeRetried)]),
  );
const ALONG = {
  withJobs: { all: bySlugAndNumberWithJobs(true), latest: bySlugAndNumberWithJobs(false) },
  withCounts: { all: bySlugAndNumberWithCounts(true), latest: bySlugAndNumberWithCounts(false) },
};
const JOBS_OF_BUILD = { all: jobsOfBuild(true), latest: jobsOfBuild(false) };

/** What the state machine reads of a build, and what a trigger step tells the build it creates. */
export interface ProgressingBuild {
  state: BuildState;
  blocked: boolean;
  startedAt: Date | null;
  failingAt: Date | null;
  finishedAt: Date | null;
  organizationId: string;
  pipelineId: string;
  number: number;
  message: string | null;
  /** What a rule's conditions read of a triggering build (`source.build.*`). */
  branch: string;
  commit: string;
  source: string;
  creatorId: string | null;
  triggerDepth: number;
  /** The synchronous trigger job that waits on this build, if a trigger step created it. */
  triggeredFromJobId: string | null;
}

/** The fields of a build the state machine decides. */
export type BuildStateFields = Pick<Build, 'state' | 'blocked' | 'startedAt' | 'failingAt' | 'finishedAt'>;

export class BuildRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): BuildRepository {
    return new BuildRepository(trx);
  }

  /** `fn` in the transaction this repository is bound to, else in one of its own. */
  private atomically<T>(fn: (trx: Knex.Transaction) => Promise<T>): Promise<T> {
    return isTransaction(this.db) ? fn(this.db) : this.db.transaction(fn);
  }

  /**
   * Next number, build, meta data and jobs, atomically; returns what a read would. The
   * pipeline's counter is bumped first (its row lock serialises creates on the pipeline) and
   * the organization's last, so creates on different pipelines of one organization queue on its
   * row only briefly. Lock order is pipeline, then organization, everywhere: no deadlocks.
   * Bound to a transaction (withTransaction), it runs in that one: the caller's next statements
   * (older builds of the branch superseded, src/builds/progress/cancellation.ts) see the number.
   *
   * On Postgres it is all one statement of data-modifying CTEs (the organization's bump reads
   * the pipeline's, which forces the lock order; foreign keys are checked at the statement's
   * end), in no transaction of its own: one statement is atomic. Every round trip under the
   * pipeline's lock is time every other create on it waits, and with 50 requests in flight each
   * round trip also waits its turn on the event loop: seven round trips under the lock made
   * creates on one pipeline three times slower. SQLite's statements cost no round trips.
   */
  async insert(build: NewBuild, creator: User | null, jobs: PlannedJob[]): Promise<{ build: Build; jobs: Job[] }> {
    const buildRow = toBuildRow(build);
    const metaRows = Object.entries(build.metaData).map(([key, value]) => ({ build_id: build.id, key, value, value_key: value.slice(0, 255) }));
    const jobRows = jobs.map((j) => toJobRow(build, j));
    const bumpPipeline = 'update pipelines set builds_counter = builds_counter + 1 where id = ? returning builds_counter, organization_id';
    const bumpOrg = 'update organizations set builds_counter = builds_counter + 1, builds_count = builds_count + 1 where id = ? returning builds_counter';
    let numbers: { number: number; org_number: number };
    // Postgres: one statement (one round trip) while its bindings fit the protocol's 65,535;
    // a larger build (thousands of jobs) takes the chunked transaction below, as on SQLite.
    const bindingCount = 1 + Object.keys(buildRow).length + metaRows.length * 4 + jobRows.reduce((n, r) => n + Object.keys(r).length, 0);
    if (isPostgres(this.db) && bindingCount <= 65_535) {
      const cols = Object.keys(buildRow);
      const bindings: Knex.Value[] = [build.pipelineId, ...Object.values(buildRow)];
      const parts = [
        `p as (${bumpPipeline})`,
        `o as (${bumpOrg.replace('id = ?', 'id = (select organization_id from p)')})`,
        `b as (insert into builds (${cols.join(', ')}, number, org_number) select ${cols.map(() => '?').join(', ')}, p.builds_counter, o.builds_counter from p, o)`,
      ];
      for (const [alias, table, rows] of [
        ['m', 'build_meta_data', metaRows],
        ['j', 'jobs', jobRows],
      ] as const) {
        if (!rows.length) continue;
        const names = Object.keys(rows[0]!);
        parts.push(`${alias} as (insert into ${table} (${names.join(', ')}) values ${rows.map(() => `(${names.map(() => '?').join(', ')})`).join(', ')})`);
        for (const r of rows) bindings.push(...Object.values(r));
      }
      const sql = `with ${parts.join(', ')} select p.builds_counter as number, o.builds_counter as org_number from p, o`;
      const run = async (db: Knex) => {
        const r = returned<{ number: PipelinesRow['builds_counter']; org_number: OrganizationsRow['builds_counter'] }>(await db.raw(sql, bindings));
        return { number: Number(r.number), org_number: Number(r.org_number) };
      };
      numbers = await run(this.db);
    } else {
      numbers = await this.atomically(async (trx) => {
        const number = Number(returned<Pick<PipelinesRow, 'builds_counter'>>(await trx.raw(bumpPipeline, [build.pipelineId])).builds_counter);
        await trx('builds').insert({ ...buildRow, number });
        if (metaRows.length) await trx('build_meta_data').insert(metaRows);
        // Chunked: SQLite allows a limited number of bound variables per statement.
        for (let i = 0; i < jobRows.length; i += 20) await trx('jobs').insert(jobRows.slice(i, i + 20));
        const orgNumber = Number(returned<Pick<OrganizationsRow, 'builds_counter'>>(await trx.raw(bumpOrg, [build.organizationId])).builds_counter);
        await trx('builds').where({ id: build.id }).update({ org_number: orgNumber });
        return { number, org_number: orgNumber };
      });
    }
    // What a read would return, from the rows just written (the columns left out take their
    // defaults, which the row readers give too): no read back after the commit.
    const creatorColumns = creator && { creator_name: creator.name, creator_email: creator.email, creator_created_at: creator.createdAt };
    return { build: buildFromRow({ ...buildRow, ...numbers, ...creatorColumns }), jobs: jobRows.map(jobFromRow) };
  }

  /**
   * A build and its jobs (retried ones only when asked). `withJobs` false (`exclude_jobs`): no
   * job is read, `jobs` is empty and `jobStateCounts` counts them.
   */
  async findWithJobs(pipelineId: string, number: number, includeRetried: boolean, withJobs = true): Promise<BuildAndJobs | null> {
    const values = { pipelineId, number };
    if (withJobs && isPostgres(this.db)) {
      const [row] = await WITH_JOBS_JSON[includeRetried ? 'all' : 'latest'](this.db, values);
      return row ? withJobsFromJson(row) : null;
    }
    const [row] = await BY_NUMBER(this.db, values);
    if (!row) return null;
    const build = buildFromRow(row);
    if (!withJobs) return { build, jobs: [], jobStateCounts: (await this.jobStateCountsOf([build.id], includeRetried)).get(build.id)! };
    return { build, jobs: (await JOBS_OF_BUILD[includeRetried ? 'all' : 'latest'](this.db, { buildId: build.id })).map(jobFromRow) };
  }

  /**
   * `findWithJobs` named by the pipeline's organization and slug, as a read beside the pipeline's
   * own (PipelineService.getAlong): on Postgres one round trip for both; elsewhere this read,
   * alone, once the pipeline's id is known.
   */
  byNumberAlong(
    organizationId: string,
    pipelineSlug: string,
    number: number,
    includeRetried: boolean,
    withJobs: boolean,
  ): PipelineAlong<'organizationId' | 'slug' | 'number', BuildWithJobsRow, BuildAndJobs> {
    return {
      query: ALONG[withJobs ? 'withJobs' : 'withCounts'][includeRetried ? 'all' : 'latest'],
      values: { organizationId, slug: pipelineSlug, number },
      fromRow: withJobsFromJson,
      alone: (pipelineId) => this.findWithJobs(pipelineId, number, includeRetried, withJobs),
    };
  }

  /** A page of builds with their jobs (retried ones only when asked), or their counts (`withJobs` false, as `findWithJobs`). */
  async listWithJobs(f: BuildFilter, offset: number, limit: number, includeRetried: boolean, withJobs = true): Promise<BuildAndJobs[]> {
    const q = await this.listQuery(f, offset, limit);
    return q ? this.withJobs(q.query, includeRetried, withJobs) : [];
  }

  /**
   * Runs a builds query and brings each build's jobs. On Postgres they come inside the build's
   * row as one JSON column (`json_agg` of whole job rows), so a page is one round trip instead
   * of two: one query less for the driver and Knex in the service's one thread, and the jobs
   * parsed by one JSON.parse instead of node-pg's per-row, per-column parsers (profiled: a
   * query's driver work is several percent of a list's CPU). The aggregate is a select-list
   * subquery, which Postgres evaluates after the sort and limit (it postpones expensive output
   * expressions past them), so it runs for the page's rows only. SQLite queries cost no round trip, and a
   * second prepared statement there is cheaper than building and parsing JSON.
   */
  private async withJobs(q: Knex.QueryBuilder<BuildsRow, BuildWithJobsRow[]>, includeRetried: boolean, withJobs: boolean): Promise<BuildAndJobs[]> {
    if (isPostgres(this.db)) {
      q.select(withJobs ? jobsJsonColumn(this.db, includeRetried) : jobStateCountsColumn(this.db, includeRetried));
      return (await q).map(withJobsFromJson);
    }
    const builds = (await q).map(buildFromRow);
    if (!withJobs) {
      const counts = await this.jobStateCountsOf(
        builds.map((b) => b.id),
        includeRetried,
      );
      return builds.map((build) => ({ build, jobs: [], jobStateCounts: counts.get(build.id)! }));
    }
    const jobs = await this.jobsOf(
      builds.map((b) => b.id),
      includeRetried,
    );
    return builds.map((build) => ({ build, jobs: jobs.get(build.id)! }));
  }

  async findByNumber(pipelineId: string, number: number): Promise<Build | null> {
    const [row] = await BY_NUMBER(this.db, { pipelineId, number });
    return row ? buildFromRow(row) : null;
  }

  /** The build a job (retried ones too) belongs to. */
  async findByJobId(jobId: string): Promise<Build | null> {
    const row = await this.db('builds as b')
      .join('jobs as j', 'j.build_id', 'b.id')
      .leftJoin('users as u', 'u.id', 'b.creator_id')
      .where({ 'j.id': jobId })
      .first<BuildRow | undefined>(SELECT);
    return row ? buildFromRow(row) : null;
  }

  async findById(id: string): Promise<Build | null> {
    const row = await this.db('builds as b').leftJoin('users as u', 'u.id', 'b.creator_id').where({ 'b.id': id }).first<BuildRow | undefined>(SELECT);
    return row ? buildFromRow(row) : null;
  }

  async list(f: BuildFilter, offset: number, limit: number): Promise<Build[]> {
    const q = await this.listQuery(f, offset, limit);
    return q ? (await q.query).map(buildFromRow) : [];
  }

  /**
   * The list query itself, so its plan can be inspected (test/builds/plans.test.ts). Wrapped in
   * an object: a query builder is thenable, and returning it bare from an async function runs it.
   */
  async listQuery(f: BuildFilter, offset: number, limit: number): Promise<{ query: Knex.QueryBuilder<BuildsRow, BuildWithJobsRow[]> } | null> {
    const q = this.db('builds as b').leftJoin('users as u', 'u.id', 'b.creator_id').select<BuildWithJobsRow[]>(SELECT);
    const pipelineId = 'pipelineId' in f.scope ? f.scope.pipelineId : undefined;
    const orgs = 'organizations' in f.scope ? f.scope.organizations : [];
    if (!pipelineId && !orgs.length) return null;
    const filtered = Boolean(
      f.branches?.length ||
      f.commits?.length ||
      f.states?.length ||
      f.createdFrom ||
      f.createdTo ||
      f.finishedFrom ||
      f.creatorId ||
      f.withoutPaused ||
      Object.keys(f.metaData ?? {}).length,
    );
    if (pipelineId) {
      q.where('b.pipeline_id', pipelineId).orderBy('b.number', 'desc');
      // Numbers have no gaps within a pipeline (builds are only deleted with their pipeline),
      // so an unfiltered page starts at a number found by arithmetic: a seek, however deep.
      if (!filtered && offset > 0) {
        q.where(
          'b.number',
          '<=',
          this.db('pipelines')
            .where({ id: pipelineId })
            .select(this.db.raw('builds_counter - ?', [offset])),
        );
        offset = 0;
      }
    } else if (orgs.length === 1 && !orgs[0]!.restrictedToUserId) {
      const orgId = orgs[0]!.id;
      q.where('b.organization_id', orgId).orderBy('b.org_number', 'desc');
      if (!filtered && offset > 0) {
        const org = await this.db('organizations').where({ id: orgId }).first('builds_counter', 'builds_count');
        if (org && Number(org.builds_counter) === Number(org.builds_count)) {
          q.where('b.org_number', '<=', Number(org.builds_counter) - offset);
          offset = 0;
        }
      }
    } else {
      q.where((any) => {
        for (const o of orgs) {
          any.orWhere((w) => {
            w.where('b.organization_id', o.id);
            if (o.restrictedToUserId) {
              w.whereIn(
                'b.pipeline_id',
                this.db('pipeline_teams as pt')
                  .join('team_members as tm', 'tm.team_id', 'pt.team_id')
                  .where('tm.user_id', o.restrictedToUserId)
                  .select('pt.pipeline_id'),
              );
            }
          });
        }
      });
      q.orderBy([
        { column: 'b.created_at', order: 'desc' },
        { column: 'b.id', order: 'desc' },
      ]);
    }
    if (f.branches?.length) whereBranchIn(q, f.branches);
    if (f.commits?.length) q.whereIn('b.commit', f.commits);
    if (f.states?.length) {
      // A blocked build keeps the state it reached (`passed`, with `blocked` set): `blocked` asks for the flag.
      const stored = f.states.filter((s) => s !== 'blocked');
      const blocked = stored.length < f.states.length;
      q.where((w) => {
        if (stored.length) w.whereIn('b.state', stored);
        if (blocked) w.orWhere('b.blocked', true);
      });
    }
    if (f.withoutPaused) {
      // Kept: a build with a command job outside a cluster or on a queue that is not paused, or with none at all.
      const commandJobs = () => this.db('jobs as pj').whereRaw('pj.build_id = b.id').where({ 'pj.type': 'script', 'pj.retried': false });
      q.where((w) =>
        w.whereNotExists(commandJobs().select(1)).orWhereExists(
          commandJobs()
            .leftJoin('cluster_queues as pq', 'pq.id', 'pj.cluster_queue_id')
            .where((active) => active.whereNull('pj.cluster_queue_id').orWhereNull('pq.dispatch_paused_at'))
            .select(1),
        ),
      );
    }
    if (f.createdFrom) q.where('b.created_at', '>=', f.createdFrom);
    if (f.createdTo) q.where('b.created_at', '<', f.createdTo);
    if (f.finishedFrom) q.where('b.finished_at', '>=', f.finishedFrom);
    if (f.creatorId) q.where('b.creator_id', f.creatorId);
    for (const [key, value] of Object.entries(f.metaData ?? {})) {
      q.whereIn(
        'b.id',
        this.db('build_meta_data')
          .where({ key, value_key: value.slice(0, 255), value })
          .select('build_id'),
      );
    }
    return { query: q.offset(offset).limit(limit) };
  }

  /** Which of these cluster queues are paused. */
  async pausedQueues(queueIds: string[]): Promise<Set<string>> {
    if (!queueIds.length) return new Set();
    const rows = await whereAnyOf(this.db('cluster_queues'), 'id', queueIds).whereNotNull('dispatch_paused_at').select<{ id: string }[]>('id');
    return new Set(rows.map((r) => r.id));
  }

  /** How many of each build's jobs are in each state (retried ones only when asked), without reading the jobs. */
  private async jobStateCountsOf(buildIds: string[], includeRetried: boolean): Promise<Map<string, JobStateCounts>> {
    const byBuild = new Map<string, JobStateCounts>(buildIds.map((id) => [id, {}]));
    if (!buildIds.length) return byBuild;
    const q = whereAnyOf(this.db('jobs'), 'build_id', buildIds)
      .groupBy('build_id', 'state')
      .select<{ build_id: string; state: JobState; n: number | string }[]>('build_id', 'state', this.db.raw('count(*) as n'));
    if (!includeRetried) q.where('retried', false);
    for (const row of await q) byBuild.get(row.build_id)![row.state] = Number(row.n);
    return byBuild;
  }

  /** Jobs of these builds in order, retried ones only when asked. */
  async jobsOf(buildIds: string[], includeRetried: boolean): Promise<Map<string, Job[]>> {
    const byBuild = new Map<string, Job[]>(buildIds.map((id) => [id, []]));
    if (!buildIds.length) return byBuild;
    const q = whereAnyOf(this.db('jobs'), 'build_id', buildIds).orderBy([{ column: 'build_id' }, ...JOB_ORDER]);
    if (!includeRetried) q.where('retried', false);
    for (const row of await q) byBuild.get(row.build_id)!.push(jobFromRow(row));
    return byBuild;
  }

  /*
   * What progression (src/builds/progress/) reads and writes of builds, on the transaction it
   * opened. Each write is the one statement its rule needs.
   */

  /**
   * Unfinished builds none of whose jobs moves on by itself (SELF_MOVING_JOB_STATES) and none of
   * whose jobs ended at or after `quietSince`: their state machine did not run after their last
   * job ended (the process that ended it died before it could), oldest first, at most `limit`.
   * The quiet time leaves alone a build whose machine is about to run, as it does right after
   * every job's end, and a build created since (its creation runs the machine). Read on the
   * partial index of unfinished builds.
   */
  async stalled(quietSince: Date, limit: number): Promise<string[]> {
    return this.db('builds as b')
      .whereIn('b.state', UNFINISHED_BUILD_STATES)
      .where('b.created_at', '<', quietSince)
      .whereNotExists((j) => j.from('jobs').whereRaw('jobs.build_id = b.id').whereIn('jobs.state', SELF_MOVING_JOB_STATES))
      .whereNotExists((j) => j.from('jobs').whereRaw('jobs.build_id = b.id').where('jobs.finished_at', '>=', quietSince))
      .orderBy('b.created_at')
      .limit(limit)
      .pluck('b.id');
  }

  /**
   * Locks the build's row until the transaction ends (Postgres; SQLite has one writer), so job
   * events of one build are applied one after another. False if the build is gone.
   */
  async lock(buildId: string): Promise<boolean> {
    return (
      (await this.db('builds')
        .where({ id: buildId })
        .update({ state: this.db.ref('state') })) > 0
    );
  }

  /**
   * Appends `entries` to the build's notifications (a pipeline upload's top-level `notify`).
   * A read then a write: the caller holds the build's row lock (build progression).
   */
  async appendNotify(buildId: string, entries: readonly NotifyEntry[]): Promise<void> {
    if (entries.length === 0) return;
    const row = await this.db('builds').where({ id: buildId }).first('notify');
    if (!row) return;
    const notify = [...parseJson<NotifyEntry[]>(row.notify, []), ...entries];
    await this.db('builds')
      .where({ id: buildId })
      .update({ notify: JSON.stringify(notify) });
  }

  /** What the state machine reads of a (locked) build. */
  async progressOf(buildId: string): Promise<ProgressingBuild> {
    const b = await this.db('builds')
      .where({ id: buildId })
      .first(
        'state',
        'blocked',
        'started_at',
        'failing_at',
        'finished_at',
        'organization_id',
        'pipeline_id',
        'number',
        'message',
        'branch',
        'commit',
        'source',
        'creator_id',
        'trigger_depth',
        'triggered_from_job_id',
      );
    if (!b) throw new Error(`build ${buildId} is gone`);
    return {
      state: oneOf(BUILD_STATES, b.state, 'builds.state'),
      blocked: toBool(b.blocked),
      startedAt: toDateOrNull(b.started_at),
      failingAt: toDateOrNull(b.failing_at),
      finishedAt: toDateOrNull(b.finished_at),
      organizationId: b.organization_id,
      pipelineId: b.pipeline_id,
      number: Number(b.number),
      message: b.message ?? null,
      branch: b.branch,
      commit: b.commit,
      source: b.source,
      creatorId: b.creator_id ?? null,
      triggerDepth: Number(b.trigger_depth ?? 0),
      triggeredFromJobId: b.triggered_from_job_id ?? null,
    };
  }

  /** Stores what the state machine decided for the build, if it is in one of `from` (its event's, src/builds/states.ts); false if not. */
  async saveProgress(buildId: string, n: BuildStateFields, from: readonly BuildState[]): Promise<boolean> {
    return (
      (await this.db('builds')
        .where({ id: buildId })
        .whereIn('state', from)
        .update({ state: n.state, blocked: n.blocked, started_at: n.startedAt, failing_at: n.failingAt, finished_at: n.finishedAt })) > 0
    );
  }

  /** A canceled build runs again (`reopen`: a job of it was retried); false if it was not canceled. */
  async reopenCanceled(buildId: string): Promise<boolean> {
    const t = buildTransition('reopen');
    return (await this.db('builds').where({ id: buildId }).whereIn('state', t.from).update({ state: t.to, finished_at: null })) > 0;
  }

  /** The build's meta-data (its own copy, which the meta-data table mirrors). */
  async metaDataOf(buildId: string): Promise<Record<string, string>> {
    const row = await this.db('builds').where({ id: buildId }).first('meta_data');
    return parseJson<Record<string, string>>(row?.meta_data, {});
  }

  /** Sets meta-data keys (a block step's fields, an agent's `meta-data set`): in the meta-data table and in the build's own copy. */
  async mergeMetaData(buildId: string, fields: Record<string, string>): Promise<void> {
    for (const [key, value] of Object.entries(fields)) {
      await this.db('build_meta_data')
        .insert({ build_id: buildId, key, value, value_key: value.slice(0, 255) })
        .onConflict(['build_id', 'key'])
        .merge();
    }
    const row = await this.db('builds').where({ id: buildId }).first('meta_data');
    await this.db('builds')
      .where({ id: buildId })
      .update({ meta_data: JSON.stringify({ ...parseJson<Record<string, string>>(row?.meta_data, {}), ...fields }) });
  }

  /**
   * Ids of the branch's builds numbered below `belowNumber` that `event` moves: in its states, a
   * passed or failed one only while blocked (BLOCKED_ONLY_BUILD_STATES).
   */
  async branchBuildsBelow(pipelineId: string, branch: string, belowNumber: number, event: 'skip' | 'supersede' | 'cancel_branch'): Promise<string[]> {
    return this.db('builds').where({ pipeline_id: pipelineId, branch }).where('number', '<', belowNumber).where(movedBy(event)).pluck('id');
  }

  /** The trigger jobs that made these builds (those a trigger step made). */
  async triggeringJobsOf(buildIds: readonly string[]): Promise<string[]> {
    if (!buildIds.length) return [];
    const ids = await this.db('builds').whereIn('id', buildIds).whereNotNull('triggered_from_job_id').pluck('triggered_from_job_id');
    return ids.filter((id): id is string => id !== null);
  }

  /** The builds `event` moves (a skip, a cancel of older builds of the branch) end at `at`, no longer blocked; how many. */
  async end(buildIds: string[], event: 'skip' | 'supersede' | 'cancel_branch', at: Date): Promise<number> {
    const t = buildTransition(event);
    return this.db('builds').whereIn('id', buildIds).where(movedBy(event)).update({ state: t.to, finished_at: at, blocked: false });
  }

  /** The build, if it can be canceled (`cancel`), starts canceling; false if its state had moved on. */
  async startCanceling(buildId: string): Promise<boolean> {
    const t = buildTransition('cancel');
    return (await this.db('builds').where({ id: buildId }).whereIn('state', t.from).update({ state: t.to, blocked: false })) > 0;
  }

  /** Builds just canceled whose jobs agents are still stopping are `canceling` (`still_canceling`), not finished; how many. */
  async stillCanceling(buildIds: string[]): Promise<number> {
    const t = buildTransition('still_canceling');
    return this.db('builds').whereIn('id', buildIds).whereIn('state', t.from).update({ state: t.to, finished_at: null });
  }

  /** The canceling build is canceled at `at` (`end_cancel`); false if it was not canceling. */
  async canceled(buildId: string, at: Date): Promise<boolean> {
    const t = buildTransition('end_cancel');
    return (await this.db('builds').where({ id: buildId }).whereIn('state', t.from).update({ state: t.to, finished_at: at })) > 0;
  }

  /**
   * The state of the branch's latest finished build before build `number` (passed, failed,
   * canceled), or null: what tells a fixed build (passed after a failure) from a passing one.
   * Read on the (pipeline_id, branch, number) index.
   */
  async previousFinishedState(pipelineId: string, branch: string, number: number): Promise<string | null> {
    const row = await this.db('builds')
      .where({ pipeline_id: pipelineId, branch })
      .where('number', '<', number)
      .whereIn('state', CONCLUDED_BUILD_STATES)
      .orderBy('number', 'desc')
      .first('state');
    return row?.state ?? null;
  }

  /** A build as it stands at the end of a history (the fixture loader's: its state and times from the file). */
  async writeHistory(
    buildId: string,
    h: { state: string; createdAt: Date; startedAt: Date | null; failingAt: Date | null; finishedAt: Date | null },
  ): Promise<void> {
    await this.db('builds')
      .where({ id: buildId })
      .update({
        state: h.state,
        blocked: h.state === 'blocked',
        created_at: h.createdAt,
        scheduled_at: h.createdAt,
        started_at: h.startedAt,
        failing_at: h.failingAt,
        finished_at: h.finishedAt,
      });
  }
}

/** The single row of an UPDATE ... RETURNING, whichever driver answered, typed as its RETURNING list names it. */
function returned<Row>(result: unknown): Row {
  const row = rawRows<Row>(result)[0];
  if (row === undefined) throw new Error('UPDATE ... RETURNING returned no row');
  return row;
}

/** The builds an event of older builds of a branch may move: its from-states, a passed or failed one only while blocked. */
function movedBy(event: 'skip' | 'supersede' | 'cancel_branch'): (w: Knex.QueryBuilder) => void {
  const from = buildTransition(event).from;
  const always = from.filter((s) => !BLOCKED_ONLY_BUILD_STATES.includes(s));
  const blocked = from.filter((s) => BLOCKED_ONLY_BUILD_STATES.includes(s));
  return (w) => {
    w.whereIn('state', always);
    if (blocked.length) w.orWhere((b) => b.whereIn('state', blocked).where({ blocked: true }));
  };
}
