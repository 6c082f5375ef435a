/** Clusters, queues and agent tokens -> the exact JSON of the contract (docs: clusters.md). */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import type { User } from '../core/identity';
import type { Cluster, ClusterMaintainer, ClusterQueue, ClusterSecret, ClusterToken } from './repository';

type S = components['schemas'];

/** A cluster's API and web URLs, and its queue's: pipelines, jobs and agents name them too. */
export function clusterUrl(publicUrl: string, orgSlug: string, clusterId: string): string {
  return `${publicUrl}/v2/organizations/${orgSlug}/clusters/${clusterId}`;
}
export function clusterQueueUrl(publicUrl: string, orgSlug: string, clusterId: string, queueId: string): string {
  return `${clusterUrl(publicUrl, orgSlug, clusterId)}/queues/${queueId}`;
}
export function clusterWebUrl(publicUrl: string, orgSlug: string, clusterId: string): string {
  return `${publicUrl}/organizations/${orgSlug}/clusters/${clusterId}`;
}

/**
 * A cluster with its maintainers, split into users and teams as the docs show them; `managed`
 * (the caller may manage it): with the hosted-agent cache fields the docs show such a caller.
 */
export function serializeCluster(c: Cluster, publicUrl: string, orgSlug: string, maintainers: readonly ClusterMaintainer[], managed: boolean): S['Cluster'] {
  const url = clusterUrl(publicUrl, orgSlug, c.id);
  return {
    id: c.id,
    graphql_id: graphqlId('Cluster', c.id),
    default_queue_id: c.defaultQueueId,
    name: c.name,
    description: c.description,
    emoji: c.emoji,
    color: c.color,
    maintainers: {
      users: maintainers.filter((m) => m.actor.type === 'user').map(serializeClusterMaintainer),
      teams: maintainers.filter((m) => m.actor.type === 'team').map(serializeClusterMaintainer),
    },
    url,
    web_url: clusterWebUrl(publicUrl, orgSlug, c.id),
    queues_url: `${url}/queues`,
    default_queue_url: c.defaultQueueId ? `${url}/queues/${c.defaultQueueId}` : null,
    created_at: isoTime(c.createdAt),
    created_by: serializeCreator(c.createdBy),
    ...(managed && { hosted_git_mirror_enabled: false, hosted_container_cache_enabled: false }),
  };
}

export function serializeClusterQueue(q: ClusterQueue, publicUrl: string, orgSlug: string): S['ClusterQueue'] {
  return {
    id: q.id,
    graphql_id: graphqlId('ClusterQueue', q.id),
    key: q.key,
    description: q.description,
    url: clusterQueueUrl(publicUrl, orgSlug, q.clusterId, q.id),
    web_url: `${clusterWebUrl(publicUrl, orgSlug, q.clusterId)}/queues/${q.id}`,
    cluster_url: clusterUrl(publicUrl, orgSlug, q.clusterId),
    retry_agent_affinity: q.retryAgentAffinity,
    dispatch_paused: q.pause !== null,
    dispatch_paused_by: serializeCreator(q.pause?.by ?? null),
    dispatch_paused_at: q.pause ? isoTime(q.pause.at) : null,
    dispatch_paused_note: q.pause?.note ?? null,
    created_at: isoTime(q.createdAt),
    created_by: serializeCreator(q.createdBy),
  };
}

/** A token without its secret: every answer but the one that created it. */
export function serializeClusterToken(t: ClusterToken, publicUrl: string, orgSlug: string): S['ClusterAgentToken'] {
  return {
    id: t.id,
    graphql_id: graphqlId('ClusterToken', t.id),
    description: t.description,
    // None stored: the docs' default, no restriction.
    allowed_ip_addresses: t.allowedIpAddresses ?? '0.0.0.0/0',
    expires_at: t.expiresAt ? isoTime(t.expiresAt) : null,
    url: `${clusterUrl(publicUrl, orgSlug, t.clusterId)}/tokens/${t.id}`,
    cluster_url: clusterUrl(publicUrl, orgSlug, t.clusterId),
    created_at: isoTime(t.createdAt),
    created_by: serializeCreator(t.createdBy),
  };
}

/** A maintainer assignment: the user (name and email) or the team (slug) it names. */
export function serializeClusterMaintainer(m: ClusterMaintainer): S['ClusterMaintainer'] {
  const a = m.actor;
  return {
    id: m.id,
    actor:
      a.type === 'user'
        ? { id: a.id, graphql_id: graphqlId('User', a.id), name: a.name, email: a.email, type: 'user' }
        : { id: a.id, graphql_id: graphqlId('Team', a.id), name: a.name, slug: a.slug, type: 'team' },
  };
}

const secretUser = (u: User | null) => (u ? { id: u.id, name: u.name, email: u.email } : null);

/** A secret's details as documented: never its value (the domain object does not carry it). */
export function serializeClusterSecret(s: ClusterSecret, publicUrl: string, org: { id: string; slug: string }): S['ClusterSecret'] {
  return {
    id: s.id,
    graphql_id: graphqlId('Secret', s.id),
    key: s.key,
    description: s.description,
    policy: s.policy,
    url: `${clusterUrl(publicUrl, org.slug, s.clusterId)}/secrets/${s.id}`,
    cluster_url: clusterUrl(publicUrl, org.slug, s.clusterId),
    created_at: isoTime(s.createdAt),
    created_by: secretUser(s.createdBy),
    updated_at: isoTime(s.updatedAt),
    updated_by: secretUser(s.updatedBy),
    last_read_at: s.lastReadAt ? isoTime(s.lastReadAt) : null,
    organization: { id: org.id, slug: org.slug, url: `${publicUrl}/v2/organizations/${org.slug}`, web_url: `${publicUrl}/${org.slug}` },
  };
}
