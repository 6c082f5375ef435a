/** Build and job -> the exact JSON of the contract (ISO 8601 timestamps throughout). */
import type { components } from '../../generated/api';
import { graphqlId, isoTime, utcTime } from '../http/responses/format';
import type { Pipeline, PipelineCounts } from '../pipelines/repository';
import { serializeProvider } from '../pipelines/serialize';
import type { BuildWithJobs } from './service';
import type { Author, PullRequest } from './model';
import { countJobStates } from './jobs/state';
import { concurrencyOf } from './jobs/concurrency';
import type { Job } from './jobs/model';
import { serializeCreator } from '../user/serialize';

type BuildJson = components['schemas']['Build'];
type JobJson = components['schemas']['Job'];
type AgentJson = components['schemas']['AgentBase'];
type BuildPipelineJson = components['schemas']['BuildPipeline'];

export interface BuildView {
  publicUrl: string;
  orgSlug: string;
  /** The build's pipeline, serialized once per pipeline for a whole page (see serializeBuildPipeline). */
  pipeline: BuildPipelineJson;
  /** The agents that took the build's jobs, by id. */
  agents?: Map<string, AgentJson>;
}

export interface BuildPipelineView {
  publicUrl: string;
  orgSlug: string;
  webhookUrl: string | undefined;
  badgeUrl: string;
  counts: PipelineCounts;
}

/**
 * The pipeline as a build embeds it: every key the documented build examples show, provider
 * `settings` included (the official Go client decodes them by provider id and fails without
 * them). A page of builds mostly shares a few pipelines, so callers serialize each once per
 * response and embed the same object in each of its builds: the settings are worked out once
 * per pipeline, not once per build, and no row is read for them (the pipeline row is read whole
 * already).
 */
export function serializeBuildPipeline(p: Pipeline, v: BuildPipelineView): BuildPipelineJson {
  const pipelineUrl = `${v.publicUrl}/v2/organizations/${v.orgSlug}/pipelines/${p.slug}`;
  return {
    id: p.id,
    graphql_id: graphqlId('Pipeline', p.id),
    url: pipelineUrl,
    web_url: `${v.publicUrl}/${v.orgSlug}/${p.slug}`,
    name: p.name,
    slug: p.slug,
    repository: p.repository,
    branch_configuration: p.branchConfiguration,
    default_branch: p.defaultBranch,
    provider: serializeProvider(p, v.webhookUrl),
    skip_queued_branch_builds: p.skipQueuedBranchBuilds,
    skip_queued_branch_builds_filter: p.skipQueuedBranchBuildsFilter,
    cancel_running_branch_builds: p.cancelRunningBranchBuilds,
    cancel_running_branch_builds_filter: p.cancelRunningBranchBuildsFilter,
    builds_url: `${pipelineUrl}/builds`,
    badge_url: v.badgeUrl,
    created_at: utcTime(p.createdAt),
    scheduled_builds_count: v.counts.scheduledBuilds,
    running_builds_count: v.counts.runningBuilds,
    scheduled_jobs_count: v.counts.scheduledJobs,
    running_jobs_count: v.counts.runningJobs,
    waiting_jobs_count: v.counts.waitingJobs,
  };
}

/** The documented author shape: all three keys, null where the build was given none. */
function author(a: Author | null): BuildJson['author'] {
  return a ? { name: a.name ?? null, email: a.email ?? null, username: a.username ?? null } : null;
}

/** The documented pull request keys (`{}` for none): what only a webhook told (draft, fork) stays in. */
function pullRequest(pr: PullRequest | null): BuildJson['pull_request'] {
  if (!pr) return {};
  return { id: pr.id, base: pr.base, repository: pr.repository, ...(pr.labels ? { labels: pr.labels } : {}) };
}

const iso = (d: Date | null) => (d ? isoTime(d) : null);

/** A trigger job's build: same organization, so its URLs are this build's with the pipeline and number swapped. */
function triggeredBuild(j: Job, buildUrl: string, buildWebUrl: string): JobJson['triggered_build'] {
  const t = j.triggeredBuild;
  if (!t) return null;
  const swap = (url: string, pipelineSegment: RegExp) => url.replace(pipelineSegment, `$1${t.pipeline_slug}/builds/${t.number}`);
  return { id: t.id, number: t.number, url: swap(buildUrl, /(\/pipelines\/)[^/]+\/builds\/\d+$/), web_url: swap(buildWebUrl, /(\/)[^/]+\/builds\/\d+$/) };
}

/** A build's API URL and web URL, from its organization's and pipeline's slugs and its number. */
export function buildUrls(publicUrl: string, orgSlug: string, pipelineSlug: string, number: number): { url: string; webUrl: string } {
  return {
    url: `${publicUrl}/v2/organizations/${orgSlug}/pipelines/${pipelineSlug}/builds/${number}`,
    webUrl: `${publicUrl}/${orgSlug}/${pipelineSlug}/builds/${number}`,
  };
}

