import crypto from 'node:crypto';
import { Writable } from 'node:stream';
import request from 'supertest';
import { createApp } from '../../src/app';
import { createLogger } from '../../src/http/middleware/logger';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken, takeNextJob } from '../support/agents';
import { branchPush, buildsOf, deliverGitHub, example, fromFork, givenTarget, pullRequest, signatureOf, type PullRequestExample } from './helpers';

const HEAD = '6113728f27ae82c7b1a177c8d03f9e96e0adf246';
const PR_HEAD = 'ec26c3e57ca3a959ca5aad62de7213c562f8c821';

describeEachDatabase('GitHub deliveries', (ctx) => {
  describe('the endpoint', () => {
    it('answers a ping with 200 and names the pipeline', async () => {
      const t = await givenTarget(ctx());
      const res = await deliverGitHub(ctx(), t, 'ping', example('ping')).expect(200);
      expect(res.body).toEqual({ message: `Pong! Deliveries to this URL build pipeline "${t.pipeline.slug}".` });
    });

    it('creates a build from a signed branch push: 201 with id, number and url, source webhook, the commit’s author as author', async () => {
      const t = await givenTarget(ctx());
      const res = await deliverGitHub(ctx(), t, 'push', branchPush()).expect(201);
      const url = `${PUBLIC_URL}/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/builds/1`;
      expect(res.body).toEqual({
        message: 'Created build #1.',
        builds: [{ id: expect.any(String), number: 1, url, web_url: `${PUBLIC_URL}/${t.org.slug}/${t.pipeline.slug}/builds/1` }],
      });
      const build = (await ctx().http().get(new URL(url).pathname).set(auth(t.token)).expect(200)).body;
      expect(build).toMatchObject({
        id: res.body.builds[0].id,
        number: 1,
        state: 'scheduled',
        source: 'webhook',
        branch: 'master',
        commit: HEAD,
        tag: null,
        message: 'Initial commit',
        author: { name: 'Codertocat', email: '21031067+Codertocat@users.noreply.github.com', username: 'Codertocat' },
        creator: null,
        pull_request: {},
      });
      expect(build.jobs).toHaveLength(1);
    });

    it('takes the head commit’s author, not the pusher, as the build’s author (BUILDKITE_BUILD_AUTHOR: "who authored the commit")', async () => {
      const t = await givenTarget(ctx());
      const push = branchPush((p) => {
        const q = p as unknown as { head_commit: { author: object }; pusher: object };
        q.head_commit.author = { name: 'Commit Author', email: 'author@example.com', username: 'c-author' };
        q.pusher = { name: 'merger-bot', email: 'bot@example.com' };
      });
      const res = await deliverGitHub(ctx(), t, 'push', push).expect(201);
      const build = (await ctx().http().get(new URL(res.body.builds[0].url).pathname).set(auth(t.token)).expect(200)).body;
      expect(build.author).toEqual({ name: 'Commit Author', email: 'author@example.com', username: 'c-author' });
    });

    it('refuses a delivery signed only with a SHA-1 X-Hub-Signature, right or wrong, and builds nothing', async () => {
      const t = await givenTarget(ctx());
      const body = JSON.stringify(branchPush());
      const sha1 = (secret: string) => `sha1=${crypto.createHmac('sha1', secret).update(body).digest('hex')}`;
      for (const signature of ['sha1=0123456789abcdef0123456789abcdef01234567', sha1(t.secret)]) {
        const res = await ctx()
          .http()
          .post(t.path)
          .set('Content-Type', 'application/json')
          .set('X-GitHub-Event', 'push')
          .set('X-Hub-Signature', signature)
          .send(body)
          .expect(401);
        expect(res.body.message).toMatch(/^X-Hub-Signature \(SHA-1\) is not accepted/);
      }
      expect(await buildsOf(ctx(), t)).toEqual([]);
      // Beside a right X-Hub-Signature-256, as GitHub sends them, the SHA-1 one is not in the way.
      await ctx()
        .http()
        .post(t.path)
        .set('Content-Type', 'application/json')
        .set('X-GitHub-Event', 'push')
        .set('X-Hub-Signature', sha1(t.secret))
        .set('X-Hub-Signature-256', signatureOf(t.secret, body))
        .send(body)
        .expect(201);
    });

    it('accepts an unsigned delivery (the URL token is the credential) and refuses a bad or SHA-1 signature with 401', async () => {
      const t = await givenTarget(ctx());
      await deliverGitHub(ctx(), t, 'push', branchPush(), { signature: null }).expect(201);
      const bad = await deliverGitHub(ctx(), t, 'push', branchPush(), { signature: `sha256=${'0'.repeat(64)}` }).expect(401);
      expect(bad.body.message).toBe("X-Hub-Signature-256 does not match the payload signed with this pipeline's webhook secret.");
      expect(bad.headers['www-authenticate']).toBeUndefined();
      await deliverGitHub(ctx(), t, 'push', branchPush(), { signature: 'sha1=0123456789abcdef0123456789abcdef01234567' }).expect(401);
      await deliverGitHub(ctx(), t, 'push', branchPush(), { signature: '' }).expect(401);
      // Signed with another pipeline's secret.
      const other = await givenTarget(ctx());
      await deliverGitHub(ctx(), { ...t, secret: other.secret }, 'push', branchPush()).expect(401);
      // A body changed after signing.
      const signature = signatureOf(t.secret, JSON.stringify(branchPush()));
      await deliverGitHub(
        ctx(),
        t,
        'push',
        branchPush((p) => (p.head_commit.message = 'tampered')),
        { signature },
      ).expect(401);
      expect(await buildsOf(ctx(), t)).toHaveLength(1);
    });

    it('answers 404 for an unknown token, 400 for no event header or a malformed payload, 415 for a form body', async () => {
      const t = await givenTarget(ctx());
      const unknown = await deliverGitHub(ctx(), { ...t, path: `/deliver/${'a'.repeat(50)}` }, 'push', branchPush()).expect(404);
      expect(unknown.body).toEqual({ message: 'No pipeline found' });
      const noHeader = await ctx().http().post(t.path).send(branchPush()).expect(400);
      expect(noHeader.body.message).toMatch(/X-GitHub-Event/);
      const noRef = branchPush();
      delete noRef.ref;
      expect((await deliverGitHub(ctx(), t, 'push', noRef).expect(400)).body).toEqual({ message: 'Malformed push payload: ref is missing' });
      const noSha = pullRequest('opened', (p) => ((p.pull_request.head as { sha: unknown }).sha = 42));
      expect((await deliverGitHub(ctx(), t, 'pull_request', noSha).expect(400)).body).toEqual({
        message: 'Malformed pull_request payload: pull_request.head.sha is missing',
      });
      await ctx().http().post(t.path).set('X-GitHub-Event', 'push').type('form').send('payload=%7B%7D').expect(415);
      await ctx().http().post(t.path).set('X-GitHub-Event', 'push').set('Content-Type', 'application/json').send('{"ref":').expect(400);
      expect(await buildsOf(ctx(), t)).toHaveLength(0);
    });

    it('refuses a GitLab delivery to a GitHub pipeline with 422', async () => {
      const t = await givenTarget(ctx());
      const res = await ctx().http().post(t.path).set('X-Gitlab-Event', 'Push Hook').send({ ref: 'refs/heads/main' }).expect(422);
      expect(res.body.message).toBe("This pipeline's repository is on GitHub: it does not take GitLab deliveries.");
    });

    it('answers 200 naming the rule for events that never build and for an archived pipeline', async () => {
      const t = await givenTarget(ctx());
      expect((await deliverGitHub(ctx(), t, 'issues', example('issues')).expect(200)).body).toEqual({ message: 'No build: issues events do not build.' });
      await ctx().http().post(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/archive`).set(auth(t.token)).expect(200);
      expect((await deliverGitHub(ctx(), t, 'push', branchPush()).expect(200)).body).toEqual({ message: 'No build: the pipeline is archived.' });
      expect(await buildsOf(ctx(), t)).toHaveLength(0);
    });

    it('never logs the token', async () => {
      const t = await givenTarget(ctx());
      const lines: string[] = [];
      const stream = new Writable({
        write(chunk, _enc, done) {
          lines.push(String(chunk));
          done();
        },
      });
      const s = ctx().services;
      const app = createApp({
        ...s,
        logger: createLogger('info', stream),
        publicUrl: PUBLIC_URL,
        bodyLimitBytes: 1024 * 1024,
        uploadBodyLimitBytes: 1024 * 1024,
        validateResponses: true,
      });
      await request(app).post(t.path).set('X-GitHub-Event', 'ping').send(example('ping')).expect(200);
      await request(app).post(`${t.path}?x=1`).set('X-GitHub-Event', 'push').send({}).expect(400);
      const token = t.path.split('/').pop()!;
      expect(lines.length).toBeGreaterThanOrEqual(2);
      expect(lines.join('')).toContain('/deliver/[redacted]');
      expect(lines.join('')).not.toContain(token);
    });
  });

  describe('pushes', () => {
    it('builds tags only with build_tags, with the tag set', async () => {
      const tag = example('push', (e) => e.ref === 'refs/tags/simple-tag' && e.deleted === false);
      const off = await givenTarget(ctx());
      expect((await deliverGitHub(ctx(), off, 'push', tag).expect(200)).body).toEqual({
        message: 'No build: tag "simple-tag" was pushed, and build_tags is off.',
      });
      const on = await givenTarget(ctx(), { build_tags: true });
      await deliverGitHub(ctx(), on, 'push', tag).expect(201);
      expect((await buildsOf(ctx(), on))[0]).toMatchObject({ branch: 'simple-tag', tag: 'simple-tag', commit: HEAD });
    });

    it('applies branch_configuration to branches and tags', async () => {
      const t = await givenTarget(ctx(), { build_tags: true }, { branch_configuration: 'main v*' });
      expect((await deliverGitHub(ctx(), t, 'push', branchPush()).expect(200)).body).toEqual({
        message: 'No build: branch "master" does not match the pipeline\'s branch filter (branch_configuration "main v*").',
      });
      const tag = example('push', (e) => e.ref === 'refs/tags/simple-tag' && e.deleted === false);
      expect((await deliverGitHub(ctx(), t, 'push', tag).expect(200)).body.message).toMatch(/^No build: tag "simple-tag" does not match/);
      tag.ref = 'refs/tags/v1.0.0';
      await deliverGitHub(ctx(), t, 'push', tag).expect(201);
      await deliverGitHub(
        ctx(),
        t,
        'push',
        branchPush((p) => (p.ref = 'refs/heads/main')),
      ).expect(201);
    });

    it('builds branches only with build_branches', async () => {
      const t = await givenTarget(ctx(), { build_branches: false });
      expect((await deliverGitHub(ctx(), t, 'push', branchPush()).expect(200)).body).toEqual({
        message: 'No build: branch "master" was pushed, and build_branches is off.',
      });
    });

    it("never builds a deletion; cancel_deleted_branch_builds cancels the branch's unfinished builds", async () => {
      const deletion = branchPush((p) => {
        p.deleted = true;
        p.after = '0'.repeat(40);
        (p as { head_commit: unknown }).head_commit = null;
      });
      const keep = await givenTarget(ctx());
      await deliverGitHub(ctx(), keep, 'push', branchPush()).expect(201);
      expect((await deliverGitHub(ctx(), keep, 'push', deletion).expect(200)).body).toEqual({
        message: 'No build: branch "master" was deleted, and deletions never build.',
      });
      expect((await buildsOf(ctx(), keep))[0]!.state).toBe('scheduled');

      const cancel = await givenTarget(ctx(), { cancel_deleted_branch_builds: true });
      await deliverGitHub(ctx(), cancel, 'push', branchPush()).expect(201);
      await deliverGitHub(
        ctx(),
        cancel,
        'push',
        branchPush((p) => (p.ref = 'refs/heads/other')),
      ).expect(201);
      expect((await deliverGitHub(ctx(), cancel, 'push', deletion).expect(200)).body).toEqual({
        message:
          'No build: branch "master" was deleted, and deletions never build. Canceled 1 scheduled or running build of the branch (cancel_deleted_branch_builds).',
      });
      const builds = await buildsOf(ctx(), cancel);
      expect(builds.map((b) => [b.branch, b.state])).toEqual([
        ['other', 'scheduled'],
        ['master', 'canceled'],
      ]);
      const tagDeletion = example('push', (e) => e.ref === 'refs/tags/simple-tag' && e.deleted === true);
      expect((await deliverGitHub(ctx(), cancel, 'push', tagDeletion).expect(200)).body).toEqual({
        message: 'No build: tag "simple-tag" was deleted, and deletions never build.',
      });
    });

    it.each(['[ci skip]', '[skip ci]', '[ci-skip]', '[skip-ci]', '[Skip CI]'])('skips a head commit message containing %s', async (marker) => {
      const t = await givenTarget(ctx());
      const res = await deliverGitHub(
        ctx(),
        t,
        'push',
        branchPush((p) => (p.head_commit.message = `Fix typo ${marker}`)),
      ).expect(200);
      expect(res.body.message).toBe(`No build: the commit message contains ${marker.toLowerCase()}.`);
    });

    it('skips a commit that already has a build only with skip_builds_for_existing_commits', async () => {
      const off = await givenTarget(ctx());
      await deliverGitHub(ctx(), off, 'push', branchPush()).expect(201);
      await deliverGitHub(ctx(), off, 'push', branchPush()).expect(201);
      const on = await givenTarget(ctx(), { skip_builds_for_existing_commits: true });
      await deliverGitHub(ctx(), on, 'push', branchPush()).expect(201);
      expect(
        (
          await deliverGitHub(
            ctx(),
            on,
            'push',
            branchPush((p) => (p.ref = 'refs/heads/other')),
          ).expect(200)
        ).body,
      ).toEqual({
        message: `No build: commit ${HEAD} already has a build (skip_builds_for_existing_commits).`,
      });
    });

    it('goes through the same create path as API builds: numbering and skip_queued_branch_builds', async () => {
      const t = await givenTarget(ctx(), {}, { skip_queued_branch_builds: true });
      await deliverGitHub(ctx(), t, 'push', branchPush()).expect(201);
      const second = await deliverGitHub(
        ctx(),
        t,
        'push',
        branchPush((p) => (p.head_commit.id = 'b'.repeat(40))),
      ).expect(201);
      expect(second.body.builds[0].number).toBe(2);
      expect((await buildsOf(ctx(), t)).map((b) => [b.number, b.state, b.commit])).toEqual([
        [2, 'scheduled', 'b'.repeat(40)],
        [1, 'skipped', HEAD],
      ]);
    });
  });

  describe('pull requests', () => {
    it.each(['opened', 'reopened', 'ready_for_review'])('builds on %s, carrying the pull request', async (action) => {
      const t = await givenTarget(ctx());
      const payload = pullRequest(action);
      await deliverGitHub(ctx(), t, 'pull_request', payload).expect(201);
      const [build] = await buildsOf(ctx(), t);
      expect(build).toMatchObject({
        source: 'webhook',
        branch: 'changes',
        commit: (payload as PullRequestExample).pull_request.head.sha,
        message: 'Update the README with new information.',
        pull_request: { id: '2', base: 'master', repository: 'https://github.com/Codertocat/Hello-World.git' },
        author: { name: 'Codertocat', username: 'Codertocat' },
      });
    });

    it.each([
      ['edited', 'build_pull_request_edited'],
      ['converted_to_draft', 'build_pull_request_converted_to_draft'],
      ['review_requested', 'build_pull_request_review_requested'],
    ])('builds on %s only with %s', async (action, setting) => {
      // The examples have no "edited" delivery: an "opened" one with its action changed.
      const delivery = () => pullRequest(action === 'edited' ? 'opened' : action, (p) => Object.assign(p, { action }));
      const off = await givenTarget(ctx());
      expect((await deliverGitHub(ctx(), off, 'pull_request', delivery()).expect(200)).body).toEqual({
        message: `No build: pull request #2 was ${action.replace(/_/g, ' ')}, which does not build.`,
      });
      const on = await givenTarget(ctx(), { [setting]: true });
      await deliverGitHub(ctx(), on, 'pull_request', delivery()).expect(201);
      expect((await buildsOf(ctx(), on))[0]!.pull_request).toMatchObject({ id: '2', base: 'master' });
    });

    it('builds a reopened pull request unless build_pull_request_reopened is off', async () => {
      await deliverGitHub(ctx(), await givenTarget(ctx()), 'pull_request', pullRequest('reopened')).expect(201);
      const off = await givenTarget(ctx(), { build_pull_request_reopened: false });
      expect((await deliverGitHub(ctx(), off, 'pull_request', pullRequest('reopened')).expect(200)).body).toEqual({
        message: 'No build: pull request #2 was reopened, and build_pull_request_reopened is off.',
      });
    });

    it('skips a pull request from the default branch with ignore_default_branch_pull_requests', async () => {
      // The example pull request comes from the branch "changes".
      const fromDefault = await givenTarget(ctx(), { ignore_default_branch_pull_requests: true }, { default_branch: 'changes' });
      expect((await deliverGitHub(ctx(), fromDefault, 'pull_request', pullRequest('opened')).expect(200)).body).toEqual({
        message: 'No build: pull request #2 comes from the default branch "changes", and ignore_default_branch_pull_requests is on.',
      });
      // A fork's branch of the same name is not the pipeline's default branch: built.
      const forks = await givenTarget(ctx(), { ignore_default_branch_pull_requests: true, build_pull_request_forks: true }, { default_branch: 'changes' });
      await deliverGitHub(
        ctx(),
        forks,
        'pull_request',
        pullRequest('opened', (p) => fromFork(p as PullRequestExample)),
      ).expect(201);
      const other = await givenTarget(ctx(), { ignore_default_branch_pull_requests: true }, { default_branch: 'main' });
      await deliverGitHub(ctx(), other, 'pull_request', pullRequest('opened')).expect(201);
      await deliverGitHub(ctx(), await givenTarget(ctx(), {}, { default_branch: 'changes' }), 'pull_request', pullRequest('opened')).expect(201);
    });

    it.each(['closed', 'assigned', 'unassigned', 'locked'])('does not build on %s', async (action) => {
      const t = await givenTarget(ctx());
      const res = await deliverGitHub(ctx(), t, 'pull_request', pullRequest(action)).expect(200);
      expect(res.body.message).toBe(`No build: pull request #2 was ${action.replace(/_/g, ' ')}, which does not build.`);
    });

    it('skips activity on a closed or merged pull request unless skip_builds_for_closed_pull_requests is off (the docs: on by default)', async () => {
      const closed = pullRequest('labeled', (p) => {
        (p as unknown as { pull_request: { state: string; merged: boolean } }).pull_request.state = 'closed';
      });
      const t = await givenTarget(ctx(), { build_pull_request_labels_changed: true });
      expect((await deliverGitHub(ctx(), t, 'pull_request', closed).expect(200)).body).toEqual({
        message: 'No build: pull request #2 is closed or merged, and skip_builds_for_closed_pull_requests is on.',
      });
      const off = await givenTarget(ctx(), { build_pull_request_labels_changed: true, skip_builds_for_closed_pull_requests: false });
      await deliverGitHub(ctx(), off, 'pull_request', closed).expect(201);
    });

    it.each(['labeled', 'unlabeled'])('builds on %s only with build_pull_request_labels_changed', async (action) => {
      const off = await givenTarget(ctx());
      expect((await deliverGitHub(ctx(), off, 'pull_request', pullRequest(action)).expect(200)).body).toEqual({
        message: 'No build: the labels of pull request #2 changed, and build_pull_request_labels_changed is off.',
      });
      const on = await givenTarget(ctx(), { build_pull_request_labels_changed: true });
      await deliverGitHub(ctx(), on, 'pull_request', pullRequest(action)).expect(201);
      const labels = (pullRequest(action) as PullRequestExample).pull_request.labels.map((l) => l.name);
      expect((await buildsOf(ctx(), on))[0]!.pull_request).toEqual({
        id: '2',
        base: 'master',
        repository: 'https://github.com/Codertocat/Hello-World.git',
        ...(labels.length ? { labels } : {}),
      });
    });

    it('builds nothing with build_pull_requests off', async () => {
      const t = await givenTarget(ctx(), { build_pull_requests: false });
      expect((await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(200)).body).toEqual({
        message: 'No build: pull request #2 changed, and build_pull_requests is off.',
      });
    });

    it('builds drafts unless build_pull_request_ready_for_review, which waits for ready_for_review', async () => {
      const draft = pullRequest('opened', (p) => (p.pull_request.draft = true));
      await deliverGitHub(ctx(), await givenTarget(ctx()), 'pull_request', draft).expect(201);
      const t = await givenTarget(ctx(), { build_pull_request_ready_for_review: true });
      expect((await deliverGitHub(ctx(), t, 'pull_request', draft).expect(200)).body).toEqual({
        message: 'No build: pull request #2 is a draft, and build_pull_request_ready_for_review builds it once it is ready for review.',
      });
      await deliverGitHub(ctx(), t, 'pull_request', pullRequest('ready_for_review')).expect(201);
    });

    it('builds forks only with build_pull_request_forks, as owner:branch unless prefix_pull_request_fork_branch_names is off', async () => {
      const fork = pullRequest('opened', fromFork);
      const off = await givenTarget(ctx());
      expect((await deliverGitHub(ctx(), off, 'pull_request', fork).expect(200)).body).toEqual({
        message: 'No build: pull request #2 comes from a fork (Octocoders/Hello-World), and build_pull_request_forks is off.',
      });
      const prefixed = await givenTarget(ctx(), { build_pull_request_forks: true });
      await deliverGitHub(ctx(), prefixed, 'pull_request', fork).expect(201);
      expect((await buildsOf(ctx(), prefixed))[0]).toMatchObject({
        branch: 'Octocoders:changes',
        pull_request: { id: '2', base: 'master', repository: 'https://github.com/Octocoders/Hello-World.git' },
      });
      const plain = await givenTarget(ctx(), { build_pull_request_forks: true, prefix_pull_request_fork_branch_names: false });
      await deliverGitHub(ctx(), plain, 'pull_request', fork).expect(201);
      expect((await buildsOf(ctx(), plain))[0]!.branch).toBe('changes');
      // A fork deleted since the pull request was opened still counts as a fork.
      const gone = pullRequest('synchronize', (p) => (p.pull_request.head.repo = null));
      expect((await deliverGitHub(ctx(), off, 'pull_request', gone).expect(200)).body.message).toMatch(
        /comes from a fork, and build_pull_request_forks is off/,
      );
    });

    it('filters on the base branch with pull_request_branch_filter_*', async () => {
      const t = await givenTarget(ctx(), { pull_request_branch_filter_enabled: true, pull_request_branch_filter_configuration: 'main release/*' });
      expect((await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(200)).body).toEqual({
        message: 'No build: the base branch "master" of pull request #2 does not match pull_request_branch_filter_configuration "main release/*".',
      });
      await deliverGitHub(
        ctx(),
        t,
        'pull_request',
        pullRequest('opened', (p) => (p.pull_request.base.ref = 'release/2')),
      ).expect(201);
      // The filter applies only when enabled.
      const disabled = await givenTarget(ctx(), { pull_request_branch_filter_enabled: false, pull_request_branch_filter_configuration: 'main' });
      await deliverGitHub(ctx(), disabled, 'pull_request', pullRequest('opened')).expect(201);
    });

    it('skips a commit already built on the same branch (skip_pull_request_builds_for_existing_commits, on by default)', async () => {
      const push = branchPush((p) => {
        p.ref = 'refs/heads/changes';
        p.head_commit.id = PR_HEAD;
      });
      const t = await givenTarget(ctx());
      await deliverGitHub(ctx(), t, 'push', push).expect(201);
      expect((await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(200)).body).toEqual({
        message: `No build: commit ${PR_HEAD} already has a build on branch "changes" (skip_pull_request_builds_for_existing_commits).`,
      });
      const off = await givenTarget(ctx(), { skip_pull_request_builds_for_existing_commits: false });
      await deliverGitHub(ctx(), off, 'push', push).expect(201);
      await deliverGitHub(ctx(), off, 'pull_request', pullRequest('opened')).expect(201);
    });
  });

  // github.md, "Running builds on pull requests": commits pushed to the branch of a pull request
  // from the repository itself build from the push, which carries the pull request's details; the
  // matching synchronize builds nothing but refreshes them. A fork's synchronize builds.
  describe('pushes to the branch of an open pull request', () => {
    const NEXT = 'c'.repeat(40);
    const pushToChanges = () =>
      branchPush((p) => {
        p.ref = 'refs/heads/changes';
        p.head_commit.id = NEXT;
        p.head_commit.message = 'Fix the typo';
      });

    it('build once, from the push, with the details the synchronize delivery refreshed', async () => {
      const t = await givenTarget(ctx());
      await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(201);
      const sync = pullRequest('synchronize', (p) => {
        p.pull_request.head.sha = NEXT;
        p.pull_request.labels = [{ name: 'docs' }];
      });
      expect((await deliverGitHub(ctx(), t, 'pull_request', sync).expect(200)).body.message).toBe(
        'No build: commits pushed to the branch of pull request #2 build from their push delivery, which carries its details; this delivery refreshed them.',
      );
      await deliverGitHub(ctx(), t, 'push', pushToChanges()).expect(201);
      const [pushed, opened] = await buildsOf(ctx(), t);
      expect(opened!.pull_request).toMatchObject({ id: '2' });
      expect(pushed).toMatchObject({
        commit: NEXT,
        branch: 'changes',
        message: 'Fix the typo',
        pull_request: { id: '2', base: 'master', repository: 'https://github.com/Codertocat/Hello-World.git', labels: ['docs'] },
      });
    });

    it('build as pull request builds: build_branches and the branch filter do not apply', async () => {
      const t = await givenTarget(ctx(), { build_branches: false }, { branch_configuration: 'master' });
      await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(201);
      await deliverGitHub(ctx(), t, 'push', pushToChanges()).expect(201);
      expect((await buildsOf(ctx(), t))[0]).toMatchObject({ commit: NEXT, pull_request: { id: '2' } });
    });

    it('build as plain branch pushes once the pull request is closed, or without pull request builds', async () => {
      const t = await givenTarget(ctx());
      await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(201);
      await deliverGitHub(ctx(), t, 'pull_request', pullRequest('closed')).expect(200);
      await deliverGitHub(ctx(), t, 'push', pushToChanges()).expect(201);
      // A build without a pull request shows an empty one.
      const [closed] = await buildsOf(ctx(), t);
      expect([closed!.commit, closed!.pull_request]).toEqual([NEXT, {}]);

      const off = await givenTarget(ctx(), { build_pull_requests: false });
      await deliverGitHub(ctx(), off, 'pull_request', pullRequest('opened')).expect(200);
      await deliverGitHub(ctx(), off, 'push', pushToChanges()).expect(201);
      const [plain] = await buildsOf(ctx(), off);
      expect([plain!.commit, plain!.pull_request]).toEqual([NEXT, {}]);
    });

    it("leave a fork's synchronize building, as a fork sends no push", async () => {
      const t = await givenTarget(ctx(), { build_pull_request_forks: true });
      const fork = pullRequest('synchronize') as PullRequestExample;
      fromFork(fork);
      await deliverGitHub(ctx(), t, 'pull_request', fork).expect(201);
      expect((await buildsOf(ctx(), t))[0]).toMatchObject({ pull_request: { id: '2', repository: 'https://github.com/Octocoders/Hello-World.git' } });
    });
  });

  describe('trigger modes', () => {
    const events = {
      push: () => branchPush(),
      pull_request: () => pullRequest('opened'),
      deployment: () => example('deployment'),
      fork: () => example('fork'),
    };
    const builds: Record<string, string[]> = { code: ['push', 'pull_request'], deployment: ['deployment'], fork: ['fork'], none: [] };
    const wants: Record<string, string> = { push: 'code', pull_request: 'code', deployment: 'deployment', fork: 'fork' };

    it.each(Object.keys(builds))('trigger_mode %s builds only its own events', async (mode) => {
      const t = await givenTarget(ctx(), { trigger_mode: mode });
      for (const [event, payload] of Object.entries(events)) {
        const res = await deliverGitHub(ctx(), t, event, payload());
        if (builds[mode]!.includes(event)) {
          expect([event, res.status]).toEqual([event, 201]);
        } else {
          expect([event, res.status]).toEqual([event, 200]);
          const what = event === 'pull_request' ? 'pull request' : event;
          expect(res.body.message).toBe(
            mode === 'none'
              ? 'No build: trigger_mode is "none", so deliveries never build.'
              : `No build: ${what} events build only when trigger_mode is "${wants[event]}", and it is "${mode}".`,
          );
        }
      }
    });

    it('builds a deployment of its sha and ref, and a fork at HEAD of the default branch', async () => {
      const d = await givenTarget(ctx(), { trigger_mode: 'deployment' });
      await deliverGitHub(ctx(), d, 'deployment', example('deployment')).expect(201);
      expect((await buildsOf(ctx(), d))[0]).toMatchObject({
        commit: 'f95f852bd8fca8fcc58a9a2d6c842781e32a215e',
        branch: 'master',
        message: 'Deployment to production',
        source: 'webhook',
      });
      const f = await givenTarget(ctx(), { trigger_mode: 'fork' });
      await deliverGitHub(ctx(), f, 'fork', example('fork')).expect(201);
      expect((await buildsOf(ctx(), f))[0]).toMatchObject({ commit: 'HEAD', branch: 'master', message: 'Forked to Octocoders/Hello-World', source: 'webhook' });
    });
  });

  describe('filter_condition', () => {
    it('builds only what the condition lets through, and names it when it does not', async () => {
      const condition = 'build.branch == "main" || build.message =~ /\\[deploy\\]/i || build.pull_request.labels includes "bug"';
      const t = await givenTarget(ctx(), { filter_enabled: true, filter_condition: condition });
      expect((await deliverGitHub(ctx(), t, 'push', branchPush()).expect(200)).body).toEqual({
        message: `No build: filter_condition ${JSON.stringify(condition)} is false for this build.`,
      });
      await deliverGitHub(
        ctx(),
        t,
        'push',
        branchPush((p) => (p.head_commit.message = 'Ship it [DEPLOY]')),
      ).expect(201);
      await deliverGitHub(
        ctx(),
        t,
        'pull_request',
        pullRequest('opened', (p) => (p.pull_request.labels = [{ name: 'bug' }])),
      ).expect(201);
      // Off unless filter_enabled.
      const disabled = await givenTarget(ctx(), { filter_enabled: false, filter_condition: condition });
      await deliverGitHub(ctx(), disabled, 'push', branchPush()).expect(201);
    });

    it('sees pull request fields and the source', async () => {
      const t = await givenTarget(ctx(), {
        build_pull_request_forks: true,
        filter_enabled: true,
        filter_condition:
          'build.source == "webhook" && build.pull_request.id == 2 && !build.pull_request.draft && build.pull_request.base_branch == "master" && !build.pull_request.repository.fork',
      });
      await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(201);
      await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened', fromFork)).expect(200);
      await deliverGitHub(ctx(), t, 'push', branchPush()).expect(200);
    });

    it('is a 422 with the position when a pipeline is created or updated with a condition that does not parse', async () => {
      const { org, token } = await ctx().givenAdmin();
      const create = await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(token))
        .send({
          name: 'Bad condition',
          repository: 'git@github.com:a/b.git',
          configuration: 'steps:\n  - command: make\n',
          provider_settings: { filter_condition: 'build.branch == "main" &&' },
        })
        .expect(422);
      expect(create.body).toEqual({
        message: 'Validation Failed',
        errors: [
          {
            field: 'provider_settings.filter_condition',
            code: 'is not a valid condition: expected a value (a variable such as `build.branch`, a "string", a number, true, false, null, `!` or `(`) but the condition ended at character 26',
          },
        ],
      });
      const t = await givenTarget(ctx());
      const update = await ctx()
        .http()
        .patch(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}`)
        .set(auth(t.token))
        .send({ provider_settings: { filter_condition: 'build.brnch == "main"' } })
        .expect(422);
      expect(update.body.errors).toEqual([
        { field: 'provider_settings.filter_condition', code: 'is not a valid condition: unknown variable `build.brnch` at character 1' },
      ]);
    });
  });

  describe('what a step’s if reads of the webhook (the docs’ conditionals)', () => {
    const STEPS = [
      'steps:',
      '  - { label: ready, command: a, if: "!build.pull_request.draft" }',
      '  - { label: draft, command: b, if: build.pull_request.draft }',
      '  - { label: fork, command: c, if: build.pull_request.repository.fork }',
      '  - { label: labeled, command: d, if: build.source_event == "pull_request" && build.source_action == "labeled" && build.pull_request.label == "deploy" }',
      '  - { label: push, command: e, if: build.source_event == "push" && build.source_action == null && build.pull_request.draft == null }',
      '',
    ].join('\n');
    const statesOf = (b: { jobs: { name: string; state: string }[] }) => Object.fromEntries(b.jobs.map((j) => [j.name, j.state]));

    it('reads a pull request’s draft and fork, the event, its action and label; null on builds no webhook made', async () => {
      const t = await givenTarget(ctx(), { build_pull_request_forks: true, build_pull_request_labels_changed: true }, { configuration: STEPS });
      const builds = `/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/builds`;
      const read = async (number: number) => (await ctx().http().get(`${builds}/${number}`).set(auth(t.token)).expect(200)).body;

      await deliverGitHub(
        ctx(),
        t,
        'pull_request',
        pullRequest('opened', (p) => (p.pull_request.draft = true)),
      ).expect(201);
      const draft = await read(1);
      expect(statesOf(draft)).toEqual({ ready: 'broken', draft: 'scheduled', fork: 'broken', labeled: 'broken', push: 'broken' });
      // The REST representation keeps the documented keys only.
      expect(draft.pull_request).toEqual({ id: '2', base: 'master', repository: 'https://github.com/Codertocat/Hello-World.git' });
      const draftJob = draft.jobs.find((j: { name: string }) => j.name === 'draft');
      const env = (await ctx().http().get(`${builds}/1/jobs/${draftJob.id}/env`).set(auth(t.token)).expect(200)).body.env;
      expect(env).toMatchObject({ BUILDKITE_PULL_REQUEST: '2', BUILDKITE_PULL_REQUEST_DRAFT: 'true', BUILDKITE_PULL_REQUEST_LABELS: '' });

      const labeled = pullRequest('labeled', (p) => fromFork(p));
      (labeled as { label?: unknown }).label = { name: 'deploy', color: 'ededed' };
      await deliverGitHub(ctx(), t, 'pull_request', labeled).expect(201);
      expect(statesOf(await read(2))).toEqual({ ready: 'scheduled', draft: 'broken', fork: 'scheduled', labeled: 'scheduled', push: 'broken' });

      await deliverGitHub(ctx(), t, 'push', branchPush()).expect(201);
      const push = await read(3);
      expect(statesOf(push)).toEqual({ ready: 'scheduled', draft: 'broken', fork: 'broken', labeled: 'broken', push: 'scheduled' });
      const pushEnv = (await ctx().http().get(`${builds}/3/jobs/${push.jobs[0].id}/env`).set(auth(t.token)).expect(200)).body.env;
      expect(pushEnv.BUILDKITE_PULL_REQUEST_DRAFT).toBeUndefined();

      // Neither the API's builds nor a rebuild of the labeled one are webhook builds.
      const api = (await ctx().http().post(builds).set(auth(t.token)).send({ commit: 'HEAD', branch: 'master', pull_request_id: 2 }).expect(201)).body;
      expect(statesOf(api)).toEqual({ ready: 'scheduled', draft: 'broken', fork: 'broken', labeled: 'broken', push: 'broken' });
      const rebuilt = (await ctx().http().put(`${builds}/2/rebuild`).set(auth(t.token)).expect(200)).body;
      expect(statesOf(rebuilt)).toEqual({ ready: 'scheduled', draft: 'broken', fork: 'scheduled', labeled: 'broken', push: 'broken' });
    });

    it('keeps them for the steps a pipeline upload adds to the build', async () => {
      const t = await givenTarget(
        ctx(),
        { build_pull_request_labels_changed: true },
        { configuration: 'steps:\n  - command: buildkite-agent pipeline upload\n' },
      );
      const labeled = pullRequest('labeled', (p) => (p.pull_request.draft = true));
      (labeled as { label?: unknown }).label = { name: 'deploy', color: 'ededed' };
      await deliverGitHub(ctx(), t, 'pull_request', labeled).expect(201);
      const agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), t.org.slug, t.token), 'uploader');
      const uploader = await takeNextJob(ctx(), agent);
      const steps = [
        {
          label: 'labeled',
          command: 'a',
          if: 'build.source_event == "pull_request" && build.source_action == "labeled" && build.pull_request.label == "deploy"',
        },
        { label: 'not draft', command: 'b', if: '!build.pull_request.draft' },
      ];
      await ctx().http().post(`/v3/jobs/${uploader.id}/pipelines`).set(agentAuth(agent.token)).send({ pipeline: { steps } }).expect(201);
      const build = (await ctx().http().get(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/builds/1`).set(auth(t.token)).expect(200)).body;
      expect(build.jobs.slice(1).map((j: { name: string; state: string }) => [j.name, j.state])).toEqual([
        ['labeled', 'scheduled'],
        ['not draft', 'broken'],
      ]);
    });
  });
});
