/**
 * Agent registration tokens and agents: Knex queries, rows in and domain objects out. Tokens
 * are found by their sha256 only; neither kind of token is stored.
 */
import type { Knex } from 'knex';
import { parseJson, toDate, toDateOrNull } from '../db/values';
import { recordNamedEvent } from '../db/named-events';
import { joinedUser } from '../user/rows';
import type { User } from '../core/identity';
import type { AgentsRow, UsersRow } from '../db/tables';
import { type Nullable, type Prefixed, oneOf } from '../db/row-types';

const CONNECTION_STATES = ['connected', 'disconnected', 'stopping', 'stopped', 'lost', 'never_connected'] as const;
export type ConnectionState = (typeof CONNECTION_STATES)[number];

/** States in which an agent is alive and talking to the service: connected, or connected and told to stop. */
export const LIVE_STATES: ConnectionState[] = ['connected', 'stopping'];

export interface AgentPause {
  at: Date;
  /** When it ends by itself (`at` plus the timeout). */
  until: Date;
  by: User | null;
  note: string | null;
  timeoutInMinutes: number;
}

export interface AgentToken {
  id: string;
  organizationId: string;
  description: string | null;
  creator: User | null;
  createdAt: Date;
}

export interface Agent {
  id: string;
  organizationId: string;
  name: string;
  hostname: string | null;
  ipAddress: string | null;
  userAgent: string | null;
  version: string | null;
  os: string | null;
  arch: string | null;
  /** What the real agent reports of itself at registration (null when it did not say). */
  pid: number | null;
  machineId: string | null;
  build: string | null;
  scriptEvalEnabled: boolean | null;
  ignoreInDispatches: boolean | null;
  features: string[];
  /** `key=value` tags. */
  metaData: string[];
  priority: number | null;
  connectionState: ConnectionState;
  /** The job the agent holds (assigned, accepted or running), if any. */
  jobId: string | null;
  createdAt: Date;
  connectedAt: Date | null;
  disconnectedAt: Date | null;
  lostAt: Date | null;
  stoppedAt: Date | null;
  lastHeartbeatAt: Date | null;
  lastJobFinishedAt: Date | null;
  /** The pause as stored; AgentService reads it as over once `until` has passed. */
  pause: AgentPause | null;
  /** Who created the registration token the agent registered with (read by the REST reads only). */
  creator: User | null;
  /** The cluster and queue an agent registered with a cluster's token joined; null for the organization's tokens. */
  clusterId: string | null;
  clusterQueueId: string | null;
}

export type NewAgent = Omit<
  Agent,
  'creator' | 'connectionState' | 'jobId' | 'connectedAt' | 'disconnectedAt' | 'lostAt' | 'stoppedAt' | 'lastHeartbeatAt' | 'lastJobFinishedAt' | 'pause'
>;

/** A user's columns a left join selects under `<prefix>_` (`u.id as creator_user_id`, `u.name as creator_name`...). */
type UserColumns<P extends string> = Nullable<
  Prefixed<Pick<UsersRow, 'id'>, `${P}_user_`> & Prefixed<Pick<UsersRow, 'name' | 'email' | 'created_at'>, `${P}_`>
>;

/** An agent's row with its creator's and pauser's columns (withCreator). */
type AgentWithUsersRow = AgentsRow & UserColumns<'creator'> & UserColumns<'paused_by'>;

/** An agent's row as agentFromRow reads it: read back (with or without the users' columns) or as insert wrote it. */
type AgentRowIn = Pick<AgentsRow, 'id' | 'organization_id' | 'name' | 'connection_state' | 'created_at'> & Partial<AgentWithUsersRow>;

