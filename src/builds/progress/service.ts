/**
 * Build progression: every write that moves builds and their jobs along, and the one place
 * such a write opens its transaction. Agents claiming, finishing and releasing jobs, retries
 * (manual and automatic), unblocks, cancels, pipeline uploads, the sweeper, build creation
 * (API, webhooks, trigger steps) all come through here.
 *
 * The pattern, for every write that spans areas (builds, jobs, their logs, agents): this service
 * opens `db.transaction`, binds the repositories it needs to it (`withTransaction`, see
 * ./repositories.ts) and runs the rules on them; repositories hold queries and row mapping only,
 * and none opens a transaction over another area's rows. A job event runs the build's state
 * machine (./machine.ts, the rules in src/builds/jobs/state.ts) in the transaction that applied the
 * event, after locking the build's row: `inLockedBuild` (an agent's finish too, with its
 * automatic retry). Transaction boundaries are the ones the callers rely on: a cancel is committed before
 * the machine that ends the trigger job waiting on the build, and a build create that
 * supersedes nothing is its own single statement (Postgres) with no transaction around it.
 */
import crypto from 'node:crypto';
import type { Knex } from 'knex';
import type { User } from '../../core/identity';
import type { ExpiredJob, Job, JobEnd } from '../jobs/model';
import { automaticRetryRule } from '../jobs/retry';
import type { NotifyEntry, Step } from '../../pipelines/configuration';
import type { Pipeline } from '../../pipelines/repository';
import type { PlannedJob } from '../jobs/plan';
import type { Build, JobState, NewBuildFields } from '../model';
import { AUTO_RETRYABLE_JOB_STATES, CANCELABLE_BUILD_STATES, HELD_JOB_STATES, REPLACEABLE_JOB_STATES, RUNNING_ON_AGENT_JOB_STATES } from '../states';
import { UnprocessableError } from '../../core/errors';
import { cancelBuild, supersede } from './cancellation';
import { clusterQueuesOf, conditionFactsOf, creatorTeamsOf, planBuild, storedBuildConditions, writeBuild } from './creation';
import type { ConditionContext } from '../../pipelines/filter-condition';
import type { FactsWanted } from '../../rules/policy';
import { placeInCluster } from '../jobs/cluster-queue';
import { advanceLocked } from './machine';
import { uploadFamily } from '../jobs/state';
import { Announcements, type ConcurrencyGroupId } from './announce';
import { admissions } from '../jobs/concurrency';
import type { ChangeFeed } from '../../live/changes';
import { bind, type ProgressRepositories, type StepSigner } from './repositories';
import { clock } from '../../core/clock';
import { isDeadlock } from '../../db/knex';

/** Who retries a job: the user who asked for it, or a rule of the step's `retry.automatic` (its index). */
export type RetriedBy = User | { automaticRule: number };

/** What deciding a job's automatic retry reads of it. */
type RetryableJob = Pick<Job, 'id' | 'buildId' | 'step' | 'automaticRetries'>;

/**
 * In a transaction under the build's lock: each job retried (a new scheduled job in its place,
 * the old one marked retried), unless it left `fromStates` or was retried already; a canceled
 * build runs again. How many were retried.
 */
async function markRetries(
  r: ProgressRepositories,
  a: Announcements,
  buildId: string,
  retries: readonly { jobId: string; newId: string; fromStates: readonly JobState[] }[],
  by: RetriedBy,
  at: Date,
): Promise<number> {
  let retried = 0;
  const [user, automaticRule] = 'automaticRule' in by ? [null, by.automaticRule] : [by, null];
  for (const { jobId, newId, fromStates } of retries) {
    if (!(await r.jobs.markRetried(jobId, newId, fromStates, user))) continue;
    await r.jobs.insertRetry(jobId, newId, automaticRule, at);
    a.job(buildId, jobId);
    a.job(buildId, newId);
    retried++;
  }
  if (retried) await r.builds.reopenCanceled(buildId);
  return retried;
}

/** Rolls a claim back: the agent may take no job now (paused, stopping, gone, or holding one). */
const AGENT_UNAVAILABLE = new Error('agent unavailable');

