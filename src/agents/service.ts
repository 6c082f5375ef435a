/**
 * The rules of agents: registration tokens (admins only; stored as hashes), registration and
 * connection, and the agent's side of a job: polling claims the scheduled job of highest
 * priority, then the oldest, whose query rules the agent's tags satisfy; then accept, start,
 * log chunks and finish move it along, each only by the agent holding it. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import type { Step } from '../pipelines/configuration';
import { AgentTokenError, ForbiddenError, NotFoundError, PayloadTooLargeError, UnprocessableError } from '../core/errors';
import type { BuildProgress } from '../builds/progress/service';
import type { JobLogRepository } from '../jobs/log-repository';
import type { JobState } from '../builds/model';
import type { JobContext, JobEnd } from '../jobs/model';
import type { JobRepository } from '../jobs/repository';
import { sha256Hex } from '../security/keys';
import { matchesQueryRules } from './query-rules';
import type { Agent, AgentFilter, AgentRepository, AgentToken } from './repository';
import type { Actor, User } from '../core/identity';

type RegisterBody = components['schemas']['RegisterAgentRequest'];

/**
 * How many jobs the agent may run one poll reads at once, in dispatch order: enough that agents
 * polling together each find one the others did not take first.
 */
const CANDIDATES_PER_POLL = 32;
/** How many times a poll reads candidates again after losing every one of them to other agents. */
const CLAIM_ROUNDS = 3;
/** A job's log cap by default: the real service's "log size per job" (1,024 MiB). */
export const DEFAULT_JOB_LOG_LIMIT_BYTES = 1024 * 1024 * 1024;
const TOKEN = /^Token ([A-Za-z0-9_-]{16,200})$/;

function newSecret(): string {
  return crypto.randomBytes(32).toString('base64url');
}

/** Whether the step's `soft_fail` covers this exit status. */
export function softFails(step: Step, exitStatus: number): boolean {
  if (step.type !== 'script' || exitStatus === 0) return false;
  const rule = step.soft_fail;
  if (typeof rule === 'boolean') return rule;
  return rule.some((r) => r.exit_status === '*' || r.exit_status === exitStatus);
}

/**
 * What a finish makes of a job in `from`: a job being canceled ends `canceled` and one timing out
 * `timed_out`, whatever the exit status; the agent's own timeout (`signal_reason: timeout`)
 * also ends `timed_out`; else exit status 0 passes. Null: the job can't be finished from `from`.
 */
export function finishedState(from: JobState, exitStatus: number, signalReason: string | null): JobState | null {
  if (from === 'canceling') return 'canceled';
  if (from === 'timing_out') return 'timed_out';
  if (from !== 'running') return null;
  if (signalReason === 'timeout') return 'timed_out';
  return exitStatus === 0 ? 'passed' : 'failed';
}

function formatBytes(n: number): string {
  return n % (1024 * 1024) === 0 ? `${n / (1024 * 1024)} MiB` : `${n} bytes`;
}

function wrongState(to: string, from: string): UnprocessableError {
  return new UnprocessableError(`The job can't be ${to}: it is not ${from}.`);
}

export interface Registration {
  organizationId: string;
  tokenId: string;
}

export class AgentService {
  constructor(
    private readonly agents: AgentRepository,
    private readonly jobs: JobRepository,
    private readonly logs: JobLogRepository,
    /** A job move that goes with the agent's row or the build's state machine goes through it. */
    private readonly progress: BuildProgress,
    /** The sweeper's clock too, so heartbeats and job times are on the clock it judges by. */
    private readonly clock: () => Date = () => new Date(),
    private readonly jobLogLimitBytes: number = DEFAULT_JOB_LOG_LIMIT_BYTES,
  ) {}

  /** A new registration token for the organization; the token itself is returned once. */
  async createToken(organizationId: string, creator: User | null, description: string | null): Promise<{ record: AgentToken; token: string }> {
    const token = newSecret();
    const record: AgentToken = { id: crypto.randomUUID(), organizationId, description, creator, createdAt: new Date() };
    await this.agents.createToken({ ...record, tokenHash: sha256Hex(token) });
    return { record, token };
  }

  /** The REST operation: organization administrators only. */
  async createTokenAs(actor: Actor, description: string | null): Promise<{ record: AgentToken; token: string }> {
    if (actor.role !== 'admin') throw new ForbiddenError();
    return this.createToken(actor.organization.id, actor.principal.user, description);
  }

