/**
 * Bitbucket Cloud deliveries (`repo:push`, `pullrequest:created`, `pullrequest:updated`) and
 * Bitbucket Server/Data Center ones (`repo:refs_changed`, `pr:opened`, `pr:from_ref_updated`).
 * One push may carry several ref changes, so this returns a list.
 */
import { author, Payload, type DeliveryEvent } from './events';

export function bitbucketEvents(name: string, body: unknown): DeliveryEvent[] {
  switch (name) {
    case 'repo:push':
      return cloudPush(new Payload('Bitbucket push', body));
    case 'pullrequest:created':
      return [cloudPullRequest(new Payload('Bitbucket pull request', body), 'opened')];
    case 'pullrequest:updated':
      return [cloudPullRequest(new Payload('Bitbucket pull request', body), 'synchronize')];
    case 'repo:refs_changed':
      return serverPush(new Payload('Bitbucket Server push', body));
    case 'pr:opened':
      return [serverPullRequest(new Payload('Bitbucket Server pull request', body), 'opened')];
    case 'pr:from_ref_updated':
      return [serverPullRequest(new Payload('Bitbucket Server pull request', body), 'synchronize')];
    default:
      return [{ kind: 'other', name }];
  }
}

// A push with more ref changes than this is someone pushing --mirror: build the first ones only.
const MAX_CHANGES = 20;

function cloudPush(p: Payload): DeliveryEvent[] {
  const changes = p.list('push.changes');
  if (changes.length === 0) throw p.malformed('push.changes', 'is missing');
  const pusher = author({ name: p.text('actor.display_name'), username: p.text('actor.nickname') ?? p.text('actor.username') });
  return changes.slice(0, MAX_CHANGES).map((_, i) => {
    const c = p.child(`push.changes.${i}`);
    const deleted = c.get('new') === null || c.get('new') === undefined;
    const side = deleted ? 'old' : 'new';
    const type = c.ref(`${side}.type`);
    const name = c.ref(`${side}.name`);
    if (type !== 'branch' && type !== 'tag' && type !== 'named_branch') return { kind: 'other', name: `push of ${type} ${name}` };
    return {
      kind: 'push',
      ref: { type: type === 'tag' ? 'tag' : 'branch', name },
      deleted,
      commit: c.ref(`${side}.target.hash`),
      message: deleted ? null : c.message('new.target.message'),
      author: pusher,
    };
  });
}

function cloudPullRequest(p: Payload, action: string): DeliveryEvent {
  const head = p.text('pullrequest.source.repository.full_name');
  const base = p.text('pullrequest.destination.repository.full_name');
  const fork = head !== null && base !== null && head !== base;
  return {
    kind: 'pull_request',
    noun: 'pull request',
    action,
    id: p.id('pullrequest.id'),
    title: p.message('pullrequest.title'),
    draft: p.flag('pullrequest.draft'),
    commit: p.ref('pullrequest.source.commit.hash'),
    headBranch: p.ref('pullrequest.source.branch.name'),
    headOwner: head?.split('/')[0] ?? null,
    headRepository: head,
    fork,
    forkName: head,
    baseBranch: p.ref('pullrequest.destination.branch.name'),
    labels: [],
    label: null,
    author: author({ name: p.text('actor.display_name'), username: p.text('actor.nickname') ?? p.text('actor.username') }),
  };
}

function serverPush(p: Payload): DeliveryEvent[] {
  const changes = p.list('changes');
  if (changes.length === 0) throw p.malformed('changes', 'is missing');
  const pusher = author({ name: p.text('actor.displayName'), email: p.text('actor.emailAddress'), username: p.text('actor.name') });
  return changes.slice(0, MAX_CHANGES).map((_, i) => {
    const c = p.child(`changes.${i}`);
    const type = c.ref('ref.type');
    const name = c.ref('ref.displayId');
    if (type !== 'BRANCH' && type !== 'TAG') return { kind: 'other', name: `push of ${type} ${name}` };
    const deleted = c.text('type') === 'DELETE';
    return {
      kind: 'push',
      ref: { type: type === 'TAG' ? 'tag' : 'branch', name },
      deleted,
      commit: c.ref(deleted ? 'fromHash' : 'toHash'),
      // Bitbucket Server does not send commit messages with pushes.
      message: null,
      author: pusher,
    };
  });
}

function serverPullRequest(p: Payload, action: string): DeliveryEvent {
  const repoName = (side: 'fromRef' | 'toRef') => {
    const project = p.text(`pullRequest.${side}.repository.project.key`);
    const slug = p.text(`pullRequest.${side}.repository.slug`);
    return project && slug ? `${project}/${slug}` : null;
  };
  const head = repoName('fromRef');
  const base = repoName('toRef');
  return {
    kind: 'pull_request',
    noun: 'pull request',
    action,
    id: p.id('pullRequest.id'),
    title: p.message('pullRequest.title'),
    draft: p.flag('pullRequest.draft'),
    commit: p.ref('pullRequest.fromRef.latestCommit'),
    headBranch: p.ref('pullRequest.fromRef.displayId'),
    headOwner: head?.split('/')[0] ?? null,
    headRepository: head,
    fork: head !== null && base !== null && head !== base,
    forkName: head,
    baseBranch: p.ref('pullRequest.toRef.displayId'),
    labels: [],
    label: null,
    author: author({ name: p.text('actor.displayName'), email: p.text('actor.emailAddress'), username: p.text('actor.name') }),
  };
}
