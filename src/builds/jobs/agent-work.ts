/**
 * The agent's side of a job, as the agent API asks for it: polling claims the scheduled job of
 * highest priority, then the oldest, whose query rules the agent's tags satisfy; then accept,
 * start, log chunks and finish move it along, each only by the agent holding it. Moves that go
 * with the build's state machine go through build progression. No HTTP, no SQL.
 */
import type { components } from '../../../generated/api';
import type { Agent } from '../../agents/repository';
import { matchesQueryRules } from '../../agents/query-rules';
import { isLive, isPaused, mustBeConnected, type AgentService, type WaitingAgent } from '../../agents/service';
import { finishEvent, jobTransition, NOT_YET_RUNNABLE_JOB_STATES, REPRIORITIZABLE_JOB_STATES, RUNNING_ON_AGENT_JOB_STATES } from '../states';
import { MAX_TIMEOUT } from '../../pipelines/configuration/limits';
import type { BuildProgress } from '../progress/service';
import { ConflictError, NotFoundError, PayloadTooLargeError, UnprocessableError, ValidationError } from '../../core/errors';
import { effectiveExitStatus, softFails } from './retry';
import type { JobLogRepository } from './log-repository';
import type { JobContext, JobEnd } from './model';
import type { JobRepository } from './repository';
import { clock } from '../../core/clock';

/**
 * How long since its stored heartbeat an idle agent of a higher priority still counts as waiting
 * for work (a lower one leaves it the jobs it may run): its stored heartbeat lags its polls by up
 * to 15 s (heartbeatWriteEveryMs), and it polls every 2 s. One that went silent is passed over
 * after this.
 */
const WAITING_AGENT_SILENCE_MS = 20_000;

/** How far one `job update` may extend a job's timeout (the docs' build timeouts: "by up to an hour"). */
const MAX_TIMEOUT_EXTENSION = 60;

/**
 * How many jobs the agent may run one poll reads at once, in dispatch order: enough that agents
 * polling together each find one the others did not take first.
 */
const CANDIDATES_PER_POLL = 32;
/** How many times a poll reads candidates again after losing every one of them to other agents. */
const CLAIM_ROUNDS = 3;
/** A job's log cap by default: the real service's "log size per job" (1,024 MiB). */
export const DEFAULT_JOB_LOG_LIMIT_BYTES = 1024 * 1024 * 1024;

const RFC3339 = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/i;

/**
 * An RFC 3339 time as Unix nanoseconds (the unit of the log's `header_times`); the agent's Go
 * times carry up to nine fractional digits, more than Date.parse is specified to read. Null when
 * it is not one.
 */
export function rfc3339Nanos(text: string): number | null {
  const m = RFC3339.exec(text);
  if (!m) return null;
  const seconds = Date.parse(`${m[1]}${m[3]!.toUpperCase()}`);
  if (Number.isNaN(seconds)) return null;
  return seconds * 1_000_000 + Number((m[2] ?? '').padEnd(9, '0'));
}

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}

function wrongState(to: string, from: string): UnprocessableError {
  return new UnprocessableError(`The job can't be ${to}: it is not ${from}.`);
}

export class AgentWorkService {
  constructor(
    private readonly jobs: JobRepository,
    private readonly logs: JobLogRepository,
    /** A job move that goes with the agent's row or the build's state machine goes through it. */
    private readonly progress: BuildProgress,
    /** Polls and job reads count as the agent's sign of life. */
    private readonly agents: AgentService,
    /** A job log's cap (JOB_LOG_LIMIT_BYTES); agents are told it as `log_max_size_bytes`. */
    readonly jobLogLimitBytes: number = DEFAULT_JOB_LOG_LIMIT_BYTES,
  ) {}

  /** A forced stop: the job the agent holds, and its build, are canceled (the agent sees `canceling` and stops the process). */
  async cancelHeldJob(agent: Agent): Promise<void> {
    const held = await this.jobs.heldBy(agent.id);
    if (held) await this.progress.cancel(held.build.id, clock.now());
  }

  /** The agent disconnects: a job it was assigned and had not accepted goes back to be offered to another agent. */
  async disconnect(agent: Agent): Promise<Agent> {
    await this.progress.release(agent.id);
    return this.agents.disconnect(agent);
  }

