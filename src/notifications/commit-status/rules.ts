/**
 * Which commit statuses an event publishes, from the pipeline's provider settings and the
 * `notify` entries of its build and step. Pure: no I/O, no clock, no configuration beyond what
 * it is handed.
 *
 * - Build events (`build.*`) publish the build's status as `buildkite/<pipeline-slug>` when
 *   `publish_commit_status` is on. A build-level `github_commit_status` or `github_check` entry
 *   publishes at `build.failing` and `build.finished`, the events the docs name for it.
 * - Job events (`job.*`) of command and trigger steps publish the job's status as
 *   `buildkite/<pipeline-slug>/<step label>` (its key with `use_step_key_as_commit_status`) when
 *   `publish_commit_status` and `publish_commit_status_per_step` are on. A step-level entry
 *   publishes once per step at the step's `step.failing` and `step.finished` (the docs), in the
 *   step's words: a parallel step of ten jobs makes one status, not ten.
 * - A pull request build with `separate_pull_request_statuses` uses `buildkite/<slug>/pr` (and
 *   `buildkite/<slug>/pr/<step>`), so it does not overwrite the branch build's status.
 * - A blocked build is `success` unless `publish_blocked_as_pending` (an entry's own
 *   `blocked_builds_as_pending`) makes it `pending`.
 * - A `github_check` is published as a commit status named after the check: its `name`, else
 *   the pipeline's name (build level) or the step's label or key (step level), the docs' defaults.
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
  /**
   * The step moment the job event is (../step-moments.ts), if it is one: the step's entries
   * publish only then. Absent or null for any other job event.
   */
  step?: StepStatusMoment | null;
  /** The providers with credentials configured (default: all four); others publish nothing. */
  enabledProviders?: readonly StatusProvider[];
  /**
   * Evaluates a notify entry's `if` condition against the build. Without it, entries with an
   * `if` are left out: a status the pipeline restricted is not published unrestricted.
   */
  evaluateIf?: (condition: string) => boolean;
}

/** A step at one of its moments, as its entries' status shows it. */
export interface StepStatusMoment {
  state: 'failing' | 'finished';
  /** The step's jobs, their latest attempts, as `jobStatus` reads them (state, soft_failed, started_at, finished_at). */
  jobs: readonly Record<string, unknown>[];
}

/** The build events at which build-level entries publish (the docs' Notifications page). */
const ENTRY_BUILD_EVENTS: readonly string[] = ['build.failing', 'build.finished'];

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

/**
 * The status of a step at its moment: failing while its other jobs go on (as a failing build is
 * running), then the worst of its jobs' ends over the time from its first start to its last end.
 */
