/**
 * The rules of agents: registration tokens (admins only; stored as hashes), registration,
 * connection and heartbeats, listing, and agents going lost. The agent's side of a job (polling,
 * accept, start, log, finish) is the builds area's (src/builds/jobs/agent-work.ts). No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { AgentTokenError, BadRequestError, ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../core/errors';
import { sha256Hex } from '../security/keys';
import { ipAllowed } from '../security/allowed-ips';
import { LIVE_STATES, type Agent, type AgentFilter, type AgentRepository, type AgentToken } from './repository';
import type { Actor, User } from '../core/identity';
import type { QueueDispatch } from '../clusters/repository';
import type { AuditLog } from '../audit/service';
import type { ClusterMembership, ClusterService } from '../clusters/service';
import { clock } from '../core/clock';

type RegisterBody = components['schemas']['RegisterAgentRequest'];
type PauseBody = components['schemas']['PauseAgentRequest'];

/**
 * The agent's priority: a string of digits, as the real agent sends it (an integer from an older
 * client became one before the validator: src/http/contract/body-forms.ts); the spec's pattern has checked
 * the string, this bounds the number.
 */
export function agentPriority(priority: RegisterBody['priority']): number | null {
  if (priority === undefined || priority === null) return null;
  const n = Number(priority);
  if (!Number.isSafeInteger(n) || Math.abs(n) > 1_000_000) throw ValidationError.field('priority', 'invalid');
  return n;
}

const TOKEN = /^Token ([A-Za-z0-9_-]{16,200})$/;

function newSecret(): string {
  return crypto.randomBytes(32).toString('base64url');
}

/** Connected, or connected and told to stop (it finishes what it holds). */
export function isLive(agent: Agent): boolean {
  return LIVE_STATES.includes(agent.connectionState);
}

/** The agent API's calls other than connect need a live agent. */
export function mustBeConnected(agent: Agent): void {
  if (!isLive(agent)) throw new UnprocessableError(`The agent is ${agent.connectionState}: POST /v3/connect first.`);
}

/** Paused at `at`: a pause that timed out is over, without anything having to end it. */
export function isPaused(agent: Agent, at: Date): boolean {
  return agent.pause !== null && agent.pause.until > at;
}

/** Minutes a pause lasts when the request names none, as in the real service. */
export const DEFAULT_PAUSE_MINUTES = 5;

/**
 * What a forced stop does to the job the agent holds: cancels it and its build. The builds area
 * does it (src/builds/jobs/agent-work.ts); src/services.ts hands it in.
 */
export type HeldJobCanceller = (agent: Agent) => Promise<void>;

/**
 * What a registration token grants: the organization's (`tokenId`), or a cluster's
 * (`cluster`: the agent joins that cluster).
 */
export interface Registration {
  organizationId: string;
  tokenId: string | null;
  cluster: { clusterId: string; tokenId: string } | null;
}

/** What the agents' area asks of clusters (src/clusters/service.ts), a floor below. */
export type AgentClusters = Pick<ClusterService, 'authenticateToken' | 'membership' | 'queueDispatch' | 'mayManage'>;

/** An agent waiting for work, as a job's agent query rules are matched against it (its tags, its queue's default key). */
export interface WaitingAgent {
  metaData: string[];
  defaultQueue: string | null;
}

export class AgentService {
  constructor(
    private readonly agents: AgentRepository,
    private readonly cancelHeldJob: HeldJobCanceller = async () => undefined,
    private readonly clusters: AgentClusters | null = null,
    /** Where registration tokens' creation is recorded, in its transaction (src/audit/service.ts); never the token. */
    private readonly audit: AuditLog | null = null,
    /**
     * A poll or job read whose agent's stored heartbeat is younger than this writes none (0: every
     * one writes). services.ts sets a twelfth of AGENT_LOST_AFTER_SECONDS, at most 15 s: a polling
     * agent's heartbeat then lags its last sign of life by at most that, far inside the time after
     * which the sweeper calls it lost, and most polls are one write fewer (issue 31).
     */
    private readonly heartbeatWriteEveryMs: number = 0,
  ) {}

  /** The agent as reads show it: a pause that timed out is no pause. */
  private current(agent: Agent): Agent {
    return agent.pause && !isPaused(agent, clock.now()) ? { ...agent, pause: null } : agent;
  }

