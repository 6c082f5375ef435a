import { describeEachDatabase, type TestContext } from '../support/context';
import { buildsOf, givenTarget, signatureOf, type Target } from './helpers';

const MAIN = '709d658dc5b6d6afcd46049c2f332ee3f515a67d';
const FEATURE = 'd3a5b6c2e1f4a7b8c9d0e1f2a3b4c5d6e7f8a9b0';

// Shapes from Bitbucket's "Event payloads" documentation, trimmed to what matters.
const actor = { display_name: 'Emma', nickname: 'emma', account_id: '557058:1' };

function change(type: string, name: string, hash: string, message: string) {
  return {
    new: { type, name, target: { type: 'commit', hash, message, author: { raw: 'Emma <emma@example.com>' } } },
    old: null,
    created: true,
    closed: false,
    forced: false,
  };
}

function repoPush(...changes: unknown[]) {
  return { actor, repository: { full_name: 'team/repo', type: 'repository' }, push: { changes } };
}

function pullRequestPayload(changes: { source?: string; draft?: boolean } = {}) {
  return {
    actor,
    repository: { full_name: 'team/repo' },
    pullrequest: {
      id: 12,
      title: 'Add a feature',
      draft: changes.draft ?? false,
      source: { branch: { name: 'feature' }, commit: { hash: FEATURE }, repository: { full_name: changes.source ?? 'team/repo' } },
      destination: { branch: { name: 'main' }, commit: { hash: MAIN }, repository: { full_name: 'team/repo' } },
    },
  };
}

function deliverBitbucket(ctx: TestContext, t: Target, event: string, payload: unknown, opts: { sign?: boolean; signature?: string } = {}) {
  const body = JSON.stringify(payload);
  const req = ctx.http().post(t.path).set('Content-Type', 'application/json').set('X-Event-Key', event);
  if (opts.signature !== undefined) req.set('X-Hub-Signature', opts.signature);
  else if (opts.sign) req.set('X-Hub-Signature', signatureOf(t.secret, body));
  return req.send(body);
}

