/**
 * GitLab deliveries: `Push Hook`, `Tag Push Hook` and `Merge Request Hook`, with merge request
 * actions translated into GitHub's words so one set of rules serves both.
 */
import crypto from 'node:crypto';
import { author, isNullCommit, Payload, splitRef, type DeliveryEvent } from './events';
import { fieldOf } from '../core/guards';

/** `X-Gitlab-Token` against the pipeline's webhook secret, in constant time. */
export function validGitLabToken(secret: string, token: string): boolean {
  const a = crypto.createHash('sha256').update(secret).digest();
  const b = crypto.createHash('sha256').update(token).digest();
  return crypto.timingSafeEqual(a, b);
}

export function gitLabEvent(name: string, body: unknown): DeliveryEvent {
  switch (name) {
    case 'Push Hook':
    case 'Tag Push Hook':
      return push(new Payload('GitLab push', body));
    case 'Merge Request Hook':
      return mergeRequest(new Payload('GitLab merge request', body));
    default:
      return { kind: 'other', name };
  }
}

function push(p: Payload): DeliveryEvent {
  const refName = p.ref('ref');
  const ref = splitRef(refName);
  if (!ref) return { kind: 'other', name: `push of ${refName}` };
  const after = p.ref('after');
  const commit = p.text('checkout_sha') ?? after;
  // The head commit is the one the ref now points to; GitLab lists up to 20 commits, oldest first.
  const commits = p.list('commits');
  const index = commits.findIndex((c) => fieldOf(c, 'id') === commit);
  const head = p.child(`commits.${index === -1 ? commits.length - 1 : index}`);
  return {
    kind: 'push',
    ref,
    deleted: isNullCommit(after),
    commit,
    message: head.message('message') ?? p.message('message'),
    author: author({ name: p.text('user_name'), email: p.text('user_email'), username: p.text('user_username') }),
  };
}

function mergeRequest(p: Payload): DeliveryEvent {
  const source = p.get('object_attributes.source_project_id');
  const target = p.get('object_attributes.target_project_id');
  const fork = source !== undefined && target !== undefined && source !== target;
  const forkName = p.text('object_attributes.source.path_with_namespace');
  return {
    kind: 'pull_request',
    noun: 'merge request',
    action: action(p),
    id: p.id('object_attributes.iid'),
    title: p.message('object_attributes.title'),
    draft: p.flag('object_attributes.draft') || p.flag('object_attributes.work_in_progress'),
    commit: p.ref('object_attributes.last_commit.id'),
    headBranch: p.ref('object_attributes.source_branch'),
    headOwner: forkName?.split('/').slice(0, -1).join('/') || null,
    headRepository: p.text('object_attributes.source.git_http_url', 1024),
    fork,
    forkName,
    baseBranch: p.ref('object_attributes.target_branch'),
    labels: p.names('labels', 'title'),
    label: null,
    author: author({ name: p.text('user.name'), email: p.text('user.email'), username: p.text('user.username') }),
  };
}

/** GitLab's action in GitHub's words: an `update` is new commits, leaving draft, or labels. */
function action(p: Payload): string {
  const a = p.ref('object_attributes.action');
  switch (a) {
    case 'open':
      return 'opened';
    case 'reopen':
      return 'reopened';
    case 'update':
      if (p.get('object_attributes.oldrev') !== undefined) return 'synchronize';
      if (p.get('changes.draft.previous') === true && p.get('changes.draft.current') === false) return 'ready_for_review';
      if (p.get('changes.labels') !== undefined) return 'labeled';
      return 'edited';
    case 'close':
      return 'closed';
    case 'merge':
      return 'merged';
    default:
      return a;
  }
}
