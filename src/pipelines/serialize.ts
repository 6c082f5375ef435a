/** Pipeline -> the exact JSON of the contract, in the timestamp style of each endpoint. */
import { clusterUrl } from '../clusters/serialize';
import type { components } from '../../generated/api';
import { graphqlId, isoTime, utcTime } from '../http/responses/format';
import { serializeUser } from '../user/serialize';
import type { GithubWebhooksDisabled, Pipeline, PipelineCounts } from './repository';
import { providerSettings } from './provider';
import type { Step, TriggerStep } from './configuration';

export type PipelineJson = components['schemas']['Pipeline'];

export interface PipelineView {
  orgSlug: string;
  publicUrl: string;
  /** The webhook URL when the caller may see it (write_pipelines and edit permission), else undefined -> "". */
  webhookUrl: string | undefined;
  badgeUrl: string;
  counts: PipelineCounts;
  /** The create response uses ISO 8601; every other pipeline response the `... UTC` form. */
  timestamps: 'iso' | 'utc';
}

/** The pipeline's `provider`, the same in the pipeline and in the pipeline a build embeds. */
export function serializeProvider(p: Pipeline, webhookUrl: string | undefined): PipelineJson['provider'] {
  return {
    id: p.providerId,
    webhook_url: webhookUrl ?? '',
    // cast: the settings are stored only after validateProviderSettings (src/pipelines/provider.ts) checked each
    // value, trigger_mode one of ProviderTriggerMode; their type, a Record of scalars, cannot say which key holds which.
    settings: providerSettings(p.providerId, p.repository, p.providerSettings) as components['schemas']['ProviderSettings'],
  };
}

/** A pipeline's API URL. */
export function pipelineApiUrl(publicUrl: string, orgSlug: string, pipelineSlug: string): string {
  return `${publicUrl}/v2/organizations/${orgSlug}/pipelines/${pipelineSlug}`;
}

/** A pipeline's GitHub webhook processing status (`.../github-webhooks`). */
export function serializeGithubWebhookProcessing(
  p: Pipeline,
  disabled: GithubWebhooksDisabled | null,
  v: { publicUrl: string; orgSlug: string },
): components['schemas']['GithubWebhookProcessing'] {
  return {
    url: `${pipelineApiUrl(v.publicUrl, v.orgSlug, p.slug)}/github-webhooks`,
    enabled: disabled === null,
    disabled_at: disabled ? isoTime(disabled.at) : null,
    disabled_by: disabled?.byName ?? null,
  };
}

export function serializePipeline(p: Pipeline, v: PipelineView): PipelineJson {
  const url = pipelineApiUrl(v.publicUrl, v.orgSlug, p.slug);
  const time = v.timestamps === 'iso' ? isoTime : utcTime;
  return {
    id: p.id,
    graphql_id: graphqlId('Pipeline', p.id),
    url,
    web_url: `${v.publicUrl}/${v.orgSlug}/${p.slug}`,
    name: p.name,
    description: p.description,
    emoji: p.emoji,
    color: p.color,
    slug: p.slug,
    repository: p.repository,
    clone_mirror_url: p.cloneMirrorUrl,
    cluster_id: p.clusterId,
    cluster_url: p.clusterId ? clusterUrl(v.publicUrl, v.orgSlug, p.clusterId) : null,
    pipeline_template_uuid: p.pipelineTemplateUuid,
    branch_configuration: p.branchConfiguration,
    default_branch: p.defaultBranch,
    skip_queued_branch_builds: p.skipQueuedBranchBuilds,
    skip_queued_branch_builds_filter: p.skipQueuedBranchBuildsFilter,
    cancel_running_branch_builds: p.cancelRunningBranchBuilds,
    cancel_running_branch_builds_filter: p.cancelRunningBranchBuildsFilter,
    allow_rebuilds: p.allowRebuilds,
    provider: serializeProvider(p, v.webhookUrl),
    builds_url: `${url}/builds`,
    badge_url: v.badgeUrl,
    created_by: p.createdBy ? serializeUser(p.createdBy) : null,
    created_at: time(p.createdAt),
    archived_at: p.archivedAt ? time(p.archivedAt) : null,
    env: p.env,
    scheduled_builds_count: v.counts.scheduledBuilds,
    running_builds_count: v.counts.runningBuilds,
    scheduled_jobs_count: v.counts.scheduledJobs,
    running_jobs_count: v.counts.runningJobs,
    waiting_jobs_count: v.counts.waitingJobs,
    visibility: p.visibility,
    tags: p.tags,
    configuration: p.configuration,
    steps: p.steps.map(stepJson),
    default_timeout_in_minutes: p.defaultTimeoutInMinutes,
    maximum_timeout_in_minutes: p.maximumTimeoutInMinutes,
    default_command_step_timeout: p.defaultTimeoutInMinutes,
    maximum_command_step_timeout: p.maximumTimeoutInMinutes,
  };
}

/**
 * A trigger step as the REST API shows it (pipelines.md's visual-step example): `label`, the
 * target `pipeline`, the `build` it makes and `async`, whatever names it was sent with.
 */
function triggerStepJson(s: TriggerStep): components['schemas']['TriggerStep'] {
  const metaData = s.trigger_meta_data ?? {};
  return {
    type: 'trigger',
    label: s.name,
    pipeline: s.trigger_project_slug,
    build: {
      message: s.trigger_message,
      branch: s.trigger_branch === '' ? null : s.trigger_branch,
      commit: s.trigger_commit,
      env: Object.keys(s.trigger_env).length ? s.trigger_env : null,
      ...(Object.keys(metaData).length ? { meta_data: metaData } : {}),
    },
    async: s.trigger_async,
    branch_configuration: s.branch_configuration,
    concurrency: null,
    parallelism: s.parallelism ?? null,
    ...(s.if !== undefined ? { if: s.if } : {}),
    ...(s.key !== undefined ? { key: s.key } : {}),
    ...(s.group_key !== undefined ? { group_key: s.group_key } : {}),
    ...(s.group_index !== undefined ? { group_index: s.group_index } : {}),
    ...(s.depends_on ? { depends_on: s.depends_on } : {}),
    ...(s.allow_dependency_failure ? { allow_dependency_failure: true } : {}),
    ...(s.soft_fail ? { soft_fail: true } : {}),
    ...(s.skip !== undefined ? { skip: s.skip } : {}),
  };
}

/**
 * A pipeline step as the REST API shows it: as stored, but a trigger step in its own shape, and
 * without its group's label (kept for its jobs' `BUILDKITE_GROUP_LABEL`, which the docs show in
 * no REST representation).
 */
export function stepJson(s: Step): components['schemas']['Step'] {
  if (s.type === 'trigger') return triggerStepJson(s);
  if (s.group_label === undefined) return s;
  const { group_label: _label, ...shown } = s;
  return shown;
}
