/**
 * The rules of clusters: the clusters of an organization, their queues (a dispatch pause with a
 * note), their agent tokens (the secret shown once and stored as a hash; the CIDR ranges an
 * agent must register from), and what the agents' and builds' areas ask of them: which cluster
 * and queue a registration joins, whether an agent's queue may be dispatched to, which queue a
 * new job targets. Any member of the organization reads; administrators write. No HTTP, no SQL.
 */
import crypto from 'node:crypto';
import type { components } from '../../generated/api';
import { AgentTokenError, ForbiddenError, NotFoundError, UnprocessableError, ValidationError } from '../core/errors';
import type { Actor } from '../core/identity';
import { sha256Hex, type Keys } from '../security/keys';
import { secretBox, type SecretBox } from '../security/secret-box';
import { parsePolicy, policyAllows } from './policy';
import { allowsAny, ipAllowed, normalizeAllowedIps, parseAllowedIps } from '../security/allowed-ips';
import type { ClusterSecret } from './repository';
import type { Cluster, ClusterMaintainer, ClusterQueue, ClusterRepository, ClusterToken, ClusterTokenGrant, QueueDispatch } from './repository';
import { clock } from '../core/clock';
import { changes, type AuditEntry, type AuditLog } from '../audit/service';

type CreateClusterBody = components['schemas']['CreateClusterRequest'];
type UpdateClusterBody = components['schemas']['UpdateClusterRequest'];
type CreateQueueBody = components['schemas']['CreateClusterQueueRequest'];
type UpdateQueueBody = components['schemas']['UpdateClusterQueueRequest'];
type PauseQueueBody = components['schemas']['PauseClusterQueueRequest'];
type CreateTokenBody = components['schemas']['CreateClusterAgentTokenRequest'];
type UpdateTokenBody = components['schemas']['UpdateClusterAgentTokenRequest'];
type MaintainerBody = components['schemas']['CreateClusterMaintainerRequest'];
type CreateSecretBody = components['schemas']['CreateClusterSecretRequest'];
type UpdateSecretBody = components['schemas']['UpdateClusterSecretRequest'];

/** The queue a registration joins: its cluster and queue. */
export interface ClusterMembership {
  clusterId: string;
  queueId: string;
  queueKey: string;
}

/** The queues a new job of a cluster's pipeline may target: by key, and the default one. */
export interface JobQueues {
  clusterId: string;
  defaultQueueId: string | null;
  byKey: Map<string, string>;
}

const emptyToNull = (s: string | null | undefined): string | null | undefined => (s === undefined ? undefined : s === null || s.trim() === '' ? null : s);

/** A secret's key: a letter, then letters, digits and underscores; not `buildkite…` or `bk…` (any case). */
const SECRET_KEY = /^[A-Za-z][A-Za-z0-9_]*$/;
/** A value is "less than 8 kilobytes". */
const MAX_SECRET_VALUE_BYTES = 8 * 1024;
/** manage.md: "There is a maximum of 24 CIDR blocks per agent token." */
const MAX_TOKEN_IP_RANGES = 24;
/** The agent token partial: `expires_at` "must be at least 10 minutes in the future at the moment of token creation". */
const MIN_TOKEN_LIFETIME_MS = 10 * 60_000;

/** Whose view of secret teams a read takes: none for an administrator (sees every team), else the member's. */
const viewerOf = (actor: Actor): string | null => (actor.role === 'admin' ? null : actor.principal.user.id);

/** A refused registration from one address with one token is told at most this often (per process). */
const BLOCKED_TELL_EVERY_MS = 60_000;
/** The pairs remembered at once; past it the memory starts over (some events are then told again). */
const MAX_TOLD_BLOCKED = 10_000;

export class ClusterService {
  private readonly box: SecretBox | null;

  constructor(
    private readonly clusters: ClusterRepository,
    /** Seals secret values (src/security/secret-box.ts); without keys no secret can be stored. */
    keys: Keys | null = null,
    /** Where every change is recorded, in its transaction (src/audit/service.ts). */
    private readonly audit: AuditLog | null = null,
  ) {
    this.box = keys ? secretBox(keys, 'cluster-secrets') : null;
  }

  /** `change` on this area's queries in one transaction, with its audit record in the same one. */
  private audited<T>(actor: Actor, change: (clusters: ClusterRepository) => Promise<T>, entry: (result: T) => AuditEntry): Promise<T> {
    if (!this.audit) return change(this.clusters);
    return this.audit.transaction(actor, (trx) => change(this.clusters.withTransaction(trx)), entry);
  }

  /* Reads: any member of the organization. */

