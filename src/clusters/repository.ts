/**
 * Clusters, their queues and their agent tokens: Knex queries, rows in and domain objects out.
 * Token secrets are found by their sha256 only; they are never stored.
 */
import type { Knex } from 'knex';
import type { User } from '../core/identity';
import type {
  BuildsRow,
  ClusterMaintainersRow,
  ClusterQueuesRow,
  ClusterSecretsRow,
  ClusterTokensRow,
  ClustersRow,
  JobsRow,
  PipelinesRow,
  TeamsRow,
  UsersRow,
} from '../db/tables';
import { toDate, toDateOrNull } from '../db/values';
import { recordNamedEvent } from '../db/named-events';
import { joinedUser } from '../user/rows';
import { type Nullable, type Prefixed, type Renamed, oneOf } from '../db/row-types';

export interface Cluster {
  id: string;
  organizationId: string;
  name: string;
  description: string | null;
  emoji: string | null;
  color: string | null;
  defaultQueueId: string | null;
  createdBy: User | null;
  createdAt: Date;
}

export type RetryAgentAffinity = 'prefer-warmest' | 'prefer-different';
const RETRY_AGENT_AFFINITIES: readonly RetryAgentAffinity[] = ['prefer-warmest', 'prefer-different'];

export interface ClusterQueue {
  id: string;
  clusterId: string;
  key: string;
  description: string | null;
  retryAgentAffinity: RetryAgentAffinity;
  pause: { at: Date; by: User | null; note: string | null } | null;
  createdBy: User | null;
  createdAt: Date;
}

export interface ClusterToken {
  id: string;
  clusterId: string;
  description: string;
  /** Space-separated CIDR ranges, as given; null: any address. */
  allowedIpAddresses: string | null;
  expiresAt: Date | null;
  createdBy: User | null;
  createdAt: Date;
}

/** A user or a team that maintains a cluster. */
export interface ClusterMaintainer {
  id: string;
  clusterId: string;
  actor: { type: 'user'; id: string; name: string; email: string } | { type: 'team'; id: string; name: string; slug: string };
  createdAt: Date;
}

/** A user joined as `prefix_...` columns (`withUser`): null where no user matched. */
type JoinedUser<P extends string> = Nullable<Prefixed<UsersRow, `${P}_`>>;

/** A maintainer row with its user's name and email and its team's name and slug (left joins). */
type MaintainerRow = ClusterMaintainersRow &
  Nullable<Renamed<UsersRow, { user_name: 'name'; user_email: 'email' }>> &
  Nullable<Renamed<TeamsRow, { team_name: 'name'; team_slug: 'slug' }>>;

function maintainerActor(r: MaintainerRow): ClusterMaintainer['actor'] {
  if (r.user_id && r.user_name !== null && r.user_email !== null) return { type: 'user', id: r.user_id, name: r.user_name, email: r.user_email };
  if (r.team_id !== null && r.team_slug !== null && r.team_name !== null) return { type: 'team', id: r.team_id, name: r.team_name, slug: r.team_slug };
  throw new TypeError(`cluster_maintainers ${r.id}: neither a user nor a team`);
}

function maintainerFromRow(r: MaintainerRow): ClusterMaintainer {
  return {
    id: r.id,
    clusterId: r.cluster_id,
    actor: maintainerActor(r),
    createdAt: toDate(r.created_at),
  };
}

/** A secret's details; its value stays sealed (`valueSealed`) and is never serialized. */
export interface ClusterSecret {
  id: string;
  clusterId: string;
  key: string;
  description: string | null;
  policy: string | null;
  createdBy: User | null;
  createdAt: Date;
  updatedBy: User | null;
  updatedAt: Date;
  lastReadAt: Date | null;
}

type SecretRow = ClusterSecretsRow & JoinedUser<'cb'> & JoinedUser<'ub'>;