  /**
   * The job the agent holds, else the first scheduled job it matches (priority, then age),
   * claimed for it alone. An agent holding no job is told `pause` while paused and `disconnect`
   * once told to stop (or when it is not connected at all).
   */
  async ping(agent: Agent): Promise<{ action: 'idle' | 'pause' | 'disconnect'; job: JobContext | null }> {
    if (agent.connectionState === 'never_connected') throw new UnprocessableError('The agent has not connected: POST /v3/connect first.');
    if (!isLive(agent)) return { action: 'disconnect', job: null };
    const now = clock.now();
    await this.agents.touch(agent, now);
    const held = await this.jobs.heldBy(agent.id);
    // Only a new assignment goes in the answer (one the agent has not accepted: again, if the
    // answer offering it was lost); the real agent takes any job there as new work.
    if (held) return { action: 'idle', job: held.job.state === 'assigned' ? held : null };
    if (agent.connectionState === 'stopping') return { action: 'disconnect', job: null };
    if (isPaused(agent, now)) return { action: 'pause', job: null };
    // An agent that registered to acquire one job (or said at its last finish that it exits) is offered none.
    if (agent.ignoreInDispatches) return { action: 'idle', job: null };
    // A cluster's agent takes its cluster's jobs only, none while its queue is paused (or gone);
    // an agent in no cluster takes the jobs of pipelines in none.
    const dispatch = await this.agents.dispatchQueueOf(agent);
    if (!dispatch) return { action: 'idle', job: null };
    const classes = (await this.jobs.dispatchClasses(agent.organizationId)).filter(
      (c) => c.clusterId === agent.clusterId && matchesQueryRules(c.agentQueryRules, agent.metaData, dispatch.defaultQueue),
    );
    if (!classes.length) return { action: 'idle', job: null };
    const keys = classes.map((c) => c.key);
    const rulesOf = new Map(classes.map((c) => [c.key, c.agentQueryRules]));
    // Higher priorities are assigned work first (the docs' agent prioritization): each idle agent
    // of a higher priority that polls is left the first candidate it may run.
    const since = new Date(now.getTime() - WAITING_AGENT_SILENCE_MS);
    const above = await this.agents.waitingAbove(agent, since, CANDIDATES_PER_POLL);
    // The queue's `prefer-different` retry affinity (the docs' agent prioritization): a retry of an
    // attempt this agent ran is left to another agent waiting for work, if there is one; with none
    // it is this agent's (the warmest).
    let others: WaitingAgent[] | null = null;
    const leftToOthers = new Set<string>();
    // Every candidate is one this agent may run; a full page lost to other agents is read again.
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const candidates = await this.jobs.dispatchCandidates(agent.organizationId, keys, CANDIDATES_PER_POLL);
      const previous = dispatch.preferDifferent ? await this.jobs.previousAgentsOf(candidates.map((c) => c.id)) : null;
      for (const { id, key } of candidates) {
        if (leftToOthers.has(id)) continue;
        const rules = rulesOf.get(key) ?? [];
        const higher = above.findIndex((h) => matchesQueryRules(rules, h.metaData, h.defaultQueue));
        if (higher >= 0) {
          above.splice(higher, 1);
          leftToOthers.add(id);
          continue;
        }
        if (previous?.get(id) === agent.id) {
          others ??= await this.agents.waitingOthers(agent, since, CANDIDATES_PER_POLL);
          const other = others.findIndex((o) => matchesQueryRules(rules, o.metaData, o.defaultQueue));
          if (other >= 0) {
            others.splice(other, 1);
            leftToOthers.add(id);
            continue;
          }
        }
        const claim = await this.progress.claim(id, agent.id);
        // Lost the race for this one: another agent claimed it between the read and the update.
        if (claim === 'taken') continue;
        // Paused or told to stop while it polled: the next poll says which.
        if (claim === 'agent') return { action: 'idle', job: null };
        const claimed = await this.jobs.findWithContext(id);
        if (claimed) this.progress.announceJob(claimed.organizationId, claimed.build.id, id);
        return { action: 'idle', job: claimed };
      }
      if (candidates.length < CANDIDATES_PER_POLL) break;
    }
    return { action: 'idle', job: null };
  }

  /**
   * `buildkite-agent start --acquire-job ID`: the agent takes the job it names, if it may run it
   * (its organization and cluster, its tags satisfying the job's rules), straight to `accepted`
   * (the agent starts it next; it never accepts an acquired job). A job of the agent's own that
   * it already acquired is answered again (a retry whose answer was lost). A job not runnable
   * yet (waiting on an earlier step, blocked, its cluster queue paused) is `locked`: the agent
   * asks again later. Another
   * organization's job is 404; a job that will never be runnable by this agent, or an agent that
   * cannot take a job now, 422.
   */
  async acquire(agent: Agent, jobId: string): Promise<{ job: JobContext } | { locked: string }> {
    mustBeConnected(agent);
    await this.agents.touch(agent, clock.now());
    const found = await this.jobs.findWithContext(jobId);
    if (!found || found.organizationId !== agent.organizationId) throw new NotFoundError('job');
    const { job } = found;
    if (job.agentId === agent.id) {
      if (job.state === 'assigned') return { job: await this.accept(agent, jobId) };
      if (job.state === 'accepted') return { job: found };
    }
    if (job.type !== 'script') throw new UnprocessableError(`The job can't be acquired: it is a ${job.type} job, which no agent runs.`);
    if (NOT_YET_RUNNABLE_JOB_STATES.includes(job.state)) return { locked: `The job is ${job.state}: it can be acquired once it is scheduled.` };
    if (job.state !== 'scheduled') throw new UnprocessableError(`The job can't be acquired: it is ${job.state}.`);
    if ((job.clusterId ?? null) !== agent.clusterId) throw new UnprocessableError("The job can't be acquired: it runs in another cluster than the agent's.");
    let defaultQueue: string | null = 'default';
    if (agent.clusterId) {
      const queue = await this.agents.clusterQueueOf(agent);
      if (queue?.paused) return { locked: "The agent's cluster queue is paused: the job can be acquired once it is resumed." };
      defaultQueue = queue?.defaultQueueKey ?? null;
    }
    if (!matchesQueryRules(job.agentQueryRules, agent.metaData, defaultQueue))
      throw new UnprocessableError("The job can't be acquired: the agent's tags do not match its agent query rules.");
    const claim = await this.progress.claim(jobId, agent.id);
    if (claim === 'taken') throw new UnprocessableError("The job can't be acquired: another agent took it.");
    if (claim === 'agent') throw new UnprocessableError("The job can't be acquired: the agent is paused, stopping or already holds a job.");
    return { job: await this.accept(agent, jobId) };
  }

  async accept(agent: Agent, jobId: string): Promise<JobContext> {
    return this.move(agent, jobId, 'accept', {});
  }

  /** The job runs; the build is running from its first job's start. */
  async start(agent: Agent, jobId: string): Promise<JobContext> {
    const job = await this.move(agent, jobId, 'start', { started_at: clock.now() });
    await this.progress.advance(job.build.id, [jobId]);
    return job;
  }

  /**
   * Stores a chunk of the job's output while the agent runs the job, also while it stops it
   * (`canceling`, `timing_out`): the agent flushes the output the command printed before it stopped.
   */
  async appendChunk(agent: Agent, jobId: string, chunk: components['schemas']['LogChunk']): Promise<void> {
    const job = await this.held(agent, jobId);
    if (!RUNNING_ON_AGENT_JOB_STATES.includes(job.job.state)) throw new UnprocessableError(`Log chunks can't be added to a job that is ${job.job.state}.`);
    if (!(await this.logs.appendChunk(jobId, chunk, clock.now(), this.jobLogLimitBytes))) {
      throw new PayloadTooLargeError(
        `This job's log has reached its limit of ${formatBytes(this.jobLogLimitBytes)} (JOB_LOG_LIMIT_BYTES): the chunk was not stored.`,
      );
    }
    // Stored (or a repeat of a stored chunk): live pages fetch the new bytes themselves.
    this.progress.announceLog(job.organizationId, job.build.id, jobId, chunk.offset + Buffer.byteLength(chunk.content));
  }

  /**
   * The job as it stands, for its agent to learn of a cancel or a timeout while it runs the job
   * (`canceling`, `timing_out`). Asking counts as a sign of life, like a heartbeat.
   */
  async job(agent: Agent, jobId: string): Promise<JobContext> {
    const job = await this.held(agent, jobId);
    await this.agents.touch(agent, clock.now());
    return job;
  }

  /**
   * The job the agent holds while it runs it (accepted, running, or being canceled or timed
   * out): what `buildkite-agent annotate` and `meta-data` name. A job the agent does not hold is
   * 404, one it no longer runs 422.
   */
  async activeJob(agent: Agent, jobId: string): Promise<JobContext> {
    const context = await this.held(agent, jobId);
    if (!RUNNING_ON_AGENT_JOB_STATES.includes(context.job.state))
      throw new UnprocessableError(`The job is ${context.job.state}: only a job the agent is running can do this.`);
    return context;
  }

  /**
   * A job of the build the agent is running a job of: the one it runs, or another one of that
   * build, whatever its state (`annotate --job`, `meta-data set --job`: the docs annotate a job
   * that ran before from a later step). Any other job is as good as missing (404); with none
   * running, as activeJob.
   */
  async jobOfRunningBuild(agent: Agent, jobId: string): Promise<JobContext> {
    if (!agent.jobId || agent.jobId === jobId) return this.activeJob(agent, jobId);
    const running = await this.activeJob(agent, agent.jobId);
    const target = await this.jobs.findWithContext(jobId);
    if (!target || target.build.id !== running.build.id) throw new NotFoundError('job');
    return target;
  }

  /**
   * The section header times the agent reports (index -> RFC 3339), kept for the log's
   * `header_times` in place of the chunks' arrival times.
   */
  async saveHeaderTimes(agent: Agent, jobId: string, times: Record<string, string>): Promise<void> {
    await this.activeJob(agent, jobId);
    const parsed = new Map<number, number>();
    for (const [index, at] of Object.entries(times)) {
      const nanos = rfc3339Nanos(at);
      if (nanos === null) throw ValidationError.field(`header_times.${index}`, 'invalid');
      parsed.set(Number(index), nanos);
    }
    if (parsed.size) await this.logs.saveHeaderTimes(jobId, parsed);
  }

  /** Ends the job as finishEvent (src/builds/states.ts) says; a move racing with a cancel or timeout is read again. */
  async finish(agent: Agent, jobId: string, body: components['schemas']['FinishJobRequest']): Promise<JobContext> {
    // The real agent sends the exit status as a string ("0", "-1"); the spec's pattern checked it.
    const reported = Number(body.exit_status);
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.held(agent, jobId);
      const exitStatus = effectiveExitStatus(current.job, reported, body.signal_reason ?? null);
      const event = finishEvent(current.job.state, exitStatus, body.signal_reason ?? null);
      if (!event) throw wrongState('finished', 'running');
      // The finish the table allows from the state just read: a job that moved on since is read again.
      const transition = jobTransition(event, current.job.state);
      const state = transition.to;
      const soft = state !== 'canceled' && softFails(current.job.step, exitStatus);
      const end: JobEnd = {
        state,
        exit_status: exitStatus,
        signal: body.signal ?? null,
        signal_reason: body.signal_reason ?? null,
        soft_failed: soft,
        finished_at: clock.now(),
        chunks_failed_count: body.chunks_failed_count ?? null,
      };
      if (!(await this.progress.finish(current.job, agent.id, transition, end))) continue;
      // An agent that exits after this job (`--disconnect-after-job`) is offered no other before it goes.
      if (body.ignore_agent_in_dispatches !== undefined) await this.agents.setIgnoreInDispatches(agent, body.ignore_agent_in_dispatches);
      return (await this.jobs.findWithContext(jobId))!;
    }
    throw wrongState('finished', 'running');
  }

  /**
   * `buildkite-agent job promise-failure`: the running command job declares the exit status it
   * will finish with; its build's state machine runs (a hard failure makes the build failing).
   * The same status again changes nothing; another one is a conflict. The reason goes out with
   * the promise's webhook event (job.promised_exit_status) only.
   */
  async promiseFailure(agent: Agent, jobId: string, exitStatus: number, reason: string | null): Promise<void> {
    const current = await this.activeJob(agent, jobId);
    if (current.job.type !== 'script') throw new UnprocessableError(`Only a command job can promise its failure: this one is a ${current.job.type} job.`);
    const promised = current.job.promisedExitStatus ?? (await this.progress.promiseFailure(current.build.id, jobId, exitStatus, reason, clock.now()));
    if (promised === null) throw new UnprocessableError('The job has finished: only a running job can promise its failure.');
    if (promised !== exitStatus) throw new ConflictError(`The job already promised to fail with exit status ${promised}: a job promises once.`);
  }

  /**
   * `buildkite-agent job update`: only `timeout_in_minutes` (alias `timeout`), of a command job
   * the agent holds that has not finished, as documented; counted from the job's start. As the
   * build timeouts page says: extended by up to an hour at a time, and capped by the pipeline's
   * maximum command step timeout as a step's timeout is.
   */
  async updateJob(agent: Agent, jobId: string, attributes: Record<string, unknown>): Promise<string> {
    const current = await this.held(agent, jobId);
    const [[name, value] = []] = Object.entries(attributes);
    if (Object.keys(attributes).length !== 1 || (name !== 'timeout' && name !== 'timeout_in_minutes'))
      throw ValidationError.field(name ?? 'attribute', 'is not an attribute a job update may change: only timeout_in_minutes (alias timeout)');
    const minutes = typeof value === 'string' ? Number(value.trim()) : NaN;
    if (!Number.isInteger(minutes) || minutes < 1 || minutes > MAX_TIMEOUT)
      throw ValidationError.field(name, `must be a whole number of minutes from 1 to ${MAX_TIMEOUT}`);
    if (current.job.type !== 'script') throw new UnprocessableError(`Only a command job can be updated: this one is a ${current.job.type} job.`);
    const was = current.job.timeoutInMinutes;
    if (was !== null && minutes > was + MAX_TIMEOUT_EXTENSION)
      throw ValidationError.field(name, `can extend the job's timeout by up to an hour: it is ${was} minutes, so at most ${was + MAX_TIMEOUT_EXTENSION}`);
    const maximum = await this.jobs.pipelineMaximumTimeout(jobId);
    // The states a job's settings can still change in: until it finishes (a reprioritize's too).
    if (!(await this.jobs.setTimeout(jobId, maximum === null ? minutes : Math.min(minutes, maximum), REPRIORITIZABLE_JOB_STATES)))
      throw new UnprocessableError('The job has finished: only a job that has not can be updated.');
    return jobId;
  }

  /** The jobs the agents hold, for the agents' representation (`job`). */
  async heldJobs(agents: Agent[]): Promise<Map<string, JobContext>> {
    const jobs = await this.jobs.findManyWithContext(agents.flatMap((a) => (a.jobId ? [a.jobId] : [])));
    return new Map(jobs.map((j) => [j.job.id, j]));
  }

  /** The jobs an agent ran or runs, latest first, at most `limit`. */
  recentJobs(agent: Agent, limit = 20): Promise<JobContext[]> {
    return this.jobs.recentByAgent(agent.id, limit);
  }

  /** The job, if this agent holds it: another agent's job is as good as missing. */
  private async held(agent: Agent, jobId: string): Promise<JobContext> {
    mustBeConnected(agent);
    const job = await this.jobs.findWithContext(jobId);
    if (!job || job.job.agentId !== agent.id) throw new NotFoundError('job');
    return job;
  }

  private async move(agent: Agent, jobId: string, event: 'accept' | 'start', fields: Record<string, unknown>): Promise<JobContext> {
    await this.held(agent, jobId);
    if (!(await this.jobs.move(jobId, agent.id, event, fields))) {
      const t = jobTransition(event);
      throw wrongState(t.to, t.from.join(' or '));
    }
    const moved = (await this.jobs.findWithContext(jobId))!;
    if (event === 'accept') this.progress.announceJob(moved.organizationId, moved.build.id, jobId);
    return moved;
  }
}