  /** Which of these clusters the caller may manage: all for an administrator, else those it maintains (itself or through a team). */
  async managedOf(actor: Actor, clusters: readonly Pick<Cluster, 'id'>[]): Promise<Set<string>> {
    if (actor.role === 'admin') return new Set(clusters.map((c) => c.id));
    return this.clusters.maintainedBy(
      clusters.map((c) => c.id),
      actor.principal.user.id,
    );
  }

  /** The maintainers of clusters the caller has read, by cluster (each cluster's `maintainers`), as the caller may see them. */
  maintainersOf(actor: Actor, clusters: readonly Cluster[]): Promise<Map<string, ClusterMaintainer[]>> {
    return this.clusters.maintainersOfClusters(
      clusters.map((c) => c.id),
      viewerOf(actor),
    );
  }

  async get(actor: Actor, id: string): Promise<Cluster> {
    const cluster = await this.clusters.findCluster(actor.organization.id, id);
    if (!cluster) throw new NotFoundError('cluster');
    return cluster;
  }

  list(actor: Actor, offset: number, limit: number): Promise<Cluster[]> {
    return this.clusters.listClusters(actor.organization.id, offset, limit);
  }

  /** The cluster, for a caller who may change it: organization administrators and the cluster's maintainers. */
  private async managed(actor: Actor, id: string): Promise<Cluster> {
    const cluster = await this.get(actor, id);
    if (!(await this.mayManage(actor, cluster.id))) throw new ForbiddenError();
    return cluster;
  }

  /** The cluster, for an organization administrator: naming its maintainers. */
  private async administered(actor: Actor, id: string): Promise<Cluster> {
    const cluster = await this.get(actor, id);
    if (actor.role !== 'admin') throw new ForbiddenError();
    return cluster;
  }

  /**
   * Whether the caller may manage the cluster (change or delete it, its queues and tokens, move
   * pipelines in or out, stop, pause and resume its agents): an administrator, or one of its
   * maintainers, named or through a team.
   */
  async mayManage(actor: Actor, id: string): Promise<boolean> {
    return (await this.managedOf(actor, [{ id }])).has(id);
  }

  /** Whether the cluster is one of the organization's: what a pipeline's `cluster_id` must name. */
  async exists(organizationId: string, id: string): Promise<boolean> {
    return /^[0-9a-f-]{36}$/i.test(id) && (await this.clusters.findCluster(organizationId, id)) !== null;
  }

  /* Clusters */

  async create(actor: Actor, body: CreateClusterBody): Promise<Cluster> {
    if (actor.role !== 'admin') throw new ForbiddenError();
    const name = body.name.trim();
    if (!name) throw ValidationError.field('name', "can't be blank");
    if (await this.clusters.findClusterByName(actor.organization.id, name)) throw ValidationError.field('name', 'has already been taken');
    const maintainers = await this.checkedMaintainers(actor, body.maintainers ?? []);
    const cluster: Cluster = {
      id: crypto.randomUUID(),
      organizationId: actor.organization.id,
      name,
      description: emptyToNull(body.description) ?? null,
      emoji: emptyToNull(body.emoji) ?? null,
      color: emptyToNull(body.color) ?? null,
      defaultQueueId: null,
      createdBy: actor.principal.user,
      createdAt: clock.now(),
    };
    await this.audited(
      actor,
      async (clusters) => {
        await clusters.insertCluster({ ...cluster, createdById: actor.principal.user.id });
        for (const target of maintainers)
          await clusters.insertMaintainer({ id: crypto.randomUUID(), clusterId: cluster.id, ...target, createdAt: clock.now() });
      },
      () => ({
        type: 'ClusterCreatedEvent',
        subject: clusterSubject(cluster),
        data: { name: cluster.name, description: cluster.description, emoji: cluster.emoji, color: cluster.color, maintainers },
      }),
    );
    return cluster;
  }

  /**
   * The maintainers a create names, checked before anything is stored (a 422 naming
   * `maintainers` leaves no cluster behind): each exactly one of a user or a team of the
   * organization, none twice.
   */
  private async checkedMaintainers(actor: Actor, given: NonNullable<CreateClusterBody['maintainers']>) {
    const seen = new Set<string>();
    const targets: { userId: string | null; teamId: string | null }[] = [];
    for (const m of given) {
      if ((m.user === undefined) === (m.team === undefined)) throw ValidationError.field('maintainers', 'each must give exactly one of user and team');
      const target = { userId: m.user ?? null, teamId: m.team ?? null };
      const key = `${target.userId}/${target.teamId}`;
      if (seen.has(key)) throw ValidationError.field('maintainers', `names ${target.userId ? 'user' : 'team'} ${target.userId ?? target.teamId} twice`);
      seen.add(key);
      if (target.userId && !(await this.clusters.isMemberOf(actor.organization.id, target.userId)))
        throw ValidationError.field('maintainers', `user ${target.userId} is not a member of this organization`);
      if (target.teamId && !(await this.clusters.isTeamOf(actor.organization.id, target.teamId)))
        throw ValidationError.field('maintainers', `team ${target.teamId} is not a team of this organization`);
      targets.push(target);
    }
    return targets;
  }

