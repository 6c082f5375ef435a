/**
 * What a build is, in the service's own terms: its states, the build itself, what creating one
 * takes, and the filter a list reads builds by. Types and state names only: rows are mapped in
 * ./rows.ts, and the jobs a build embeds are in ./jobs/model.ts.
 */
import type { components } from '../../generated/api';
import type { User } from '../core/identity';
import type { NotifyEntry } from '../pipelines/configuration';

/** The contract's build and job states: what the state machine sets is what the API answers. */
export type BuildState = components['schemas']['BuildState'];
export type JobState = components['schemas']['JobState'];

/** How many of a build's jobs are in each state (its `job_state_counts.states`). */
export type JobStateCounts = Partial<Record<JobState, number>>;
export type BuildSource = components['schemas']['BuildSource'];
export type JobRetryType = components['schemas']['JobRetryType'];

export interface Author {
  name?: string;
  email?: string;
  username?: string;
}

export interface PullRequest {
  id: string;
  base: string | null;
  repository: string | null;
  labels?: string[];
  /**
   * What only a provider's webhook tells (a step's `if` reads them as `build.pull_request.draft`
   * and `build.pull_request.repository.fork`; a draft's jobs get `BUILDKITE_PULL_REQUEST_DRAFT`):
   * absent on a build the API created for a pull request. Not in the REST representation.
   */
  draft?: boolean;
  fork?: boolean;
}

/**
 * The GitHub webhook event a build was created for (a step's `if` reads `build.source_event`,
 * `build.source_action` and `build.pull_request.label`): null on every other build, a rebuild
 * of a webhook build included (it is not a webhook build). Not in the REST representation.
 */
export interface WebhookEvent {
  /** The `X-GitHub-Event` name: `push`, `pull_request`... */
  event: string;
  /** The payload's `action` (`opened`, `labeled`...), null for events without one (`push`). */
  action: string | null;
  /** The label a `labeled` or `unlabeled` pull request event added or removed, else null. */
  label: string | null;
}

export interface TriggeredFrom {
  build_id: string;
  build_number: number;
  build_pipeline_slug: string;
}

export interface Build {
  id: string;
  pipelineId: string;
  organizationId: string;
  number: number;
  state: BuildState;
  blocked: boolean;
  message: string | null;
  commit: string;
  branch: string;
  tag: string | null;
  env: Record<string, string>;
  metaData: Record<string, string>;
  source: BuildSource;
  author: Author | null;
  creator: User | null;
  pullRequest: PullRequest | null;
  webhookEvent: WebhookEvent | null;
  cleanCheckout: boolean;
  rebuiltFrom: { id: string; number: number } | null;
  /** The build whose trigger step created this one, as it was then. */
  triggeredFrom: TriggeredFrom | null;
  cancelReason: string | null;
  /**
   * The build's notifications, as written: its pipeline's (or, when a template governs the
   * pipeline, the template's) top-level `notify` when it was created, then the top-level
   * `notify` of each pipeline upload into it, appended in order. Step-level ones stay on the
   * job's step (`job.step.notify`).
   */
  notify: NotifyEntry[];
  createdAt: Date;
  scheduledAt: Date | null;
  startedAt: Date | null;
  failingAt: Date | null;
  finishedAt: Date | null;
}

export type NewBuild = Omit<Build, 'number' | 'creator'> & { creatorId: string | null; triggeredFromJobId?: string; triggerDepth?: number };

/** What a create writes beyond what the pipeline decides. */
export type NewBuildFields = Pick<
  Build,
  'commit' | 'branch' | 'message' | 'author' | 'env' | 'metaData' | 'cleanCheckout' | 'pullRequest' | 'rebuiltFrom' | 'source'
> &
  Partial<Pick<Build, 'tag' | 'triggeredFrom' | 'webhookEvent' | 'scheduledAt'>> & { triggeredFromJobId?: string; triggerDepth?: number };

export interface BuildFilter {
  /** One pipeline, or organizations (each optionally restricted to the pipelines a user's teams may see). */
  scope: { pipelineId: string } | { organizations: { id: string; restrictedToUserId?: string }[] };
  branches?: string[];
  commits?: string[];
  states?: BuildState[];
  createdFrom?: Date;
  createdTo?: Date;
  finishedFrom?: Date;
  creatorId?: string;
  metaData?: Record<string, string>;
  /** `include_paused=false`: leave out builds whose command jobs all wait on paused cluster queues. */
  withoutPaused?: boolean;
}
