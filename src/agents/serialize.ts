/** Agents, agent tokens and jobs as agents see them -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import { creator, serializeJob } from '../builds/serialize';
import { graphqlId, isoTime } from '../http/format';
import type { JobContext } from '../jobs/model';
import { jobEnv } from '../jobs/serialize';
import { queueOf } from './query-rules';
import type { Agent, AgentToken } from './repository';

type AgentBaseJson = components['schemas']['AgentBase'];
type AgentJson = components['schemas']['Agent'];
type AgentJobJson = components['schemas']['AgentJob'];

const iso = (d: Date | null) => (d ? isoTime(d) : null);

export function serializeAgentBase(a: Agent, publicUrl: string, orgSlug: string): AgentBaseJson {
  return {
    id: a.id,
    graphql_id: graphqlId('Agent', a.id),
    url: `${publicUrl}/v2/organizations/${orgSlug}/agents/${a.id}`,
    web_url: `${publicUrl}/organizations/${orgSlug}/agents/${a.id}`,
    name: a.name,
    connection_state: a.connectionState,
    hostname: a.hostname,
    ip_address: a.ipAddress,
    user_agent: a.userAgent,
    version: a.version,
    os_id: a.os,
    arch: a.arch,
    queue: queueOf(a.metaData),
    creator: creator(a.creator),
    created_at: isoTime(a.createdAt),
    connected_at: iso(a.connectedAt),
    disconnected_at: iso(a.disconnectedAt),
    lost_at: iso(a.lostAt),
    stopped_at: iso(a.stoppedAt),
    last_job_finished_at: iso(a.lastJobFinishedAt),
    priority: a.priority,
    meta_data: a.metaData,
    // Pausing agents is a later issue: the documented empty values until then.
    paused: false,
    paused_at: null,
    paused_by: null,
    paused_note: null,
    paused_timeout_in_minutes: null,
  };
}

/** The agent with the job it holds; that job's own `agent` is null, as in the real API. */
export function serializeAgent(a: Agent, job: JobContext | null, publicUrl: string, orgSlug: string): AgentJson {
  return Object.assign(serializeAgentBase(a, publicUrl, orgSlug), { job: job ? serializeJobOf(job, publicUrl) : null });
}

function serializeJobOf(c: JobContext, publicUrl: string) {
  const buildUrl = `${publicUrl}/v2/organizations/${c.orgSlug}/pipelines/${c.pipelineSlug}/builds/${c.build.number}`;
  const webUrl = `${publicUrl}/${c.orgSlug}/${c.pipelineSlug}/builds/${c.build.number}`;
  return serializeJob(c.job, buildUrl, webUrl, null);
}

export function serializeAgentToken(t: AgentToken, token: string): components['schemas']['AgentToken'] {
  return {
    id: t.id,
    graphql_id: graphqlId('AgentToken', t.id),
    description: t.description,
    token,
    created_at: isoTime(t.createdAt),
    created_by: creator(t.creator),
  };
}

/** The job as its agent runs it: the command, and the environment to run it in. */
export function serializeAgentJob(c: JobContext, agent: Agent, publicUrl: string): AgentJobJson {
  const j = c.job;
  const env = jobEnv(c, agent, publicUrl);
  return {
    id: j.id,
    state: j.state as AgentJobJson['state'],
    command: j.command,
    env,
    timeout_in_minutes: j.timeoutInMinutes,
    exit_status: j.exitStatus,
    soft_failed: j.softFailed,
    runnable_at: iso(j.runnableAt),
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
  };
}