export function stepStatus(moment: StepStatusMoment, name: string): Words {
  if (moment.state === 'failing') return { state: 'running', description: `${name} is failing` };
  const ends = new Set(moment.jobs.map((j) => jobStatus(j, name)?.state));
  const times = (field: string) => moment.jobs.map((j) => j[field]).filter((t): t is string => typeof t === 'string');
  // ISO timestamps of one format sort as the times they are.
  const took = durationSuffix(times('started_at').sort()[0], times('finished_at').sort().at(-1));
  if (ends.has('failure')) return { state: 'failure', description: `${name} failed${took}` };
  if (ends.has('canceled')) return { state: 'canceled', description: `${name} was canceled${took}` };
  if (ends.has('error')) return { state: 'error', description: `${name} was not run` };
  const soft = moment.jobs.some((j) => j.soft_failed === true);
  return { state: 'success', description: `${name} ${soft ? 'soft failed' : 'passed'}${took}` };
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

/** What one `github_commit_status` or `github_check` entry publishes under. */
export interface EntryStatus {
  context: string;
  /** A build-level commit status's `blocked_builds_as_pending`. */
  blockedAsPending: boolean;
}

/**
 * The statuses the `github_commit_status` and `github_check` entries of a notify list ask for,
 * with their default names (`defaults.status`, `defaults.check`) for an entry naming none. Also
 * takes the mis-indented form the documentation's build-level example parses to
 * (`{github_commit_status: null, context: "..."}`), and a check's `context` (its name as
 * pipelines saved before Windsock read `name` wrote it).
 */
export function notifyStatuses(
  entries: readonly unknown[] | undefined,
  defaults: { status: string; check: string },
  evaluateIf?: (condition: string) => boolean,
): EntryStatus[] {
  const out: EntryStatus[] = [];
  for (const raw of entries ?? []) {
    const entry = obj(raw);
    const kind = entry && ('github_commit_status' in entry ? 'github_commit_status' : 'github_check' in entry ? 'github_check' : null);
    if (!entry || !kind) continue;
    const condition = entry.if;
    if (condition !== undefined && condition !== null) {
      if (typeof condition !== 'string' || !evaluateIf || !evaluateIf(condition)) continue;
    }
    const settings = obj(entry[kind]);
    const named = kind === 'github_check' ? (text(settings?.name) ?? text(settings?.context)) : text(settings?.context);
    const context = named ?? (settings ? undefined : text(entry.context)) ?? (kind === 'github_check' ? defaults.check : defaults.status);
    out.push({ context, blockedAsPending: kind === 'github_commit_status' && settings?.blocked_builds_as_pending === true });
  }
  return out;
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

  // Each status: its context and its words, the build's or job's own first.
  const planned: [string, Words | null][] = [];
  let targetUrl: string;
  let subject: StatusUpdate['subject'];
  if (event.name.startsWith('build.')) {
    if (publish) planned.push([base, buildStatus(build, on('publish_blocked_as_pending'))]);
    if (github && ENTRY_BUILD_EVENTS.includes(event.name)) {
      const defaults = { status: base, check: text(pipeline.name) ?? slug };
      for (const e of notifyStatuses(opts.buildNotify, defaults, opts.evaluateIf)) planned.push([e.context, buildStatus(build, e.blockedAsPending)]);
    }
    targetUrl = text(build.web_url) ?? '';
    subject = { kind: 'build', buildId };
  } else if (event.name.startsWith('job.')) {
    const job = obj(payload.job);
    // Wait and block steps have no outcome of their own to show.
    if (!job || (job.type !== 'script' && job.type !== 'trigger')) return [];
    // A promise leaves its job running, as its last status said; its step may be failing.
    if (publish && on('publish_commit_status_per_step') && event.name !== 'job.promised_exit_status') {
      planned.push([`${base}/${stepName(job, on('use_step_key_as_commit_status'))}`, jobStatus(job, stepName(job, false))]);
    }
    if (github && opts.step) {
      // The step as a whole: its name without the job's place in a parallel step.
      const whole = { ...job, parallel_group_total: null };
      const name = stepName(whole, on('use_step_key_as_commit_status'));
      const words = stepStatus(opts.step, stepName(whole, false));
      for (const e of notifyStatuses(opts.stepNotify, { status: `${base}/${name}`, check: name }, opts.evaluateIf)) planned.push([e.context, words]);
    }
    targetUrl = text(job.web_url) ?? text(build.web_url) ?? '';
    subject = { kind: 'job', buildId, jobId: String(job.id ?? '') };
  } else {
    return [];
  }

  const seen = new Set<string>();
  const updates: StatusUpdate[] = [];
  for (const [raw, words] of planned) {
    const context = cut(raw);
    if (!words || seen.has(context)) continue;
    seen.add(context);
    const description = truncate(words.description, DESCRIPTION_MAX);
    updates.push({ provider: providerId, repository, sha: commit.toLowerCase(), state: words.state, context, description, targetUrl, subject });
  }
  return updates;
}
/** The provider settings' read-only `repository` (`owner/name`), when the URL itself gave none. */
function fromSetting(value: unknown): string | null {
  return typeof value === 'string' && /^[^/\s]+(?:\/[^/\s]+)+$/.test(value) ? value : null;
}
