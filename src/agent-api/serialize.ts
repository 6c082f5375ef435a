/** The job as its agent runs it (the agent API's `AgentJob`) -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import type { Agent } from '../agents/repository';
import type { JobContext } from '../builds/jobs/model';
import { jobEnv } from '../builds/jobs/serialize';
import { isoTime } from '../http/responses/format';

type AgentJobJson = components['schemas']['AgentJob'];

const iso = (d: Date | null) => (d ? isoTime(d) : null);

/** What the agent is told of where to send a job's calls and how large its log's pieces may be. */
export interface AgentJobLimits {
  endpoint: string;
  chunksMaxSizeBytes: number;
  logMaxSizeBytes: number;
}

/** The command, and the environment to run it in. */
export function serializeAgentJob(c: JobContext, agent: Agent, publicUrl: string, limits: AgentJobLimits): AgentJobJson {
  const j = c.job;
  return {
    id: j.id,
    state: j.state,
    command: j.command,
    env: jobEnv(c, agent, publicUrl),
    step: { secrets: (j.step.type === 'script' && j.step.secrets) || [] },
    timeout_in_minutes: j.timeoutInMinutes,
    exit_status: j.exitStatus,
    soft_failed: j.softFailed,
    runnable_at: iso(j.runnableAt),
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
    endpoint: limits.endpoint,
    chunks_max_size_bytes: limits.chunksMaxSizeBytes,
    log_max_size_bytes: limits.logMaxSizeBytes,
  };
}
