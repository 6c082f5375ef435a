/**
 * Which commit statuses an event publishes, from the pipeline's provider settings and the
 * `notify` entries of its build and step. Pure: no I/O, no clock, no configuration beyond what
 * it is handed.
 *
 * - Build events (`build.*`) publish the build's status as `buildkite/<pipeline-slug>` when
 *   `publish_commit_status` is on, and one status per build-level `github_commit_status` notify.
 * - Job events (`job.*`) of command and trigger steps publish the job's status as
 *   `buildkite/<pipeline-slug>/<step label>` (its key with `use_step_key_as_commit_status`) when
 *   `publish_commit_status` and `publish_commit_status_per_step` are on, and one per step-level
 *   `github_commit_status` notify.
 * - A pull request build with `separate_pull_request_statuses` uses `buildkite/<slug>/pr` (and
 *   `buildkite/<slug>/pr/<step>`), so it does not overwrite the branch build's status.
 * - A blocked build is `success` unless `publish_blocked_as_pending` makes it `pending`.
 * - Nothing for a commit that is not a full SHA (`HEAD`), a provider other than GitHub, GitHub
 *   Enterprise, GitLab and Bitbucket, or one the caller did not enable (no token configured).
 */
import type { NotificationEvent } from '../events';
import { DESCRIPTION_MAX, durationSuffix, truncate } from './describe';
import { statusRepositoryPath } from './repo-path';
import { STATUS_PROVIDERS, type StatusProvider, type StatusState, type StatusUpdate } from './types';
import { isOneOf } from '../../db/row-types';
import { isRecord } from '../../core/guards';

export interface StatusOptions {
  /** The build's top-level `notify` entries (as parsed from its pipeline YAML). */
  buildNotify?: readonly unknown[];
  /** The `notify` entries of the job's step, for job events. */
  stepNotify?: readonly unknown[];
  /** The providers with credentials configured (default: all four); others publish nothing. */
  enabledProviders?: readonly StatusProvider[];
  /**
   * Evaluates a notify entry's `if` condition against the build. Without it, entries with an
   * `if` are left out: a status the pipeline restricted is not published unrestricted.
   */
  evaluateIf?: (condition: string) => boolean;
}

/** A full SHA-1 or SHA-256 commit id; `HEAD`, branch names and short SHAs are not. */
const FULL_SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/i;

/** GitHub accepts longer contexts, but nothing useful is that long. */
const CONTEXT_MAX = 255;

type Json = Record<string, unknown>;

function obj(value: unknown): Json | undefined {
  return isRecord(value) ? value : undefined;
}

function text(value: unknown): string | undefined {
  return typeof value === 'string' && value.trim() !== '' ? value.trim() : undefined;
}

export function isStatusProvider(value: unknown): value is StatusProvider {
  return isOneOf(STATUS_PROVIDERS, value);
}

interface Words {
  state: StatusState;
  description: string;
}

/** The status of a build: its state, blocked flag and duration in words. */
export function buildStatus(build: Json, blockedAsPending: boolean): Words | null {
  const name = typeof build.number === 'number' ? `Build #${build.number}` : 'Build';
  const took = durationSuffix(build.started_at, build.finished_at);
  // Windsock keeps `state` and flags `blocked`; the real API also answers `state: blocked`.
  const blocked = build.blocked === true || build.state === 'blocked';
  switch (build.state) {
    case 'creating':
    case 'scheduled':
      return { state: 'pending', description: `${name} is scheduled` };
    case 'running':
      return { state: 'running', description: `${name} is running` };
    case 'failing':
      return { state: 'running', description: `${name} is failing` };
    case 'canceling':
      return { state: 'running', description: `${name} is canceling` };
    case 'passed':
    case 'blocked':
      if (!blocked) return { state: 'success', description: `${name} passed${took}` };
      return blockedAsPending
        ? { state: 'pending', description: `${name} is blocked` }
        : { state: 'success', description: `${name} passed and is blocked${took}` };
    case 'failed':
      return { state: 'failure', description: `${name} failed${took}` };
    case 'canceled':
      return { state: 'canceled', description: `${name} was canceled${took}` };
    case 'skipped':
      return { state: 'error', description: `${name} was skipped` };
    case 'not_run':
      return { state: 'error', description: `${name} was not run` };
    default:
      return null;
  }
}

/** The status of one job, as "<step> <what happened>". */
export function jobStatus(job: Json, stepName: string): Words | null {
  const took = durationSuffix(job.started_at, job.finished_at);
  const say = (state: StatusState, words: string): Words => ({ state, description: `${stepName} ${words}` });
  switch (job.state) {
    case 'pending':
    case 'waiting':
    case 'blocked':
    case 'unblocked':
    case 'limiting':
    case 'limited':
      return say('pending', 'is waiting');
    case 'scheduled':
    case 'assigned':
    case 'accepted':
      return say('pending', 'is scheduled');
    case 'running':
      return say('running', 'is running');
    case 'canceling':
      return say('running', 'is canceling');
    case 'timing_out':
      return say('running', 'is timing out');
    case 'passed':
      return say('success', `passed${took}`);
    case 'failed':
      // A soft failure does not fail the build, so it does not fail its status either.
      return job.soft_failed === true ? say('success', `soft failed${took}`) : say('failure', `failed${took}`);
    case 'timed_out':
      return say('failure', `timed out${took}`);
    case 'expired':
      return say('failure', 'expired before an agent took it');
    case 'canceled':
      return say('canceled', `was canceled${took}`);
    case 'skipped':
      return say('error', 'was skipped');
    case 'broken':
    case 'waiting_failed':
    case 'blocked_failed':
    case 'unblocked_failed':
      return say('error', 'was not run');
    default:
      return null;
  }
}