  async update(actor: Actor, id: string, body: UpdateClusterBody): Promise<Cluster> {
    const cluster = await this.managed(actor, id);
    // clusters.md: "a changed cache field targets a non-hosted cluster" is a 422; every cluster here is one.
    for (const k of ['hosted_git_mirror_enabled', 'hosted_container_cache_enabled'] as const)
      if (body[k] === true) throw ValidationError.field(k, 'can only be enabled on a cluster of Buildkite hosted agents, which Windsock does not run');
    const fields: Parameters<ClusterRepository['updateCluster']>[1] = {};
    if (body.name !== undefined) {
      const name = body.name.trim();
      if (!name) throw ValidationError.field('name', "can't be blank");
      const other = await this.clusters.findClusterByName(actor.organization.id, name);
      if (other && other.id !== id) throw ValidationError.field('name', 'has already been taken');
      fields.name = name;
    }
    for (const k of ['description', 'emoji', 'color'] as const) if (body[k] !== undefined) fields[k] = emptyToNull(body[k]) ?? null;
    if (body.default_queue_id !== undefined) {
      if (!(await this.clusters.findQueue(id, body.default_queue_id))) throw ValidationError.field('default_queue_id', 'is not a queue of this cluster');
      fields.default_queue_id = body.default_queue_id;
    }
    const before = {
      name: cluster.name,
      description: cluster.description,
      emoji: cluster.emoji,
      color: cluster.color,
      default_queue_id: cluster.defaultQueueId,
    };
    await this.audited(
      actor,
      (clusters) => clusters.updateCluster(cluster.id, fields),
      () => ({ type: 'ClusterUpdatedEvent', subject: clusterSubject({ id: cluster.id, name: fields.name ?? cluster.name }), data: changes(before, fields) }),
    );
    return (await this.clusters.findCluster(actor.organization.id, id))!;
  }

  /**
   * With its queues, tokens, maintainers and secrets; refused while pipelines or connected agents
   * are in it. Administrators and the cluster's maintainers, who may "Update or delete the cluster".
   */
  async delete(actor: Actor, id: string): Promise<void> {
    const cluster = await this.managed(actor, id);
    const use = await this.clusters.inUse(cluster.id);
    if (use.pipelines) throw new UnprocessableError(`The cluster has ${use.pipelines} pipeline(s): move them to another cluster (or none) first.`);
    if (use.agents) throw new UnprocessableError(`The cluster has ${use.agents} connected agent(s): stop them first.`);
    // manage.md: "A cluster set as the organization's default for new pipelines cannot be deleted."
    if (use.organizationDefault) {
      throw new UnprocessableError("The cluster is the organization's default for new pipelines: assign a different default or clear it first.");
    }
    await this.audited(
      actor,
      (clusters) => clusters.deleteCluster(cluster.id),
      () => ({ type: 'ClusterDeletedEvent', subject: clusterSubject(cluster), data: { name: cluster.name } }),
    );
  }

  /* Queues */

  async getQueue(actor: Actor, clusterId: string, id: string): Promise<ClusterQueue> {
    await this.get(actor, clusterId);
    const queue = await this.clusters.findQueue(clusterId, id);
    if (!queue) throw new NotFoundError('queue');
    return queue;
  }

  async listQueues(actor: Actor, clusterId: string, offset: number, limit: number): Promise<ClusterQueue[]> {
    await this.get(actor, clusterId);
    return this.clusters.listQueues(clusterId, offset, limit);
  }

  private async managedQueue(actor: Actor, clusterId: string, id: string): Promise<ClusterQueue> {
    await this.managed(actor, clusterId);
    const queue = await this.clusters.findQueue(clusterId, id);
    if (!queue) throw new NotFoundError('queue');
    return queue;
  }

