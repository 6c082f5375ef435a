/**
 * The `BUILDKITE_*` variables a build's jobs run with that describe the build, its pipeline and
 * its organization (the docs' Environment variables page): the same for every job of the build.
 * A job adds its own (src/builds/jobs/serialize.ts, jobEnv); a step's `if` reads them through
 * `build.env()` (the docs' conditionals list these very ones). Pure.
 */
import type { Build } from './model';

/** What the variables are made of: a build as planned (no number before it is written) or as stored. */
export interface BuildEnvironmentSource {
  build: Pick<Build, 'branch' | 'commit' | 'message' | 'pullRequest' | 'source' | 'triggeredFrom' | 'rebuiltFrom' | 'author' | 'webhookEvent'> & {
    id: string;
    /** Null while the build is planned: its number is given when it is written. */
    number: number | null;
    tag: string | null;
    creator: { name: string; email: string } | null;
  };
  pipeline: { id: string; name: string; slug: string; defaultBranch: string | null; repository: string; providerId: string };
  organization: { id: string; slug: string };
}

/**
 * Who the docs' BUILDKITE_BUILD_CREATOR and _EMAIL name: the user who created the build, but on
 * a GitHub webhook's build (one with its event) the HEAD commit's author, unverified ("Set from
 * the unverified HEAD commit"), as the delivery gave it.
 */
function creatorOf(b: BuildEnvironmentSource['build']): { name: string; email: string } | null {
  if (!b.webhookEvent) return b.creator;
  return { name: b.author?.name ?? '', email: b.author?.email ?? '' };
}

/** The variables; a value the build does not have is "" (the docs: `""` if not triggered, not a rebuild...). */
export function buildEnvironment({ build: b, pipeline: p, organization: o }: BuildEnvironmentSource): Record<string, string> {
  const creator = creatorOf(b);
  const env: Record<string, string> = {
    BUILDKITE_BUILD_ID: b.id,
    BUILDKITE_BRANCH: b.branch,
    BUILDKITE_COMMIT: b.commit,
    BUILDKITE_MESSAGE: b.message ?? '',
    BUILDKITE_TAG: b.tag ?? '',
    BUILDKITE_SOURCE: b.source,
    BUILDKITE_REPO: p.repository,
    BUILDKITE_PIPELINE_PROVIDER: p.providerId,
    BUILDKITE_PULL_REQUEST: b.pullRequest ? b.pullRequest.id : 'false',
    BUILDKITE_PULL_REQUEST_BASE_BRANCH: b.pullRequest?.base ?? '',
    BUILDKITE_PULL_REQUEST_REPO: b.pullRequest?.repository ?? '',
    BUILDKITE_BUILD_CREATOR: creator?.name ?? '',
    BUILDKITE_BUILD_CREATOR_EMAIL: creator?.email ?? '',
    BUILDKITE_PIPELINE_ID: p.id,
    BUILDKITE_PIPELINE_NAME: p.name,
    BUILDKITE_PIPELINE_SLUG: p.slug,
    BUILDKITE_PIPELINE_DEFAULT_BRANCH: p.defaultBranch ?? '',
    BUILDKITE_ORGANIZATION_ID: o.id,
    BUILDKITE_ORGANIZATION_SLUG: o.slug,
    BUILDKITE_TRIGGERED_FROM_BUILD_ID: b.triggeredFrom?.build_id ?? '',
    BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: b.triggeredFrom ? String(b.triggeredFrom.build_number) : '',
    BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: b.triggeredFrom?.build_pipeline_slug ?? '',
    BUILDKITE_REBUILT_FROM_BUILD_ID: b.rebuiltFrom?.id ?? '',
    BUILDKITE_REBUILT_FROM_BUILD_NUMBER: b.rebuiltFrom ? String(b.rebuiltFrom.number) : '',
  };
  if (b.number !== null) env.BUILDKITE_BUILD_NUMBER = String(b.number);
  // The docs: `""` when not a pull request or it has no labels; DRAFT only on a draft's builds.
  env.BUILDKITE_PULL_REQUEST_LABELS = b.pullRequest?.labels?.join(',') ?? '';
  if (b.pullRequest?.draft === true) env.BUILDKITE_PULL_REQUEST_DRAFT = 'true';
  // The docs: only on builds a GitHub webhook event made; the action only for events that have one.
  if (b.webhookEvent) {
    env.BUILDKITE_GITHUB_EVENT = b.webhookEvent.event;
    if (b.webhookEvent.action !== null) env.BUILDKITE_GITHUB_ACTION = b.webhookEvent.action;
  }
  return env;
}