export class BuildProgress {
  /**
   * `repos` are on `db`, which opens the transactions they are bound to; `sign` signs the
   * steps of every build created. What the state machine decides is dated by the service's one
   * clock (core/clock.ts: tests move it). What a step changed is published on `changes` once it
   * committed (./announce.ts).
   */
  constructor(
    private readonly db: Knex,
    private readonly repos: ProgressRepositories,
    private readonly sign: StepSigner,
    private readonly changes: ChangeFeed,
  ) {}

  /** What a step's `if` reads of a stored build (./creation.ts, storedBuildConditions): for a rule's conditions about it. */
  storedBuildConditions(build: Build, pipeline: Pipeline, want: FactsWanted): Promise<ConditionContext> {
    return storedBuildConditions(this.repos.organizations, build, pipeline, want);
  }

  /** Runs the build's state machine after a job event; `jobIds`: the jobs the event moved (announced with the build). */
  async advance(buildId: string, jobIds: readonly string[] = []): Promise<void> {
    await this.inLockedBuild(buildId, clock.now(), async (_r, a) => {
      for (const id of jobIds) a.job(buildId, id);
    });
  }

  /**
   * Runs the state machine of builds that stalled: every job that moves on by itself has ended,
   * and the machine that should have run after the last one did not (its process died between
   * the job's end and the build's advance, each its own transaction) and no job ended since
   * `quietSince`. Under each build's lock, so two processes sweeping at once move each build
   * once. How many were looked at.
   */
  async advanceStalled(quietSince: Date, limit: number): Promise<number> {
    const ids = await this.repos.builds.stalled(quietSince, limit);
    for (const id of ids) await this.advance(id);
    return ids.length;
  }

  /**
   * A new build of the pipeline (the API's, a webhook's): written, older builds of the branch
   * superseded in the same transaction; a trigger step that runs at once is launched by the
   * build's state machine right after, and the build is then read back so the answer shows the
   * trigger job running.
   */
  async createBuild(pipeline: Pipeline, creator: User | null, b: NewBuildFields): Promise<{ build: Build; jobs: Job[] }> {
    const plan = await this.plan(pipeline, creator, b);
    const written = plan.supersedes.length ? await this.db.transaction((trx) => writeBuild(bind(this.repos, trx), plan)) : await writeBuild(this.repos, plan);
    this.announceBuilds(pipeline, [written.build.id, ...written.ended]);
    await this.advanceSkippedTriggers(written.triggers);
    return this.launched(written);
  }

  /**
   * A new build that must be written together with a claim outside builds (a pipeline
   * schedule's due minute): `claim` runs first, in the transaction that writes the build and
   * supersedes older builds of the branch; when it answers false (another process claimed it)
   * nothing is written and the answer is null. One transaction, so a crash leaves neither the
   * claim without its build nor a build without its claim. The rest is createBuild's.
   */
  async createClaimedBuild(
    claim: (trx: Knex.Transaction) => Promise<boolean>,
    pipeline: Pipeline,
    creator: User | null,
    b: NewBuildFields,
  ): Promise<{ build: Build; jobs: Job[] } | null> {
    const plan = await this.plan(pipeline, creator, b);
    const written = await this.db.transaction(async (trx) => ((await claim(trx)) ? writeBuild(bind(this.repos, trx), plan) : null));
    if (!written) return null;
    this.announceBuilds(pipeline, [written.build.id, ...written.ended]);
    await this.advanceSkippedTriggers(written.triggers);
    return this.launched(written);
  }

  /** The builds of trigger jobs a supersession skipped go on (./cancellation.ts, supersede). */
  private async advanceSkippedTriggers(triggers: readonly { jobId: string; buildId: string }[]): Promise<void> {
    for (const t of triggers) await this.advance(t.buildId, [t.jobId]);
  }

  /** Builds of the pipeline written or ended outside the state machine (a new build, the older builds of its branch it superseded). */
  private announceBuilds(pipeline: Pick<Pipeline, 'id' | 'organizationId'>, buildIds: readonly string[]): void {
    const a = new Announcements();
    for (const id of buildIds) a.build(id, { organizationId: pipeline.organizationId, pipelineId: pipeline.id });
    a.publish(this.changes);
  }