  async createQueue(actor: Actor, clusterId: string, body: CreateQueueBody): Promise<ClusterQueue> {
    await this.managed(actor, clusterId);
    if (body.hostedAgents !== undefined) throw ValidationError.field('hostedAgents', 'Buildkite hosted agents are not available: only self-hosted queues');
    if (await this.clusters.findQueueByKey(clusterId, body.key)) throw ValidationError.field('key', 'has already been taken');
    const id = crypto.randomUUID();
    const queue = {
      id,
      clusterId,
      key: body.key,
      description: emptyToNull(body.description) ?? null,
      retryAgentAffinity: body.retry_agent_affinity ?? 'prefer-warmest',
      createdById: actor.principal.user.id,
      createdAt: clock.now(),
    };
    await this.audited(
      actor,
      (clusters) => clusters.insertQueue(queue),
      () => ({
        type: 'ClusterQueueCreatedEvent',
        subject: queueSubject(queue),
        data: { cluster_id: clusterId, key: queue.key, description: queue.description, retry_agent_affinity: queue.retryAgentAffinity },
      }),
    );
    return (await this.clusters.findQueue(clusterId, id))!;
  }

  async updateQueue(actor: Actor, clusterId: string, id: string, body: UpdateQueueBody): Promise<ClusterQueue> {
    const queue = await this.managedQueue(actor, clusterId, id);
    if (body.hostedAgents !== undefined) throw ValidationError.field('hostedAgents', 'Buildkite hosted agents are not available: only self-hosted queues');
    const fields: Parameters<ClusterRepository['updateQueue']>[1] = {};
    if (body.description !== undefined) fields.description = emptyToNull(body.description) ?? null;
    if (body.retry_agent_affinity !== undefined) fields.retry_agent_affinity = body.retry_agent_affinity;
    await this.audited(
      actor,
      (clusters) => clusters.updateQueue(queue.id, fields),
      () => ({
        type: 'ClusterQueueUpdatedEvent',
        subject: queueSubject(queue),
        data: changes({ description: queue.description, retry_agent_affinity: queue.retryAgentAffinity }, fields),
      }),
    );
    return (await this.clusters.findQueue(clusterId, id))!;
  }

  /** Not the cluster's default queue (set another first). Its agents take no more jobs. */
  async deleteQueue(actor: Actor, clusterId: string, id: string): Promise<void> {
    const queue = await this.managedQueue(actor, clusterId, id);
    const cluster = (await this.clusters.findCluster(actor.organization.id, clusterId))!;
    if (cluster.defaultQueueId === queue.id)
      throw new UnprocessableError("The cluster's default queue can't be deleted: make another queue the default first.");
    await this.audited(
      actor,
      (clusters) => clusters.deleteQueue(queue.id),
      () => ({ type: 'ClusterQueueDeletedEvent', subject: queueSubject(queue), data: { cluster_id: clusterId, key: queue.key } }),
    );
  }

  async pauseQueue(actor: Actor, clusterId: string, id: string, body: PauseQueueBody): Promise<ClusterQueue> {
    const queue = await this.managedQueue(actor, clusterId, id);
    const note = emptyToNull(body.note ?? body.dispatch_paused_note) ?? null;
    await this.audited(
      actor,
      async (clusters) => {
        if (!(await clusters.pauseQueue(queue.id, clock.now(), actor.principal.user.id, note))) throw new UnprocessableError('Cluster queue is already paused');
      },
      () => ({ type: 'ClusterQueueDispatchPausedEvent', subject: queueSubject(queue), data: { dispatch_paused: true, dispatch_paused_note: note } }),
    );
    return (await this.clusters.findQueue(clusterId, id))!;
  }

  async resumeQueue(actor: Actor, clusterId: string, id: string): Promise<ClusterQueue> {
    const queue = await this.managedQueue(actor, clusterId, id);
    await this.audited(
      actor,
      async (clusters) => {
        if (!(await clusters.resumeQueue(queue.id))) throw new UnprocessableError('Cluster queue is not paused');
      },
      () => ({ type: 'ClusterQueueDispatchResumedEvent', subject: queueSubject(queue), data: { dispatch_paused: false } }),
    );
    return (await this.clusters.findQueue(clusterId, id))!;
  }

  /* Maintainers */

  async listMaintainers(actor: Actor, clusterId: string, offset: number, limit: number): Promise<ClusterMaintainer[]> {
    await this.get(actor, clusterId);
    return this.clusters.listMaintainers(clusterId, offset, limit, viewerOf(actor));
  }

  async getMaintainer(actor: Actor, clusterId: string, id: string): Promise<ClusterMaintainer> {
    await this.get(actor, clusterId);
    const maintainer = await this.clusters.findMaintainer(clusterId, id, viewerOf(actor));
    if (!maintainer) throw new NotFoundError('cluster maintainer');
    return maintainer;
  }