  /**
   * An agent of the caller's organization that the caller may stop, pause or resume: an
   * administrator, or a maintainer of the agent's cluster (the docs' cluster permissions: "Stop,
   * pause and resume agents belonging to a queue within the cluster").
   */
  private async administered(actor: Actor, id: string): Promise<Agent> {
    const agent = await this.get(actor, id);
    if (actor.role === 'admin') return agent;
    if (agent.clusterId && this.clusters && (await this.clusters.mayManage(actor, agent.clusterId))) return agent;
    throw new ForbiddenError();
  }

  /** No jobs for the agent until it is resumed or `timeout_in_minutes` pass. */
  async pause(actor: Actor, id: string, body: Partial<PauseBody>): Promise<void> {
    await this.pauseAgent(await this.administered(actor, id), actor.principal.user, body);
  }

  /** `buildkite-agent pause` from a job: the agent pauses itself, paused by no user. */
  async pauseSelf(agent: Agent, body: Partial<PauseBody>): Promise<void> {
    await this.pauseAgent(agent, null, body);
  }

  private async pauseAgent(agent: Agent, by: User | null, body: Partial<PauseBody>): Promise<void> {
    if (agent.connectionState !== 'connected') throw new UnprocessableError('Only connected agents may be paused');
    const at = clock.now();
    const minutes = body.timeout_in_minutes ?? DEFAULT_PAUSE_MINUTES;
    const until = new Date(at.getTime() + minutes * 60_000);
    if (!(await this.agents.pause(agent.id, { at, until, byId: by?.id ?? null, note: body.note ?? null, timeoutInMinutes: minutes }))) {
      const now = (await this.agents.find(agent.organizationId, agent.id))!;
      throw new UnprocessableError(now.connectionState === 'connected' ? 'Agent is already paused' : 'Only connected agents may be paused');
    }
  }

  async resume(actor: Actor, id: string): Promise<void> {
    await this.resumeSelf(await this.administered(actor, id));
  }

  /** Also `buildkite-agent resume` from a job. */
  async resumeSelf(agent: Agent): Promise<void> {
    if (!(await this.agents.resume(agent.id, clock.now()))) throw new UnprocessableError('Agent is not paused');
  }

  /**
   * The agent stops taking jobs and is told to disconnect once it holds none (`stopping`, then
   * `stopped` at its disconnect). `force` cancels the job it holds, and that job's build. The
   * REST operation refuses an agent that is not connected with the documented 400.
   */
  async stop(actor: Actor, id: string, force: boolean): Promise<void> {
    const agent = await this.administered(actor, id);
    if (!(await this.stopAgent(agent, force))) throw new BadRequestError('Can only stop connected agents');
  }

  /** `buildkite-agent stop [--force]` from a job; a 422 where it can't (the agent stops retrying on one). */
  async stopSelf(agent: Agent, force: boolean): Promise<void> {
    if (!(await this.stopAgent(agent, force))) throw new UnprocessableError('Can only stop connected agents');
  }

  private async stopAgent(agent: Agent, force: boolean): Promise<boolean> {
    if (!(await this.agents.requestStop(agent.id))) return false;
    if (force) await this.cancelHeldJob(agent);
    return true;
  }

  /** A new registration token for the organization; the token itself is returned once. */
  async createToken(organizationId: string, creator: User | null, description: string | null): Promise<{ record: AgentToken; token: string }> {
    const token = newSecret();
    const record: AgentToken = { id: crypto.randomUUID(), organizationId, description, creator, createdAt: clock.now() };
    const insert = (agents: AgentRepository) => agents.createToken({ ...record, tokenHash: sha256Hex(token) });
    if (!this.audit) await insert(this.agents);
    else
      await this.audit.transaction(
        // Without a creator, the operator at the command line.
        { organization: { id: organizationId }, ...(creator ? { principal: { user: creator } } : {}) },
        (trx) => insert(this.agents.withTransaction(trx)),
        () => ({ type: 'AgentTokenCreatedEvent', subject: { type: 'AgentToken', id: record.id, name: description }, data: { description } }),
      );
    return { record, token };
  }

  /** The REST operation: organization administrators only. */
  async createTokenAs(actor: Actor, description: string | null): Promise<{ record: AgentToken; token: string }> {
    if (actor.role !== 'admin') throw new ForbiddenError();
    return this.createToken(actor.organization.id, actor.principal.user, description);
  }