function secretFromRow(r: SecretRow): ClusterSecret {
  return {
    id: r.id,
    clusterId: r.cluster_id,
    key: r.key,
    description: r.description ?? null,
    policy: r.policy ?? null,
    createdBy: joinedUser(r.cb_id, r.cb_name, r.cb_email, r.cb_created_at),
    createdAt: toDate(r.created_at),
    updatedBy: joinedUser(r.ub_id, r.ub_name, r.ub_email, r.ub_created_at),
    updatedAt: toDate(r.updated_at),
    lastReadAt: toDateOrNull(r.last_read_at),
  };
}

/** A job, as a secret's policy judges it, and the cluster its pipeline was in when it was created. */
export interface JobSecretContext {
  clusterId: string | null;
  pipelineId: string;
  pipelineSlug: string;
  buildSource: string;
  buildBranch: string;
  creatorEmail: string | null;
  creatorTeamIds: string[];
  clusterQueueId: string | null;
  clusterQueueKey: string | null;
}

/** What a registration with a cluster token needs to know of it. */
export interface ClusterTokenGrant {
  tokenId: string;
  clusterId: string;
  organizationId: string;
  allowedIpAddresses: string | null;
  expiresAt: Date | null;
}

/** What dispatch needs to know of an agent's queue: whether it is paused, and its cluster's default queue key. */
export interface QueueDispatch {
  key: string;
  paused: boolean;
  defaultQueueKey: string | null;
  /** Its `retry_agent_affinity` is `prefer-different`: a retry goes to another agent than the previous attempt's, where one is waiting. */
  preferDifferent: boolean;
}

/** Left-joins `users` as `alias` on `column`, selecting its columns prefixed `alias_`. */
function withUser(q: Knex.QueryBuilder, alias: string, column: string): Knex.QueryBuilder {
  return q
    .leftJoin(`users as ${alias}`, `${alias}.id`, column)
    .select(`${alias}.id as ${alias}_id`, `${alias}.name as ${alias}_name`, `${alias}.email as ${alias}_email`, `${alias}.created_at as ${alias}_created_at`);
}

type ClusterRow = ClustersRow & JoinedUser<'cb'>;

function clusterFromRow(r: ClusterRow): Cluster {
  return {
    id: r.id,
    organizationId: r.organization_id,
    name: r.name,
    description: r.description ?? null,
    emoji: r.emoji ?? null,
    color: r.color ?? null,
    defaultQueueId: r.default_queue_id ?? null,
    createdBy: joinedUser(r.cb_id, r.cb_name, r.cb_email, r.cb_created_at),
    createdAt: toDate(r.created_at),
  };
}

type QueueRow = ClusterQueuesRow & JoinedUser<'cb'> & JoinedUser<'pb'>;

function queueFromRow(r: QueueRow): ClusterQueue {
  return {
    id: r.id,
    clusterId: r.cluster_id,
    key: r.key,
    description: r.description ?? null,
    retryAgentAffinity: oneOf(RETRY_AGENT_AFFINITIES, r.retry_agent_affinity, 'cluster_queues.retry_agent_affinity'),
    pause: r.dispatch_paused_at
      ? { at: toDate(r.dispatch_paused_at), by: joinedUser(r.pb_id, r.pb_name, r.pb_email, r.pb_created_at), note: r.dispatch_paused_note ?? null }
      : null,
    createdBy: joinedUser(r.cb_id, r.cb_name, r.cb_email, r.cb_created_at),
    createdAt: toDate(r.created_at),
  };
}

type TokenRow = ClusterTokensRow & JoinedUser<'cb'>;

function tokenFromRow(r: TokenRow): ClusterToken {
  return {
    id: r.id,
    clusterId: r.cluster_id,
    description: r.description,
    allowedIpAddresses: r.allowed_ip_addresses ?? null,
    expiresAt: toDateOrNull(r.expires_at),
    createdBy: joinedUser(r.cb_id, r.cb_name, r.cb_email, r.cb_created_at),
    createdAt: toDate(r.created_at),
  };
}

/** `queueDispatch`'s read: the queue's key and pause, and its cluster's default queue's key (left join). */
type QueueDispatchRow = Pick<ClusterQueuesRow, 'key'> &
  Renamed<ClusterQueuesRow, { paused_at: 'dispatch_paused_at'; affinity: 'retry_agent_affinity' }> &
  Nullable<Renamed<ClusterQueuesRow, { default_key: 'key' }>>;