  /** A user of the organization or a team of it, exactly one; each maintains a cluster once. */
  async createMaintainer(actor: Actor, clusterId: string, body: MaintainerBody): Promise<ClusterMaintainer> {
    await this.administered(actor, clusterId);
    if ((body.user === undefined) === (body.team === undefined))
      throw ValidationError.field(body.user === undefined ? 'user' : 'team', 'give exactly one of user and team');
    const target = { userId: body.user ?? null, teamId: body.team ?? null };
    if (target.userId && !(await this.clusters.isMemberOf(actor.organization.id, target.userId)))
      throw ValidationError.field('user', 'is not a member of this organization');
    if (target.teamId && !(await this.clusters.isTeamOf(actor.organization.id, target.teamId)))
      throw ValidationError.field('team', 'is not a team of this organization');
    if (await this.clusters.findMaintainerOf(clusterId, target)) throw ValidationError.field(target.userId ? 'user' : 'team', 'already maintains this cluster');
    const id = crypto.randomUUID();
    await this.audited(
      actor,
      (clusters) => clusters.insertMaintainer({ id, clusterId, ...target, createdAt: clock.now() }),
      () => ({
        type: 'ClusterPermissionCreatedEvent',
        subject: { type: 'ClusterMaintainer', id, name: null },
        data: { cluster_id: clusterId, user_id: target.userId, team_id: target.teamId },
      }),
    );
    return (await this.clusters.findMaintainer(clusterId, id))!;
  }

  async deleteMaintainer(actor: Actor, clusterId: string, id: string): Promise<void> {
    await this.administered(actor, clusterId);
    const maintainer = await this.clusters.findMaintainer(clusterId, id);
    if (!maintainer) throw new NotFoundError('cluster maintainer');
    await this.audited(
      actor,
      (clusters) => clusters.deleteMaintainer(maintainer.id),
      () => ({
        type: 'ClusterPermissionDeletedEvent',
        subject: { type: 'ClusterMaintainer', id: maintainer.id, name: maintainer.actor.type === 'user' ? maintainer.actor.name : maintainer.actor.slug },
        data: { cluster_id: clusterId, [maintainer.actor.type === 'user' ? 'user_id' : 'team_id']: maintainer.actor.id },
      }),
    );
  }

  /* Secrets: details for members, writes for administrators and maintainers, values for jobs only. */

  async listSecrets(actor: Actor, clusterId: string, offset: number, limit: number): Promise<ClusterSecret[]> {
    await this.get(actor, clusterId);
    return this.clusters.listSecrets(clusterId, offset, limit);
  }

  async getSecret(actor: Actor, clusterId: string, id: string): Promise<ClusterSecret> {
    await this.get(actor, clusterId);
    const secret = await this.clusters.findSecret(clusterId, id);
    if (!secret) throw new NotFoundError('secret');
    return secret;
  }

  private sealer(): SecretBox {
    if (!this.box) throw new Error('cluster secrets need the service keys');
    return this.box;
  }

  private checkValue(value: unknown): string {
    if (typeof value !== 'string' || !value.trim()) throw ValidationError.field('value', "can't be blank");
    if (Buffer.byteLength(value, 'utf8') >= MAX_SECRET_VALUE_BYTES) throw ValidationError.field('value', 'must be less than 8 kilobytes');
    return value;
  }

  private checkPolicy(policy: string | null | undefined): string | null | undefined {
    if (policy === undefined || policy === null || !policy.trim()) return policy === undefined ? undefined : null;
    const parsed = parsePolicy(policy);
    if ('error' in parsed) throw ValidationError.field('policy', parsed.error);
    return policy;
  }

  async createSecret(actor: Actor, clusterId: string, body: CreateSecretBody): Promise<ClusterSecret> {
    await this.managed(actor, clusterId);
    const key = body.key;
    if (!SECRET_KEY.test(key)) throw ValidationError.field('key', 'must start with a letter and contain only letters, numbers and underscores');
    if (/^(buildkite|bk)/i.test(key)) throw ValidationError.field('key', "can't start with buildkite or bk");
    if (await this.clusters.secretKeyTaken(clusterId, key)) throw ValidationError.field('key', 'has already been taken');
    const value = this.checkValue(body.value);
    const policy = this.checkPolicy(body.policy) ?? null;
    const id = crypto.randomUUID();
    const description = emptyToNull(body.description) ?? null;
    // The value is sealed into the row and never part of the record.
    await this.audited(
      actor,
      (clusters) =>
        clusters.insertSecret({
          id,
          clusterId,
          key,
          description,
          policy,
          valueSealed: this.sealer().seal(value, id),
          byId: actor.principal.user.id,
          at: clock.now(),
        }),
      () => ({ type: 'SecretCreatedEvent', subject: secretSubject({ id, key }), data: { cluster_id: clusterId, key, description, policy } }),
    );
    return (await this.clusters.findSecret(clusterId, id))!;
  }

