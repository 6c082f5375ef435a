/**
 * Builds, their meta data and jobs: Knex queries, rows in and domain objects out. The build
 * number comes from the pipeline's counter, bumped by UPDATE ... RETURNING as the first
 * statement of the create transaction: the row lock (Postgres) or the write lock (SQLite)
 * serialises concurrent creates, and the unique (pipeline_id, number) index backs it.
 */
import type { Knex } from 'knex';
import type { components } from '../../generated/api';
import { isPostgres, whereAnyOf } from '../db/knex';
import { parseJson, toBool, toDate, toDateOrNull } from '../db/values';
import { userFromRow } from '../user/repository';
import type { Step } from '../pipelines/configuration';
import type { JobType, PlannedJob, StepSignature } from './jobs';
import { dispatchKey } from '../jobs/dispatch-key';
import type { User } from '../core/identity';

/** The contract's build and job states: what the state machine sets is what the API answers. */
export type BuildState = components['schemas']['BuildState'];
export type JobState = components['schemas']['JobState'];
export const FINISHED_STATES: BuildState[] = ['passed', 'failed', 'blocked', 'canceled'];

export interface Author {
  name?: string;
  email?: string;
  username?: string;
}

export interface PullRequest {
  id: string;
  base: string | null;
  repository: string | null;
  labels?: string[];
}

export interface TriggeredFrom {
  build_id: string;
  build_number: number;
  build_pipeline_slug: string;
}

export interface Build {
  id: string;
  pipelineId: string;
  organizationId: string;
  number: number;
  state: BuildState;
  blocked: boolean;
  message: string | null;
  commit: string;
  branch: string;
  tag: string | null;
  env: Record<string, string>;
  metaData: Record<string, string>;
  source: string;
  author: Author | null;
  creator: User | null;
  pullRequest: PullRequest | null;
  cleanCheckout: boolean;
  rebuiltFrom: { id: string; number: number } | null;
  /** The build whose trigger step created this one, as it was then. */
  triggeredFrom: TriggeredFrom | null;
  cancelReason: string | null;
  createdAt: Date;
  scheduledAt: Date | null;
  startedAt: Date | null;
  failingAt: Date | null;
  finishedAt: Date | null;
}