/** `jobSecretContext`'s read: the job's cluster and queue, its pipeline, its build and the build's creator. */
type JobSecretContextRow = Renamed<JobsRow, { cluster_id: 'cluster_id'; queue_id: 'cluster_queue_id' }> &
  Nullable<Renamed<ClusterQueuesRow, { queue_key: 'key' }>> &
  Renamed<PipelinesRow, { pipeline_id: 'id'; pipeline_slug: 'slug' }> &
  Pick<BuildsRow, 'source' | 'branch' | 'creator_id'> &
  Nullable<Renamed<UsersRow, { creator_email: 'email' }>>;

/** `findTokenByHash`'s read: the token and its cluster's organization. */
type TokenGrantRow = Pick<ClusterTokensRow, 'id' | 'cluster_id' | 'allowed_ip_addresses' | 'expires_at'> & Pick<ClustersRow, 'organization_id'>;

export class ClusterRepository {
  constructor(private readonly db: Knex) {}

  withTransaction(trx: Knex.Transaction): ClusterRepository {
    return new ClusterRepository(trx);
  }

  /* Clusters */

  private clusters(): Knex.QueryBuilder<ClusterRow, ClusterRow[]> {
    return withUser(this.db('clusters as c').select('c.*'), 'cb', 'c.created_by_id');
  }

  async insertCluster(c: Omit<Cluster, 'createdBy'> & { createdById: string | null }): Promise<void> {
    await this.db('clusters').insert({
      id: c.id,
      organization_id: c.organizationId,
      name: c.name,
      description: c.description,
      emoji: c.emoji,
      color: c.color,
      default_queue_id: c.defaultQueueId,
      created_by_id: c.createdById,
      created_at: c.createdAt,
    });
  }

  async findCluster(organizationId: string, id: string): Promise<Cluster | null> {
    const row = await this.clusters().where('c.organization_id', organizationId).where('c.id', id).first();
    return row ? clusterFromRow(row) : null;
  }

  /** By id alone: for the agents' and builds' areas, which already know the organization. */
  async findClusterById(id: string): Promise<Cluster | null> {
    const row = await this.clusters().where('c.id', id).first();
    return row ? clusterFromRow(row) : null;
  }

  async findClusterByName(organizationId: string, name: string): Promise<{ id: string } | null> {
    return (await this.db('clusters').where({ organization_id: organizationId, name }).first('id')) ?? null;
  }

  async listClusters(organizationId: string, offset: number, limit: number): Promise<Cluster[]> {
    const rows = await this.clusters()
      .where('c.organization_id', organizationId)
      .orderBy([
        { column: 'c.created_at', order: 'asc' },
        { column: 'c.id', order: 'asc' },
      ])
      .offset(offset)
      .limit(limit);
    return rows.map(clusterFromRow);
  }

  async updateCluster(id: string, fields: Partial<Pick<ClustersRow, 'name' | 'description' | 'emoji' | 'color' | 'default_queue_id'>>): Promise<void> {
    if (Object.keys(fields).length) await this.db('clusters').where({ id }).update(fields);
  }

  async deleteCluster(id: string): Promise<void> {
    await this.db('clusters').where({ id }).delete();
  }

  /** Whether pipelines or agents (not stopped or lost) are in the cluster: it can't be deleted then. */
  async inUse(id: string): Promise<{ pipelines: number; agents: number; organizationDefault: boolean }> {
    const p = await this.db('pipelines').where({ cluster_id: id }).count<{ n: number | string }[]>({ n: '*' });
    const a = await this.db('agents')
      .where({ cluster_id: id })
      .whereIn('connection_state', ['connected', 'stopping'])
      .count<{ n: number | string }[]>({ n: '*' });
    const d = await this.db('organizations').where({ default_cluster_id: id }).first('id');
    return { pipelines: Number(p[0]!.n), agents: Number(a[0]!.n), organizationDefault: d !== undefined };
  }

  /* Queues */

