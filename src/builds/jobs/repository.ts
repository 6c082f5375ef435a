/**
 * Jobs as agents run them and builds progress through them: finding work (dispatch), a job with
 * its build's context, and every move of a job's row. Every move is one
 * `UPDATE ... WHERE state = <expected>`: of two racing writers only one changes the row, on
 * SQLite and Postgres alike, with no lock held across round trips.
 *
 * Queries only, on the `jobs` table: a move that goes with other rows (the agent holding the
 * job, the build's state machine) is a transaction src/builds/progress/ opens, running these on
 * it (withTransaction). The job's log is ./log-repository.ts.
 */
import type { Knex } from 'knex';
import type { PlannedJob } from './plan';
import type { JobState, NewBuild } from '../model';
import { toDateOrNull } from '../../db/values';
import type { Step } from '../../pipelines/configuration';
import type { JobsRow, PipelinesRow } from '../../db/tables';
import { isPostgres, isUniqueViolation } from '../../db/knex';
import { recordNamedEvent } from '../../db/named-events';
import { isUuid } from '../../core/uuid';
import type { User } from '../../core/identity';
import type { ExpiredJob, Job, JobContext, JobEnd } from './model';
import { automaticRetriesColumn, contextFromRow, jobFromRow, stepFromColumn, toJobRow, userSnapshotColumn, type JobContextRow } from './rows';
import type { JobMove } from './state';
import { countedRetry } from './retry';
import { HELD_JOB_STATES, JOB_STATES, jobTransition, UNFINISHED_BUILD_STATES, type JobEvent } from '../states';
import { QUEUED_CONCURRENCY_STATES, type QueuedJob } from './concurrency';
import { jsonColumn, oneOf, rawRows, required } from '../../db/row-types';
import { isStringArray } from '../../core/guards';

/** How many dispatch classes one candidates query reads at most. */
const DISPATCH_CLASSES_PER_QUERY = 100;

/**
 * What a job's environment (jobEnv) needs of its context beyond the joins, as two subqueries of
 * the context's own statement, each reading indexes only:
 * - `ctx_unblocked_by`: the build's latest unblock up to when the job became runnable (any so far
 *   while it is not), from jobs_unblocked_index, which holds unblocked jobs only;
 * - `ctx_teams`: the non-private teams of the build's creator, of the pipeline and of that
 *   unblocker (team_members by user_id, pipeline_teams by its key), each slug behind a letter
 *   saying whose team it is (`c`, `p`, `u`: rows.ts, teamsOf), joined by ":" in that order
 *   (`string_agg ... order by`: Postgres, and SQLite from 3.44). One subquery rather than three:
 *   Postgres plans every subquery on every read, and three added about 1.7 times as much to a
 *   context read as this one does (timed in a loop).
 * Its `cross join` makes SQLite read the few memberships first and then their teams by id,
 * rather than every team of the organization (Postgres plans it as any join). Built once per
 * kind of database: the unblocker's id is in the snapshot's JSON (a uuid column on Postgres).
 */
const CONTEXT_ENVIRONMENT_SQL = {
  sqlite: contextEnvironmentSql("json_extract(m.unblocked_by, '$.id')"),
  // A snapshot's id that is no uuid (never written so) reads as no unblocker rather than failing every read of the build's jobs.
  postgres: contextEnvironmentSql(
    "(case when (m.unblocked_by::json ->> 'id') ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then (m.unblocked_by::json ->> 'id')::uuid end)",
  ),
};

function contextEnvironmentSql(unblockerIdOfSnapshot: string): string {
  const latestUnblock = (column: string) =>
    `(select ${column} from jobs as m where m.build_id = j.build_id and m.unblocked_at is not null` +
    ` and (j.runnable_at is null or m.unblocked_at <= j.runnable_at) order by m.unblocked_at desc, m.position desc limit 1)`;
  const teams =
    `(select string_agg(k.whose || t.slug, ':' order by k.whose, t.slug) from (` +
    `select 'c' as whose, x.team_id from team_members as x where x.user_id = b.creator_id` +
    ` union all select 'p', x.team_id from pipeline_teams as x where x.pipeline_id = j.pipeline_id` +
    ` union all select 'u', x.team_id from team_members as x where x.user_id = ${latestUnblock(unblockerIdOfSnapshot)}` +
    `) as k cross join teams as t where t.id = k.team_id and t.organization_id = b.organization_id and t.privacy = 'visible')`;
  return `${latestUnblock('m.unblocked_by')} as ctx_unblocked_by, ${teams} as ctx_teams`;
}

