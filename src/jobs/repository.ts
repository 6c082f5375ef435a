/**
 * Jobs as agents run them: finding work, the claim that gives a job to exactly one agent, the
 * moves of a held job (accept, start, finish) and its log chunks. Every move is one
 * `UPDATE ... WHERE state = <expected>`: of two racing writers only one changes the row, on
 * SQLite and Postgres alike, with no lock held across round trips.
 */
import type { Knex } from 'knex';
import { jobFromRow, toJobRow, type BuildState, type Job, type PullRequest } from '../builds/repository';
import type { PlannedJob } from '../builds/jobs';
import { parseJson, toBool, toDateOrNull } from '../db/values';
import { countHeaderLines, unixNanos } from './log-headers';
import { advance } from './state';
import { triggerJobStateFor, type TriggerLauncher, type TriggeringBuild } from './triggers';
import type { User } from '../core/identity';

/** A job with what running it needs to know of its build, pipeline and organization. */
export interface JobContext {
  job: Job;
  organizationId: string;
  orgSlug: string;
  pipelineSlug: string;
  repository: string;
  providerId: string;
  build: {
    id: string;
    number: number;
    branch: string;
    commit: string;
    message: string | null;
    tag: string | null;
    pullRequest: PullRequest | null;
    creator: { name: string; email: string } | null;
  };
}

/** How many dispatch classes one candidates query reads at most. */
const DISPATCH_CLASSES_PER_QUERY = 100;

/** The rows of a raw query, as each driver returns them. */
function rowsOf(result: unknown): Record<string, unknown>[] {
  return Array.isArray(result) ? (result as Record<string, unknown>[]) : (result as { rows: Record<string, unknown>[] }).rows;
}

/** A stored piece of a job's log: its text, its size in bytes, when its section headers arrived. */
export interface LogChunk {
  content: string;
  size: number;
  headerTimes: number[];
}

/** States in which a job belongs to its agent. */
export const HELD_STATES = ['assigned', 'accepted', 'running', 'canceling', 'timing_out'];

/** What ends a job: its state, exit status and why its process was stopped. */
export interface JobEnd {
  state: string;
  exit_status: number;
  signal_reason: string | null;
  soft_failed: boolean;
  finished_at: Date;
}

/** How a job an agent took but never started ends when the agent is lost. */
export interface ExpiredJob {
  state: 'expired';
  expired_at: Date;
  finished_at: Date;
}

export class JobRepository {
  /**
   * `launch` runs trigger steps when the state machine makes them runnable (see ./triggers);
   * `clock` dates what the state machine decides (the service's one clock: tests move it).
   */
  constructor(
    private readonly db: Knex,
    private readonly launch?: TriggerLauncher,
    private readonly clock: () => Date = () => new Date(),
  ) {}

  private withContext() {
    return this.db('jobs as j')
      .join('builds as b', 'b.id', 'j.build_id')
      .join('pipelines as p', 'p.id', 'j.pipeline_id')
      .join('organizations as o', 'o.id', 'b.organization_id')
      .leftJoin('users as u', 'u.id', 'b.creator_id')
      .select(
        'j.*',
        'b.organization_id as ctx_org_id',
        'o.slug as ctx_org_slug',
        'p.slug as ctx_pipeline_slug',
        'p.repository as ctx_repository',
        'p.provider_id as ctx_provider_id',
        'b.pull_request as ctx_pull_request',
        'u.name as ctx_creator_name',
        'u.email as ctx_creator_email',
        'b.number as ctx_build_number',
        'b.branch as ctx_branch',
        'b.commit as ctx_commit',
        'b.message as ctx_message',
        'b.tag as ctx_tag',
      );
  }

  async findWithContext(jobId: string): Promise<JobContext | null> {
    const row = await this.withContext().where('j.id', jobId).first();
    return row ? contextFromRow(row) : null;
  }

  async findManyWithContext(jobIds: string[]): Promise<JobContext[]> {
    if (!jobIds.length) return [];
    return (await this.withContext().whereIn('j.id', jobIds)).map(contextFromRow);
  }

  /** The job an agent holds, if any. */
  async heldBy(agentId: string): Promise<JobContext | null> {
    const row = await this.heldByQuery(agentId).query.first();
    return row ? contextFromRow(row) : null;
  }