export function agentFromRow(r: AgentRowIn): Agent {
  return {
    id: r.id,
    organizationId: r.organization_id,
    name: r.name,
    hostname: r.hostname ?? null,
    ipAddress: r.ip_address ?? null,
    userAgent: r.user_agent ?? null,
    version: r.version ?? null,
    os: r.os ?? null,
    arch: r.arch ?? null,
    pid: r.pid === null || r.pid === undefined ? null : Number(r.pid),
    machineId: r.machine_id ?? null,
    build: r.build ?? null,
    scriptEvalEnabled: r.script_eval_enabled === null || r.script_eval_enabled === undefined ? null : Boolean(r.script_eval_enabled),
    ignoreInDispatches: r.ignore_in_dispatches === null || r.ignore_in_dispatches === undefined ? null : Boolean(r.ignore_in_dispatches),
    features: parseJson<string[]>(r.features, []),
    metaData: parseJson<string[]>(r.meta_data, []),
    priority: r.priority === null || r.priority === undefined ? null : Number(r.priority),
    connectionState: oneOf(CONNECTION_STATES, r.connection_state, 'agents.connection_state'),
    jobId: r.job_id ?? null,
    createdAt: toDate(r.created_at),
    connectedAt: toDateOrNull(r.connected_at),
    disconnectedAt: toDateOrNull(r.disconnected_at),
    lostAt: toDateOrNull(r.lost_at),
    stoppedAt: toDateOrNull(r.stopped_at),
    lastHeartbeatAt: toDateOrNull(r.last_heartbeat_at),
    lastJobFinishedAt: toDateOrNull(r.last_job_finished_at),
    pause: r.paused_at
      ? {
          at: toDate(r.paused_at),
          until: toDate(r.paused_until),
          by: joinedUser(r.paused_by_user_id, r.paused_by_name, r.paused_by_email, r.paused_by_created_at),
          note: r.paused_note ?? null,
          timeoutInMinutes: Number(r.paused_timeout_in_minutes),
        }
      : null,
    creator: joinedUser(r.creator_user_id, r.creator_name, r.creator_email, r.creator_created_at),
    clusterId: r.cluster_id ?? null,
    clusterQueueId: r.cluster_queue_id ?? null,
  };
}

/**
 * Agents with their creator (the registration token's) and who paused them, as the REST reads
 * show them: left joins on primary keys in the same statement, no extra round trip.
 */
function withCreator(db: Knex) {
  return db('agents as a')
    .leftJoin('agent_tokens as t', 't.id', 'a.agent_token_id')
    .leftJoin('cluster_tokens as ct', 'ct.id', 'a.cluster_token_id')
    .leftJoin('users as u', (j) => j.on('u.id', '=', 't.creator_id').orOn('u.id', '=', 'ct.created_by_id'))
    .leftJoin('users as p', 'p.id', 'a.paused_by_id')
    .select('a.*', 'u.id as creator_user_id', 'u.name as creator_name', 'u.email as creator_email', 'u.created_at as creator_created_at')
    .select<AgentWithUsersRow[]>('p.id as paused_by_user_id', 'p.name as paused_by_name', 'p.email as paused_by_email', 'p.created_at as paused_by_created_at');
}

/** Not paused at `at`: never paused, resumed, or the pause timed out. */
const notPausedAt = (q: Knex.QueryBuilder, at: Date) => q.where((w) => w.whereNull('paused_at').orWhere('paused_until', '<=', at));

export interface AgentFilter {
  name?: string;
  hostname?: string;
  version?: string;
  clusterQueueId?: string;
  /** Connected and stopping agents only (the REST list's, as the real API's). */
  live?: boolean;
}

export class AgentRepository {
  constructor(private readonly db: Knex) {}

  /** The same queries on `trx`: how a service makes them part of a transaction it opened. */
  withTransaction(trx: Knex.Transaction): AgentRepository {
    return new AgentRepository(trx);
  }

  async createToken(t: AgentToken & { tokenHash: string }): Promise<void> {
    await this.db('agent_tokens').insert({
      id: t.id,
      organization_id: t.organizationId,
      description: t.description,
      token_hash: t.tokenHash,
      creator_id: t.creator?.id ?? null,
      created_at: t.createdAt,
    });
  }

  async findTokenByHash(hash: string): Promise<{ id: string; organizationId: string } | null> {
    const row = await this.db('agent_tokens').where({ token_hash: hash }).first('id', 'organization_id');
    return row ? { id: row.id, organizationId: row.organization_id } : null;
  }