/** A stored job: what was planned, plus what running it records. */
export interface Job extends Omit<PlannedJob, 'state'> {
  buildId: string;
  state: JobState;
  softFailed: boolean;
  exitStatus: number | null;
  retried: boolean;
  retriedInJobId: string | null;
  retriesCount: number | null;
  retryType: string | null;
  /** On a job that retried another: that job and how it was retried. */
  retrySource: { job_id: string; retry_type: 'manual' | 'automatic' } | null;
  /** The agent that took the job (set from `assigned` on). */
  agentId: string | null;
  /** Who unblocked a block step, and when. */
  unblockedBy: User | null;
  unblockedAt: Date | null;
  /** The build a trigger job created: its id, number and pipeline slug at the time. */
  triggeredBuild: { id: string; number: number; pipeline_slug: string } | null;
  /** Why the agent stopped the process (`cancel`, `timeout`, `agent_stop`), if it did. */
  signalReason: string | null;
  /** When a scheduled job no agent took expired. */
  expiredAt: Date | null;
  createdAt: Date;
  scheduledAt: Date | null;
  runnableAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

export type NewBuild = Omit<Build, 'number' | 'creator'> & { creatorId: string | null; triggeredFromJobId?: string; triggerDepth?: number };

function buildFromRow(r: Record<string, unknown>): Build {
  return {
    id: r.id as string,
    pipelineId: r.pipeline_id as string,
    organizationId: r.organization_id as string,
    number: Number(r.number),
    state: r.state as BuildState,
    blocked: toBool(r.blocked),
    message: (r.message as string | null) ?? null,
    commit: r.commit as string,
    branch: r.branch as string,
    tag: (r.tag as string | null) ?? null,
    env: parseJson(r.env, {}),
    metaData: parseJson(r.meta_data, {}),
    source: r.source as string,
    author: parseJson<Author | null>(r.author, null),
    creator: r.creator_id
      ? userFromRow({ id: r.creator_id as string, name: r.creator_name as string, email: r.creator_email as string, created_at: r.creator_created_at })
      : null,
    pullRequest: parseJson<PullRequest | null>(r.pull_request, null),
    cleanCheckout: toBool(r.clean_checkout),
    rebuiltFrom: r.rebuilt_from_id ? { id: r.rebuilt_from_id as string, number: Number(r.rebuilt_from_number) } : null,
    triggeredFrom: parseJson<TriggeredFrom | null>(r.triggered_from, null),
    cancelReason: (r.cancel_reason as string | null) ?? null,
    createdAt: toDate(r.created_at),
    scheduledAt: toDateOrNull(r.scheduled_at),
    startedAt: toDateOrNull(r.started_at),
    failingAt: toDateOrNull(r.failing_at),
    finishedAt: toDateOrNull(r.finished_at),
  };
}

export function jobFromRow(r: Record<string, unknown>): Job {
  return {
    id: r.id as string,
    buildId: r.build_id as string,
    position: Number(r.position),
    type: r.type as JobType,
    state: r.state as JobState,
    name: (r.name as string | null) ?? null,
    stepKey: (r.step_key as string | null) ?? null,
    stepId: r.step_id as string,
    signature: parseJson<StepSignature | null>(r.step_signature, null),
    step: parseJson<Step>(r.step, { type: 'waiter', continue_on_failure: false }),
    command: (r.command as string | null) ?? null,
    agentQueryRules: parseJson(r.agent_query_rules, []),
    env: parseJson(r.env, {}),
    artifactPaths: (r.artifact_paths as string | null) ?? null,
    timeoutInMinutes: (r.timeout_in_minutes as number | null) ?? null,
    parallelGroupIndex: (r.parallel_group_index as number | null) ?? null,
    parallelGroupTotal: (r.parallel_group_total as number | null) ?? null,
    softFailed: toBool(r.soft_failed),
    exitStatus: (r.exit_status as number | null) ?? null,
    brokenReason: (r.broken_reason as string | null) ?? null,
    priority: Number(r.priority ?? 0),
    retried: toBool(r.retried),
    retriedInJobId: (r.retried_in_job_id as string | null) ?? null,
    retriesCount: (r.retries_count as number | null) ?? null,
    retryType: (r.retry_type as string | null) ?? null,
    retrySource: parseJson(r.retry_source, null),
    agentId: (r.agent_id as string | null) ?? null,
    unblockedBy: r.unblocked_by ? userFromRow(parseJson(r.unblocked_by, { id: '', name: '', email: '', created_at: null })) : null,
    unblockedAt: toDateOrNull(r.unblocked_at),
    triggeredBuild: parseJson(r.triggered_build, null),
    signalReason: (r.signal_reason as string | null) ?? null,
    expiredAt: toDateOrNull(r.expired_at),
    createdAt: toDate(r.created_at),
    scheduledAt: toDateOrNull(r.scheduled_at),
    runnableAt: toDateOrNull(r.runnable_at),
    startedAt: toDateOrNull(r.started_at),
    finishedAt: toDateOrNull(r.finished_at),
  };
}

const SELECT = ['b.*', 'u.name as creator_name', 'u.email as creator_email', 'u.created_at as creator_created_at'];

export interface BuildFilter {
  /** One pipeline, or organizations (each optionally restricted to the pipelines a user's teams may see). */
  scope: { pipelineId: string } | { organizations: { id: string; restrictedToUserId?: string }[] };
  branches?: string[];
  commits?: string[];
  states?: BuildState[];
  createdFrom?: Date;
  createdTo?: Date;
  finishedFrom?: Date;
  creatorId?: string;
  metaData?: Record<string, string>;
}

export class BuildRepository {
  constructor(private readonly db: Knex) {}

