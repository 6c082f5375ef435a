/**
 * What the job endpoints answer beyond the job itself (its environment), and jobs as agents hold
 * them (the `job` of an agent's JSON).
 */
import type { components } from '../../../generated/api';
import type { Agent } from '../../agents/repository';
import { buildUrls, serializeJob } from '../serialize';
import type { JobContext } from './model';
import YAML from 'yaml';
import { graphqlId, isoTime } from '../../http/responses/format';
import type { StepUpload } from './step-upload-repository';
import { buildEnvironment } from '../environment';

/** The host of a repository URL (`git@host:path`, `ssh://user@host:port/path`, `https://host/path`), or "". */
function repositoryHost(repository: string): string {
  const scp = /^[^/@:]+@([^/:]+):/.exec(repository);
  if (scp) return scp[1]!;
  try {
    return new URL(repository).hostname;
  } catch {
    return '';
  }
}

/**
 * The environment a job runs in: its step's env (pipeline, build and step env merged when the
 * build was planned) and the `BUILDKITE_*` variables of the build, and of the agent once one
 * took the job.
 */
export function jobEnv(c: JobContext, agent: Pick<Agent, 'id' | 'name' | 'metaData'> | null, publicUrl: string): Record<string, string> {
  const j = c.job;
  const env: Record<string, string> = {
    ...j.env,
    CI: 'true',
    BUILDKITE: 'true',
    ...buildEnvironment({
      build: c.build,
      pipeline: {
        id: c.pipelineId,
        name: c.pipelineName,
        slug: c.pipelineSlug,
        defaultBranch: c.pipelineDefaultBranch,
        repository: c.repository,
        providerId: c.providerId,
      },
      organization: { id: c.organizationId, slug: c.orgSlug },
    }),
    BUILDKITE_JOB_ID: j.id,
    BUILDKITE_BUILD_URL: buildUrls(publicUrl, c.orgSlug, c.pipelineSlug, c.build.number).webUrl,
    BUILDKITE_REPO_SSH_HOST: repositoryHost(c.repository),
    // The older name of org/pipeline some plugins and scripts still read.
    BUILDKITE_PROJECT_SLUG: `${c.orgSlug}/${c.pipelineSlug}`,
    BUILDKITE_PROJECT_PROVIDER: c.providerId,
    BUILDKITE_RETRY_COUNT: String(j.retriesCount ?? 0),
    BUILDKITE_COMMAND: j.command ?? '',
    BUILDKITE_LABEL: j.name ?? '',
    BUILDKITE_STEP_ID: j.stepId,
    BUILDKITE_STEP_KEY: j.stepKey ?? '',
    BUILDKITE_ARTIFACT_PATHS: j.artifactPaths ?? '',
    BUILDKITE_TIMEOUT: j.timeoutInMinutes === null ? 'false' : String(j.timeoutInMinutes),
    // The docs' `*_TEAMS`: colon-separated slugs of non-private teams ("" for none, or no creator).
    BUILDKITE_BUILD_CREATOR_TEAMS: c.build.creatorTeams.join(':'),
    BUILDKITE_PIPELINE_TEAMS: c.pipelineTeams.join(':'),
    // `hosted` only on Buildkite's hosted agents, which Windsock has none of.
    BUILDKITE_COMPUTE_TYPE: 'self-hosted',
  };
  // Set only where the build has them, so a step's own env (BUILDKITE_CLEAN_CHECKOUT: "true") is not overridden.
  // The real agent's checkout phase removes the checkout first when BUILDKITE_CLEAN_CHECKOUT is true.
  if (c.build.cleanCheckout) env.BUILDKITE_CLEAN_CHECKOUT = 'true';
  // pipelines.md: "When set, agents receive this URL in BUILDKITE_GIT_REMOTE_MIRROR_URL".
  if (c.cloneMirrorUrl) env.BUILDKITE_GIT_REMOTE_MIRROR_URL = c.cloneMirrorUrl;
  if (c.build.author?.name) env.BUILDKITE_BUILD_AUTHOR = c.build.author.name;
  if (c.build.author?.email) env.BUILDKITE_BUILD_AUTHOR_EMAIL = c.build.author.email;
  // What the real agent's bootstrap installs and runs: the step's plugins, in the list form.
  if (j.step.type === 'script' && j.step.plugins?.length) env.BUILDKITE_PLUGINS = JSON.stringify(j.step.plugins);
  if (j.parallelGroupTotal !== null) {
    env.BUILDKITE_PARALLEL_JOB = String(j.parallelGroupIndex);
    env.BUILDKITE_PARALLEL_JOB_COUNT = String(j.parallelGroupTotal);
  }
  // The docs: "only available if the job belongs to a group step" (its key and label "" when it has none).
  if (j.groupId !== null) {
    env.BUILDKITE_GROUP_ID = j.groupId;
    env.BUILDKITE_GROUP_KEY = j.step.group_key ?? '';
    env.BUILDKITE_GROUP_LABEL = j.step.group_label ?? '';
  }
  // The docs: the cluster's id "only if the build has an associated cluster_queue" (the job's own,
  // as its `queue` rule or the cluster's default named it); its name wherever the job runs in one.
  if (j.clusterId && j.clusterQueueId) env.BUILDKITE_CLUSTER_ID = j.clusterId;
  if (j.clusterId && c.clusterName !== null) env.BUILDKITE_CLUSTER_NAME = c.clusterName;
  // Only once a block step of the build was unblocked (before the job became runnable).
  if (c.unblocker) {
    env.BUILDKITE_UNBLOCKER = c.unblocker.name;
    env.BUILDKITE_UNBLOCKER_EMAIL = c.unblocker.email;
    env.BUILDKITE_UNBLOCKER_ID = c.unblocker.id;
    env.BUILDKITE_UNBLOCKER_TEAMS = c.unblocker.teams.join(':');
  }
  if (agent) {
    env.BUILDKITE_AGENT_ID = agent.id;
    env.BUILDKITE_AGENT_NAME = agent.name;
    // The agent's tags, as the real agent exports them: `queue=default` -> BUILDKITE_AGENT_META_DATA_QUEUE.
    for (const tag of agent.metaData) {
      const at = tag.indexOf('=');
      if (at > 0)
        env[
          `BUILDKITE_AGENT_META_DATA_${tag
            .slice(0, at)
            .toUpperCase()
            .replace(/[^A-Z0-9]/g, '_')}`
        ] = tag.slice(at + 1);
    }
  }
  return env;
}