  private queues(): Knex.QueryBuilder<QueueRow, QueueRow[]> {
    return withUser(withUser(this.db('cluster_queues as q').select('q.*'), 'cb', 'q.created_by_id'), 'pb', 'q.dispatch_paused_by_id');
  }

  async insertQueue(q: {
    id: string;
    clusterId: string;
    key: string;
    description: string | null;
    retryAgentAffinity: RetryAgentAffinity;
    createdById: string | null;
    createdAt: Date;
  }): Promise<void> {
    await this.db('cluster_queues').insert({
      id: q.id,
      cluster_id: q.clusterId,
      key: q.key,
      description: q.description,
      retry_agent_affinity: q.retryAgentAffinity,
      created_by_id: q.createdById,
      created_at: q.createdAt,
    });
  }

  async findQueue(clusterId: string, id: string): Promise<ClusterQueue | null> {
    const row = await this.queues().where('q.cluster_id', clusterId).where('q.id', id).first();
    return row ? queueFromRow(row) : null;
  }

  async findQueueByKey(clusterId: string, key: string): Promise<ClusterQueue | null> {
    const row = await this.queues().where('q.cluster_id', clusterId).where('q.key', key).first();
    return row ? queueFromRow(row) : null;
  }

  async listQueues(clusterId: string, offset: number, limit: number): Promise<ClusterQueue[]> {
    const rows = await this.queues()
      .where('q.cluster_id', clusterId)
      .orderBy([
        { column: 'q.created_at', order: 'asc' },
        { column: 'q.id', order: 'asc' },
      ])
      .offset(offset)
      .limit(limit);
    return rows.map(queueFromRow);
  }

  /** Every queue of the cluster, key and id: how a new job finds the queue it targets. */
  async queueIds(clusterId: string): Promise<{ id: string; key: string }[]> {
    return await this.db('cluster_queues').where({ cluster_id: clusterId }).select('id', 'key');
  }

  async updateQueue(id: string, fields: Partial<Pick<ClusterQueuesRow, 'description' | 'retry_agent_affinity'>>): Promise<void> {
    if (Object.keys(fields).length) await this.db('cluster_queues').where({ id }).update(fields);
  }

  async deleteQueue(id: string): Promise<void> {
    await this.db('cluster_queues').where({ id }).delete();
  }

  /** Pauses the queue if it is not paused; false if it was. */
  async pauseQueue(id: string, at: Date, byId: string | null, note: string | null): Promise<boolean> {
    const n = await this.db('cluster_queues')
      .where({ id })
      .whereNull('dispatch_paused_at')
      .update({ dispatch_paused_at: at, dispatch_paused_by_id: byId, dispatch_paused_note: note });
    return n > 0;
  }

  /** Resumes the queue if it is paused; false if it was not. */
  async resumeQueue(id: string): Promise<boolean> {
    const n = await this.db('cluster_queues')
      .where({ id })
      .whereNotNull('dispatch_paused_at')
      .update({ dispatch_paused_at: null, dispatch_paused_by_id: null, dispatch_paused_note: null });
    return n > 0;
  }

  /** The queue's key, pause and its cluster's default queue key, in one read (each poll of a cluster's agent). */
  async queueDispatch(queueId: string): Promise<QueueDispatch | null> {
    const row = await this.db('cluster_queues as q')
      .join('clusters as c', 'c.id', 'q.cluster_id')
      .leftJoin('cluster_queues as d', 'd.id', 'c.default_queue_id')
      .where('q.id', queueId)
      .first<QueueDispatchRow | undefined>('q.key as key', 'q.dispatch_paused_at as paused_at', 'd.key as default_key', 'q.retry_agent_affinity as affinity');
    return row
      ? { key: row.key, paused: row.paused_at != null, defaultQueueKey: row.default_key ?? null, preferDifferent: row.affinity === 'prefer-different' }
      : null;
  }

  /* Maintainers */