  /** The creator's teams, where a step's `if` may read them (./creation.ts, creatorTeamsOf). */
  creatorTeams(organizationId: string, creatorId: string | null, steps: readonly Step[]): Promise<string[]> {
    return creatorTeamsOf(this.repos, organizationId, creatorId, steps);
  }

  /** A new build's plan, its jobs placed in the queues of the pipeline's cluster. */
  private async plan(pipeline: Pipeline, creator: User | null, b: NewBuildFields) {
    const facts = await conditionFactsOf(this.repos, pipeline.organizationId, creator?.id ?? null, (pipeline.template ?? pipeline).steps);
    return planBuild(pipeline, creator, b, this.sign, await clusterQueuesOf(this.repos, pipeline.clusterId), facts);
  }

  /**
   * A written build: a trigger step that runs at once is launched by its state machine, a step
   * with `depends_on` told whether it can run (a key no step has fails it at once), and a job of
   * a concurrency group admitted if its group has room; the build is read back to show it.
   */
  private async launched({ build, jobs }: { build: Build; jobs: Job[] }): Promise<{ build: Build; jobs: Job[] }> {
    const written = { build, jobs };
    const dependent = (j: Job) => j.state === 'waiting' && j.step.depends_on !== undefined;
    if (!written.jobs.some((j) => (j.type === 'trigger' && j.state === 'scheduled') || dependent(j) || j.state === 'limited')) return written;
    await this.advance(written.build.id);
    return (await this.repos.builds.findWithJobs(written.build.pipelineId, written.build.number, false))!;
  }

  /**
   * Cancels a build (`cancel` in src/builds/states.ts): false if its state had moved on. Then,
   * committed, its state machine runs: a build a synchronous trigger step is waiting on ends that step.
   */
  async cancel(buildId: string, at: Date): Promise<boolean> {
    if (!(await this.db.transaction((trx) => cancelBuild(bind(this.repos, trx), buildId, at)))) return false;
    await this.advance(buildId);
    return true;
  }

  /**
   * A job on an agent promises the exit status it will fail with (`job promise-failure`), then its
   * build's state machine runs: a hard failure makes the build failing at once. Answers the status
   * the job has promised (an earlier promise stands), null if it was no longer on an agent.
   */
  async promiseFailure(buildId: string, jobId: string, exitStatus: number, reason: string | null, at: Date): Promise<number | null> {
    const promised = await this.inLockedBuild(buildId, at, async (r, a) => {
      a.job(buildId, jobId);
      return r.jobs.promiseFailure(jobId, exitStatus, reason, at, RUNNING_ON_AGENT_JOB_STATES);
    });
    return promised ?? null;
  }

  /**
   * Cancels jobs of a build (`buildkite-agent step cancel`), then runs its state machine: those no
   * agent accepted end at once (an agent assigned one holds it no more), those on an agent are
   * stopped by it, or with `force` end at once too.
   */
  async cancelJobs(buildId: string, jobIds: readonly string[], force: boolean, at: Date): Promise<void> {
    await this.inLockedBuild(buildId, at, async (r, a) => {
      await r.agents.dropHeldJobs(jobIds, force ? HELD_JOB_STATES : ['assigned']);
      await r.jobs.updateOfJobs(buildId, jobIds, 'cancel', { finished_at: at });
      if (force) await r.jobs.updateOfJobs(buildId, jobIds, 'force_cancel', { finished_at: at });
      else await r.jobs.updateOfJobs(buildId, jobIds, 'stop');
      for (const id of jobIds) a.job(buildId, id);
    });
  }

  /**
   * Cancels the build (as `cancel`) if its state allows it, else refuses with a 422 naming the
   * state it is in now (the REST API's and the agent's cancel).
   */
  async cancelOrRefuse(build: Pick<Build, 'id' | 'state'>, at: Date): Promise<void> {
    if (CANCELABLE_BUILD_STATES.includes(build.state) && (await this.cancel(build.id, at))) return;
    const state = (await this.repos.builds.findById(build.id))?.state ?? build.state;
    throw new UnprocessableError(`This build can't be canceled because it is ${state}: only scheduled, running or failing builds can be canceled.`);
  }