  async updateSecret(actor: Actor, clusterId: string, id: string, body: UpdateSecretBody): Promise<ClusterSecret> {
    await this.managed(actor, clusterId);
    const secret = await this.clusters.findSecret(clusterId, id);
    if (!secret) throw new NotFoundError('secret');
    if (body.key !== undefined) throw new UnprocessableError('The key parameter cannot be updated.');
    if (body.value !== undefined) throw new UnprocessableError('The value parameter cannot be updated on this endpoint.');
    const fields: Parameters<ClusterRepository['updateSecret']>[1] = {};
    if (body.description !== undefined) fields.description = emptyToNull(body.description) ?? null;
    const policy = this.checkPolicy(body.policy);
    if (policy !== undefined) fields.policy = policy;
    // Nothing the endpoint takes was sent (unknown properties are ignored): nothing is updated, not even updated_at.
    if (!Object.keys(fields).length) return secret;
    await this.audited(
      actor,
      (clusters) => clusters.updateSecret(secret.id, fields, actor.principal.user.id, clock.now()),
      () => ({ type: 'SecretUpdatedEvent', subject: secretSubject(secret), data: changes({ description: secret.description, policy: secret.policy }, fields) }),
    );
    return (await this.clusters.findSecret(clusterId, id))!;
  }

  async updateSecretValue(actor: Actor, clusterId: string, id: string, value: string): Promise<ClusterSecret> {
    await this.managed(actor, clusterId);
    const secret = await this.clusters.findSecret(clusterId, id);
    if (!secret) throw new NotFoundError('secret');
    const sealed = this.sealer().seal(this.checkValue(value), secret.id);
    // That the value changed is recorded; the value never is.
    await this.audited(
      actor,
      (clusters) => clusters.updateSecret(secret.id, { value_encrypted: sealed }, actor.principal.user.id, clock.now()),
      () => ({ type: 'SecretUpdatedEvent', subject: secretSubject(secret), data: { value_changed: true } }),
    );
    return (await this.clusters.findSecret(clusterId, id))!;
  }

  async deleteSecret(actor: Actor, clusterId: string, id: string): Promise<void> {
    await this.managed(actor, clusterId);
    const secret = await this.clusters.findSecret(clusterId, id);
    if (!secret) throw new NotFoundError('secret');
    await this.audited(
      actor,
      (clusters) => clusters.deleteSecret(secret.id),
      () => ({ type: 'SecretDeletedEvent', subject: secretSubject(secret), data: { cluster_id: clusterId, key: secret.key } }),
    );
  }

  /**
   * The secret `key` (any case) for the job, which its agent is running (the caller checked):
   * 404 when the job's pipeline is in no cluster or the cluster has no such secret, 403 when the
   * secret's policy does not allow the job.
   */
  async secretForJob(jobId: string, key: string): Promise<{ id: string; key: string; value: string }> {
    const job = await this.clusters.jobSecretContext(jobId);
    if (!job || !job.clusterId) throw new NotFoundError('secret');
    const secret = await this.clusters.secretByKey(job.clusterId, key);
    if (!secret) throw new NotFoundError('secret');
    const policy = secret.policy ? parsePolicy(secret.policy) : null;
    // A stored policy was valid when written; one that no longer parses allows nobody.
    const allowed =
      policy === null ||
      (!('error' in policy) &&
        policyAllows(policy, {
          pipeline_id: [job.pipelineId],
          pipeline_slug: [job.pipelineSlug],
          build_source: [job.buildSource],
          build_branch: [job.buildBranch],
          build_creator: job.creatorEmail ? [job.creatorEmail] : [],
          build_creator_team: job.creatorTeamIds,
          cluster_queue_id: job.clusterQueueId ? [job.clusterQueueId] : [],
          cluster_queue_key: job.clusterQueueKey ? [job.clusterQueueKey] : [],
        }));
    if (!allowed) throw new ForbiddenError();
    const value = this.sealer().open(secret.valueSealed, secret.id);
    await this.clusters.secretRead(secret.id, clock.now());
    return { id: secret.id, key: secret.key, value };
  }

  /* Agent tokens */

  async getToken(actor: Actor, clusterId: string, id: string): Promise<ClusterToken> {
    await this.get(actor, clusterId);
    const token = await this.clusters.findToken(clusterId, id);
    if (!token) throw new NotFoundError('token');
    return token;
  }