  /**
   * Maintainer rows with their user or team. `viewerId` (a member who is not an administrator):
   * without the secret teams the viewer is not in, which teams.md says only their members and
   * administrators see.
   */
  private maintainers(viewerId: string | null = null): Knex.QueryBuilder<MaintainerRow, MaintainerRow[]> {
    const q = this.db('cluster_maintainers as m')
      .leftJoin('users as u', 'u.id', 'm.user_id')
      .leftJoin('teams as t', 't.id', 'm.team_id')
      .select('m.*', 'u.name as user_name', 'u.email as user_email', 't.name as team_name', 't.slug as team_slug');
    if (viewerId === null) return q;
    return q.where((visible) =>
      visible
        .whereNull('m.team_id')
        .orWhereNot('t.privacy', 'secret')
        .orWhereExists(this.db('team_members as vm').whereRaw('vm.team_id = m.team_id').where('vm.user_id', viewerId).select(1)),
    );
  }

  async insertMaintainer(m: { id: string; clusterId: string; userId: string | null; teamId: string | null; createdAt: Date }): Promise<void> {
    await this.db('cluster_maintainers').insert({ id: m.id, cluster_id: m.clusterId, user_id: m.userId, team_id: m.teamId, created_at: m.createdAt });
  }

  async findMaintainer(clusterId: string, id: string, viewerId: string | null = null): Promise<ClusterMaintainer | null> {
    const row = await this.maintainers(viewerId).where('m.cluster_id', clusterId).where('m.id', id).first();
    return row ? maintainerFromRow(row) : null;
  }

  async findMaintainerOf(clusterId: string, target: { userId: string | null; teamId: string | null }): Promise<{ id: string } | null> {
    const q = this.db('cluster_maintainers').where({ cluster_id: clusterId });
    if (target.userId) q.where({ user_id: target.userId });
    else q.where({ team_id: target.teamId });
    return (await q.first('id')) ?? null;
  }

  async listMaintainers(clusterId: string, offset: number, limit: number, viewerId: string | null = null): Promise<ClusterMaintainer[]> {
    const rows = await this.maintainers(viewerId)
      .where('m.cluster_id', clusterId)
      .orderBy([
        { column: 'm.created_at', order: 'asc' },
        { column: 'm.id', order: 'asc' },
      ])
      .offset(offset)
      .limit(limit);
    return rows.map(maintainerFromRow);
  }

  /** Every maintainer of these clusters, by cluster, in the order they were named. */
  async maintainersOfClusters(clusterIds: string[], viewerId: string | null = null): Promise<Map<string, ClusterMaintainer[]>> {
    const byCluster = new Map<string, ClusterMaintainer[]>(clusterIds.map((id) => [id, []]));
    if (!clusterIds.length) return byCluster;
    const rows = await this.maintainers(viewerId)
      .whereIn('m.cluster_id', clusterIds)
      .orderBy([
        { column: 'm.created_at', order: 'asc' },
        { column: 'm.id', order: 'asc' },
      ]);
    for (const row of rows) byCluster.get(row.cluster_id)?.push(maintainerFromRow(row));
    return byCluster;
  }

  async deleteMaintainer(id: string): Promise<void> {
    await this.db('cluster_maintainers').where({ id }).delete();
  }

  /** Which of these clusters the user maintains, as a maintainer or a member of a maintaining team. */
  async maintainedBy(clusterIds: string[], userId: string): Promise<Set<string>> {
    if (!clusterIds.length) return new Set();
    const rows = await this.db('cluster_maintainers as m')
      .leftJoin('team_members as tm', 'tm.team_id', 'm.team_id')
      .whereIn('m.cluster_id', clusterIds)
      .where((w) => w.where('m.user_id', userId).orWhere('tm.user_id', userId))
      .distinct<{ cluster_id: string }[]>('m.cluster_id');
    return new Set(rows.map((r) => r.cluster_id));
  }

  /** Whether the user is a member of the organization. */
  async isMemberOf(organizationId: string, userId: string): Promise<boolean> {
    return (await this.db('organization_members').where({ organization_id: organizationId, user_id: userId }).first('user_id')) !== undefined;
  }

  /** Whether the team is one of the organization's. */
  async isTeamOf(organizationId: string, teamId: string): Promise<boolean> {
    return (await this.db('teams').where({ organization_id: organizationId, id: teamId }).first('id')) !== undefined;
  }