  /**
   * The organization's registration token, or a cluster's agent token: refused when the
   * cluster's token has expired or does not allow the caller's address (`ip`).
   */
  async authenticateRegistration(header: string | undefined, ip: string | null = null): Promise<Registration> {
    const match = header ? TOKEN.exec(header.trim()) : null;
    if (!match) throw new AgentTokenError('missing or malformed agent registration token');
    const found = await this.agents.findTokenByHash(sha256Hex(match[1]!));
    if (found) return { organizationId: found.organizationId, tokenId: found.id, cluster: null };
    const grant = this.clusters ? await this.clusters.authenticateToken(match[1]!, ip) : null;
    if (!grant) throw new AgentTokenError('unknown agent registration token');
    return { organizationId: grant.organizationId, tokenId: null, cluster: { clusterId: grant.clusterId, tokenId: grant.tokenId } };
  }

  /**
   * The agents a job `agent` may run goes to first (the docs' agent prioritization: higher
   * priorities are assigned work first, agents without one last): connected agents of its
   * organization and cluster with a higher priority that hold no job, are not paused, stopping
   * or out of dispatch, and polled since `since`; each with what a job's rules are matched
   * against (its tags, its queue's default key). None when no agent has a higher priority.
   */
  async waitingAbove(agent: Agent, since: Date, limit: number): Promise<WaitingAgent[]> {
    return this.waiting(await this.agents.idleAbove(agent.organizationId, agent.clusterId, agent.priority, since, limit));
  }

  /**
   * The other agents of `agent`'s organization and cluster waiting for work as `waitingAbove`
   * counts them, whatever their priority: where a queue's `prefer-different` retry affinity sends
   * a retry instead of to the agent that ran the previous attempt.
   */
  async waitingOthers(agent: Agent, since: Date, limit: number): Promise<WaitingAgent[]> {
    return this.waiting(await this.agents.idleOthers(agent.organizationId, agent.clusterId, agent.id, since, limit));
  }

  private async waiting(idle: Agent[]): Promise<WaitingAgent[]> {
    const now = clock.now();
    const waiting: WaitingAgent[] = [];
    for (const other of idle) {
      if (isPaused(other, now) || other.ignoreInDispatches) continue;
      const dispatch = await this.dispatchQueueOf(other);
      if (dispatch) waiting.push({ metaData: other.metaData, defaultQueue: dispatch.defaultQueue });
    }
    return waiting;
  }

  /**
   * The default queue a job's rules are matched with for this agent: `default` for an agent in no
   * cluster, its cluster's default queue for a cluster's agent; null while its queue is paused (or
   * gone), when it takes no work.
   */
  async dispatchQueueOf(agent: Agent): Promise<{ defaultQueue: string | null; preferDifferent: boolean } | null> {
    if (!agent.clusterId) return { defaultQueue: 'default', preferDifferent: false };
    const queue = await this.clusterQueueOf(agent);
    return queue && !queue.paused ? { defaultQueue: queue.defaultQueueKey, preferDifferent: queue.preferDifferent } : null;
  }

  /** The queue of a cluster's agent as dispatch sees it (paused or not, its cluster's default queue); null when gone. */
  async clusterQueueOf(agent: Agent): Promise<QueueDispatch | null> {
    if (!agent.clusterQueueId || !this.clusters) return null;
    return this.clusters.queueDispatch(agent.clusterQueueId);
  }

  /**
   * The agent an access token names, calling from `ip`. An agent of a cluster token whose allowed
   * ranges no longer hold that address is refused (401) and, if it was connected, disconnected
   * with the `agent.blocked` event: the docs' agent events ("when an agent's IP address is no
   * longer included in the agent token's allowed IP addresses") and security page ("existing
   * agents outside the allowed IP ranges will be forcefully disconnected").
   */
  async authenticateAgent(header: string | undefined, ip: string | null): Promise<Agent> {
    const match = header ? TOKEN.exec(header.trim()) : null;
    if (!match) throw new AgentTokenError('missing or malformed agent access token');
    const found = await this.agents.findByAccessTokenHash(sha256Hex(match[1]!));
    if (!found) throw new AgentTokenError('unknown agent access token');
    const { agent, clusterTokenId, allowedIpAddresses } = found;
    if (clusterTokenId !== null && allowedIpAddresses && !ipAllowed(allowedIpAddresses, ip)) {
      await this.agents.block(agent, ip, clusterTokenId, clock.now());
      throw new AgentTokenError(`the agent's cluster token does not allow connections from ${ip ?? 'an unknown address'}`);
    }
    return this.current(agent);
  }