  async listTokens(actor: Actor, clusterId: string, offset: number, limit: number): Promise<ClusterToken[]> {
    await this.get(actor, clusterId);
    return this.clusters.listTokens(clusterId, offset, limit);
  }

  /**
   * A token's allowed addresses, as manage.md has them: IPv4 CIDR ranges or addresses, at most
   * 24 ("IPv6 is currently not supported"); none, or `0.0.0.0/0` among them, is no restriction
   * (stored null, shown as `0.0.0.0/0`, the documented default).
   */
  private allowedIps(value: string | null | undefined): string | null | undefined {
    if (value === undefined || value === null) return value;
    const { ranges, invalid } = parseAllowedIps(value);
    if (invalid.length)
      throw ValidationError.field('allowed_ip_addresses', `${invalid.map((i) => JSON.stringify(i)).join(', ')} is not a CIDR range (e.g. 202.144.0.0/24)`);
    if (ranges.some(([range]) => range.kind() === 'ipv6'))
      throw ValidationError.field('allowed_ip_addresses', 'IPv6 ranges are not supported: give IPv4 ranges');
    if (ranges.length > MAX_TOKEN_IP_RANGES) throw ValidationError.field('allowed_ip_addresses', `has ${ranges.length} ranges: at most ${MAX_TOKEN_IP_RANGES}`);
    return ranges.length && !allowsAny(ranges) ? normalizeAllowedIps(value) : null;
  }

  /** A new token's expiry: the docs' "at least 10 minutes in the future at the moment of token creation". */
  private expiry(value: string | null | undefined): Date | null | undefined {
    if (value === undefined || value === null) return value;
    const at = new Date(value);
    if (at.getTime() < clock.nowMs() + MIN_TOKEN_LIFETIME_MS) throw ValidationError.field('expires_at', 'must be at least 10 minutes in the future');
    return at;
  }

  /** The token's secret is in the answer, and nowhere after: only its hash is stored. */
  async createToken(actor: Actor, clusterId: string, body: CreateTokenBody): Promise<{ token: ClusterToken; secret: string }> {
    await this.managed(actor, clusterId);
    const description = body.description.trim();
    if (!description) throw ValidationError.field('description', "can't be blank");
    const secret = crypto.randomBytes(32).toString('base64url');
    const token: ClusterToken = {
      id: crypto.randomUUID(),
      clusterId,
      description,
      allowedIpAddresses: this.allowedIps(body.allowed_ip_addresses) ?? null,
      expiresAt: this.expiry(body.expires_at) ?? null,
      createdBy: actor.principal.user,
      createdAt: clock.now(),
    };
    await this.audited(
      actor,
      (clusters) => clusters.insertToken({ ...token, createdById: actor.principal.user.id, tokenHash: sha256Hex(secret) }),
      () => ({
        type: 'ClusterTokenCreatedEvent',
        subject: tokenSubject(token),
        data: { cluster_id: clusterId, description, allowed_ip_addresses: token.allowedIpAddresses, expires_at: token.expiresAt?.toISOString() ?? null },
      }),
    );
    return { token, secret };
  }

  async updateToken(actor: Actor, clusterId: string, id: string, body: UpdateTokenBody): Promise<ClusterToken> {
    await this.managed(actor, clusterId);
    const token = await this.clusters.findToken(clusterId, id);
    if (!token) throw new NotFoundError('token');
    const fields: Parameters<ClusterRepository['updateToken']>[1] = {};
    if (body.description !== undefined) {
      if (!body.description.trim()) throw ValidationError.field('description', "can't be blank");
      fields.description = body.description.trim();
    }
    if (body.allowed_ip_addresses !== undefined) fields.allowed_ip_addresses = this.allowedIps(body.allowed_ip_addresses) ?? null;
    // tokens.md: "Expiration date for a token cannot be updated": an `expires_at` sent is ignored, as the docs' example shows.
    await this.audited(
      actor,
      (clusters) => clusters.updateToken(token.id, fields),
      () => ({
        type: 'ClusterTokenUpdatedEvent',
        subject: tokenSubject({ id: token.id, description: fields.description ?? token.description }),
        data: changes({ description: token.description, allowed_ip_addresses: token.allowedIpAddresses, expires_at: token.expiresAt }, fields),
      }),
    );
    return (await this.clusters.findToken(clusterId, id))!;
  }