  /*
   * The queries of every agent poll and every sweep, wrapped in objects (a query builder is
   * thenable) so test/jobs/sweep-plans.test.ts checks the plans of these very queries.
   */

  heldByQuery(agentId: string) {
    return { query: this.withContext().where('j.agent_id', agentId).whereIn('j.state', HELD_STATES) };
  }

  silentAgentJobsQuery(cutoff: Date, limit: number) {
    return {
      query: this.db('jobs as j')
        .join('agents as a', 'a.id', 'j.agent_id')
        .whereIn('j.state', HELD_STATES)
        .whereIn('a.connection_state', ['lost', 'disconnected'])
        .where('a.last_heartbeat_at', '<', cutoff)
        .limit(limit)
        .select('j.*'),
    };
  }

  timedRunningQuery(limit: number) {
    return {
      query: this.db('jobs')
        .where({ state: 'running' })
        .whereNotNull('timeout_in_minutes')
        .orderBy('started_at')
        .limit(limit)
        .select('id', 'started_at', 'timeout_in_minutes'),
    };
  }

  /*
   * Dispatch (src/db/migrations/20261125110000_job_dispatch.ts): a poll lists the organization's
   * dispatch classes (jobs with equal agent_query_rules) that have scheduled command jobs, keeps
   * the classes its agent's tags satisfy, and reads the first jobs of those classes only, by
   * priority then age. Both read the partial index jobs_dispatch_index and nothing else, so
   * what other queues hold costs a poll one index probe per class, never a row per job.
   */

  /**
   * Each class once, with the rules of one of its jobs: a skip scan (a recursive query that
   * jumps from one key to the next in the index), as neither store has one built in.
   */
  dispatchClassesQuery(organizationId: string) {
    const scheduled = `organization_id = ? and state = 'scheduled' and type = 'script' and dispatch_key is not null`;
    return {
      query: this.db.raw(
        `with recursive k(key) as (
           select (select dispatch_key from jobs where ${scheduled} order by dispatch_key limit 1)
           union all
           select (select dispatch_key from jobs where ${scheduled} and dispatch_key > k.key order by dispatch_key limit 1) from k where k.key is not null
         )
         select k.key as key, (select agent_query_rules from jobs where ${scheduled} and dispatch_key = k.key limit 1) as rules from k where k.key is not null`,
        [organizationId, organizationId, organizationId],
      ),
    };
  }

  /** The organization's dispatch classes with scheduled command jobs: key and rules. */
  async dispatchClasses(organizationId: string): Promise<{ key: string; agentQueryRules: string[] }[]> {
    const rows = rowsOf(await this.dispatchClassesQuery(organizationId).query);
    // A class whose last job was claimed between the two reads has no rules: nothing to offer.
    return rows.filter((r) => r.rules != null).map((r) => ({ key: r.key as string, agentQueryRules: JSON.parse(r.rules as string) as string[] }));
  }

  /**
   * The first `limit` scheduled command jobs of the classes `keys` in dispatch order (higher
   * priority first, then the oldest, then build order): each class's own first `limit` read
   * from the index in that order, then merged.
   */
  dispatchCandidatesQuery(organizationId: string, keys: string[], limit: number) {
    const order = 'order by priority desc, created_at, position';
    const one = `select * from (select id, priority, created_at, position from jobs where organization_id = ? and dispatch_key = ? and state = 'scheduled' and type = 'script' ${order} limit ?) as c`;
    const sql = keys.map((_, i) => one.replace(/as c$/, `as c${i}`)).join(' union all ');
    return { query: this.db.raw(`${sql} ${order} limit ?`, [...keys.flatMap((key) => [organizationId, key, limit]), limit]) };
  }

  /** Ids of the first `limit` jobs of the classes `keys`, in dispatch order. */
  async dispatchCandidates(organizationId: string, keys: string[], limit: number): Promise<string[]> {
    const ids: { id: string; priority: number; createdAt: number; position: number }[] = [];
    // SQLite allows at most 500 terms in one compound select.
    for (let i = 0; i < keys.length; i += DISPATCH_CLASSES_PER_QUERY) {
      const rows = rowsOf(await this.dispatchCandidatesQuery(organizationId, keys.slice(i, i + DISPATCH_CLASSES_PER_QUERY), limit).query);
      for (const r of rows)
        ids.push({ id: r.id as string, priority: Number(r.priority), createdAt: toDateOrNull(r.created_at)!.getTime(), position: Number(r.position) });
    }
    ids.sort((a, b) => b.priority - a.priority || a.createdAt - b.createdAt || a.position - b.position);
    return ids.slice(0, limit).map((r) => r.id);
  }