export function serializeJob(j: Job, buildUrl: string, buildWebUrl: string, agent: AgentJson | null): JobJson {
  const common = {
    id: j.id,
    graphql_id: graphqlId('Job', j.id),
    type: j.type,
    state: j.state,
    step_key: j.stepKey,
    group_key: j.step.group_key ?? null,
    web_url: `${buildWebUrl}#${j.id}`,
    created_at: isoTime(j.createdAt),
    scheduled_at: iso(j.scheduledAt),
    runnable_at: iso(j.runnableAt),
    started_at: iso(j.startedAt),
    finished_at: iso(j.finishedAt),
  };
  // Object.assign, not spread: spreading into a literal this large made V8 build a slow
  // dictionary-mode object per job (serializing a build took ~50µs instead of ~8µs).
  switch (j.type) {
    case 'waiter':
      return Object.assign(common, { name: null });
    case 'manual':
      return Object.assign(common, {
        label: j.name,
        name: j.name,
        unblocked_by: serializeCreator(j.unblockedBy),
        unblocked_at: iso(j.unblockedAt),
        unblockable: j.state === 'blocked',
        unblock_url: `${buildUrl}/jobs/${j.id}/unblock`,
      });
    case 'trigger':
      return Object.assign(common, {
        name: j.name,
        async: j.step.type === 'trigger' ? j.step.trigger_async : false,
        triggered_build: triggeredBuild(j, buildUrl, buildWebUrl),
      });
    case 'script': {
      const jobUrl = `${buildUrl}/jobs/${j.id}`;
      // Documented: shown only once the job promised its failure.
      if (j.promisedExitStatus !== null)
        Object.assign(common, { promised_exit_status: j.promisedExitStatus, promised_exit_status_at: iso(j.promisedExitStatusAt) });
      // The organization's API URL is the build's without its pipeline and build.
      const clusterUrl = j.clusterId ? `${buildUrl.replace(/\/pipelines\/[^/]+\/builds\/\d+$/, '')}/clusters/${j.clusterId}` : null;
      return Object.assign(common, {
        name: j.name,
        step: { id: j.stepId, signature: j.signature },
        priority: { number: j.priority },
        agent_query_rules: j.agentQueryRules,
        build_url: buildUrl,
        log_url: `${jobUrl}/log`,
        raw_log_url: `${jobUrl}/log.txt`,
        artifacts_url: `${jobUrl}/artifacts`,
        command: j.command,
        script_path: j.command,
        concurrency_wait_time_ms: concurrencyWaitTime(j),
        soft_failed: j.softFailed,
        exit_status: j.exitStatus,
        signal: j.signal,
        signal_reason: j.signalReason,
        expired_at: iso(j.expiredAt),
        artifact_paths: j.artifactPaths,
        agent,
        retried: j.retried,
        retried_in_job_id: j.retriedInJobId,
        retried_by: serializeCreator(j.retriedBy),
        retries_count: j.retriesCount,
        retry_type: j.retryType,
        retry_source: j.retrySource,
        parallel_group_index: j.parallelGroupIndex,
        parallel_group_total: j.parallelGroupTotal,
        matrix: j.step.type === 'script' ? (j.step.matrix_values ?? null) : null,
        cluster_id: j.clusterId ?? null,
        cluster_url: clusterUrl,
        cluster_queue_id: j.clusterQueueId ?? null,
        cluster_queue_url: clusterUrl && j.clusterQueueId ? `${clusterUrl}/queues/${j.clusterQueueId}` : null,
        broken_reason: j.brokenReason,
      });
    }
  }
}

/** How long a job of a concurrency group waited for its group's room (scheduled to runnable); null for other jobs, and while it waits. */
function concurrencyWaitTime(j: Job): number | null {
  if (!concurrencyOf(j.step) || !j.scheduledAt || !j.runnableAt) return null;
  return Math.max(0, j.runnableAt.getTime() - j.scheduledAt.getTime());
}

export function serializeBuild({ build: b, jobs, jobStateCounts }: BuildWithJobs, v: BuildView): BuildJson {
  const pipelineUrl = v.pipeline.url;
  const url = `${pipelineUrl}/builds/${b.number}`;
  const webUrl = `${v.pipeline.web_url}/builds/${b.number}`;
  const states = jobStateCounts ?? countJobStates(jobs);
  return {
    id: b.id,
    graphql_id: graphqlId('Build', b.id),
    url,
    web_url: webUrl,
    number: b.number,
    state: b.state,
    cancel_reason: b.cancelReason,
    blocked: b.blocked,
    message: b.message,
    commit: b.commit,
    branch: b.branch,
    tag: b.tag,
    env: b.env,
    source: b.source,
    author: author(b.author),
    creator: serializeCreator(b.creator),
    jobs: jobs.map((j) => serializeJob(j, url, webUrl, (j.agentId && v.agents?.get(j.agentId)) || null)),
    job_state_counts: { total: Object.values(states).reduce((sum, n) => sum + n, 0), states },
    created_at: isoTime(b.createdAt),
    scheduled_at: iso(b.scheduledAt),
    started_at: iso(b.startedAt),
    failing_at: iso(b.failingAt),
    finished_at: iso(b.finishedAt),
    meta_data: b.metaData,
    pull_request: pullRequest(b.pullRequest),
    merge_queue: null,
    rebuilt_from: b.rebuiltFrom ? { id: b.rebuiltFrom.id, number: b.rebuiltFrom.number, url: `${pipelineUrl}/builds/${b.rebuiltFrom.number}` } : null,
    triggered_from: b.triggeredFrom,
    pipeline: v.pipeline,
  };
}
