/**
 * What a job is once stored, in the service's own terms: the job of a build (what was planned,
 * plus what running it records), a job with what its agent needs to know of its build, its log's
 * pieces and how a job ends. Types only: rows are mapped in ./rows.ts, the groups of states and
 * the transitions are src/builds/states.ts, the rules that move jobs ./state.ts and src/builds/progress/.
 */
import type { PlannedJob } from './plan';
import type { Author, BuildSource, JobRetryType, JobState, PullRequest, TriggeredFrom, WebhookEvent } from '../model';
import type { User } from '../../core/identity';

/** A stored job: what was planned (its concurrency group is its step's: concurrencyOf), plus what running it records. */
export interface Job extends Omit<PlannedJob, 'state' | 'concurrency'> {
  buildId: string;
  state: JobState;
  softFailed: boolean;
  exitStatus: number | null;
  retried: boolean;
  retriedInJobId: string | null;
  retriesCount: number | null;
  /** How many times each rule of the step's `retry.automatic` (by index) has retried this job's line: each rule counts its own. */
  automaticRetries: number[];
  retryType: JobRetryType | null;
  /** On a job that retried another: that job and how it was retried. */
  retrySource: { job_id: string; retry_type: 'manual' | 'automatic' } | null;
  /** The agent that took the job (set from `assigned` on). */
  agentId: string | null;
  /** The step whose `pipeline upload` added the job (null: the pipeline's own steps). */
  uploadedByStepId: string | null;
  /** The non-zero exit status the running job promised to finish with (`job promise-failure`), and when. */
  promisedExitStatus: number | null;
  promisedExitStatusAt: Date | null;
  /** Who unblocked a block step, and when. */
  unblockedBy: User | null;
  unblockedAt: Date | null;
  /** The build a trigger job created: its id, number and pipeline slug at the time. */
  triggeredBuild: { id: string; number: number; pipeline_slug: string } | null;
  /** The signal that stopped the process (`SIGTERM`), as the agent reported it on finish. */
  signal: string | null;
  /** Why the agent stopped the process (`cancel`, `timeout`, `agent_stop`), if it did. */
  signalReason: string | null;
  /** Who retried the job (null while it is not retried, or when it was retried automatically). */
  retriedBy: User | null;
  /** When a scheduled job no agent took expired. */
  expiredAt: Date | null;
  createdAt: Date;
  scheduledAt: Date | null;
  runnableAt: Date | null;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/**
 * A job with what running it needs to know of its build, pipeline and organization (its
 * environment: src/builds/jobs/serialize.ts, jobEnv). Team slugs are of non-private teams only
 * (`visible`, not `secret`), in slug order, as the docs' `*_TEAMS` variables list them.
 */
export interface JobContext {
  job: Job;
  organizationId: string;
  orgSlug: string;
  pipelineId: string;
  pipelineSlug: string;
  pipelineName: string;
  pipelineDefaultBranch: string | null;
  repository: string;
  /** The pipeline's Git clone mirror, or null. */
  cloneMirrorUrl: string | null;
  providerId: string;
  /** The slugs of the pipeline's non-private teams. */
  pipelineTeams: string[];
  /** The name of the cluster the job runs in (`job.clusterId`), or null: in none, or it is gone. */
  clusterName: string | null;
  /**
   * Who unblocked the build last before the job became runnable (any time so far, for a job not
   * runnable yet): the block step's snapshot of the user, with the user's non-private teams now.
   */
  unblocker: { id: string; name: string; email: string; teams: string[] } | null;
  build: {
    id: string;
    number: number;
    branch: string;
    commit: string;
    message: string | null;
    tag: string | null;
    pullRequest: PullRequest | null;
    /** The commit's author, as the build's creation gave it. */
    author: Author | null;
    cleanCheckout: boolean;
    creator: { name: string; email: string } | null;
    /** The slugs of the creator's non-private teams in the organization ([] without a creator). */
    creatorTeams: string[];
    /** The GitHub webhook event that made the build, or null. */
    webhookEvent: WebhookEvent | null;
    source: BuildSource;
    triggeredFrom: TriggeredFrom | null;
    rebuiltFrom: { id: string; number: number } | null;
  };
}

/** A stored piece of a job's log: its text, its size in bytes, when its section headers arrived. */
export interface LogChunk {
  content: string;
  size: number;
  headerTimes: number[];
}

/** What ends a job: its state, exit status and why its process was stopped. */
export interface JobEnd {
  state: JobState;
  exit_status: number;
  signal?: string | null;
  signal_reason: string | null;
  soft_failed: boolean;
  finished_at: Date;
  /** The log chunks the agent gave up sending (the real agent's finish reports it). */
  chunks_failed_count?: number | null;
}

/** How a job an agent took but never started ends when the agent is lost. */
export interface ExpiredJob {
  state: 'expired';
  expired_at: Date;
  finished_at: Date;
}