  /**
   * Gives a scheduled job to an agent. The guarded UPDATE is the claim: when agents race for
   * one job, exactly one sees a changed row. False when another agent got there first.
   */
  async claim(jobId: string, agentId: string): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const n = await trx('jobs').where({ id: jobId, state: 'scheduled' }).whereNull('agent_id').update({ state: 'assigned', agent_id: agentId });
      if (!n) return false;
      await trx('agents').where({ id: agentId }).update({ job_id: jobId });
      return true;
    });
  }

  /** Moves the agent's job from `from` to `to` with `fields`; false if it was not in `from`. */
  async move(jobId: string, agentId: string, from: string, to: string, fields: Record<string, unknown> = {}): Promise<boolean> {
    const n = await this.db('jobs')
      .where({ id: jobId, agent_id: agentId, state: from })
      .update({ state: to, ...fields });
    return n > 0;
  }

  /** Ends the agent's job, if it is still `from`, and frees the agent, together. */
  async finish(jobId: string, agentId: string, from: string, fields: JobEnd): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const n = await trx('jobs').where({ id: jobId, agent_id: agentId, state: from }).update(fields);
      if (!n) return false;
      await trx('agents').where({ id: agentId }).update({ job_id: null, last_job_finished_at: fields.finished_at });
      return true;
    });
  }

  /** An assigned job the agent never accepted goes back to be offered again. */
  async release(agentId: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx('jobs').where({ agent_id: agentId, state: 'assigned' }).update({ state: 'scheduled', agent_id: null });
      await trx('agents').where({ id: agentId }).update({ job_id: null });
    });
  }

  /**
   * Jobs still held by agents that are no longer connected (lost, or disconnected without
   * finishing them) and silent since `cutoff`: what the sweeper ends.
   */
  async heldBySilentAgents(cutoff: Date, limit: number): Promise<Job[]> {
    return (await this.silentAgentJobsQuery(cutoff, limit).query).map(jobFromRow);
  }

  /** Running jobs with a timeout: what the sweeper checks for jobs that ran too long. */
  async runningWithTimeout(limit: number): Promise<{ id: string; startedAt: Date | null; timeoutInMinutes: number }[]> {
    const rows = await this.timedRunningQuery(limit).query;
    return rows.map((r: Record<string, unknown>) => ({
      id: r.id as string,
      startedAt: toDateOrNull(r.started_at),
      timeoutInMinutes: Number(r.timeout_in_minutes),
    }));
  }

  /** A running job goes `timing_out`, for its agent to stop; false if it was no longer running. */
  async timeOut(jobId: string): Promise<boolean> {
    return (await this.db('jobs').where({ id: jobId, state: 'running' }).update({ state: 'timing_out' })) > 0;
  }

  /** Scheduled jobs no agent took, scheduled before `cutoff`, with their builds. */
  async scheduledBefore(cutoff: Date, limit: number): Promise<{ id: string; buildId: string }[]> {
    const rows = await this.db('jobs')
      .where({ state: 'scheduled' })
      .where('scheduled_at', '<', cutoff)
      .orderBy('scheduled_at')
      .limit(limit)
      .select('id', 'build_id');
    return rows.map((r) => ({ id: r.id as string, buildId: r.build_id as string }));
  }

  /** Expires the build's jobs among `jobIds` that are still scheduled, then runs its state machine. */
  async expire(buildId: string, jobIds: string[], at: Date): Promise<number> {
    let n = 0;
    await this.advanceAt(buildId, at, {
      before: async (trx) => {
        n = await trx('jobs')
          .whereIn('id', jobIds)
          .where({ build_id: buildId, state: 'scheduled' })
          .whereNull('agent_id')
          .update({ state: 'expired', expired_at: at, finished_at: at });
      },
    });
    return n;
  }

  /**
   * The job of an agent that went silent, if it still holds it in `job.state`, ends as `end`
   * says (failed, canceled or timed out if it had started; expired if not), with `line` added
   * to its log. Then the build's state machine runs.
   */
  async endSilentAgentJob(job: Job, agentId: string, end: JobEnd | ExpiredJob, line: string): Promise<boolean> {
    let moved = false;
    await this.advanceAt(job.buildId, end.finished_at, {
      before: async (trx) => {
        moved = (await trx('jobs').where({ id: job.id, agent_id: agentId, state: job.state }).update(end)) > 0;
        if (!moved) return;
        const last = await trx('job_log_chunks').where({ job_id: job.id }).max('sequence as sequence').sum('size as size').first();
        const content = `${line}\n`;
        await trx('job_log_chunks').insert({
          job_id: job.id,
          sequence: Number(last?.sequence ?? 0) + 1,
          offset: Number(last?.size ?? 0),
          size: Buffer.byteLength(content),
          content,
          created_at: end.finished_at,
        });
        await trx('agents').where({ id: agentId, job_id: job.id }).update({ job_id: null });
      },
    });
    return moved;
  }

  /** Runs the build's state machine after a job event. */
  advance(buildId: string, opts?: BuildAdvance): Promise<void> {
    return this.advanceAt(buildId, this.clock(), opts);
  }

  /** The state machine at `at`, always able to launch the trigger steps it makes runnable. */
  private advanceAt(buildId: string, at: Date, opts: BuildAdvance = {}): Promise<void> {
    return advanceBuild(this.db, buildId, at, { ...opts, launch: this.launch });
  }

  /**
   * Unblocks a block step and records who did it (and the block step's fields, which become
   * build meta-data), then lets the build go on. False if the job was no longer blocked.
   */
  async unblock(buildId: string, jobId: string, by: User, fields: Record<string, string>): Promise<boolean> {
    let moved = false;
    const at = this.clock();
    await this.advanceAt(buildId, at, {
      before: async (trx) => {
        const unblockedBy = JSON.stringify({ id: by.id, name: by.name, email: by.email, created_at: by.createdAt.toISOString() });
        moved =
          (await trx('jobs')
            .where({ id: jobId, state: 'blocked' })
            .update({ state: 'unblocked', unblocked_by: unblockedBy, unblocked_at: at, finished_at: at })) > 0;
        if (!moved || !Object.keys(fields).length) return;
        for (const [key, value] of Object.entries(fields)) {
          await trx('build_meta_data')
            .insert({ build_id: buildId, key, value, value_key: value.slice(0, 255) })
            .onConflict(['build_id', 'key'])
            .merge();
        }
        const row = await trx('builds').where({ id: buildId }).first('meta_data');
        await trx('builds')
          .where({ id: buildId })
          .update({ meta_data: JSON.stringify({ ...JSON.parse(row.meta_data as string), ...fields }) });
      },
    });
    return moved;
  }

  /**
   * Adds jobs uploaded by a running job to its build, under the build's lock: right after the
   * uploader's step and everything that step (and, in turn, what it added) uploaded before, in
   * order; the jobs after them move down. They start `waiting` (a broken one, over) and the
   * state machine schedules what may run at once, at `at`. An upload whose `uploadId` the build
   * has already seen adds nothing and answers the jobs it added then. Answers the jobs' ids, or
   * null when the build would have more than `maxJobs` jobs.
   */
  async insertUploaded(buildId: string, uploader: Job, planned: PlannedJob[], uploadId: string | null, at: Date, maxJobs: number): Promise<string[] | null> {
    let ids: string[] | null = null;
    await this.advanceAt(buildId, at, {
      before: async (trx) => {
        const rows = await trx('jobs')
          .where({ build_id: buildId })
          .orderBy('position')
          .select('id', 'step_id', 'uploaded_by_step_id', 'upload_id', 'position', 'pipeline_id', 'organization_id');
        const seen = uploadId ? rows.filter((r) => r.upload_id === uploadId) : [];
        if (seen.length) {
          ids = seen.map((r) => r.id as string);
          return;
        }
        if (rows.length + planned.length > maxJobs) return;
        const family = new Set([uploader.stepId]);
        for (let grew = true; grew;) {
          grew = false;
          for (const r of rows) {
            if (r.uploaded_by_step_id && family.has(r.uploaded_by_step_id as string) && !family.has(r.step_id as string)) {
              family.add(r.step_id as string);
              grew = true;
            }
          }
        }
        const anchor = Math.max(...rows.filter((r) => family.has(r.step_id as string)).map((r) => Number(r.position)));
        await trx('jobs').where({ build_id: buildId }).where('position', '>', anchor).increment('position', planned.length);
        const build = { id: buildId, pipelineId: rows[0]!.pipeline_id as string, organizationId: rows[0]!.organization_id as string, createdAt: at };
        const jobRows = planned.map((j, i) => ({
          ...toJobRow(build, { ...j, position: anchor + 1 + i, state: j.state === 'broken' ? 'broken' : 'waiting' }),
          uploaded_by_step_id: uploader.stepId,
          upload_id: uploadId,
        }));
        // Chunked: SQLite allows a limited number of bound variables per statement.
        for (let i = 0; i < jobRows.length; i += 20) await trx('jobs').insert(jobRows.slice(i, i + 20));
        ids = planned.map((j) => j.id);
      },
    });
    return ids;
  }

  /** Jobs by id, in build order. */
  async findMany(ids: string[]): Promise<Job[]> {
    if (!ids.length) return [];
    return (await this.db('jobs').whereIn('id', ids).orderBy('position')).map(jobFromRow);
  }

  /** Removes the job's log, and with it what counted against its cap. */
  async deleteLog(jobId: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      await trx('job_log_chunks').where({ job_id: jobId }).delete();
      await trx('jobs').where({ id: jobId }).update({ log_size: 0 });
    });
  }

  /**
   * A new job in the place of a finished one, scheduled at once, and the old one marked retried
   * (hidden from lists unless asked for); a canceled build runs again. The guarded UPDATE makes
   * a job retried once however many ask at once: false for the ones that lost.
   */
  async retry(buildId: string, jobId: string, newId: string, fromStates: string[], type: 'manual' | 'automatic' = 'manual'): Promise<boolean> {
    let done = false;
    const at = this.clock();
    await this.advanceAt(buildId, at, {
      before: async (trx) => {
        if (!(await trx('jobs').where({ id: jobId, retried: false }).whereIn('state', fromStates).update({ retried: true, retried_in_job_id: newId }))) return;
        const row = (await trx('jobs').where({ id: jobId }).first()) as Record<string, unknown>;
        await trx('jobs').insert({
          ...row,
          id: newId,
          state: 'scheduled',
          agent_id: null,
          exit_status: null,
          signal_reason: null,
          expired_at: null,
          soft_failed: false,
          retried: false,
          retried_in_job_id: null,
          retries_count: Number(row.retries_count ?? 0) + 1,
          log_size: 0,
          retry_type: type,
          retry_source: JSON.stringify({ job_id: jobId, retry_type: type }),
          created_at: at,
          scheduled_at: at,
          runnable_at: at,
          started_at: null,
          finished_at: null,
        });
        await trx('builds').where({ id: buildId, state: 'canceled' }).update({ state: 'running', finished_at: null });
        done = true;
      },
    });
    return done;
  }

  /**
   * Stores a chunk; one already stored under its sequence is left as it is (a retried send).
   * Each section header that starts in it is recorded at `at`: the chunk starts a line at the
   * log's start or when the chunk before it (by sequence) ended with a newline. False, and
   * nothing stored, when the chunk would take the job's log (`jobs.log_size`) past `limitBytes`:
   * the guarded UPDATE counts it only if it fits, in the transaction that stores it.
   */
  async appendChunk(jobId: string, chunk: { sequence: number; offset: number; content: string }, at: Date, limitBytes: number): Promise<boolean> {
    let startsLine = chunk.offset === 0;
    if (!startsLine) {
      const before = await this.db('job_log_chunks')
        .where({ job_id: jobId, sequence: chunk.sequence - 1 })
        .first(this.db.raw('substr(content, length(content), 1) as last'));
      startsLine = before?.last === '\n';
    }
    const headers = countHeaderLines(chunk.content, startsLine);
    const size = Buffer.byteLength(chunk.content);
    return this.db
      .transaction(async (trx) => {
        const stored = await trx('job_log_chunks')
          .insert({
            job_id: jobId,
            sequence: chunk.sequence,
            offset: chunk.offset,
            size,
            content: chunk.content,
            header_times: headers ? JSON.stringify(Array<number>(headers).fill(unixNanos(at))) : null,
            created_at: at,
          })
          .onConflict(['job_id', 'sequence'])
          .ignore()
          .returning('sequence');
        if (!stored.length) return true;
        if (
          await trx('jobs')
            .where({ id: jobId })
            .where('log_size', '<=', limitBytes - size)
            .increment('log_size', size)
        )
          return true;
        throw new LogFullError();
      })
      .catch((e: unknown) => {
        if (e instanceof LogFullError) return false;
        throw e;
      });
  }

  /**
   * The job's log chunks in order, `LOG_PAGE_CHUNKS` at a time, each page read only when the
   * one before was used: a reader holds a few chunks, never the whole log.
   */
  async *logPages(jobId: string): AsyncGenerator<LogChunk[]> {
    for (let after = 0; ;) {
      const rows = await this.db('job_log_chunks')
        .where({ job_id: jobId })
        .where('sequence', '>', after)
        .orderBy('sequence')
        .limit(LOG_PAGE_CHUNKS)
        .select('sequence', 'content', 'size', 'header_times');
      if (!rows.length) return;
      yield rows.map((r) => ({ content: r.content as string, size: Number(r.size), headerTimes: parseJson<number[]>(r.header_times, []) }));
      if (rows.length < LOG_PAGE_CHUNKS) return;
      after = Number(rows[rows.length - 1]!.sequence);
    }
  }
}