  /** `tokenId`: the organization's registration token, or with `clusterTokenId` none. */
  async insert(a: NewAgent, tokenId: string | null, accessTokenHash: string, clusterTokenId: string | null = null): Promise<Agent> {
    const row = {
      id: a.id,
      organization_id: a.organizationId,
      agent_token_id: tokenId,
      cluster_token_id: clusterTokenId,
      cluster_id: a.clusterId,
      cluster_queue_id: a.clusterQueueId,
      access_token_hash: accessTokenHash,
      name: a.name,
      hostname: a.hostname,
      ip_address: a.ipAddress,
      user_agent: a.userAgent,
      version: a.version,
      os: a.os,
      arch: a.arch,
      pid: a.pid,
      machine_id: a.machineId,
      build: a.build,
      script_eval_enabled: a.scriptEvalEnabled,
      ignore_in_dispatches: a.ignoreInDispatches,
      features: JSON.stringify(a.features),
      meta_data: JSON.stringify(a.metaData),
      priority: a.priority,
      connection_state: 'never_connected',
      created_at: a.createdAt,
    };
    await this.db('agents').insert(row);
    return agentFromRow(row);
  }

  /**
   * The agent an access token names, with the cluster token it registered with and that token's
   * allowed ranges as they are now (null: any address, or no cluster token), in one read.
   */
  async findByAccessTokenHash(hash: string): Promise<{ agent: Agent; clusterTokenId: string | null; allowedIpAddresses: string | null } | null> {
    const row = await this.db('agents as a')
      .leftJoin('cluster_tokens as t', 't.id', 'a.cluster_token_id')
      .where('a.access_token_hash', hash)
      .first<(AgentsRow & { token_allowed_ip_addresses: string | null }) | undefined>('a.*', 't.allowed_ip_addresses as token_allowed_ip_addresses');
    if (!row) return null;
    return { agent: agentFromRow(row), clusterTokenId: row.cluster_token_id ?? null, allowedIpAddresses: row.token_allowed_ip_addresses ?? null };
  }

  /**
   * Disconnects a connected agent whose cluster token no longer allows the address it calls from,
   * and records the `agent.blocked` event (a named outbox event: the disconnect itself is
   * `agent.disconnected`), in one transaction. An agent not connected is left, and not told of
   * again. Whether it was connected.
   */
  async block(agent: Agent, ip: string | null, clusterTokenId: string, at: Date): Promise<boolean> {
    return this.db.transaction(async (trx) => {
      const changed = await trx('agents')
        .where({ id: agent.id })
        .whereIn('connection_state', LIVE_STATES)
        .update({ connection_state: 'disconnected', disconnected_at: at });
      if (changed === 0) return false;
      await recordNamedEvent(trx, {
        kind: 'agent',
        subjectId: agent.id,
        organizationId: agent.organizationId,
        state: 'blocked',
        event: 'agent.blocked',
        detail: { blocked_ip: ip ?? '', cluster_token_id: clusterTokenId },
        at,
      });
      return true;
    });
  }

  async find(organizationId: string, id: string): Promise<Agent | null> {
    const row = await withCreator(this.db).where({ 'a.organization_id': organizationId, 'a.id': id }).first();
    return row ? agentFromRow(row) : null;
  }

  async findByIds(ids: string[]): Promise<Agent[]> {
    if (!ids.length) return [];
    return (await withCreator(this.db).whereIn('a.id', ids)).map(agentFromRow);
  }

  async list(organizationId: string, f: AgentFilter, offset: number, limit: number): Promise<Agent[]> {
    const q = withCreator(this.db).where({ 'a.organization_id': organizationId });
    if (f.name !== undefined) q.where('a.name', f.name);
    if (f.hostname !== undefined) q.where('a.hostname', f.hostname);
    if (f.version !== undefined) q.where('a.version', f.version);
    if (f.clusterQueueId !== undefined) q.where('a.cluster_queue_id', f.clusterQueueId);
    if (f.live) q.whereIn('a.connection_state', LIVE_STATES);
    const rows = await q
      .orderBy([
        { column: 'a.created_at', order: 'desc' },
        { column: 'a.id', order: 'desc' },
      ])
      .offset(offset)
      .limit(limit);
    return rows.map(agentFromRow);
  }