  /**
   * Cancels the branch's builds that can be (`cancel_branch`) with their unfinished jobs (a
   * deleted branch); returns how many. Then each one's machine runs, as after any cancel: a
   * build a synchronous trigger step waits on ends that step.
   */
  async cancelBranch(pipelineId: string, branch: string, at: Date): Promise<number> {
    // Below the largest 32-bit integer, the number column's type on Postgres: every build of the branch.
    const { ended } = await this.db.transaction((trx) => supersede(bind(this.repos, trx), pipelineId, branch, 2 ** 31 - 1, 'cancel_branch', at));
    const pipeline = ended.length ? await this.repos.pipelines.findById(pipelineId) : null;
    if (pipeline) this.announceBuilds(pipeline, ended);
    for (const id of ended) await this.advance(id);
    return ended.length;
  }

  /**
   * Gives a scheduled job to an agent, which then holds it. Two guarded UPDATEs, the job's then
   * the agent's (the order every job move locks them in), are the claim: when agents race for
   * one job exactly one sees a changed row ('taken' for the others), and the agent must still be
   * connected, not paused and holding nothing ('agent' otherwise, and nothing is written): a
   * pause or stop landing while the agent polls wins.
   */
  async claim(jobId: string, agentId: string): Promise<'claimed' | 'taken' | 'agent'> {
    try {
      return await this.db.transaction(async (trx) => {
        const r = bind(this.repos, trx);
        if (!(await r.jobs.assign(jobId, agentId))) return 'taken';
        if (!(await r.agents.holdJob(agentId, jobId, clock.now()))) throw AGENT_UNAVAILABLE;
        return 'claimed';
      });
    } catch (err) {
      if (err === AGENT_UNAVAILABLE) return 'agent';
      throw err;
    }
  }

  /** An assigned job the agent never accepted goes back to be offered again, and the agent holds none. */
  async release(agentId: string): Promise<void> {
    await this.db.transaction(async (trx) => {
      const r = bind(this.repos, trx);
      await r.jobs.unassign(agentId);
      await r.agents.dropJob(agentId);
    });
  }

  /**
   * Ends the agent's job by `transition` (a finish event, narrowed to the state the caller read)
   * and frees the agent; false if the job had moved on. Under the build's lock, with the job's
   * automatic retry when it failed and a rule of its step says so, then the build's state machine:
   * one transaction, so nobody sees the build fail between the failure and its retry (nor
   * notifies that it did), and no crash leaves the failure without its retry.
   */
  async finish(job: RetryableJob, agentId: string, transition: { from: readonly JobState[]; to: JobState }, end: JobEnd): Promise<boolean> {
    const moved = await this.inLockedBuild(job.buildId, end.finished_at, async (r, a) => {
      if (!(await r.jobs.end(job.id, agentId, transition, end))) return false;
      await r.agents.jobFinished(agentId, end.finished_at);
      a.job(job.buildId, job.id);
      await this.retryAutomatically(r, a, job, end);
      return true;
    });
    return moved ?? false;
  }

  /** In the transaction that ended the job: its automatic retry, when it failed and a rule of its step says so (`retry_type: automatic`). */
  private async retryAutomatically(r: ProgressRepositories, a: Announcements, job: RetryableJob, end: JobEnd | ExpiredJob): Promise<void> {
    if (end.state !== 'failed' && end.state !== 'timed_out') return;
    const rule = automaticRetryRule(job.step, job.automaticRetries, end.exit_status, end.signal_reason ?? null, 'signal' in end ? (end.signal ?? null) : null);
    if (rule === null) return;
    const retry = { jobId: job.id, newId: crypto.randomUUID(), fromStates: AUTO_RETRYABLE_JOB_STATES };
    await markRetries(r, a, job.buildId, [retry], { automaticRule: rule }, end.finished_at);
  }

  /**
   * A new job in the place of a finished one, scheduled at once, and the old one marked retried
   * (hidden from lists unless asked for); a canceled build runs again. A job is retried once
   * however many ask at once: false for the ones that lost.
   */
  async retry(buildId: string, jobId: string, newId: string, fromStates: readonly JobState[], by: RetriedBy): Promise<boolean> {
    return (await this.retryJobs(buildId, [{ jobId, newId, fromStates }], by)) === 1;
  }

