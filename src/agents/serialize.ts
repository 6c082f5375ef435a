/** Agents and agent tokens -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import { queueOf } from './query-rules';
import type { Agent, AgentToken } from './repository';

type AgentBaseJson = components['schemas']['AgentBase'];
type AgentJson = components['schemas']['Agent'];
type JobJson = components['schemas']['Job'];

const iso = (d: Date | null) => (d ? isoTime(d) : null);

export function serializeAgentBase(a: Agent, publicUrl: string, orgSlug: string): AgentBaseJson {
  return {
    id: a.id,
    graphql_id: graphqlId('Agent', a.id),
    url: `${publicUrl}/v2/organizations/${orgSlug}/agents/${a.id}`,
    // A cluster's agent is shown under its cluster and queue, as in the real service.
    web_url:
      a.clusterId && a.clusterQueueId
        ? `${publicUrl}/organizations/${orgSlug}/clusters/${a.clusterId}/queues/${a.clusterQueueId}/agents/${a.id}`
        : `${publicUrl}/organizations/${orgSlug}/agents/${a.id}`,
    name: a.name,
    connection_state: a.connectionState,
    hostname: a.hostname,
    ip_address: a.ipAddress,
    user_agent: a.userAgent,
    version: a.version,
    os_id: a.os,
    arch: a.arch,
    queue: queueOf(a.metaData),
    cluster_id: a.clusterId,
    creator: serializeCreator(a.creator),
    created_at: isoTime(a.createdAt),
    connected_at: iso(a.connectedAt),
    disconnected_at: iso(a.disconnectedAt),
    lost_at: iso(a.lostAt),
    stopped_at: iso(a.stoppedAt),
    last_job_finished_at: iso(a.lastJobFinishedAt),
    priority: a.priority,
    meta_data: a.metaData,
    // The service hands agents in with a timed-out pause already cleared.
    paused: a.pause !== null,
    paused_at: iso(a.pause?.at ?? null),
    paused_by: serializeCreator(a.pause?.by ?? null),
    paused_note: a.pause?.note ?? null,
    paused_timeout_in_minutes: a.pause?.timeoutInMinutes ?? null,
  };
}

/**
 * The agent with the job it holds, serialized by the builds area (whose job JSON embeds the
 * agent: that job's own `agent` is null, as in the real API).
 */
export function serializeAgent(a: Agent, job: JobJson | null, publicUrl: string, orgSlug: string): AgentJson {
  return Object.assign(serializeAgentBase(a, publicUrl, orgSlug), { job });
}

export function serializeAgentToken(t: AgentToken, token: string): components['schemas']['AgentToken'] {
  return {
    id: t.id,
    graphql_id: graphqlId('AgentToken', t.id),
    description: t.description,
    token,
    created_at: isoTime(t.createdAt),
    created_by: serializeCreator(t.creator),
  };
}