  /**
   * A cluster's agent joins the queue its `queue` tag names, or without one the cluster's
   * default queue (whose key becomes its `queue` tag); a 422 when the cluster has no such queue.
   */
  async register(reg: Registration, body: RegisterBody, from: { ip: string | null; userAgent: string | null }): Promise<{ agent: Agent; accessToken: string }> {
    const accessToken = newSecret();
    let metaData = [...new Set(body.meta_data ?? [])];
    let membership: ClusterMembership | null = null;
    if (reg.cluster && this.clusters) {
      const tag = metaData.find((t) => t.startsWith('queue='));
      membership = await this.clusters.membership(reg.cluster.clusterId, tag === undefined ? null : tag.slice('queue='.length));
      if (tag === undefined) metaData = [...metaData, `queue=${membership.queueKey}`];
    }
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
        pid: body.pid ?? null,
        machineId: body.machine_id ?? null,
        build: body.build ?? null,
        scriptEvalEnabled: body.script_eval_enabled ?? null,
        ignoreInDispatches: body.ignore_in_dispatches ?? null,
        features: body.features ?? [],
        metaData,
        priority: agentPriority(body.priority),
        createdAt: clock.now(),
        clusterId: membership?.clusterId ?? null,
        clusterQueueId: membership?.queueId ?? null,
      },
      reg.tokenId,
      sha256Hex(accessToken),
      reg.cluster?.tokenId ?? null,
    );
    return { agent, accessToken };
  }

  /** A lost agent's registration is over: it has to register again. */
  async connect(agent: Agent): Promise<Agent> {
    if (agent.connectionState === 'lost') throw new UnprocessableError('The agent was lost (no heartbeat for too long): register again.');
    const at = clock.now();
    await this.agents.update(agent.id, { connection_state: 'connected', connected_at: at, disconnected_at: null, last_heartbeat_at: at });
    return { ...agent, connectionState: 'connected', connectedAt: at, disconnectedAt: null, lastHeartbeatAt: at };
  }

  /**
   * The agent goes (`stopped` if it had been told to stop): the job it was assigned and had not
   * accepted is given back first (builds/jobs/agent-work.ts).
   */
  async disconnect(agent: Agent): Promise<Agent> {
    const at = clock.now();
    if (agent.connectionState === 'stopping') {
      await this.agents.update(agent.id, { connection_state: 'stopped', disconnected_at: at, stopped_at: at });
      return { ...agent, connectionState: 'stopped', disconnectedAt: at, stoppedAt: at };
    }
    await this.agents.update(agent.id, { connection_state: 'disconnected', disconnected_at: at });
    return { ...agent, connectionState: 'disconnected', disconnectedAt: at };
  }

  async heartbeat(agent: Agent): Promise<Date> {
    mustBeConnected(agent);
    const at = clock.now();
    await this.agents.update(agent.id, { last_heartbeat_at: at });
    return at;
  }

  async list(actor: Actor, filter: AgentFilter, offset: number, limit: number): Promise<Agent[]> {
    return (await this.agents.list(actor.organization.id, filter, offset, limit)).map((a) => this.current(a));
  }

  async get(actor: Actor, id: string): Promise<Agent> {
    const agent = await this.agents.find(actor.organization.id, id);
    if (!agent) throw new NotFoundError('agent');
    return this.current(agent);
  }

  /**
   * Whether dispatch (ping) leaves the agent out: set at registration (`ignore_in_dispatches`,
   * an agent started to acquire one job) and by the agent's finish (`ignore_agent_in_dispatches`,
   * an agent that exits after this job).
   */
  async setIgnoreInDispatches(agent: Agent, ignore: boolean): Promise<void> {
    await this.agents.update(agent.id, { ignore_in_dispatches: ignore });
  }

  /** A sign of life from the agent (a poll, a job read): its heartbeat time. */
  async touch(agent: Agent, at: Date): Promise<void> {
    // The agent was read from its row by this request's authentication, so its heartbeat is the stored one.
    const last = agent.lastHeartbeatAt?.getTime();
    if (last !== undefined && at.getTime() - last >= 0 && at.getTime() - last < this.heartbeatWriteEveryMs) return;
    await this.agents.update(agent.id, { last_heartbeat_at: at });
  }

  /**
   * Connected agents silent since `cutoff` become lost (at most `limit` of them per call); how
   * many this call marked. Each mark is guarded, so another sweeper or the agent's own ping
   * getting there first is not counted.
   */
  async markSilentAgentsLost(cutoff: Date, now: Date, limit: number): Promise<number> {
    let lost = 0;
    for (const id of await this.agents.silentSince(cutoff, limit)) if (await this.agents.markLost(id, cutoff, now)) lost++;
    return lost;
  }

  /** Agents by id, for the jobs that embed them. */
  async byIds(ids: string[]): Promise<Agent[]> {
    return (await this.agents.findByIds([...new Set(ids)])).map((a) => this.current(a));
  }
}
