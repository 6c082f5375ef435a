/**
 * GitHub and GitHub Enterprise deliveries: the `X-Hub-Signature-256` check and the payloads of
 * `push`, `pull_request`, `deployment`, `fork` and `ping`, typed by @octokit/webhooks-types.
 */
import { verify } from '@octokit/webhooks-methods';
import type { DeploymentCreatedEvent, ForkEvent, PullRequestLabeledEvent, PullRequestOpenedEvent, PushEvent } from '@octokit/webhooks-types';
import { author, isNullCommit, Payload, splitRef, type DeliveryEvent } from './events';

/**
 * Whether `signature` (`sha256=<hex>`) is the HMAC-SHA256 of the raw body with `secret`.
 * Only SHA-256: the library would also take a bare SHA-1 digest, which we do not want to accept.
 */
export async function validGitHubSignature(secret: string, rawBody: Buffer, signature: string): Promise<boolean> {
  if (!/^sha256=[0-9a-f]{64}$/i.test(signature) || rawBody.length === 0) return false;
  return verify(secret, rawBody.toString('utf8'), signature.toLowerCase());
}

export function gitHubEvent(name: string, body: unknown): DeliveryEvent {
  switch (name) {
    case 'ping':
      return { kind: 'ping' };
    case 'push':
      return push(new Payload<PushEvent>('push', body));
    case 'pull_request':
      // Every action shares the fields read here; `opened` stands for them all (`labeled` adds its label).
      return pullRequest(new Payload<PullRequestOpenedEvent>('pull_request', body), new Payload<PullRequestLabeledEvent>('pull_request', body));
    case 'deployment':
      return deployment(new Payload<DeploymentCreatedEvent>('deployment', body));
    case 'fork':
      return fork(new Payload<ForkEvent>('fork', body));
    default:
      return { kind: 'other', name };
  }
}

function push(p: Payload<PushEvent>): DeliveryEvent {
  const refName = p.ref('ref');
  const ref = splitRef(refName);
  if (!ref) return { kind: 'other', name: `push of ${refName}` };
  const after = p.ref('after');
  const deleted = p.flag('deleted') || isNullCommit(after);
  // The commit's author, as BUILDKITE_BUILD_AUTHOR is documented ("The name of the user who
  // authored the commit being built"); the pusher only for a push without a head commit.
  const name = p.text('head_commit.author.name') ?? p.text('pusher.name');
  const email = p.text('head_commit.author.email') ?? p.text('pusher.email');
  const username = p.text('head_commit.author.username') ?? p.text('sender.login') ?? name;
  return {
    kind: 'push',
    ref,
    deleted,
    commit: p.text('head_commit.id') ?? after,
    message: p.message('head_commit.message'),
    author: author({ name, email, username }),
  };
}

function pullRequest(p: Payload<PullRequestOpenedEvent>, labeled: Payload<PullRequestLabeledEvent>): DeliveryEvent {
  const action = p.ref('action');
  const headRepo = p.text('pull_request.head.repo.full_name');
  const baseRepo = p.text('pull_request.base.repo.full_name');
  // A fork that was deleted since has no head repository: still not this repository.
  const fork = headRepo === null || headRepo !== baseRepo;
  const sender = p.text('sender.login');
  return {
    kind: 'pull_request',
    noun: 'pull request',
    action,
    id: p.id('number'),
    title: p.message('pull_request.title'),
    draft: p.flag('pull_request.draft'),
    commit: p.ref('pull_request.head.sha'),
    headBranch: p.ref('pull_request.head.ref'),
    headOwner: p.text('pull_request.head.repo.owner.login') ?? p.text('pull_request.head.user.login'),
    headRepository: p.text('pull_request.head.repo.clone_url', 1024),
    fork,
    forkName: headRepo,
    baseBranch: p.ref('pull_request.base.ref'),
    labels: p.names('pull_request.labels', 'name'),
    label: action === 'labeled' || action === 'unlabeled' ? labeled.text('label.name') : null,
    author: author({ name: sender, username: sender }),
    closed: p.text('pull_request.state') === 'closed',
  };
}

function deployment(p: Payload<DeploymentCreatedEvent>): DeliveryEvent {
  const environment = p.text('deployment.environment');
  const creator = p.text('deployment.creator.login') ?? p.text('sender.login');
  return {
    kind: 'deployment',
    commit: p.ref('deployment.sha'),
    branch: p.ref('deployment.ref'),
    message: p.message('deployment.description') || (environment ? `Deployment to ${environment}` : 'Deployment'),
    author: author({ name: creator, username: creator }),
  };
}

function fork(p: Payload<ForkEvent>): DeliveryEvent {
  const forkee = p.text('forkee.full_name');
  const sender = p.text('sender.login');
  return {
    kind: 'fork',
    branch: p.ref('forkee.default_branch'),
    message: forkee ? `Forked to ${forkee}` : 'Forked',
    author: author({ name: sender, username: sender }),
  };
}
