/**
 * Webhook deliveries: which pipeline a delivery is for (by its token), whether it is genuine
 * (signature or token), what it means (the provider modules), and whether it builds, by the
 * pipeline's provider settings. Every "no" names the rule that said it, because the answer is
 * read in the provider's delivery log. No HTTP, no SQL.
 */
import type { Build, PullRequest, WebhookEvent } from '../builds/model';
import type { BuildService, DeliveredBuild } from '../builds/service';
import { BadRequestError, SignatureError, UnprocessableError, WebhookTokenError } from '../core/errors';
import type { OrganizationService } from '../organizations/service';
import { matchesBranchFilter } from '../pipelines/branch-filter';
import { parseCondition, type Value } from '../pipelines/filter-condition';
import { providerSettings, type ProviderId, type ProviderSettings } from '../pipelines/provider';
import type { Pipeline } from '../pipelines/repository';
import type { PipelineService } from '../pipelines/service';
import { bitbucketEvents } from './bitbucket-events';
import { PROVIDER_NAMES, type DeliveryEvent, type ProviderFamily, type PullRequestEvent, type PushEvent } from './events';
import { gitHubEvent, validGitHubSignature } from './github-events';
import { gitLabEvent, validGitLabToken } from './gitlab-events';
import { buildUrls } from '../builds/serialize';
import { buildConditionContext } from '../builds/jobs/plan';
import { clock } from '../core/clock';
import type { OpenPullRequestRepository } from './repository';

export interface DeliveryHeaders {
  githubEvent?: string;
  githubSignature?: string;
  /** GitHub's legacy `X-Hub-Signature` (SHA-1); the same header as Bitbucket's signature. */
  githubSha1Signature?: string;
  gitlabEvent?: string;
  gitlabToken?: string;
  bitbucketEvent?: string;
  bitbucketSignature?: string;
}

export interface DeliveryResult {
  message: string;
  /** Present (and non-empty) only when builds were created. */
  builds?: { id: string; number: number; url: string; web_url: string }[];
}

const FAMILY: Record<ProviderId, ProviderFamily | null> = {
  github: 'github',
  github_enterprise: 'github',
  gitlab: 'gitlab',
  gitlab_ee: 'gitlab',
  bitbucket: 'bitbucket',
  bitbucket_server: 'bitbucket',
  git: null,
};

const SKIP_MARKERS = ['[ci skip]', '[skip ci]', '[ci-skip]', '[skip-ci]'];

const PULL_REQUEST_ACTIONS = ['opened', 'reopened', 'synchronize', 'ready_for_review'];
const LABEL_ACTIONS = ['labeled', 'unlabeled'];
/** Pull request actions that build only when their setting is on (GitHub's names). */
const OPT_IN_ACTIONS: ReadonlyMap<string, string> = new Map([
  ['edited', 'build_pull_request_edited'],
  ['converted_to_draft', 'build_pull_request_converted_to_draft'],
  ['review_requested', 'build_pull_request_review_requested'],
]);

/** A build to create, or the rule that says no. */
type Decision = { build: DeliveredBuild } | { skip: string };

export class DeliveryService {
  constructor(
    private readonly pipelines: PipelineService,
    private readonly builds: BuildService,
    private readonly organizations: OrganizationService,
    private readonly publicUrl: string,
    private readonly openPullRequests: OpenPullRequestRepository,
  ) {}