  /**
   * Retries of several jobs of one build, in one transaction and one run of its state machine;
   * how many were retried. `by` is the user who asked (a manual retry) or `automatic`.
   */
  async retryJobs(buildId: string, retries: { jobId: string; newId: string; fromStates: readonly JobState[] }[], by: RetriedBy): Promise<number> {
    const at = clock.now();
    const done = await this.inLockedBuild(buildId, at, (r, a) => markRetries(r, a, buildId, retries, by, at));
    return done ?? 0;
  }

  /**
   * Unblocks a block step and records who did it (and the block step's fields, which become
   * build meta-data), then lets the build go on. False if the job was no longer blocked.
   */
  async unblock(buildId: string, jobId: string, by: User, fields: Record<string, string>): Promise<boolean> {
    const at = clock.now();
    const moved = await this.inLockedBuild(buildId, at, async (r, a) => {
      if (!(await r.jobs.unblock(jobId, by, at))) return false;
      a.job(buildId, jobId);
      if (Object.keys(fields).length) await r.builds.mergeMetaData(buildId, fields);
      return true;
    });
    return moved ?? false;
  }

  /**
   * Sets meta-data keys of a build (`buildkite-agent meta-data set`), under the build's row lock
   * as a block step's fields are (see unblock), so concurrent sets of different keys each keep
   * the others' in the build's own copy. Answers false, and sets nothing, when the build would
   * then hold more than `maxKeys` keys; null when the build is gone. No state moves: the state
   * machine does not run.
   */
  setMetaData(buildId: string, fields: Record<string, string>, maxKeys: number): Promise<boolean | null> {
    return this.db.transaction(async (trx) => {
      const r = bind(this.repos, trx);
      if (!(await r.builds.lock(buildId))) return null;
      const current = await r.builds.metaDataOf(buildId);
      if (new Set([...Object.keys(current), ...Object.keys(fields)]).size > maxKeys) return false;
      await r.builds.mergeMetaData(buildId, fields);
      return true;
    });
  }

  /**
   * Adds jobs uploaded by a running job to its build, under the build's lock: right after the
   * uploader's step and everything that step (and, in turn, what it added) uploaded before, in
   * order; the jobs after them move down. They start `waiting` (a broken one, over) and the
   * state machine schedules what may run at once, at `at`. An upload whose `uploadId` the build
   * has already seen adds nothing and answers the jobs it added then. The upload's top-level
   * `notify` is appended to the build's, once. Answers the jobs' ids, or null when the build
   * would have more than `maxJobs` jobs.
   */
  async addUploadedJobs(
    buildId: string,
    uploader: Job,
    planned: PlannedJob[],
    uploadId: string | null,
    at: Date,
    maxJobs: number,
    notify: readonly NotifyEntry[] = [],
    replace = false,
  ): Promise<string[] | null> {
    const ids = await this.inLockedBuild(buildId, at, async (r, a) => {
      let placed = await r.jobs.placementOf(buildId);
      const seen = uploadId ? placed.filter((j) => j.uploadId === uploadId) : [];
      if (seen.length) return seen.map((j) => j.id);
      if (replace) {
        // `pipeline upload --replace`: the pending steps go first (the uploaded ones take their place).
        const removed = await r.jobs.removePending(buildId, REPLACEABLE_JOB_STATES);
        for (const id of removed) a.job(buildId, id);
        if (removed.length) placed = placed.filter((j) => !removed.includes(j.id));
      }
      if (placed.length + planned.length > maxJobs) return null;
      // The upload's top-level notify joins the build's, as the real service merges them.
      await r.builds.appendNotify(buildId, notify);
      const family = uploadFamily(placed, [uploader.stepId]);
      const anchor = Math.max(...placed.filter((j) => family.has(j.stepId)).map((j) => j.position));
      const build = { id: buildId, pipelineId: placed[0]!.pipelineId, organizationId: placed[0]!.organizationId, createdAt: at };
      // Uploaded jobs run in the cluster the build's jobs run in.
      const inCluster = placeInCluster(planned, await clusterQueuesOf(r, uploader.clusterId ?? null));
      const jobs = inCluster.map((j, i) => ({ ...j, position: anchor + 1 + i, state: j.state === 'broken' ? ('broken' as const) : ('waiting' as const) }));
      await r.jobs.insertUploaded(build, anchor, jobs, uploader.stepId, uploadId);
      return planned.map((j) => j.id);
    });
    return ids ?? null;
  }