/** A chunk would take the log past its cap: rolls back the chunk's insert. */
class LogFullError extends Error {}

/**
 * How many log chunks a reader reads at once (each at most the body limit, 1 MiB by default):
 * SQLite reads on the event loop, a few milliseconds per MiB.
 */
const LOG_PAGE_CHUNKS = 2;

export interface BuildAdvance {
  /** Runs inside the transaction after the build's row is locked, before the state machine. */
  before?: (trx: Knex.Transaction) => Promise<void>;
  /** Runs trigger jobs that become runnable; without it they stay scheduled. */
  launch?: TriggerLauncher;
}

/** Build states after which a synchronous trigger job waiting on the build ends. */
const TRIGGERED_BUILD_ENDS = ['passed', 'failed', 'canceled', 'skipped', 'not_run'];

/**
 * Runs the build's state machine (src/jobs/state.ts) and stores what it decided. The first
 * statement locks the build's row (Postgres; SQLite has one writer), so job events of one build
 * are applied one after another and each sees the others' results. In the same transaction,
 * trigger jobs that became runnable are launched (creating builds, which run their own state
 * machines) and the machine runs again; and a triggered build that ended ends the synchronous
 * trigger job that waits on it, running the parent build's machine too (child, then parent:
 * rows are always locked in that order).
 */