/** The step's name in a context: its label (or its key), and which of a parallel step's jobs. */
export function stepName(job: Json, useKey: boolean): string {
  const key = text(job.step_key);
  const label = text(job.label) ?? text(job.name);
  const base = (useKey ? (key ?? label) : (label ?? key)) ?? String(job.id ?? 'job');
  const index = job.parallel_group_index;
  const total = job.parallel_group_total;
  return typeof index === 'number' && typeof total === 'number' && total > 1 ? `${base} (${index + 1}/${total})` : base;
}

/**
 * The contexts the `github_commit_status` entries of a notify list ask for; `fallback` for an
 * entry naming none. Also takes the mis-indented form the documentation's build-level example
 * parses to (`{github_commit_status: null, context: "..."}`).
 */
export function notifyContexts(entries: readonly unknown[] | undefined, fallback: string, evaluateIf?: (condition: string) => boolean): string[] {
  const contexts: string[] = [];
  for (const raw of entries ?? []) {
    const entry = obj(raw);
    if (!entry || !('github_commit_status' in entry)) continue;
    const condition = entry.if;
    if (condition !== undefined && condition !== null) {
      if (typeof condition !== 'string' || !evaluateIf || !evaluateIf(condition)) continue;
    }
    const settings = obj(entry.github_commit_status);
    contexts.push(text(settings?.context) ?? (settings ? undefined : text(entry.context)) ?? fallback);
  }
  return contexts;
}

function cut(context: string): string {
  return Array.from(context).slice(0, CONTEXT_MAX).join('');
}

export function statusUpdatesFor(event: NotificationEvent, opts: StatusOptions = {}): StatusUpdate[] {
  const { payload } = event;
  const build = obj(payload.build);
  const pipeline = obj(payload.pipeline);
  if (!build || !pipeline) return [];
  const provider = obj(pipeline.provider);
  const providerId = provider?.id;
  if (!isStatusProvider(providerId)) return [];
  if (opts.enabledProviders && !opts.enabledProviders.includes(providerId)) return [];

  const commit = text(build.commit);
  if (!commit || !FULL_SHA.test(commit)) return [];
  const settings = obj(provider?.settings) ?? {};
  const repository = statusRepositoryPath(providerId, pipeline.repository) ?? fromSetting(settings.repository);
  const slug = text(pipeline.slug);
  if (!repository || !slug) return [];

  const on = (name: string) => settings[name] === true;
  // Every provider's settings carry it, on by default; a representation without it keeps the default.
  const publish = settings.publish_commit_status === undefined || on('publish_commit_status');
  const pullRequest = obj(build.pull_request);
  const pullRequestId = pullRequest?.id;
  const separate = on('separate_pull_request_statuses') && (typeof pullRequestId === 'number' || text(pullRequestId) !== undefined);
  const base = `buildkite/${slug}${separate ? '/pr' : ''}`;
  // `github_commit_status` is GitHub's notification, whatever the pipeline's other settings.
  const github = providerId === 'github' || providerId === 'github_enterprise';
  const buildId = String(build.id ?? event.buildId ?? '');

  let words: Words | null;
  let contexts: string[];
  let targetUrl: string;
  let subject: StatusUpdate['subject'];
  if (event.name.startsWith('build.')) {
    words = buildStatus(build, on('publish_blocked_as_pending'));
    contexts = [...(publish ? [base] : []), ...(github ? notifyContexts(opts.buildNotify, base, opts.evaluateIf) : [])];
    targetUrl = text(build.web_url) ?? '';
    subject = { kind: 'build', buildId };
  } else if (event.name.startsWith('job.')) {
    const job = obj(payload.job);
    // Wait and block steps have no outcome of their own to show.
    if (!job || (job.type !== 'script' && job.type !== 'trigger')) return [];
    const step = stepName(job, on('use_step_key_as_commit_status'));
    const own = `${base}/${step}`;
    words = jobStatus(job, stepName(job, false));
    contexts = [...(publish && on('publish_commit_status_per_step') ? [own] : []), ...(github ? notifyContexts(opts.stepNotify, own, opts.evaluateIf) : [])];
    targetUrl = text(job.web_url) ?? text(build.web_url) ?? '';
    subject = { kind: 'job', buildId, jobId: String(job.id ?? '') };
  } else {
    return [];
  }
  if (!words) return [];

  const description = truncate(words.description, DESCRIPTION_MAX);
  const seen = new Set<string>();
  const updates: StatusUpdate[] = [];
  for (const context of contexts.map(cut)) {
    if (seen.has(context)) continue;
    seen.add(context);
    updates.push({ provider: providerId, repository, sha: commit.toLowerCase(), state: words.state, context, description, targetUrl, subject });
  }
  return updates;
}

/** The provider settings' read-only `repository` (`owner/name`), when the URL itself gave none. */
function fromSetting(value: unknown): string | null {
  return typeof value === 'string' && /^[^/\s]+(?:\/[^/\s]+)+$/.test(value) ? value : null;
}