  async authenticateRegistration(header: string | undefined): Promise<Registration> {
    const match = header ? TOKEN.exec(header.trim()) : null;
    if (!match) throw new AgentTokenError('missing or malformed agent registration token');
    const found = await this.agents.findTokenByHash(sha256Hex(match[1]!));
    if (!found) throw new AgentTokenError('unknown agent registration token');
    return { organizationId: found.organizationId, tokenId: found.id };
  }

  async authenticateAgent(header: string | undefined): Promise<Agent> {
    const match = header ? TOKEN.exec(header.trim()) : null;
    if (!match) throw new AgentTokenError('missing or malformed agent access token');
    const agent = await this.agents.findByAccessTokenHash(sha256Hex(match[1]!));
    if (!agent) throw new AgentTokenError('unknown agent access token');
    return agent;
  }

  async register(reg: Registration, body: RegisterBody, from: { ip: string | null; userAgent: string | null }): Promise<{ agent: Agent; accessToken: string }> {
    const accessToken = newSecret();
    const agent = await this.agents.insert(
      {
        id: crypto.randomUUID(),
        organizationId: reg.organizationId,
        name: body.name,
        hostname: body.hostname ?? null,
        ipAddress: from.ip,
        userAgent: from.userAgent?.slice(0, 255) ?? null,
        version: body.version ?? null,
        os: body.os ?? null,
        arch: body.arch ?? null,
        metaData: [...new Set(body.meta_data ?? [])],
        priority: body.priority ?? null,
        createdAt: this.clock(),
      },
      reg.tokenId,
      sha256Hex(accessToken),
    );
    return { agent, accessToken };
  }

  /** A lost agent's registration is over: it has to register again. */
  async connect(agent: Agent): Promise<Agent> {
    if (agent.connectionState === 'lost') throw new UnprocessableError('The agent was lost (no heartbeat for too long): register again.');
    const at = this.clock();
    await this.agents.update(agent.id, { connection_state: 'connected', connected_at: at, disconnected_at: null, last_heartbeat_at: at });
    return { ...agent, connectionState: 'connected', connectedAt: at, disconnectedAt: null, lastHeartbeatAt: at };
  }

  /** A job assigned but not yet accepted goes back to be offered to another agent. */
  async disconnect(agent: Agent): Promise<Agent> {
    const at = this.clock();
    await this.progress.release(agent.id);
    await this.agents.update(agent.id, { connection_state: 'disconnected', disconnected_at: at });
    return { ...agent, connectionState: 'disconnected', disconnectedAt: at };
  }

  async heartbeat(agent: Agent): Promise<Date> {
    this.mustBeConnected(agent);
    const at = this.clock();
    await this.agents.update(agent.id, { last_heartbeat_at: at });
    return at;
  }

  /** The job the agent holds, else the first scheduled job it matches (priority, then age), claimed for it alone. */
  async ping(agent: Agent): Promise<{ action: 'idle' | 'disconnect'; job: JobContext | null }> {
    if (agent.connectionState === 'never_connected') throw new UnprocessableError('The agent has not connected: POST /v3/connect first.');
    if (agent.connectionState !== 'connected') return { action: 'disconnect', job: null };
    await this.agents.update(agent.id, { last_heartbeat_at: this.clock() });
    const held = await this.jobs.heldBy(agent.id);
    if (held) return { action: 'idle', job: held };
    const keys = (await this.jobs.dispatchClasses(agent.organizationId)).filter((c) => matchesQueryRules(c.agentQueryRules, agent.metaData)).map((c) => c.key);
    if (!keys.length) return { action: 'idle', job: null };
    // Every candidate is one this agent may run; a full page lost to other agents is read again.
    for (let round = 0; round < CLAIM_ROUNDS; round++) {
      const candidates = await this.jobs.dispatchCandidates(agent.organizationId, keys, CANDIDATES_PER_POLL);
      for (const id of candidates) {
        // Lost the race for this one: another agent claimed it between the read and the update.
        if (!(await this.progress.claim(id, agent.id))) continue;
        return { action: 'idle', job: await this.jobs.findWithContext(id) };
      }
      if (candidates.length < CANDIDATES_PER_POLL) break;
    }
    return { action: 'idle', job: null };
  }

  async accept(agent: Agent, jobId: string): Promise<JobContext> {
    return this.move(agent, jobId, 'assigned', 'accepted', {});
  }