  /* Secrets */

  private secrets(): Knex.QueryBuilder<SecretRow, SecretRow[]> {
    return withUser(withUser(this.db('cluster_secrets as s').select('s.*'), 'cb', 's.created_by_id'), 'ub', 's.updated_by_id');
  }

  async insertSecret(s: {
    id: string;
    clusterId: string;
    key: string;
    description: string | null;
    policy: string | null;
    valueSealed: string;
    byId: string;
    at: Date;
  }): Promise<void> {
    await this.db('cluster_secrets').insert({
      id: s.id,
      cluster_id: s.clusterId,
      key: s.key,
      key_upper: s.key.toUpperCase(),
      description: s.description,
      policy: s.policy,
      value_encrypted: s.valueSealed,
      created_by_id: s.byId,
      created_at: s.at,
      updated_by_id: null,
      updated_at: s.at,
    });
  }

  async findSecret(clusterId: string, id: string): Promise<ClusterSecret | null> {
    const row = await this.secrets().where('s.cluster_id', clusterId).where('s.id', id).first();
    return row ? secretFromRow(row) : null;
  }

  async secretKeyTaken(clusterId: string, key: string): Promise<boolean> {
    return (await this.db('cluster_secrets').where({ cluster_id: clusterId, key_upper: key.toUpperCase() }).first('id')) !== undefined;
  }

  async listSecrets(clusterId: string, offset: number, limit: number): Promise<ClusterSecret[]> {
    const rows = await this.secrets()
      .where('s.cluster_id', clusterId)
      .orderBy([
        { column: 's.created_at', order: 'asc' },
        { column: 's.id', order: 'asc' },
      ])
      .offset(offset)
      .limit(limit);
    return rows.map(secretFromRow);
  }

  async updateSecret(
    id: string,
    fields: Partial<Pick<ClusterSecretsRow, 'description' | 'policy' | 'value_encrypted'>>,
    byId: string,
    at: Date,
  ): Promise<void> {
    await this.db('cluster_secrets')
      .where({ id })
      .update({ ...fields, updated_by_id: byId, updated_at: at });
  }

  async deleteSecret(id: string): Promise<void> {
    await this.db('cluster_secrets').where({ id }).delete();
  }

  /** A secret of the cluster by key, regardless of case, with its sealed value and policy. */
  async secretByKey(clusterId: string, key: string): Promise<{ id: string; key: string; policy: string | null; valueSealed: string } | null> {
    const row = await this.db('cluster_secrets').where({ cluster_id: clusterId, key_upper: key.toUpperCase() }).first('id', 'key', 'policy', 'value_encrypted');
    return row ? { id: row.id, key: row.key, policy: row.policy ?? null, valueSealed: row.value_encrypted } : null;
  }

  async secretRead(id: string, at: Date): Promise<void> {
    await this.db('cluster_secrets').where({ id }).update({ last_read_at: at });
  }

  /** The job as a secret's policy sees it: its pipeline, build, creator and the creator's teams, its cluster and queue. */
  async jobSecretContext(jobId: string): Promise<JobSecretContext | null> {
    const row = await this.db('jobs as j')
      .join('builds as b', 'b.id', 'j.build_id')
      .join('pipelines as p', 'p.id', 'b.pipeline_id')
      .leftJoin('users as u', 'u.id', 'b.creator_id')
      .leftJoin('cluster_queues as q', 'q.id', 'j.cluster_queue_id')
      .where('j.id', jobId)
      .first<JobSecretContextRow | undefined>(
        'j.cluster_id as cluster_id',
        'j.cluster_queue_id as queue_id',
        'q.key as queue_key',
        'p.id as pipeline_id',
        'p.slug as pipeline_slug',
        'b.source as source',
        'b.branch as branch',
        'b.creator_id as creator_id',
        'u.email as creator_email',
      );
    if (!row) return null;
    const teams = row.creator_id ? await this.db('team_members').where({ user_id: row.creator_id }).pluck('team_id') : [];
    return {
      clusterId: row.cluster_id ?? null,
      pipelineId: row.pipeline_id,
      pipelineSlug: row.pipeline_slug,
      buildSource: row.source,
      buildBranch: row.branch,
      creatorEmail: row.creator_email ?? null,
      creatorTeamIds: teams,
      clusterQueueId: row.queue_id ?? null,
      clusterQueueKey: row.queue_key ?? null,
    };
  }