export async function advanceBuild(db: Knex, buildId: string, now: Date, opts: BuildAdvance = {}): Promise<void> {
  await db.transaction(async (trx) => {
    if (!(await lockBuild(trx, buildId))) return;
    await opts.before?.(trx);
    await advanceLocked(trx, buildId, now, opts.launch);
  });
}

async function lockBuild(trx: Knex.Transaction, buildId: string): Promise<boolean> {
  return (
    (await trx('builds')
      .where({ id: buildId })
      .update({ state: trx.ref('state') })) > 0
  );
}

async function advanceLocked(trx: Knex.Transaction, buildId: string, now: Date, launch: TriggerLauncher | undefined): Promise<void> {
  for (;;) {
    const b = await trx('builds')
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
        'creator_id',
        'trigger_depth',
        'triggered_from_job_id',
      );
    const jobs = (await trx('jobs').where({ build_id: buildId, retried: false }).orderBy('position')).map(jobFromRow);
    const build = {
      state: b.state as BuildState,
      blocked: toBool(b.blocked),
      startedAt: toDateOrNull(b.started_at),
      failingAt: toDateOrNull(b.failing_at),
      finishedAt: toDateOrNull(b.finished_at),
    };
    const next = advance(build, jobs, now);
    for (const m of next.jobs)
      await trx('jobs')
        .where({ id: m.id, state: m.from })
        .update({ state: m.to, ...m.fields });
    if (next.build) {
      const n = next.build;
      await trx('builds')
        .where({ id: buildId })
        .update({ state: n.state, blocked: n.blocked, started_at: n.startedAt, failing_at: n.failingAt, finished_at: n.finishedAt });
    }
    const states = new Map(next.jobs.map((m) => [m.id, m.to]));
    const runnable = launch ? jobs.filter((j) => j.type === 'trigger' && (states.get(j.id) ?? j.state) === 'scheduled') : [];
    if (runnable.length) {
      // The slug as it is now, only read when a trigger runs: the triggered build keeps it (`triggered_from`).
      const pipeline = await trx('pipelines').where({ id: b.pipeline_id }).first('slug');
      const parent = {
        id: buildId,
        number: Number(b.number),
        pipelineSlug: pipeline.slug as string,
        organizationId: b.organization_id as string,
        message: (b.message as string | null) ?? null,
        creatorId: (b.creator_id as string | null) ?? null,
        triggerDepth: Number(b.trigger_depth ?? 0),
      };
      for (const job of runnable) await launchTrigger(trx, job, parent, now, launch!);
      continue; // the trigger jobs moved: the machine runs again
    }
    const state = next.build?.state ?? build.state;
    const blocked = next.build?.blocked ?? build.blocked;
    if (b.triggered_from_job_id && TRIGGERED_BUILD_ENDS.includes(state) && !(state === 'passed' && blocked)) {
      await finishTrigger(trx, b.triggered_from_job_id as string, state, now, launch);
    }
    return;
  }
}