  /** Expires the build's jobs among `jobIds` that are still scheduled, then runs its state machine. */
  async expire(buildId: string, jobIds: string[], at: Date): Promise<number> {
    const expired = await this.inLockedBuild(buildId, at, async (r, a) => {
      const n = await r.jobs.expire(buildId, jobIds, at);
      if (n) for (const id of jobIds) a.job(buildId, id);
      return n;
    });
    return expired ?? 0;
  }

  /**
   * The job of an agent that went silent, if it still holds it in `job.state`, ends by
   * `transition` (narrowed to `job.state`) as `end` says (failed, canceled or timed out if it had
   * started; expired if not), with `line` added to its log. Then the build's state machine runs.
   */
  async endSilentAgentJob(
    job: RetryableJob,
    agentId: string,
    transition: { from: readonly JobState[]; to: JobState },
    end: JobEnd | ExpiredJob,
    line: string,
  ): Promise<boolean> {
    const moved = await this.inLockedBuild(job.buildId, end.finished_at, async (r, a) => {
      if (!(await r.jobs.end(job.id, agentId, transition, end))) return false;
      a.job(job.buildId, job.id);
      await r.logs.appendLine(job.id, line, end.finished_at);
      await r.agents.dropJobIfHeld(agentId, job.id);
      await this.retryAutomatically(r, a, job, end);
      return true;
    });
    return moved ?? false;
  }

  /**
   * In one transaction: locks the build's row (Postgres; SQLite has one writer), runs `step` on
   * the bound repositories, then the build's state machine at `at`. Undefined, and nothing run,
   * when the build is gone. Once committed, what the step and the machine noted is published.
   */
  private async inLockedBuild<T>(buildId: string, at: Date, step: (r: ProgressRepositories, a: Announcements) => Promise<T>): Promise<T | undefined> {
    const announce = new Announcements();
    const result = await this.db.transaction(async (trx) => {
      const r = bind(this.repos, trx);
      if (!(await r.builds.lock(buildId))) return undefined;
      const result = await step(r, announce);
      await advanceLocked({ r, now: at, sign: this.sign, announce }, buildId);
      return result;
    });
    announce.publish(this.changes);
    await this.admit(announce.groups());
    return result;
  }

  /**
   * Admits the limited jobs each concurrency group has room for (src/builds/jobs/concurrency.ts),
   * each group in a transaction of its own under the group's lock, after the build's transaction
   * committed: it moves jobs of other builds, whose rows a build's transaction never locks
   * before a group. A deadlock with a transaction that ends several builds' jobs at once (a
   * superseding build) leaves that group to the next event or sweep: the event that called this
   * has committed and must not fail for it. How many it admitted.
   */
  async admit(groups: readonly ConcurrencyGroupId[]): Promise<number> {
    let n = 0;
    for (const g of groups) {
      const admitted = await this.db
        .transaction(async (trx) => {
          const r = bind(this.repos, trx);
          await r.jobs.lockConcurrencyGroup(g.organizationId, g.group);
          return r.jobs.admit(admissions(await r.jobs.concurrencyQueue(g.organizationId, g.group)), clock.now());
        })
        .catch((err: unknown) => {
          if (isDeadlock(err)) return [];
          throw err;
        });
      for (const j of admitted) this.announceJob(g.organizationId, j.buildId, j.id);
      n += admitted.length;
    }
    return n;
  }

  /** Admits what the groups with limited jobs have room for (the sweeper's: a process that died before admitting). How many it admitted. */
  async admitLimited(limit: number): Promise<number> {
    return this.admit(await this.repos.jobs.limitedGroups(limit));
  }

  /** A job moved by its agent outside the state machine (claimed, accepted), after that move committed. */
  announceJob(organizationId: string, buildId: string, jobId: string): void {
    this.changes.publish({ kind: 'job', organizationId, buildId, jobId });
  }

  /** New bytes of a job's log, after they were stored (`size`: where the log now ends, at least). */
  announceLog(organizationId: string, buildId: string, jobId: string, size: number): void {
    this.changes.publish({ kind: 'log', organizationId, buildId, jobId, size });
  }
}