  /* Agent tokens */

  private tokens(): Knex.QueryBuilder<TokenRow, TokenRow[]> {
    return withUser(this.db('cluster_tokens as t').select('t.*'), 'cb', 't.created_by_id');
  }

  async insertToken(t: Omit<ClusterToken, 'createdBy'> & { createdById: string | null; tokenHash: string }): Promise<void> {
    await this.db('cluster_tokens').insert({
      id: t.id,
      cluster_id: t.clusterId,
      description: t.description,
      allowed_ip_addresses: t.allowedIpAddresses,
      expires_at: t.expiresAt,
      token_hash: t.tokenHash,
      created_by_id: t.createdById,
      created_at: t.createdAt,
    });
  }

  async findToken(clusterId: string, id: string): Promise<ClusterToken | null> {
    const row = await this.tokens().where('t.cluster_id', clusterId).where('t.id', id).first();
    return row ? tokenFromRow(row) : null;
  }

  async listTokens(clusterId: string, offset: number, limit: number): Promise<ClusterToken[]> {
    const rows = await this.tokens()
      .where('t.cluster_id', clusterId)
      .orderBy([
        { column: 't.created_at', order: 'asc' },
        { column: 't.id', order: 'asc' },
      ])
      .offset(offset)
      .limit(limit);
    return rows.map(tokenFromRow);
  }

  async updateToken(id: string, fields: Partial<Pick<ClusterTokensRow, 'description' | 'allowed_ip_addresses' | 'expires_at'>>): Promise<void> {
    if (Object.keys(fields).length) await this.db('cluster_tokens').where({ id }).update(fields);
  }

  async deleteToken(id: string): Promise<void> {
    await this.db('cluster_tokens').where({ id }).delete();
  }

  /** A token by id alone, for the server's own work (a refused registration's notification). */
  async findTokenForSystem(id: string): Promise<ClusterToken | null> {
    const row = await this.tokens().where('t.id', id).first();
    return row ? tokenFromRow(row) : null;
  }

  /**
   * Records a registration the token refused for its address as an outbox event (the notifications'
   * `cluster_token.registration_blocked`): a named event (src/db/named-events.ts), since no row
   * changes state.
   */
  async recordBlockedRegistration(grant: ClusterTokenGrant, ip: string | null, at: Date): Promise<void> {
    await recordNamedEvent(this.db, {
      kind: 'token',
      subjectId: grant.tokenId,
      organizationId: grant.organizationId,
      state: 'blocked',
      event: 'cluster_token.registration_blocked',
      detail: { blocked_ip: ip ?? '', cluster_id: grant.clusterId },
      at,
    });
  }

  async findTokenByHash(hash: string): Promise<ClusterTokenGrant | null> {
    const row = await this.db('cluster_tokens as t')
      .join('clusters as c', 'c.id', 't.cluster_id')
      .where('t.token_hash', hash)
      .first<TokenGrantRow | undefined>('t.id', 't.cluster_id', 'c.organization_id', 't.allowed_ip_addresses', 't.expires_at');
    return row
      ? {
          tokenId: row.id,
          clusterId: row.cluster_id,
          organizationId: row.organization_id,
          allowedIpAddresses: row.allowed_ip_addresses ?? null,
          expiresAt: toDateOrNull(row.expires_at),
        }
      : null;
  }

  /** Every queue's key with its cluster's organization (the metrics' queue labels). */
  async allQueueKeys(): Promise<{ org: string; key: string }[]> {
    return this.db('cluster_queues')
      .join('clusters', 'clusters.id', 'cluster_queues.cluster_id')
      .select('clusters.organization_id as org', 'cluster_queues.key as key');
  }
}