  async revokeToken(actor: Actor, clusterId: string, id: string): Promise<void> {
    await this.managed(actor, clusterId);
    const token = await this.clusters.findToken(clusterId, id);
    if (!token) throw new NotFoundError('token');
    await this.audited(
      actor,
      (clusters) => clusters.deleteToken(token.id),
      () => ({ type: 'ClusterTokenDeletedEvent', subject: tokenSubject(token), data: { cluster_id: clusterId, description: token.description } }),
    );
  }

  /** A token by id alone, with its organization's slug unknown to it: the notifications' read of a refused registration's token. */
  findTokenForSystem(id: string): Promise<ClusterToken | null> {
    return this.clusters.findTokenForSystem(id);
  }

  /** When each (token, address) refused registration was last told, in this process. */
  private readonly toldBlocked = new Map<string, number>();

  /**
   * Whether a refused registration is told (a webhook event): once a minute per token and
   * address in each process, so an agent retrying from a refused address, or someone hammering
   * with a leaked token, does not fill the outbox (the failed-authentication budget is counted
   * after the token is read).
   */
  private shouldTellBlocked(tokenId: string, ip: string | null): boolean {
    const key = `${tokenId} ${ip ?? ''}`;
    const now = clock.now().getTime();
    const last = this.toldBlocked.get(key);
    if (last !== undefined && now - last < BLOCKED_TELL_EVERY_MS) return false;
    if (this.toldBlocked.size >= MAX_TOLD_BLOCKED) this.toldBlocked.clear();
    this.toldBlocked.set(key, now);
    return true;
  }

  /* What the agents' area asks. */

  /**
   * A registration token's cluster, when it is a cluster's: refused (401) when it has expired
   * or the caller's address is not in its allowed ranges. Null: not a cluster token.
   */
  async authenticateToken(secret: string, ip: string | null): Promise<ClusterTokenGrant | null> {
    const grant = await this.clusters.findTokenByHash(sha256Hex(secret));
    if (!grant) return null;
    if (grant.expiresAt && grant.expiresAt <= clock.now()) throw new AgentTokenError('the cluster agent token has expired');
    if (grant.allowedIpAddresses && !ipAllowed(grant.allowedIpAddresses, ip)) {
      // Webhooks tell of it (the agent token events page); the refusal stands whatever the record does.
      if (this.shouldTellBlocked(grant.tokenId, ip)) await this.clusters.recordBlockedRegistration(grant, ip, clock.now()).catch(() => undefined);
      throw new AgentTokenError(`the cluster agent token does not allow registration from ${ip ?? 'an unknown address'}`);
    }
    return grant;
  }

  /**
   * The queue an agent registering with the cluster's token joins: the one its `queue` tag
   * names, or without one the cluster's default queue. A 422 when there is no such queue.
   */
  async membership(clusterId: string, queueTag: string | null): Promise<ClusterMembership> {
    if (queueTag === null) {
      const cluster = await this.clusters.findClusterById(clusterId);
      const queue = cluster?.defaultQueueId ? await this.clusters.findQueue(clusterId, cluster.defaultQueueId) : null;
      if (!queue) throw new UnprocessableError('The cluster has no default queue: give the agent a queue tag (--tags queue=KEY) naming one of its queues.');
      return { clusterId, queueId: queue.id, queueKey: queue.key };
    }
    const queue = await this.clusters.findQueueByKey(clusterId, queueTag);
    if (!queue)
      throw new UnprocessableError(`The cluster has no queue "${queueTag}": create it, or register with a queue tag naming one of the cluster's queues.`);
    return { clusterId, queueId: queue.id, queueKey: queue.key };
  }

  /** An agent's queue as dispatch sees it; null when it has been deleted. */
  queueDispatch(queueId: string): Promise<QueueDispatch | null> {
    return this.clusters.queueDispatch(queueId);
  }

  /** The queues a new job of a pipeline in the cluster may target. */
  async jobQueues(clusterId: string): Promise<JobQueues> {
    const cluster = await this.clusters.findClusterById(clusterId);
    const queues = await this.clusters.queueIds(clusterId);
    return { clusterId, defaultQueueId: cluster?.defaultQueueId ?? null, byKey: new Map(queues.map((q) => [q.key, q.id])) };
  }
}

const clusterSubject = (c: { id: string; name: string }) => ({ type: 'Cluster', id: c.id, name: c.name });
const queueSubject = (q: { id: string; key: string }) => ({ type: 'ClusterQueue', id: q.id, name: q.key });
const tokenSubject = (t: { id: string; description: string }) => ({ type: 'ClusterToken', id: t.id, name: t.description });
const secretSubject = (s: { id: string; key: string }) => ({ type: 'Secret', id: s.id, name: s.key });