describeEachDatabase('Bitbucket deliveries', (ctx) => {
  const target = (settings: Record<string, unknown> = {}, repository = 'git@bitbucket.org:team/repo.git') => givenTarget(ctx(), settings, { repository });

  it('builds each branch of a push, one build per change, with the commit message and the actor', async () => {
    const t = await target();
    const res = await deliverBitbucket(
      ctx(),
      t,
      'repo:push',
      repoPush(change('branch', 'main', MAIN, 'Add a README\n'), change('branch', 'feature', FEATURE, 'Start feature')),
      { sign: true },
    ).expect(201);
    expect(res.body.message).toBe('Created build #1, build #2.');
    expect(res.body.builds.map((b: { number: number }) => b.number)).toEqual([1, 2]);
    expect((await buildsOf(ctx(), t)).map((b) => [b.branch, b.commit, b.message, b.author, b.source])).toEqual([
      ['feature', FEATURE, 'Start feature', { name: 'Emma', email: null, username: 'emma' }, 'webhook'],
      ['main', MAIN, 'Add a README\n', { name: 'Emma', email: null, username: 'emma' }, 'webhook'],
    ]);
  });

  it('refuses a bad X-Hub-Signature with 401', async () => {
    const t = await target();
    const res = await deliverBitbucket(ctx(), t, 'repo:push', repoPush(change('branch', 'main', MAIN, 'x')), { signature: `sha256=${'1'.repeat(64)}` }).expect(
      401,
    );
    expect(res.body).toEqual({ message: "X-Hub-Signature does not match the payload signed with this pipeline's webhook secret." });
  });

  it("answers with each change's rule when a push builds some changes and not others", async () => {
    const t = await target();
    const deleted = { new: null, old: { type: 'branch', name: 'old-branch', target: { hash: FEATURE } }, closed: true, created: false };
    const res = await deliverBitbucket(
      ctx(),
      t,
      'repo:push',
      repoPush(deleted, change('tag', 'v1.0', MAIN, 'Release'), change('branch', 'main', MAIN, 'Go')),
    ).expect(201);
    expect(res.body.message).toBe(
      'Created build #1. No build: branch "old-branch" was deleted, and deletions never build. No build: tag "v1.0" was pushed, and build_tags is off.',
    );
    const nothing = await deliverBitbucket(ctx(), t, 'repo:push', repoPush(deleted)).expect(200);
    expect(nothing.body).toEqual({ message: 'No build: branch "old-branch" was deleted, and deletions never build.' });
  });

  it('builds pull requests when created or updated, forks only with build_pull_request_forks', async () => {
    const t = await target({ skip_pull_request_builds_for_existing_commits: false });
    await deliverBitbucket(ctx(), t, 'pullrequest:created', pullRequestPayload()).expect(201);
    await deliverBitbucket(ctx(), t, 'pullrequest:updated', pullRequestPayload()).expect(201);
    expect((await buildsOf(ctx(), t))[0]).toMatchObject({
      branch: 'feature',
      commit: FEATURE,
      message: 'Add a feature',
      pull_request: { id: '12', base: 'main', repository: 'team/repo' },
    });
    expect((await deliverBitbucket(ctx(), t, 'pullrequest:fulfilled', pullRequestPayload()).expect(200)).body).toEqual({
      message: 'No build: pullrequest:fulfilled events do not build.',
    });
    const fork = pullRequestPayload({ source: 'emma/repo' });
    expect((await deliverBitbucket(ctx(), t, 'pullrequest:created', fork).expect(200)).body.message).toBe(
      'No build: pull request #12 comes from a fork (emma/repo), and build_pull_request_forks is off.',
    );
    const forks = await target({ build_pull_request_forks: true });
    await deliverBitbucket(ctx(), forks, 'pullrequest:created', fork).expect(201);
    expect((await buildsOf(ctx(), forks))[0]!.branch).toBe('emma:feature');
  });

  it('answers 400 for a push without changes', async () => {
    const t = await target();
    expect((await deliverBitbucket(ctx(), t, 'repo:push', { actor, push: {} }).expect(400)).body).toEqual({
      message: 'Malformed Bitbucket push payload: push.changes is missing',
    });
  });

  it('takes Bitbucket Server pushes and pull requests', async () => {
    const t = await target({}, 'ssh://git@bitbucket.example.com:7999/proj/repo.git');
    const serverActor = { name: 'admin', emailAddress: 'admin@example.com', displayName: 'Administrator' };
    const push = {
      eventKey: 'repo:refs_changed',
      actor: serverActor,
      changes: [
        { ref: { id: 'refs/heads/master', displayId: 'master', type: 'BRANCH' }, refId: 'refs/heads/master', fromHash: FEATURE, toHash: MAIN, type: 'UPDATE' },
      ],
    };
    await deliverBitbucket(ctx(), t, 'repo:refs_changed', push).expect(201);
    expect((await buildsOf(ctx(), t))[0]).toMatchObject({
      branch: 'master',
      commit: MAIN,
      author: { name: 'Administrator', email: 'admin@example.com', username: 'admin' },
    });
    const repo = { slug: 'repo', project: { key: 'PROJ' } };
    const pr = {
      eventKey: 'pr:opened',
      actor: serverActor,
      pullRequest: {
        id: 3,
        title: 'Server PR',
        draft: false,
        fromRef: { displayId: 'topic', latestCommit: FEATURE, repository: repo },
        toRef: { displayId: 'master', latestCommit: MAIN, repository: repo },
      },
    };
    await deliverBitbucket(ctx(), t, 'pr:opened', pr).expect(201);
    expect((await buildsOf(ctx(), t))[0]).toMatchObject({ branch: 'topic', commit: FEATURE, message: 'Server PR', pull_request: { id: '3', base: 'master' } });
  });
});