  /**
   * Next number, build, meta data and jobs, atomically; returns what a read would. The
   * pipeline's counter is bumped first (its row lock serialises creates on the pipeline) and
   * the organization's last, so creates on different pipelines of one organization queue on its
   * row only briefly. Lock order is pipeline, then organization, everywhere: no deadlocks.
   * `supersede`, when given, runs in the same transaction with the new number.
   *
   * On Postgres it is all one statement of data-modifying CTEs (the organization's bump reads
   * the pipeline's, which forces the lock order; foreign keys are checked at the statement's
   * end), in a transaction of its own unless `supersede` follows. Every round trip under the
   * pipeline's lock is time every other create on it waits, and with 50 requests in flight each
   * round trip also waits its turn on the event loop: seven round trips under the lock made
   * creates on one pipeline three times slower. SQLite's statements cost no round trips.
   */
  async insert(
    build: NewBuild,
    creator: User | null,
    jobs: PlannedJob[],
    supersede?: (trx: Knex.Transaction, number: number) => Promise<void>,
  ): Promise<{ build: Build; jobs: Job[] }> {
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
        const r = returned(await db.raw(sql, bindings));
        return { number: Number(r.number), org_number: Number(r.org_number) };
      };
      numbers = supersede
        ? await this.db.transaction(async (trx) => {
            const n = await run(trx);
            await supersede(trx, n.number);
            return n;
          })
        : await run(this.db);
    } else {
      numbers = await this.db.transaction(async (trx) => {
        const number = Number(returned(await trx.raw(bumpPipeline, [build.pipelineId])).builds_counter);
        if (supersede) await supersede(trx, number);
        await trx('builds').insert({ ...buildRow, number });
        if (metaRows.length) await trx('build_meta_data').insert(metaRows);
        // Chunked: SQLite allows a limited number of bound variables per statement.
        for (let i = 0; i < jobRows.length; i += 20) await trx('jobs').insert(jobRows.slice(i, i + 20));
        const orgNumber = Number(returned(await trx.raw(bumpOrg, [build.organizationId])).builds_counter);
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
   * Older builds of the branch in `fromStates` move to `toState` with their unfinished jobs
   * (`skip_queued_branch_builds`, `cancel_running_branch_builds`). Returns how many moved.
   */
  async supersede(
    trx: Knex.Transaction,
    pipelineId: string,
    branch: string,
    belowNumber: number,
    fromStates: BuildState[],
    toState: BuildState,
    jobState: string,
    at: Date,
  ): Promise<number> {
    const ids = (await trx('builds')
      .where({ pipeline_id: pipelineId, branch })
      .where('number', '<', belowNumber)
      .whereIn('state', fromStates)
      .pluck('id')) as string[];
    if (!ids.length) return 0;
    await trx('builds').whereIn('id', ids).update({ state: toState, finished_at: at, blocked: false });
    if (toState === 'canceled') {
      const busy = await cancelJobs(trx, ids, at);
      if (busy.length) await trx('builds').whereIn('id', busy).update({ state: 'canceling', finished_at: null });
    } else {
      await trx('jobs').whereIn('build_id', ids).whereIn('state', UNFINISHED_JOB_STATES).update({ state: jobState, finished_at: at });
    }
    return ids.length;
  }

  /**
   * Cancels a build in one of `fromStates` (see cancelJobs): `canceled` with `finished_at` at
   * once, or `canceling` while agents stop its jobs. False if the build's state had moved on.
   */
  async cancel(buildId: string, fromStates: BuildState[], at: Date): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const n = await trx('builds').where({ id: buildId }).whereIn('state', fromStates).update({ state: 'canceling', blocked: false });
      if (!n) return false;
      if (!(await cancelJobs(trx, [buildId], at)).length) await trx('builds').where({ id: buildId }).update({ state: 'canceled', finished_at: at });
      return true;
    });
  }

  /** Cancels the branch's builds in `fromStates` with their unfinished jobs (a deleted branch); returns how many. */
  async cancelBranch(pipelineId: string, branch: string, fromStates: BuildState[], at: Date): Promise<number> {
    // Below the largest 32-bit integer, the number column's type on Postgres: every build of the branch.
    return this.db.transaction((trx) => this.supersede(trx, pipelineId, branch, 2 ** 31 - 1, fromStates, 'canceled', 'canceled', at));
  }