/** Starts a trigger job: it runs (async: passes) with the build it created, or fails with the reason as its log. */
async function launchTrigger(trx: Knex.Transaction, job: Job, parent: TriggeringBuild, now: Date, launch: TriggerLauncher): Promise<void> {
  if (!(await trx('jobs').where({ id: job.id, state: 'scheduled' }).update({ state: 'running', started_at: now }))) return;
  const outcome = await launch(trx, job, parent);
  if ('failure' in outcome) {
    await trx('jobs').where({ id: job.id }).update({ state: 'failed', finished_at: now });
    const content = `${outcome.failure}\n`;
    await trx('job_log_chunks').insert({ job_id: job.id, sequence: 1, offset: 0, size: Buffer.byteLength(content), content, created_at: now });
    return;
  }
  const triggered = JSON.stringify({ id: outcome.build.id, number: outcome.build.number, pipeline_slug: outcome.build.pipelineSlug });
  const async = job.step.type === 'trigger' && job.step.trigger_async;
  await trx('jobs')
    .where({ id: job.id })
    .update({ triggered_build: triggered, ...(async ? { state: 'passed', finished_at: now } : {}) });
  // The new build's own machine: its trigger steps run, and if it is over at once (nothing to
  // run) it ends this job already.
  await advanceLocked(trx, outcome.build.id, now, launch);
}

