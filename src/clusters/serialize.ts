/** Clusters, queues and agent tokens -> the exact JSON of the contract (docs: clusters.md). */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/format';
import { serializeCreator } from '../user/serialize';
import type { Cluster, ClusterQueue, ClusterToken } from './repository';

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

export function serializeCluster(c: Cluster, publicUrl: string, orgSlug: string): S['Cluster'] {
  const url = clusterUrl(publicUrl, orgSlug, c.id);
  return {
    id: c.id,
    graphql_id: graphqlId('Cluster', c.id),
    default_queue_id: c.defaultQueueId,
    name: c.name,
    description: c.description,
    emoji: c.emoji,
    color: c.color,
    url,
    web_url: clusterWebUrl(publicUrl, orgSlug, c.id),
    queues_url: `${url}/queues`,
    default_queue_url: c.defaultQueueId ? `${url}/queues/${c.defaultQueueId}` : null,
    created_at: isoTime(c.createdAt),
    created_by: serializeCreator(c.createdBy),
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
    allowed_ip_addresses: t.allowedIpAddresses,
    expires_at: t.expiresAt ? isoTime(t.expiresAt) : null,
    url: `${clusterUrl(publicUrl, orgSlug, t.clusterId)}/tokens/${t.id}`,
    cluster_url: clusterUrl(publicUrl, orgSlug, t.clusterId),
    created_at: isoTime(t.createdAt),
    created_by: serializeCreator(t.createdBy),
  };
}