/** The contract's cap on `header_times` (the JSON form of the log is written by ./log-output). */
export const MAX_HEADER_TIMES = 100_000;

/** Jobs that agents hold, by job id -> their JSON as an agent's `job` shows it (whose own `agent` is null). */
export function serializeHeldJobs(held: Map<string, JobContext>, publicUrl: string): Map<string, components['schemas']['Job']> {
  const json = new Map<string, components['schemas']['Job']>();
  for (const [id, c] of held) {
    const { url, webUrl } = buildUrls(publicUrl, c.orgSlug, c.pipelineSlug, c.build.number);
    json.set(id, serializeJob(c.job, url, webUrl, null));
  }
  return json;
}

type StepUploadJson = components['schemas']['StepUpload'];
type StepUploadDetailJson = components['schemas']['StepUploadDetail'];

/** A definition larger than this (as JSON) is not rendered as YAML, as the docs have it. */
export const DEFINITION_YAML_LIMIT_BYTES = 2 * 1024 * 1024;

/** A step upload as the list shows it; `buildUrl` is its build's API URL. */
export function serializeStepUpload(u: StepUpload, buildUrl: string): StepUploadJson {
  return {
    uuid: u.id,
    graphql_id: graphqlId('BuildStepUpload', u.id),
    state: u.state,
    source: 'job',
    source_job_id: u.sourceJobId,
    replace_existing_steps: u.replaceExistingSteps,
    created_jobs_count: u.createdJobsCount,
    rejection_type: u.rejectionType,
    message: u.message,
    url: `${buildUrl}/step-uploads/${u.id}`,
    created_at: isoTime(u.createdAt),
    processed_at: u.processedAt ? isoTime(u.processedAt) : null,
  };
}

/** A step upload with its definition rendered as YAML (from the stored JSON, so not the uploaded text). */
export function serializeStepUploadDetail(u: StepUpload, buildUrl: string): StepUploadDetailJson {
  const omitted = u.definitionBytes > DEFINITION_YAML_LIMIT_BYTES;
  const yaml = u.definition !== null && !omitted ? YAML.stringify(JSON.parse(u.definition)) : null;
  return { ...serializeStepUpload(u, buildUrl), definition_bytes: u.definitionBytes, definition_yaml: yaml, definition_yaml_omitted: omitted };
}