/** A triggered build ended: the synchronous trigger job waiting on it takes its result, and its build goes on. */
async function finishTrigger(trx: Knex.Transaction, jobId: string, buildState: string, now: Date, launch: TriggerLauncher | undefined): Promise<void> {
  const job = await trx('jobs').where({ id: jobId, state: 'running', type: 'trigger' }).first('build_id');
  if (!job) return; // async, already ended, or retried away
  await trx('jobs')
    .where({ id: jobId, state: 'running' })
    .update({ state: triggerJobStateFor(buildState), finished_at: now });
  if (await lockBuild(trx, job.build_id as string)) await advanceLocked(trx, job.build_id as string, now, launch);
}

function contextFromRow(r: Record<string, unknown>): JobContext {
  return {
    job: jobFromRow(r),
    organizationId: r.ctx_org_id as string,
    orgSlug: r.ctx_org_slug as string,
    pipelineSlug: r.ctx_pipeline_slug as string,
    repository: r.ctx_repository as string,
    providerId: r.ctx_provider_id as string,
    build: {
      id: r.build_id as string,
      number: Number(r.ctx_build_number),
      branch: r.ctx_branch as string,
      commit: r.ctx_commit as string,
      message: (r.ctx_message as string | null) ?? null,
      tag: (r.ctx_tag as string | null) ?? null,
      pullRequest: parseJson<PullRequest | null>(r.ctx_pull_request, null),
      creator: r.ctx_creator_name ? { name: r.ctx_creator_name as string, email: r.ctx_creator_email as string } : null,
    },
  };
}