  async update(
    id: string,
    fields: Partial<Pick<AgentsRow, 'connection_state' | 'connected_at' | 'disconnected_at' | 'stopped_at' | 'last_heartbeat_at' | 'ignore_in_dispatches'>>,
  ): Promise<void> {
    await this.db('agents').where({ id }).update(fields);
  }

  /** Pauses the agent if it is connected and not paused at `p.at`; false if it was not. */
  async pause(id: string, p: { at: Date; until: Date; byId: string | null; note: string | null; timeoutInMinutes: number }): Promise<boolean> {
    const n = await notPausedAt(this.db('agents').where({ id, connection_state: 'connected' }), p.at).update({
      paused_at: p.at,
      paused_until: p.until,
      paused_by_id: p.byId,
      paused_note: p.note,
      paused_timeout_in_minutes: p.timeoutInMinutes,
    });
    return n > 0;
  }

  /** Ends the agent's pause if it is paused at `at`; false if it was not. */
  async resume(id: string, at: Date): Promise<boolean> {
    const n = await this.db('agents')
      .where({ id })
      .whereNotNull('paused_at')
      .where('paused_until', '>', at)
      .update({ paused_at: null, paused_until: null, paused_by_id: null, paused_note: null, paused_timeout_in_minutes: null });
    return n > 0;
  }

  /** A connected agent is told to stop (`stopping`); false if it was not connected. */
  async requestStop(id: string): Promise<boolean> {
    return (await this.db('agents').where({ id, connection_state: 'connected' }).update({ connection_state: 'stopping' })) > 0;
  }

  /**
   * The organization's connected agents in the cluster (none: null) that hold no job, whose
   * heartbeat is stored since `since`, with a priority above `priority` (any priority is above
   * none, as the docs' agent prioritization says: agents without one are assigned work last),
   * the highest first, at most `limit` (the partial index agents_idle_priority_index).
   */
  idleAboveQuery(organizationId: string, clusterId: string | null, priority: number | null, limit: number) {
    // The heartbeat is not a condition of the read: with it SQLite would pick the heartbeat index,
    // every live agent of every organization, over this organization's few with a priority.
    const q = this.idleIn(organizationId, clusterId);
    if (priority === null) q.whereNotNull('priority');
    else q.where('priority', '>', priority);
    // The highest first, and no more than a poll's candidates could be left to.
    return { query: q.orderBy('priority', 'desc').limit(limit).select('*') };
  }

  /** Connected agents of the organization and cluster that hold no job. */
  private idleIn(organizationId: string, clusterId: string | null): Knex.QueryBuilder<AgentsRow, AgentsRow[]> {
    const q = this.db('agents').where({ organization_id: organizationId, connection_state: 'connected' }).whereNull('job_id');
    return clusterId === null ? q.whereNull('cluster_id') : q.where({ cluster_id: clusterId });
  }

  /** Connected agents of the organization and cluster but `exceptId` that hold no job and polled since `since`. */
  async idleOthers(organizationId: string, clusterId: string | null, exceptId: string, since: Date, limit: number): Promise<Agent[]> {
    return polledSince(await this.idleIn(organizationId, clusterId).whereNot({ id: exceptId }).limit(limit).select('*'), since);
  }

  async idleAbove(organizationId: string, clusterId: string | null, priority: number | null, since: Date, limit: number): Promise<Agent[]> {
    return polledSince(await this.idleAboveQuery(organizationId, clusterId, priority, limit).query, since);
  }

  /** Live agents (connected or stopping) whose last sign of life is older than `cutoff`. */
  async silentSince(cutoff: Date, limit: number): Promise<string[]> {
    return this.db('agents')
      .whereIn('connection_state', LIVE_STATES)
      .where('last_heartbeat_at', '<', cutoff)
      .orderBy('last_heartbeat_at')
      .limit(limit)
      .pluck('id');
  }