  async deliver(token: string, headers: DeliveryHeaders, rawBody: Buffer | undefined, body: unknown): Promise<DeliveryResult> {
    const pipeline = await this.pipelines.findByWebhookToken(token);
    if (!pipeline) throw new WebhookTokenError();
    const family = familyOf(headers);
    await this.authenticate(pipeline, family, headers, rawBody ?? Buffer.alloc(0));

    const expected = FAMILY[pipeline.providerId];
    if (expected !== family) {
      throw new UnprocessableError(
        expected
          ? `This pipeline's repository is on ${PROVIDER_NAMES[expected]}: it does not take ${PROVIDER_NAMES[family]} deliveries.`
          : `This pipeline's repository is not on GitHub, GitLab or Bitbucket: it does not take webhook deliveries.`,
      );
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BadRequestError('Malformed payload: expected a JSON object');
    const events = eventsOf(family, headers, body);
    if (events.some((e) => e.kind === 'ping')) return { message: `Pong! Deliveries to this URL build pipeline "${pipeline.slug}".` };
    if (pipeline.archivedAt) return { message: 'No build: the pipeline is archived.' };
    if (family === 'github' && !(await this.pipelines.processesGithubWebhooks(pipeline.id))) {
      return { message: 'No build: GitHub webhook processing is disabled for this pipeline.' };
    }

    const settings = providerSettings(pipeline.providerId, pipeline.repository, pipeline.providerSettings);
    const orgSlug = (await this.organizations.findById(pipeline.organizationId))?.slug ?? '';
    const created: Build[] = [];
    const reasons: string[] = [];
    for (const event of events) {
      if (family === 'github') await this.keepOpenPullRequest(pipeline, event);
      const outcome = await this.decide(pipeline, orgSlug, settings, event, family);
      if ('skip' in outcome) reasons.push(outcome.skip);
      else created.push(await this.builds.createFromDelivery(pipeline, { ...outcome.build, webhookEvent: webhookEventOf(headers, body, event) }));
    }
    if (!created.length) return { message: reasons.join(' ') };
    return {
      message: [`Created ${created.map((b) => `build #${b.number}`).join(', ')}.`, ...reasons].join(' '),
      builds: created.map((b) => {
        const { url, webUrl } = buildUrls(this.publicUrl, orgSlug, pipeline.slug, b.number);
        return { id: b.id, number: b.number, url, web_url: webUrl };
      }),
    };
  }

  /** A signature or token, when the provider sent one, must match the pipeline's webhook secret: the URL token alone also admits. */
  private async authenticate(pipeline: Pipeline, family: ProviderFamily, h: DeliveryHeaders, rawBody: Buffer) {
    const secret = this.pipelines.webhookSecret(pipeline.id, pipeline.webhookSecretGeneration);
    if (family === 'github' && h.githubSignature !== undefined && !(await validGitHubSignature(secret, rawBody, h.githubSignature))) {
      throw new SignatureError("X-Hub-Signature-256 does not match the payload signed with this pipeline's webhook secret.");
    }
    // GitHub sends its SHA-1 `X-Hub-Signature` beside `X-Hub-Signature-256`; alone it is a
    // signature we do not check (SHA-1 is refused), and a signed delivery we cannot verify must
    // not build: 401, as for a wrong one.
    if (family === 'github' && h.githubSignature === undefined && h.githubSha1Signature !== undefined) {
      throw new SignatureError(
        'X-Hub-Signature (SHA-1) is not accepted: sign deliveries with X-Hub-Signature-256 (HMAC-SHA256 of the body with the webhook secret).',
      );
    }
    if (family === 'bitbucket' && h.bitbucketSignature !== undefined && !(await validGitHubSignature(secret, rawBody, h.bitbucketSignature))) {
      throw new SignatureError("X-Hub-Signature does not match the payload signed with this pipeline's webhook secret.");
    }
    if (family === 'gitlab' && h.gitlabToken !== undefined && !validGitLabToken(secret, h.gitlabToken)) {
      throw new SignatureError("X-Gitlab-Token does not match this pipeline's webhook secret.");
    }
  }

  /**
   * The pull request open from a branch of the pipeline's own repository, as GitHub's deliveries
   * tell it (github.md): every action but `closed` records its details, `closed` forgets it. A
   * fork's is not kept: its commits send no `push`.
   */
  private async keepOpenPullRequest(pipeline: Pipeline, event: DeliveryEvent): Promise<void> {
    if (event.kind !== 'pull_request' || event.fork) return;
    if (event.action === 'closed' || event.closed) await this.openPullRequests.remove(pipeline.id, event.headBranch, event.id);
    else await this.openPullRequests.record(pipeline.id, event.headBranch, pullRequestOf(event), clock.now());
  }

  private async decide(pipeline: Pipeline, orgSlug: string, settings: ProviderSettings, event: DeliveryEvent, family: ProviderFamily): Promise<Decision> {
    const decision = await this.rules(pipeline, settings, event, family);
    if ('skip' in decision) {
      const canceled = await this.cancelForDeletedBranch(pipeline, settings, event);
      return canceled ? { skip: `${decision.skip} ${canceled}` } : decision;
    }
    const { build } = decision;

    const marker = SKIP_MARKERS.find((m) => build.message?.toLowerCase().includes(m));
    if (marker) return { skip: `No build: the ${event.kind === 'pull_request' ? `${event.noun} title` : 'commit message'} contains ${marker}.` };

    if (settings.filter_enabled === true && typeof settings.filter_condition === 'string' && settings.filter_condition.trim() !== '') {
      const parsed = parseCondition(settings.filter_condition);
      if (!parsed.ok) return { skip: `No build: filter_condition does not parse (${parsed.error.message} at character ${parsed.error.position + 1}).` };
      if (!parsed.condition.evaluate(conditionContext(pipeline, orgSlug, build))) {
        return { skip: `No build: filter_condition ${JSON.stringify(settings.filter_condition)} is false for this build.` };
      }
    }

    // "HEAD" (fork events) names no commit, so there is nothing to have built already.
    if (build.commit !== 'HEAD') {
      if (settings.skip_builds_for_existing_commits === true && (await this.builds.hasBuildOf(pipeline.id, build.commit))) {
        return { skip: `No build: commit ${build.commit} already has a build (skip_builds_for_existing_commits).` };
      }
      if (
        event.kind === 'pull_request' &&
        settings.skip_pull_request_builds_for_existing_commits === true &&
        (await this.builds.hasBuildOf(pipeline.id, build.commit, build.branch))
      ) {
        return { skip: `No build: commit ${build.commit} already has a build on branch "${build.branch}" (skip_pull_request_builds_for_existing_commits).` };
      }
    }
    return decision;
  }

  /** Trigger mode and the per-event settings. */
  private async rules(pipeline: Pipeline, settings: ProviderSettings, event: DeliveryEvent, family: ProviderFamily): Promise<Decision> {
    const mode = typeof settings.trigger_mode === 'string' ? settings.trigger_mode : 'code';
    if (event.kind === 'other') return { skip: `No build: ${event.name} events do not build.` };
    if (mode === 'none') return { skip: 'No build: trigger_mode is "none", so deliveries never build.' };
    const wants = event.kind === 'deployment' ? 'deployment' : event.kind === 'fork' ? 'fork' : 'code';
    if (mode !== wants) {
      const what = event.kind === 'pull_request' ? event.noun : event.kind;
      return { skip: `No build: ${what} events build only when trigger_mode is "${wants}", and it is "${mode}".` };
    }
    switch (event.kind) {
      case 'push': {
        const open = family === 'github' ? await this.pullRequestBuiltByPush(pipeline, settings, event) : null;
        return open ? { build: { ...pushBuild(event), pullRequest: open } } : this.pushRules(pipeline, settings, event);
      }
      case 'pull_request':
        // github.md: commits pushed to the branch of a pull request from the repository itself build
        // from their `push` delivery; the `synchronize` delivery only refreshed its details (above).
        if (family === 'github' && event.action === 'synchronize' && !event.fork) {
          return {
            skip: `No build: commits pushed to the branch of ${event.noun} #${event.id} build from their push delivery, which carries its details; this delivery refreshed them.`,
          };
        }
        return pullRequestRules(settings, event, pipeline.defaultBranch);
      case 'deployment':
        return { build: { commit: event.commit, branch: event.branch, tag: null, message: event.message, author: event.author, pullRequest: null } };
      case 'fork':
        return { build: { commit: 'HEAD', branch: event.branch, tag: null, message: event.message, author: event.author, pullRequest: null } };
      case 'ping':
        // Answered before any rule; here only to make the switch whole.
        return { skip: 'No build: a ping never builds.' };
    }
  }

  private pushRules(pipeline: Pipeline, settings: ProviderSettings, event: PushEvent): Decision {
    const { type, name } = event.ref;
    if (event.deleted) return { skip: `No build: ${type} "${name}" was deleted, and deletions never build.` };
    if (type === 'tag' && settings.build_tags !== true) return { skip: `No build: tag "${name}" was pushed, and build_tags is off.` };
    if (type === 'branch' && settings.build_branches === false) return { skip: `No build: branch "${name}" was pushed, and build_branches is off.` };
    // Tags pass the pipeline's branch filter too, as in the real service: `v*` lets release tags through.
    if (!matchesBranchFilter(pipeline.branchConfiguration, name)) {
      return {
        skip: `No build: ${type} "${name}" does not match the pipeline's branch filter (branch_configuration ${JSON.stringify(pipeline.branchConfiguration)}).`,
      };
    }
    return { build: pushBuild(event) };
  }

  /**
   * The pull request a push to a branch builds for (github.md: "Buildkite Pipelines adds the pull
   * request details to those builds"): the one open from the branch, when pull request builds are
   * on and its rules let it build. Such a build is a pull request build: like one, it ignores
   * `build_branches` and the pipeline's branch filter. Null: the push builds as any push does.
   */
  private async pullRequestBuiltByPush(pipeline: Pipeline, settings: ProviderSettings, event: PushEvent): Promise<PullRequest | null> {
    if (event.deleted || event.ref.type !== 'branch' || settings.build_pull_requests === false) return null;
    const open = await this.openPullRequests.find(pipeline.id, event.ref.name);
    if (!open) return null;
    const refused = pullRequestRefusal(
      settings,
      { which: `pull request #${open.id}`, draft: open.draft === true, fork: false, forkName: null, headBranch: event.ref.name, baseBranch: open.base ?? '' },
      pipeline.defaultBranch,
    );
    return refused ? null : open;
  }

  /** For a deleted branch with `cancel_deleted_branch_builds`: cancels its builds and says so. */
  private async cancelForDeletedBranch(pipeline: Pipeline, settings: ProviderSettings, event: DeliveryEvent): Promise<string | null> {
    if (event.kind !== 'push' || !event.deleted || event.ref.type !== 'branch' || settings.cancel_deleted_branch_builds !== true) return null;
    const n = await this.builds.cancelBranchBuilds(pipeline.id, event.ref.name);
    return `Canceled ${n} scheduled or running build${n === 1 ? '' : 's'} of the branch (cancel_deleted_branch_builds).`;
  }
}

function pullRequestRules(settings: ProviderSettings, pr: PullRequestEvent, defaultBranch: string | null): Decision {
  const which = `${pr.noun} #${pr.id}`;
  if (settings.build_pull_requests === false) return { skip: `No build: ${which} changed, and build_pull_requests is off.` };
  const optIn = OPT_IN_ACTIONS.get(pr.action);
  if (LABEL_ACTIONS.includes(pr.action)) {
    if (settings.build_pull_request_labels_changed !== true)
      return { skip: `No build: the labels of ${which} changed, and build_pull_request_labels_changed is off.` };
  } else if (optIn !== undefined && settings[optIn] === true) {
    // Built, as its setting asks (only GitHub's pipelines can set these).
  } else if (!PULL_REQUEST_ACTIONS.includes(pr.action)) {
    return { skip: `No build: ${which} was ${pr.action.replace(/_/g, ' ')}, which does not build.` };
  } else if (pr.action === 'reopened' && settings.build_pull_request_reopened === false) {
    return { skip: `No build: ${which} was reopened, and build_pull_request_reopened is off.` };
  }
  // The docs' "Skip when pull request is closed or merged", on by default (unset counts as on, so
  // the settings keep the create sample's shape): late activity, such as a bot's labels, builds nothing.
  if (pr.closed && settings.skip_builds_for_closed_pull_requests !== false) {
    return { skip: `No build: ${which} is closed or merged, and skip_builds_for_closed_pull_requests is on.` };
  }
  const refused = pullRequestRefusal(settings, { ...pr, which }, defaultBranch);
  if (refused) return { skip: refused };
  const prefixed = pr.fork && settings.prefix_pull_request_fork_branch_names === true && pr.headOwner !== null;
  const branch = prefixed ? `${pr.headOwner}:${pr.headBranch}`.slice(0, 255) : pr.headBranch;
  return { build: { commit: pr.commit, branch, tag: null, message: pr.title, author: pr.author, pullRequest: pullRequestOf(pr) } };
}

/** The rule that refuses to build the pull request whatever its action (default branch, draft, fork, base filter), or null. */
function pullRequestRefusal(
  settings: ProviderSettings,
  pr: Pick<PullRequestEvent, 'draft' | 'fork' | 'forkName' | 'headBranch' | 'baseBranch'> & { which: string },
  defaultBranch: string | null,
): string | null {
  const { which } = pr;
  // A fork's default branch is not the pipeline's: only a pull request from this repository's own default branch is skipped.
  if (settings.ignore_default_branch_pull_requests === true && defaultBranch !== null && !pr.fork && pr.headBranch === defaultBranch) {
    return `No build: ${which} comes from the default branch "${defaultBranch}", and ignore_default_branch_pull_requests is on.`;
  }
  if (pr.draft && settings.build_pull_request_ready_for_review === true) {
    return `No build: ${which} is a draft, and build_pull_request_ready_for_review builds it once it is ready for review.`;
  }
  // Providers without the setting (GitLab) build merge requests from forks.
  if (pr.fork && settings.build_pull_request_forks === false) {
    return `No build: ${which} comes from a fork${pr.forkName ? ` (${pr.forkName})` : ''}, and build_pull_request_forks is off.`;
  }
  if (settings.pull_request_branch_filter_enabled === true) {
    const filter = typeof settings.pull_request_branch_filter_configuration === 'string' ? settings.pull_request_branch_filter_configuration : null;
    if (!matchesBranchFilter(filter, pr.baseBranch)) {
      return `No build: the base branch "${pr.baseBranch}" of ${which} does not match pull_request_branch_filter_configuration ${JSON.stringify(filter)}.`;
    }
  }
  return null;
}

/** The details a build of the pull request carries. */
function pullRequestOf(pr: PullRequestEvent): PullRequest {
  return {
    id: pr.id,
    base: pr.baseBranch,
    repository: pr.headRepository,
    ...(pr.labels.length ? { labels: pr.labels } : {}),
    draft: pr.draft,
    fork: pr.fork,
  };
}

/** The build a push makes (a tag's, or a branch's without pull request details). */
function pushBuild(event: PushEvent): DeliveredBuild {
  const { type, name } = event.ref;
  return { commit: event.commit, branch: name, tag: type === 'tag' ? name : null, message: event.message, author: event.author, pullRequest: null };
}

function familyOf(h: DeliveryHeaders): ProviderFamily {
  if (h.githubEvent !== undefined) return 'github';
  if (h.gitlabEvent !== undefined) return 'gitlab';
  if (h.bitbucketEvent !== undefined) return 'bitbucket';
  throw new BadRequestError('No event header: a delivery names its event in X-GitHub-Event (GitHub), X-Gitlab-Event (GitLab) or X-Event-Key (Bitbucket).');
}

function eventsOf(family: ProviderFamily, h: DeliveryHeaders, body: object): DeliveryEvent[] {
  switch (family) {
    case 'github':
      return [gitHubEvent(h.githubEvent!, body)];
    case 'gitlab':
      return [gitLabEvent(h.gitlabEvent!, body)];
    case 'bitbucket':
      return bitbucketEvents(h.bitbucketEvent!, body);
  }
}

/** The would-be build as `filter_condition` sees it: what a step's condition reads (a pull request's draft and fork too). */
function conditionContext(pipeline: Pipeline, orgSlug: string, b: DeliveredBuild): Map<string, Value> {
  const ctx = buildConditionContext({ ...b, source: 'webhook' }, pipeline);
  ctx.set('organization.slug', orgSlug);
  return ctx;
}

/**
 * The GitHub event a build is made for (`build.source_event`, `build.source_action`,
 * `build.pull_request.label`): the docs name GitHub's webhook events, so GitLab's and
 * Bitbucket's builds have none.
 */
function webhookEventOf(h: DeliveryHeaders, body: object, event: DeliveryEvent): WebhookEvent | null {
  if (h.githubEvent === undefined) return null;
  const action = 'action' in body && typeof body.action === 'string' ? body.action.slice(0, 255) : null;
  return { event: h.githubEvent.slice(0, 255), action, label: event.kind === 'pull_request' ? event.label : null };
}