  /** The job runs; the build is running from its first job's start. */
  async start(agent: Agent, jobId: string): Promise<JobContext> {
    const job = await this.move(agent, jobId, 'accepted', 'running', { started_at: this.clock() });
    await this.progress.advance(job.build.id);
    return job;
  }

  async appendChunk(agent: Agent, jobId: string, chunk: components['schemas']['LogChunk']): Promise<void> {
    const job = await this.held(agent, jobId);
    if (job.job.state !== 'running' && job.job.state !== 'accepted')
      throw new UnprocessableError(`Log chunks can't be added to a job that is ${job.job.state}.`);
    if (!(await this.logs.appendChunk(jobId, chunk, this.clock(), this.jobLogLimitBytes))) {
      throw new PayloadTooLargeError(
        `This job's log has reached its limit of ${formatBytes(this.jobLogLimitBytes)} (JOB_LOG_LIMIT_BYTES): the chunk was not stored.`,
      );
    }
  }

  /**
   * The job as it stands, for its agent to learn of a cancel or a timeout while it runs the job
   * (`canceling`, `timing_out`). Asking counts as a sign of life, like a heartbeat.
   */
  async job(agent: Agent, jobId: string): Promise<JobContext> {
    const job = await this.held(agent, jobId);
    await this.agents.update(agent.id, { last_heartbeat_at: this.clock() });
    return job;
  }

  /** Ends the job as finishedState says; a move racing with a cancel or timeout is read again. */
  async finish(agent: Agent, jobId: string, body: components['schemas']['FinishJobRequest']): Promise<JobContext> {
    for (let attempt = 0; attempt < 3; attempt++) {
      const current = await this.held(agent, jobId);
      const state = finishedState(current.job.state, body.exit_status, body.signal_reason ?? null);
      if (!state) throw wrongState('finished', 'running');
      const soft = state !== 'canceled' && softFails(current.job.step, body.exit_status);
      const end: JobEnd = { state, exit_status: body.exit_status, signal_reason: body.signal_reason ?? null, soft_failed: soft, finished_at: this.clock() };
      if (!(await this.progress.finish(jobId, agent.id, current.job.state, end))) continue;
      if (state === 'failed' || state === 'timed_out') await this.progress.retryOrAdvance(current.job, body.exit_status, end.signal_reason);
      else await this.progress.advance(current.build.id);
      return (await this.jobs.findWithContext(jobId))!;
    }
    throw wrongState('finished', 'running');
  }

  async list(actor: Actor, filter: AgentFilter, offset: number, limit: number): Promise<{ agent: Agent; job: JobContext | null }[]> {
    return this.withJobs(await this.agents.list(actor.organization.id, filter, offset, limit));
  }

  async get(actor: Actor, id: string): Promise<{ agent: Agent; job: JobContext | null }> {
    const agent = await this.agents.find(actor.organization.id, id);
    if (!agent) throw new NotFoundError('agent');
    return (await this.withJobs([agent]))[0]!;
  }

  /** Agents by id, for the jobs that embed them. */
  byIds(ids: string[]): Promise<Agent[]> {
    return this.agents.findByIds([...new Set(ids)]);
  }

  private async withJobs(agents: Agent[]) {
    const jobs = await this.jobs.findManyWithContext(agents.flatMap((a) => (a.jobId ? [a.jobId] : [])));
    const byId = new Map(jobs.map((j) => [j.job.id, j]));
    return agents.map((agent) => ({ agent, job: (agent.jobId && byId.get(agent.jobId)) || null }));
  }

  private mustBeConnected(agent: Agent): void {
    if (agent.connectionState !== 'connected') throw new UnprocessableError(`The agent is ${agent.connectionState}: POST /v3/connect first.`);
  }

  /** The job, if this agent holds it: another agent's job is as good as missing. */
  private async held(agent: Agent, jobId: string): Promise<JobContext> {
    this.mustBeConnected(agent);
    const job = await this.jobs.findWithContext(jobId);
    if (!job || job.job.agentId !== agent.id) throw new NotFoundError('job');
    return job;
  }

  private async move(agent: Agent, jobId: string, from: string, to: string, fields: Record<string, unknown>): Promise<JobContext> {
    await this.held(agent, jobId);
    if (!(await this.jobs.move(jobId, agent.id, from, to, fields))) throw wrongState(to, from);
    return (await this.jobs.findWithContext(jobId))!;
  }
}