  /** A build and its jobs (retried ones only when asked). */
  /** `withJobs` false (`exclude_jobs`): no job is read, and `jobs` is empty. */
  async findWithJobs(pipelineId: string, number: number, includeRetried: boolean, withJobs = true): Promise<{ build: Build; jobs: Job[] } | null> {
    const q = this.db('builds as b')
      .leftJoin('users as u', 'u.id', 'b.creator_id')
      .where({ 'b.pipeline_id': pipelineId, 'b.number': number })
      .select(SELECT)
      .limit(1);
    return (await this.withJobs(q, includeRetried, withJobs))[0] ?? null;
  }

  /** A page of builds with their jobs (retried ones only when asked). */
  async listWithJobs(f: BuildFilter, offset: number, limit: number, includeRetried: boolean, withJobs = true): Promise<{ build: Build; jobs: Job[] }[]> {
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
  private async withJobs(q: Knex.QueryBuilder, includeRetried: boolean, withJobs: boolean): Promise<{ build: Build; jobs: Job[] }[]> {
    if (!withJobs) return ((await q) as Record<string, unknown>[]).map((r) => ({ build: buildFromRow(r), jobs: [] }));
    if (isPostgres(this.db)) {
      const retried = includeRetried ? '' : ' and not j.retried';
      q.select(this.db.raw(`(select coalesce(json_agg(j order by j.position), '[]') from jobs j where j.build_id = b.id${retried}) as jobs_json`));
      return (await q).map((r: Record<string, unknown>) => ({ build: buildFromRow(r), jobs: (r.jobs_json as Record<string, unknown>[]).map(jobFromRow) }));
    }
    const builds = ((await q) as Record<string, unknown>[]).map(buildFromRow);
    const jobs = await this.jobsOf(
      builds.map((b) => b.id),
      includeRetried,
    );
    return builds.map((build) => ({ build, jobs: jobs.get(build.id)! }));
  }

  async findByNumber(pipelineId: string, number: number): Promise<Build | null> {
    const row = await this.db('builds as b')
      .leftJoin('users as u', 'u.id', 'b.creator_id')
      .where({ 'b.pipeline_id': pipelineId, 'b.number': number })
      .first(SELECT);
    return row ? buildFromRow(row) : null;
  }

  async findById(id: string): Promise<Build | null> {
    const row = await this.db('builds as b').leftJoin('users as u', 'u.id', 'b.creator_id').where({ 'b.id': id }).first(SELECT);
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
  async listQuery(f: BuildFilter, offset: number, limit: number): Promise<{ query: Knex.QueryBuilder } | null> {
    const q = this.db('builds as b').leftJoin('users as u', 'u.id', 'b.creator_id').select(SELECT);
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
    if (f.branches?.length) q.whereIn('b.branch', f.branches);
    if (f.commits?.length) q.whereIn('b.commit', f.commits);
    if (f.states?.length) q.whereIn('b.state', f.states);
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

  /** Jobs of these builds in order, retried ones only when asked. */
  async jobsOf(buildIds: string[], includeRetried: boolean): Promise<Map<string, Job[]>> {
    const byBuild = new Map<string, Job[]>(buildIds.map((id) => [id, []]));
    if (!buildIds.length) return byBuild;
    const q = whereAnyOf(this.db('jobs'), 'build_id', buildIds).orderBy([{ column: 'build_id' }, { column: 'position' }]);
    if (!includeRetried) q.where('retried', false);
    for (const row of await q) byBuild.get(row.build_id as string)!.push(jobFromRow(row));
    return byBuild;
  }
}

function toBuildRow(build: NewBuild) {
  return {
    id: build.id,
    pipeline_id: build.pipelineId,
    organization_id: build.organizationId,
    state: build.state,
    blocked: build.blocked,
    message: build.message,
    commit: build.commit,
    branch: build.branch,
    tag: build.tag,
    env: JSON.stringify(build.env),
    meta_data: JSON.stringify(build.metaData),
    source: build.source,
    author: build.author ? JSON.stringify(build.author) : null,
    creator_id: build.creatorId,
    pull_request: build.pullRequest ? JSON.stringify(build.pullRequest) : null,
    clean_checkout: build.cleanCheckout,
    rebuilt_from_id: build.rebuiltFrom?.id ?? null,
    rebuilt_from_number: build.rebuiltFrom?.number ?? null,
    triggered_from: build.triggeredFrom ? JSON.stringify(build.triggeredFrom) : null,
    cancel_reason: build.cancelReason,
    created_at: build.createdAt,
    scheduled_at: build.scheduledAt,
    started_at: build.startedAt,
    failing_at: build.failingAt,
    finished_at: build.finishedAt,
    ...(build.triggeredFromJobId ? { triggered_from_job_id: build.triggeredFromJobId, trigger_depth: build.triggerDepth ?? 0 } : {}),
  };
}

/** A planned job's row in `build`; its times are the build's creation (or, for an upload, the upload's). */
export function toJobRow(build: Pick<NewBuild, 'id' | 'pipelineId' | 'organizationId' | 'createdAt'>, j: PlannedJob) {
  const agentQueryRules = JSON.stringify(j.agentQueryRules);
  return {
    id: j.id,
    build_id: build.id,
    pipeline_id: build.pipelineId,
    // What dispatch looks jobs up by (src/db/migrations/20261125110000_job_dispatch.ts).
    organization_id: build.organizationId,
    dispatch_key: dispatchKey(agentQueryRules),
    position: j.position,
    type: j.type,
    state: j.state,
    name: j.name,
    step_key: j.stepKey,
    step_id: j.stepId,
    step_signature: j.signature ? JSON.stringify(j.signature) : null,
    step: JSON.stringify(j.step),
    command: j.command,
    agent_query_rules: agentQueryRules,
    env: JSON.stringify(j.env),
    artifact_paths: j.artifactPaths,
    timeout_in_minutes: j.timeoutInMinutes,
    parallel_group_index: j.parallelGroupIndex,
    parallel_group_total: j.parallelGroupTotal,
    broken_reason: j.brokenReason,
    priority: j.priority,
    ...jobTimes(build, j),
  };
}

/** A new job's timestamps: what runs at once is scheduled and runnable now; a filtered-out step is over. */
function jobTimes(build: Pick<NewBuild, 'createdAt'>, j: PlannedJob) {
  return {
    created_at: build.createdAt,
    scheduled_at: j.state === 'scheduled' ? build.createdAt : null,
    runnable_at: j.state === 'scheduled' ? build.createdAt : null,
    finished_at: j.state === 'broken' ? build.createdAt : null,
  };
}

/** The single row of an UPDATE ... RETURNING, whichever driver answered. */
function returned(result: unknown): Record<string, unknown> {
  const rows = (Array.isArray(result) ? result : (result as { rows: unknown[] }).rows) as Record<string, unknown>[];
  return rows[0]!;
}

/** Job states that are not final: what a cancel or skip moves along. */
export const UNFINISHED_JOB_STATES = ['pending', 'waiting', 'blocked', 'unblocked', 'limiting', 'limited', 'scheduled', 'assigned', 'accepted'];
/** Job states in which an agent has the job in hand: a cancel has to reach the agent. */
const ON_AGENT_JOB_STATES = ['accepted', 'running'];

/**
 * Cancels the builds' unfinished jobs: those no agent has accepted end `canceled` at once (an
 * agent assigned one is freed of it); those an agent accepted or runs become `canceling`, for
 * the agent to stop and finish. Returns the builds that still have such jobs (a job already
 * `timing_out` counts: its agent is stopping it).
 */
async function cancelJobs(trx: Knex.Transaction, buildIds: string[], at: Date): Promise<string[]> {
  const assigned = trx('jobs').whereIn('build_id', buildIds).where({ state: 'assigned' }).select('id');
  await trx('agents').whereIn('job_id', assigned).update({ job_id: null });
  const stopNow = UNFINISHED_JOB_STATES.filter((s) => !ON_AGENT_JOB_STATES.includes(s));
  await trx('jobs').whereIn('build_id', buildIds).whereIn('state', stopNow).update({ state: 'canceled', finished_at: at });
  await trx('jobs').whereIn('build_id', buildIds).whereIn('state', ON_AGENT_JOB_STATES).update({ state: 'canceling' });
  const busy = await trx('jobs').whereIn('build_id', buildIds).whereIn('state', ['canceling', 'timing_out']).distinct('build_id');
  return busy.map((r) => r.build_id as string);
}