/** What an upload needs to know of the jobs already in the build to place its own. */
export interface PlacedJob {
  id: string;
  stepId: string;
  uploadedByStepId: string | null;
  uploadId: string | null;
  position: number;
  pipelineId: string;
  organizationId: string;
}

export class JobRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): JobRepository {
    return new JobRepository(trx);
  }

  /**
   * A job with its build's context, in one query: the joins, and what the job's environment needs
   * beyond them as subqueries of the same statement (CONTEXT_ENVIRONMENT_SQL).
   */
  private withContext() {
    return this.db('jobs as j')
      .join('builds as b', 'b.id', 'j.build_id')
      .join('pipelines as p', 'p.id', 'j.pipeline_id')
      .join('organizations as o', 'o.id', 'b.organization_id')
      .leftJoin('users as u', 'u.id', 'b.creator_id')
      .leftJoin('clusters as c', 'c.id', 'j.cluster_id')
      .select<JobContextRow[]>(
        'j.*',
        'b.organization_id as ctx_org_id',
        'o.slug as ctx_org_slug',
        'p.slug as ctx_pipeline_slug',
        'p.name as ctx_pipeline_name',
        'p.default_branch as ctx_default_branch',
        'p.repository as ctx_repository',
        'p.clone_mirror_url as ctx_clone_mirror_url',
        'p.provider_id as ctx_provider_id',
        'b.pull_request as ctx_pull_request',
        'b.author as ctx_author',
        'b.clean_checkout as ctx_clean_checkout',
        'u.name as ctx_creator_name',
        'u.email as ctx_creator_email',
        'b.number as ctx_build_number',
        'b.branch as ctx_branch',
        'b.commit as ctx_commit',
        'b.message as ctx_message',
        'b.tag as ctx_tag',
        'b.source as ctx_source',
        'b.triggered_from as ctx_triggered_from',
        'b.rebuilt_from_id as ctx_rebuilt_from_id',
        'b.rebuilt_from_number as ctx_rebuilt_from_number',
        'b.webhook_event as ctx_webhook_event',
        'c.name as ctx_cluster_name',
        this.db.raw(CONTEXT_ENVIRONMENT_SQL[isPostgres(this.db) ? 'postgres' : 'sqlite']),
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

  /** The jobs an agent ran or runs, latest started first (its page's history; `agent_id` is indexed). */
  async recentByAgent(agentId: string, limit: number): Promise<JobContext[]> {
    const rows = await this.withContext()
      .where('j.agent_id', agentId)
      .orderBy([
        { column: 'j.started_at', order: 'desc', nulls: 'first' },
        { column: 'j.id', order: 'desc' },
      ])
      .limit(limit);
    return rows.map(contextFromRow);
  }

  /*
   * The queries of every agent poll and every sweep, wrapped in objects (a query builder is
   * thenable) so test/jobs/sweep-plans.test.ts checks the plans of these very queries.
   */

  heldByQuery(agentId: string) {
    return { query: this.withContext().where('j.agent_id', agentId).whereIn('j.state', HELD_JOB_STATES) };
  }

  silentAgentJobsQuery(cutoff: Date, limit: number) {
    return {
      query: this.db('jobs as j')
        .join('agents as a', 'a.id', 'j.agent_id')
        .whereIn('j.state', HELD_JOB_STATES)
        .whereIn('a.connection_state', ['lost', 'disconnected'])
        .where('a.last_heartbeat_at', '<', cutoff)
        .limit(limit)
        .select<JobsRow[]>('j.*'),
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
         select k.key as key,
                (select agent_query_rules from jobs where ${scheduled} and dispatch_key = k.key limit 1) as rules,
                (select cluster_id from jobs where ${scheduled} and dispatch_key = k.key limit 1) as cluster_id
         from k where k.key is not null`,
        [organizationId, organizationId, organizationId, organizationId],
      ),
    };
  }

  /** The organization's dispatch classes with scheduled command jobs: key, rules and cluster (null: none). */
  async dispatchClasses(organizationId: string): Promise<{ key: string; agentQueryRules: string[]; clusterId: string | null }[]> {
    const rows = rawRows<{ key: string; rules: JobsRow['agent_query_rules'] | null; cluster_id: JobsRow['cluster_id'] }>(
      await this.dispatchClassesQuery(organizationId).query,
    );
    // A class whose last job was claimed between the two reads has no rules: nothing to offer.
    return rows.flatMap((r) =>
      r.rules == null
        ? []
        : [{ key: r.key, agentQueryRules: jsonColumn(r.rules, [], isStringArray, 'jobs.agent_query_rules'), clusterId: r.cluster_id ?? null }],
    );
  }

  /**
   * The first `limit` scheduled command jobs of the classes `keys` in dispatch order (the docs'
   * job priority page: higher priority first, then the oldest `dispatch_at`, an uploaded job's
   * being its uploader's, then build order): each class's own first `limit` read from the index
   * in that order, then merged.
   */
  dispatchCandidatesQuery(organizationId: string, keys: string[], limit: number) {
    const order = 'order by priority desc, dispatch_at, position';
    const one = `select * from (select id, dispatch_key, priority, dispatch_at, position from jobs where organization_id = ? and dispatch_key = ? and state = 'scheduled' and type = 'script' ${order} limit ?) as c`;
    const sql = keys.map((_, i) => one.replace(/as c$/, `as c${i}`)).join(' union all ');
    return { query: this.db.raw(`${sql} ${order} limit ?`, [...keys.flatMap((key) => [organizationId, key, limit]), limit]) };
  }

  /** The agent that ran the attempt each of these jobs retries, by the retry's id (jobs that retry none are left out). */
  async previousAgentsOf(jobIds: readonly string[]): Promise<Map<string, string>> {
    if (!jobIds.length) return new Map();
    const rows = await this.db('jobs').whereIn('retried_in_job_id', jobIds).whereNotNull('agent_id').select('retried_in_job_id', 'agent_id');
    return new Map(rows.flatMap((r) => (r.retried_in_job_id && r.agent_id ? [[r.retried_in_job_id, r.agent_id] as const] : [])));
  }

  /** The first `limit` jobs of the classes `keys`, in dispatch order: each job's id and its class. */
  async dispatchCandidates(organizationId: string, keys: string[], limit: number): Promise<{ id: string; key: string }[]> {
    const found: { id: string; key: string; priority: number; dispatchAt: number; position: number }[] = [];
    // SQLite allows at most 500 terms in one compound select.
    for (let i = 0; i < keys.length; i += DISPATCH_CLASSES_PER_QUERY) {
      const rows = rawRows<Pick<JobsRow, 'id' | 'priority' | 'dispatch_at' | 'position'> & { dispatch_key: string }>(
        await this.dispatchCandidatesQuery(organizationId, keys.slice(i, i + DISPATCH_CLASSES_PER_QUERY), limit).query,
      );
      for (const r of rows)
        found.push({
          id: r.id,
          key: r.dispatch_key,
          priority: Number(r.priority),
          dispatchAt: toDateOrNull(r.dispatch_at)?.getTime() ?? 0,
          position: Number(r.position),
        });
    }
    found.sort((a, b) => b.priority - a.priority || a.dispatchAt - b.dispatchAt || a.position - b.position);
    return found.slice(0, limit).map(({ id, key }) => ({ id, key }));
  }

  /** Gives a scheduled job no agent holds to an agent (`assign`): the claim, false when another agent got there first. */
  async assign(jobId: string, agentId: string): Promise<boolean> {
    const t = jobTransition('assign');
    return (await this.db('jobs').where({ id: jobId }).whereIn('state', t.from).whereNull('agent_id').update({ state: t.to, agent_id: agentId })) > 0;
  }

  /** Moves the agent's job by `event` (`accept`, `start`) with `fields`; false if it was not in a state the event moves from. */
  async move(jobId: string, agentId: string, event: 'accept' | 'start', fields: Record<string, unknown> = {}): Promise<boolean> {
    const t = jobTransition(event);
    const n = await this.db('jobs')
      .where({ id: jobId, agent_id: agentId })
      .whereIn('state', t.from)
      .update({ state: t.to, ...fields });
    return n > 0;
  }

  /**
   * Ends the agent's job by `t` (a finish, or `abandon`: see jobTransition, narrowed to the state
   * the caller read) as `fields` say; false if it was no longer in one of `t.from`.
   */
  async end(jobId: string, agentId: string, t: { from: readonly JobState[]; to: JobState }, fields: JobEnd | ExpiredJob): Promise<boolean> {
    return (
      (await this.db('jobs')
        .where({ id: jobId, agent_id: agentId })
        .whereIn('state', t.from)
        .update({ ...fields, state: t.to })) > 0
    );
  }

  /** The jobs of a build's step, named by its id or its `key`, in build order, retries last. */
  async ofStep(buildId: string, idOrKey: string): Promise<Job[]> {
    const rows = await this.db('jobs')
      .where({ build_id: buildId })
      .where((w) => {
        w.where('step_key', idOrKey);
        // step_id is a uuid column: Postgres refuses to compare it with any other text.
        if (isUuid(idOrKey)) w.orWhere('step_id', idOrKey.toLowerCase());
      })
      .orderBy([{ column: 'position' }, { column: 'created_at' }]);
    return rows.map(jobFromRow);
  }

  /**
   * Gives every job of the step a new label (`name`). With an `idempotencyUuid` (the agent's id of
   * the update), an update of the build already applied under that id changes nothing: false.
   */
  async renameStep(buildId: string, stepId: string, name: string, idempotencyUuid: string | null = null): Promise<boolean> {
    try {
      await this.db.transaction(async (trx) => {
        if (idempotencyUuid !== null) await trx('step_updates').insert({ build_id: buildId, idempotency_uuid: idempotencyUuid, step_id: stepId });
        await trx('jobs').where({ build_id: buildId, step_id: stepId }).update({ name });
      });
      return true;
    } catch (err) {
      if (idempotencyUuid !== null && isUniqueViolation(err)) return false;
      throw err;
    }
  }

  /** The agent's assigned job, one it never accepted, goes back to be offered again (`release`); false if it held none. */
  async unassign(agentId: string): Promise<boolean> {
    const t = jobTransition('release');
    return (await this.db('jobs').where({ agent_id: agentId }).whereIn('state', t.from).update({ state: t.to, agent_id: null })) > 0;
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
    return rows.map((r) => ({
      id: r.id,
      startedAt: toDateOrNull(r.started_at),
      timeoutInMinutes: Number(r.timeout_in_minutes),
    }));
  }

  /** A running job goes `timing_out` (`time_out`), for its agent to stop; false if it was no longer running. */
  async timeOut(jobId: string): Promise<boolean> {
    const t = jobTransition('time_out');
    return (await this.db('jobs').where({ id: jobId }).whereIn('state', t.from).update({ state: t.to })) > 0;
  }

  /**
   * Scheduled jobs no agent took, created before `cutoff`, with their builds: expiry counts from
   * a job's creation, not its scheduling (build_timeouts.md), so a job scheduled late behind a
   * wait is not given the whole expiry again. Read through the (state, created_at) index.
   */
  async scheduledCreatedBefore(cutoff: Date, limit: number): Promise<{ id: string; buildId: string }[]> {
    const rows = await this.db('jobs')
      .where({ state: 'scheduled' })
      .where('created_at', '<', cutoff)
      .orderBy('created_at')
      .limit(limit)
      .select('id', 'build_id');
    return rows.map((r) => ({ id: r.id, buildId: r.build_id }));
  }

  /** Expires the build's jobs among `jobIds` that are still scheduled with no agent; answers how many. */
  async expire(buildId: string, jobIds: string[], at: Date): Promise<number> {
    const t = jobTransition('expire');
    return this.db('jobs')
      .whereIn('id', jobIds)
      .where({ build_id: buildId })
      .whereIn('state', t.from)
      .whereNull('agent_id')
      .update({ state: t.to, expired_at: at, finished_at: at });
  }

  /** A blocked block step is unblocked by `by` at `at`; false if it was no longer blocked. */
  async unblock(jobId: string, by: User, at: Date): Promise<boolean> {
    const unblockedBy = userSnapshotColumn(by);
    const t = jobTransition('unblock');
    return (
      (await this.db('jobs')
        .where({ id: jobId })
        .whereIn('state', t.from)
        .update({ state: t.to, unblocked_by: unblockedBy, unblocked_at: at, finished_at: at })) > 0
    );
  }

  /** The `maximum_command_step_timeout` of the job's pipeline (null: none, or the job is gone). */
  async pipelineMaximumTimeout(jobId: string): Promise<number | null> {
    const row = await this.db('jobs as j')
      .join('builds as b', 'b.id', 'j.build_id')
      .join('pipelines as p', 'p.id', 'b.pipeline_id')
      .where('j.id', jobId)
      .first<Pick<PipelinesRow, 'maximum_timeout_in_minutes'> | undefined>('p.maximum_timeout_in_minutes');
    return row?.maximum_timeout_in_minutes ?? null;
  }

  /** A job's `timeout_in_minutes`, if it is in one of `inStates`; false if it was not (it finished). */
  async setTimeout(jobId: string, minutes: number, inStates: readonly JobState[]): Promise<boolean> {
    return (await this.db('jobs').where({ id: jobId }).whereIn('state', inStates).update({ timeout_in_minutes: minutes })) > 0;
  }

  /**
   * Records the exit status a job on an agent promised (`job promise-failure`) at `at`, unless it
   * promised one already; answers the status the job has promised (null: it is no longer on an agent).
   * The promise that is recorded is also an outbox event (job.promised_exit_status) with its
   * reason, in the same transaction: the outbox's triggers record state changes
   * (src/db/migrations/20261126090000_outbox.ts), and a promise changes none.
   */
  async promiseFailure(jobId: string, exitStatus: number, reason: string | null, at: Date, onAgent: readonly JobState[]): Promise<number | null> {
    const recorded = await this.db('jobs')
      .where({ id: jobId })
      .whereNull('promised_exit_status')
      .whereIn('state', onAgent)
      .update({ promised_exit_status: exitStatus, promised_exit_status_at: at });
    const job = await this.db('jobs as j')
      .join('builds as b', 'b.id', 'j.build_id')
      .where('j.id', jobId)
      .first('j.type', 'j.state', 'j.pipeline_id', 'j.build_id', 'j.promised_exit_status', 'b.organization_id');
    if (job && recorded > 0) {
      await recordNamedEvent(this.db, {
        kind: 'job',
        subjectId: jobId,
        subjectType: job.type,
        organizationId: job.organization_id,
        pipelineId: job.pipeline_id,
        buildId: job.build_id,
        state: job.state,
        event: 'job.promised_exit_status',
        detail: { reason },
        at,
      });
    }
    return job?.promised_exit_status ?? null;
  }

  /** A job's dispatch priority, if it is in one of `inStates`; false if it was not (it moved on). */
  async setPriority(jobId: string, priority: number, inStates: readonly JobState[]): Promise<boolean> {
    return (await this.db('jobs').where({ id: jobId }).whereIn('state', inStates).update({ priority })) > 0;
  }

  /**
   * Marks a job in one of `fromStates` (a retry event's, src/builds/states.ts retryFrom) retried by
   * `newId` (hidden from lists unless asked for), by `by` (null: automatically). The guarded
   * UPDATE makes a job retried once however many ask at once: false for the ones that lost.
   */
  async markRetried(jobId: string, newId: string, fromStates: readonly JobState[], by: User | null): Promise<boolean> {
    return (
      (await this.db('jobs')
        .where({ id: jobId, retried: false })
        .whereIn('state', fromStates)
        .update({ retried: true, retried_in_job_id: newId, retried_by: by ? userSnapshotColumn(by) : null })) > 0
    );
  }

  /**
   * A copy of the job as `newId`, scheduled at `at` (or, in a concurrency group, limited: at the
   * back of its group's queue, with the limit it had), with what running it recorded cleared.
   */
  async insertRetry(jobId: string, newId: string, automaticRule: number | null, at: Date): Promise<void> {
    const row = await this.db('jobs').where({ id: jobId }).first();
    if (!row) throw new Error(`job ${jobId} is gone`);
    const limited = row.concurrency_group !== null;
    const type = automaticRule === null ? 'manual' : 'automatic';
    await this.db('jobs').insert({
      ...row,
      id: newId,
      state: limited ? 'limited' : 'scheduled',
      agent_id: null,
      exit_status: null,
      signal: null,
      signal_reason: null,
      expired_at: null,
      soft_failed: false,
      retried: false,
      retried_in_job_id: null,
      retried_by: null,
      retries_count: Number(row.retries_count ?? 0) + 1,
      // Each automatic rule counts its own retries of the line; a manual retry carries the counts as they are.
      automatic_retries:
        automaticRule === null ? row.automatic_retries : JSON.stringify(countedRetry(automaticRetriesColumn(row.automatic_retries), automaticRule)),
      log_size: 0,
      retry_type: type,
      retry_source: JSON.stringify({ job_id: jobId, retry_type: type }),
      // A promise is its job's: the new job has made none.
      promised_exit_status: null,
      promised_exit_status_at: null,
      created_at: at,
      dispatch_at: at,
      scheduled_at: at,
      runnable_at: limited ? null : at,
      started_at: null,
      finished_at: null,
    });
  }

  /**
   * The unfinished jobs of an organization's concurrency group in its builds not finished,
   * oldest first (by when their build, upload or retry made them, then build order), each
   * `waiting` one told whether a block step (not an input step, which holds nothing back) of its
   * build before it is not passed yet (src/builds/jobs/concurrency.ts). A block step of a group
   * holds back its group's later steps and the steps after the group, not another group's.
   */
  async concurrencyQueue(organizationId: string, group: string): Promise<QueuedJob[]> {
    const rows = await this.db('jobs as j')
      .join('builds as b', 'b.id', 'j.build_id')
      .where({ 'j.organization_id': organizationId, 'j.concurrency_group': group })
      .whereIn('j.state', QUEUED_CONCURRENCY_STATES)
      .whereIn('b.state', UNFINISHED_BUILD_STATES)
      .orderBy([{ column: 'j.created_at' }, { column: 'j.position' }, { column: 'j.id' }])
      .select('j.id', 'j.build_id', 'j.state', 'j.position', 'j.group_id', 'j.concurrency_limit', 'j.concurrency_method');
    const waitingIn = [...new Set(rows.filter((r) => r.state === 'waiting').map((r) => r.build_id))];
    const blocks = waitingIn.length
      ? await this.db('jobs')
          .whereIn('build_id', waitingIn)
          .where({ type: 'manual' })
          .whereIn('state', ['waiting', 'blocked'])
          .select('build_id', 'position', 'group_id', 'step')
      : [];
    /** The block steps not passed yet, by build. */
    const blocksOf = new Map<string, { position: number; groupId: string | null }[]>();
    for (const m of blocks) {
      const step = stepFromColumn(m.step);
      if (step.type !== 'manual' || step.input) continue;
      blocksOf.set(m.build_id, [...(blocksOf.get(m.build_id) ?? []), { position: Number(m.position), groupId: m.group_id ?? null }]);
    }
    const holds = (b: { position: number; groupId: string | null }, r: { position: number; group_id: string | null }) =>
      b.position < Number(r.position) && (b.groupId === null || r.group_id === null || b.groupId === r.group_id);
    return rows.map((r) => ({
      id: r.id,
      buildId: r.build_id,
      state: oneOf(JOB_STATES, r.state, 'jobs.state'),
      limit: Number(r.concurrency_limit ?? 1),
      method: r.concurrency_method === 'eager' ? 'eager' : 'ordered',
      behindBlock: r.state === 'waiting' && (blocksOf.get(r.build_id) ?? []).some((b) => holds(b, r)),
    }));
  }

  /**
   * Holds the organization's concurrency group until the transaction ends (Postgres: a
   * transaction-level advisory lock, in a key space of its own; SQLite has one writer), so two
   * processes admitting its jobs at once never both fill its last slot.
   */
  async lockConcurrencyGroup(organizationId: string, group: string): Promise<void> {
    if (isPostgres(this.db))
      await this.db.raw(`select pg_advisory_xact_lock(hashtext('windsock:concurrency-group'), hashtext(?))`, [`${organizationId}/${group}`]);
  }

  /** Admits limited jobs to run (`admit`): runnable at `at` (they were scheduled when they became limited). Those that moved, with their builds. */
  async admit(jobIds: readonly string[], at: Date): Promise<{ id: string; buildId: string }[]> {
    if (jobIds.length === 0) return [];
    const t = jobTransition('admit');
    const rows = await this.db('jobs').whereIn('id', jobIds).whereIn('state', t.from).select('id', 'build_id');
    if (rows.length === 0) return [];
    await this.db('jobs')
      .whereIn(
        'id',
        rows.map((r) => r.id),
      )
      .whereIn('state', t.from)
      .update({ state: t.to, runnable_at: at });
    return rows.map((r) => ({ id: r.id, buildId: r.build_id }));
  }

  /** Concurrency groups with limited jobs, by organization, the longest waiting first (the sweeper admits what was left waiting). */
  async limitedGroups(limit: number): Promise<{ organizationId: string; group: string }[]> {
    const rows: Pick<JobsRow, 'organization_id' | 'concurrency_group'>[] = await this.db('jobs')
      .where({ state: 'limited' })
      .whereNotNull('concurrency_group')
      .groupBy('organization_id', 'concurrency_group')
      .select('organization_id', 'concurrency_group')
      .min({ oldest: 'created_at' })
      .orderBy('oldest')
      .limit(limit);
    return rows.flatMap((r) => (r.organization_id && r.concurrency_group ? [{ organizationId: r.organization_id, group: r.concurrency_group }] : []));
  }

  /** Every job of the build in order, with what an upload needs to place its jobs among them. */
  async placementOf(buildId: string): Promise<PlacedJob[]> {
    const rows = await this.db('jobs')
      .where({ build_id: buildId })
      .orderBy('position')
      .select('id', 'step_id', 'uploaded_by_step_id', 'upload_id', 'position', 'pipeline_id', 'organization_id');
    return rows.map((r) => ({
      id: r.id,
      stepId: r.step_id,
      uploadedByStepId: r.uploaded_by_step_id ?? null,
      uploadId: r.upload_id ?? null,
      position: Number(r.position),
      pipelineId: r.pipeline_id,
      organizationId: required(r.organization_id, 'jobs.organization_id'),
    }));
  }

  /**
   * Deletes the build's jobs in `states` that are no retry (a retried job keeps the job that took
   * its place) and that no agent holds: what `pipeline upload --replace` removes. Their ids.
   */
  async removePending(buildId: string, states: readonly JobState[]): Promise<string[]> {
    const q = () => this.db('jobs').where({ build_id: buildId }).whereIn('state', states).whereNull('retry_source').whereNull('agent_id');
    const ids = await q().pluck('id');
    if (ids.length) await q().whereIn('id', ids).delete();
    return ids;
  }

  /**
   * Adds uploaded jobs (each placed at its `position`) to the build: the build's jobs after
   * `after` move down to make room, then the new rows, recording the uploader's step and the upload.
   */
  async insertUploaded(
    build: Pick<NewBuild, 'id' | 'pipelineId' | 'organizationId' | 'createdAt'>,
    after: number,
    planned: PlannedJob[],
    uploadedByStepId: string,
    uploadId: string | null,
  ): Promise<void> {
    await this.db('jobs').where({ build_id: build.id }).where('position', '>', after).increment('position', planned.length);
    // The docs' job priority page: "jobs inherit scheduled_at from pipeline upload jobs" for dispatch.
    const uploader = await this.db('jobs').where({ build_id: build.id, step_id: uploadedByStepId }).min({ at: 'dispatch_at' }).first();
    const dispatchAt = toDateOrNull(uploader?.at) ?? build.createdAt;
    const rows = planned.map((j) => ({ ...toJobRow(build, j), dispatch_at: dispatchAt, uploaded_by_step_id: uploadedByStepId, upload_id: uploadId }));
    // Chunked: SQLite allows a limited number of bound variables per statement.
    for (let i = 0; i < rows.length; i += 20) await this.db('jobs').insert(rows.slice(i, i + 20));
  }

  /** Jobs by id, in build order. */
  async findMany(ids: string[]): Promise<Job[]> {
    if (!ids.length) return [];
    return (await this.db('jobs').whereIn('id', ids).orderBy('position')).map(jobFromRow);
  }

  /*
   * What the build's state machine (src/builds/progress/machine.ts) reads and writes of its
   * jobs, on the transaction that locked the build.
   */

  /** The build's jobs the state machine counts (not the retried ones), in order. */
  async currentOf(buildId: string): Promise<Job[]> {
    return (await this.db('jobs').where({ build_id: buildId, retried: false }).orderBy('position')).map(jobFromRow);
  }

  /**
   * Applies a move the state machine decided, if the job is still where it was and the move is
   * its event's row of the transition table; false if not.
   */
  async apply(m: JobMove): Promise<boolean> {
    const t = jobTransition(m.event, m.from);
    return (
      (await this.db('jobs')
        .where({ id: m.id })
        .whereIn('state', t.from)
        .update({ ...m.fields, state: t.to })) > 0
    );
  }

  /** A scheduled trigger job starts running at `at` (`start_trigger`); false if it was no longer scheduled. */
  async startTrigger(jobId: string, at: Date): Promise<boolean> {
    const t = jobTransition('start_trigger');
    return (await this.db('jobs').where({ id: jobId }).whereIn('state', t.from).update({ state: t.to, started_at: at })) > 0;
  }

  /** A trigger job that could not create its build fails (`trigger_failed`), softly when its step says so; false if it was not running. */
  async failTrigger(jobId: string, at: Date, softFailed: boolean): Promise<boolean> {
    return this.endTrigger(jobId, 'trigger_failed', at, softFailed);
  }

  /** Records the build a trigger job created; `passedAt`: the job passes then (an async trigger, `trigger_passed`). */
  async recordTriggeredBuild(jobId: string, build: { id: string; number: number; pipelineSlug: string }, passedAt: Date | null): Promise<void> {
    const triggered = JSON.stringify({ id: build.id, number: build.number, pipeline_slug: build.pipelineSlug });
    await this.db('jobs').where({ id: jobId }).update({ triggered_build: triggered });
    if (passedAt) await this.endTrigger(jobId, 'trigger_passed', passedAt);
  }

  /** A trigger job still running (waiting on the build it created): its build, and its step; or null. */
  async runningTrigger(jobId: string): Promise<{ buildId: string; step: Step } | null> {
    const job = await this.db('jobs').where({ id: jobId, state: 'running', type: 'trigger' }).first('build_id', 'step');
    return job ? { buildId: job.build_id, step: stepFromColumn(job.step) } : null;
  }

  /**
   * A running trigger job ends as the build it waited on did (`trigger_passed`, `trigger_failed`,
   * soft when `softFailed`: it does not fail its build); false if it was not running.
   */
  async endTrigger(jobId: string, event: 'trigger_passed' | 'trigger_failed' | 'trigger_skipped', at: Date, softFailed = false): Promise<boolean> {
    const t = jobTransition(event);
    const soft = event === 'trigger_failed' && softFailed;
    return (await this.db('jobs').where({ id: jobId }).whereIn('state', t.from).update({ state: t.to, finished_at: at, soft_failed: soft })) > 0;
  }

  /** The running trigger jobs among `jobIds` end `skipped` (`trigger_skipped`): those that moved, with their builds. */
  async skipTriggers(jobIds: readonly string[], at: Date): Promise<{ jobId: string; buildId: string }[]> {
    if (!jobIds.length) return [];
    const running = await this.db('jobs').whereIn('id', jobIds).where({ type: 'trigger', state: 'running' }).select('id', 'build_id');
    const skipped: { jobId: string; buildId: string }[] = [];
    for (const j of running) if (await this.endTrigger(j.id, 'trigger_skipped', at)) skipped.push({ jobId: j.id, buildId: j.build_id });
    return skipped;
  }

  /** The builds' jobs that `event` moves (a cancel, a stop or a skip of the builds) move, with `fields`; how many moved. */
  async updateOfBuilds(buildIds: string[], event: Extract<JobEvent, 'cancel' | 'stop' | 'skip'>, fields: Record<string, unknown> = {}): Promise<number> {
    const t = jobTransition(event);
    return this.db('jobs')
      .whereIn('build_id', buildIds)
      .whereIn('state', t.from)
      .update({ ...fields, state: t.to });
  }

  /** The build's jobs `jobIds` that `event` moves (a step's cancel) move, with `fields`; how many moved. */
  async updateOfJobs(
    buildId: string,
    jobIds: readonly string[],
    event: Extract<JobEvent, 'cancel' | 'stop' | 'force_cancel'>,
    fields: Record<string, unknown> = {},
  ): Promise<number> {
    const t = jobTransition(event);
    return this.db('jobs')
      .where({ build_id: buildId })
      .whereIn('id', jobIds)
      .whereIn('state', t.from)
      .update({ ...fields, state: t.to });
  }

  /** Which of the builds have jobs in `states`. */
  async buildsWithJobsIn(buildIds: string[], states: readonly JobState[]): Promise<string[]> {
    const rows = await this.db('jobs').whereIn('build_id', buildIds).whereIn('state', states).distinct('build_id');
    return rows.map((r) => r.build_id);
  }

  /** Command jobs in `states`, counted by state, agent query rules and organization (the metrics' scrape). */
  async countByStateAndRules(states: readonly string[]): Promise<{ state: string; rules: string; org: string; n: number }[]> {
    const rows: { state: string; rules: string; org: string; n: number | string }[] = await this.db('jobs')
      .join('builds', 'builds.id', 'jobs.build_id')
      .select('jobs.state as state', 'jobs.agent_query_rules as rules', 'builds.organization_id as org')
      .count({ n: '*' })
      .whereIn('jobs.state', states)
      .andWhere('jobs.type', 'script')
      .groupBy('jobs.state', 'jobs.agent_query_rules', 'builds.organization_id');
    return rows.map((r) => ({ state: r.state, rules: r.rules, org: r.org, n: Number(r.n) }));
  }

  /**
   * A command job as it stands at the end of a history (the fixture loader's: what the agent's
   * accept, start and finish would have written, with the file's times), planned at `createdAt`.
   */
  async writeHistory(
    jobId: string,
    h: {
      state: string;
      exitStatus: number | null;
      agentId: string | null | undefined;
      createdAt: Date;
      startedAt: Date | null;
      finishedAt: Date | null;
      logSize: number;
    },
  ): Promise<void> {
    await this.db('jobs').where({ id: jobId }).update({
      state: h.state,
      exit_status: h.exitStatus,
      agent_id: h.agentId,
      created_at: h.createdAt,
      scheduled_at: h.createdAt,
      runnable_at: h.createdAt,
      started_at: h.startedAt,
      finished_at: h.finishedAt,
      log_size: h.logSize,
    });
  }

  /** The build's jobs other than command jobs (waits, blocks, triggers) dated as planned at `at` (the fixture loader's history). */
  async datePlannedNonScript(buildId: string, at: Date): Promise<void> {
    await this.db('jobs').where({ build_id: buildId }).whereNot({ type: 'script' }).update({ created_at: at, scheduled_at: at, runnable_at: at });
  }
}