  /**
   * Marks the agent lost, if it is still connected and still silent since `cutoff`: of two
   * sweepers (or a sweeper and the agent's own ping) only one changes the row.
   */
  async markLost(id: string, cutoff: Date, at: Date): Promise<boolean> {
    const n = await this.db('agents')
      .where({ id })
      .whereIn('connection_state', LIVE_STATES)
      .where('last_heartbeat_at', '<', cutoff)
      .update({ connection_state: 'lost', lost_at: at });
    return n > 0;
  }

  /*
   * The job an agent holds (`agents.job_id`), kept with the job's own row by the transactions
   * of src/builds/progress/.
   */

  /**
   * The agent holds the job it claims, if at `at` it is connected (not stopping), not paused and
   * holds none: false otherwise, so a pause or stop that lands while the agent polls wins.
   */
  async holdJob(agentId: string, jobId: string, at: Date): Promise<boolean> {
    const q = this.db('agents').where({ id: agentId, connection_state: 'connected' }).whereNull('job_id');
    return (await notPausedAt(q, at).update({ job_id: jobId })) > 0;
  }

  /** The agent holds no job (its assigned job went back to be offered again). */
  async dropJob(agentId: string): Promise<void> {
    await this.db('agents').where({ id: agentId }).update({ job_id: null });
  }

  /** The agent finished its job at `at`, and holds none. */
  async jobFinished(agentId: string, at: Date): Promise<void> {
    await this.db('agents').where({ id: agentId }).update({ job_id: null, last_job_finished_at: at });
  }

  /** The agent no longer holds `jobId` (ended without it), if it still did. */
  async dropJobIfHeld(agentId: string, jobId: string): Promise<void> {
    await this.db('agents').where({ id: agentId, job_id: jobId }).update({ job_id: null });
  }

  /** Agents holding one of `jobIds` while it is in one of `states` hold it no more: those jobs are being canceled at once. */
  async dropHeldJobs(jobIds: readonly string[], states: readonly string[]): Promise<void> {
    const held = this.db('jobs').whereIn('id', jobIds).whereIn('state', states).select('id');
    await this.db('agents').whereIn('job_id', held).update({ job_id: null });
  }

  /**
   * Agents holding a job of these builds in one of `states` hold it no more: the builds are
   * canceled (an assigned job, not yet accepted) or skipped (an accepted one too).
   */
  async dropJobsOf(buildIds: string[], states: readonly string[]): Promise<void> {
    const held = this.db('jobs').whereIn('build_id', buildIds).whereIn('state', states).select('id');
    await this.db('agents').whereIn('job_id', held).update({ job_id: null });
  }

  /** Agents counted by connection state (the metrics' scrape). */
  async countByConnectionState(): Promise<{ state: string; n: number }[]> {
    const rows: { state: string; n: number | string }[] = await this.db('agents')
      .select('connection_state as state')
      .count({ n: '*' })
      .groupBy('connection_state');
    return rows.map((r) => ({ state: r.state, n: Number(r.n) }));
  }

  /** The agent's connection as it stands at the end of a history (the fixture loader's; an agent's connect/disconnect would write these). */
  async writeConnectionHistory(
    agentId: string,
    h: { connectionState: string; connectedAt: Date | null; disconnectedAt: Date | null; lostAt: Date | null; lastHeartbeatAt: Date | null },
  ): Promise<void> {
    await this.db('agents').where({ id: agentId }).update({
      connection_state: h.connectionState,
      connected_at: h.connectedAt,
      disconnected_at: h.disconnectedAt,
      lost_at: h.lostAt,
      last_heartbeat_at: h.lastHeartbeatAt,
    });
  }
}

/** The agents of `rows` whose stored heartbeat is from `since` on: filtered here, not in the read (see idleAboveQuery). */
function polledSince(rows: AgentsRow[], since: Date): Agent[] {
  return rows.map(agentFromRow).filter((a) => a.lastHeartbeatAt !== null && a.lastHeartbeatAt >= since);
}
