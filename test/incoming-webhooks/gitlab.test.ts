import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { buildsOf, givenTarget, type Target } from './helpers';

const HEAD = 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7';
const REPOSITORY = 'https://gitlab.com/awesome_space/awesome_project.git';

// Shapes from GitLab's webhook documentation ("Webhook events"), trimmed to what matters.
function pushHook(changes: Record<string, unknown> = {}) {
  return {
    object_kind: 'push',
    event_name: 'push',
    before: '95790bf891e76fee5e1747ab589903a6a1f80f22',
    after: HEAD,
    ref: 'refs/heads/master',
    checkout_sha: HEAD,
    user_id: 4,
    user_name: 'John Smith',
    user_username: 'jsmith',
    user_email: 'john@example.com',
    project_id: 15,
    commits: [
      {
        id: 'b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327',
        message: 'Update Catalan translation to e38cb41.',
        author: { name: 'Jordi Mallach', email: 'jordi@softcatala.org' },
      },
      { id: HEAD, message: 'fixed readme', author: { name: 'GitLab dev user', email: 'gitlabdev@example.com' } },
    ],
    total_commits_count: 2,
    ...changes,
  };
}

function tagPushHook(changes: Record<string, unknown> = {}) {
  return {
    object_kind: 'tag_push',
    before: '0000000000000000000000000000000000000000',
    after: '82b3d5ae55f7080f1e6022629cdb57bfae7cccc7',
    ref: 'refs/tags/v1.0.0',
    checkout_sha: '82b3d5ae55f7080f1e6022629cdb57bfae7cccc7',
    message: 'Tag message',
    user_name: 'John Smith',
    user_username: 'jsmith',
    user_email: 'john@example.com',
    commits: [],
    total_commits_count: 0,
    ...changes,
  };
}

function mergeRequestHook(attributes: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
  return {
    object_kind: 'merge_request',
    event_type: 'merge_request',
    user: { id: 1, name: 'Administrator', username: 'root', email: 'admin@example.com' },
    object_attributes: {
      id: 99,
      iid: 7,
      target_branch: 'master',
      source_branch: 'ms-viewport',
      source_project_id: 14,
      target_project_id: 14,
      title: 'MS-Viewport',
      state: 'opened',
      action: 'open',
      draft: false,
      work_in_progress: false,
      source: { name: 'Awesome Project', namespace: 'Awesome Space', path_with_namespace: 'awesome_space/awesome_project', git_http_url: REPOSITORY },
      last_commit: { id: HEAD, message: 'fixed readme', author: { name: 'GitLab dev user', email: 'gitlabdev@example.com' } },
      ...attributes,
    },
    labels: [{ id: 206, title: 'API' }],
    changes: {},
    ...extra,
  };
}

function deliverGitLab(ctx: TestContext, t: Target, event: string, payload: unknown, token?: string) {
  const req = ctx.http().post(t.path).set('X-Gitlab-Event', event);
  if (token !== undefined) req.set('X-Gitlab-Token', token);
  return req.send(payload as object);
}

describeEachDatabase('GitLab deliveries', (ctx) => {
  const target = (settings: Record<string, unknown> = {}, fields: Record<string, unknown> = {}) =>
    givenTarget(ctx(), settings, { repository: REPOSITORY, ...fields });

  it("builds a push of a branch with the head commit's message and the pusher", async () => {
    const t = await target();
    expect(t.pipeline.provider.settings).toMatchObject({ repository: 'awesome_space/awesome_project' });
    const res = await deliverGitLab(ctx(), t, 'Push Hook', pushHook()).expect(201);
    expect(res.body.builds).toHaveLength(1);
    expect((await buildsOf(ctx(), t))[0]).toMatchObject({
      source: 'webhook',
      branch: 'master',
      commit: HEAD,
      message: 'fixed readme',
      author: { name: 'John Smith', email: 'john@example.com', username: 'jsmith' },
    });
  });

  it("checks X-Gitlab-Token against the pipeline's webhook secret when sent", async () => {
    const t = await target();
    await deliverGitLab(ctx(), t, 'Push Hook', pushHook(), t.secret).expect(201);
    const res = await deliverGitLab(ctx(), t, 'Push Hook', pushHook(), 'not-the-secret').expect(401);
    expect(res.body).toEqual({ message: "X-Gitlab-Token does not match this pipeline's webhook secret." });
  });

  it('builds tags only with build_tags, never a deleted branch, and skips [skip ci]', async () => {
    const t = await target();
    expect((await deliverGitLab(ctx(), t, 'Tag Push Hook', tagPushHook()).expect(200)).body).toEqual({
      message: 'No build: tag "v1.0.0" was pushed, and build_tags is off.',
    });
    const tags = await target({ build_tags: true });
    await deliverGitLab(ctx(), tags, 'Tag Push Hook', tagPushHook()).expect(201);
    expect((await buildsOf(ctx(), tags))[0]).toMatchObject({ tag: 'v1.0.0', branch: 'v1.0.0', message: 'Tag message' });
    const deletion = pushHook({ after: '0'.repeat(40), checkout_sha: null, commits: [] });
    expect((await deliverGitLab(ctx(), t, 'Push Hook', deletion).expect(200)).body).toEqual({
      message: 'No build: branch "master" was deleted, and deletions never build.',
    });
    const skip = pushHook({ commits: [{ id: HEAD, message: 'docs only [ci skip]' }] });
    expect((await deliverGitLab(ctx(), t, 'Push Hook', skip).expect(200)).body).toEqual({ message: 'No build: the commit message contains [ci skip].' });
    expect(await buildsOf(ctx(), t)).toHaveLength(0);
  });

  it('builds merge requests when opened, reopened or pushed to, carrying the merge request', async () => {
    const t = await target({ skip_pull_request_builds_for_existing_commits: false });
    await deliverGitLab(ctx(), t, 'Merge Request Hook', mergeRequestHook()).expect(201);
    await deliverGitLab(ctx(), t, 'Merge Request Hook', mergeRequestHook({ action: 'reopen' })).expect(201);
    await deliverGitLab(ctx(), t, 'Merge Request Hook', mergeRequestHook({ action: 'update', oldrev: 'b6568db1bc1dcd7f8b4d5a946b0b91f9dacd7327' })).expect(201);
    expect(
      (
        await deliverGitLab(
          ctx(),
          t,
          'Merge Request Hook',
          mergeRequestHook({ action: 'update' }, { changes: { title: { previous: 'a', current: 'b' } } }),
        ).expect(200)
      ).body,
    ).toEqual({
      message: 'No build: merge request #7 was edited, which does not build.',
    });
    expect((await deliverGitLab(ctx(), t, 'Merge Request Hook', mergeRequestHook({ action: 'merge' })).expect(200)).body).toEqual({
      message: 'No build: merge request #7 was merged, which does not build.',
    });
    const builds = await buildsOf(ctx(), t);
    expect(builds).toHaveLength(3);
    expect(builds[0]).toMatchObject({
      branch: 'ms-viewport',
      commit: HEAD,
      message: 'MS-Viewport',
      pull_request: { id: '7', base: 'master', repository: REPOSITORY, labels: ['API'] },
      author: { name: 'Administrator', email: 'admin@example.com', username: 'root' },
    });
  });

  it('applies build_pull_requests, the base branch filter and existing commits to merge requests', async () => {
    const off = await target({ build_pull_requests: false });
    expect((await deliverGitLab(ctx(), off, 'Merge Request Hook', mergeRequestHook()).expect(200)).body.message).toBe(
      'No build: merge request #7 changed, and build_pull_requests is off.',
    );
    const filtered = await target({ pull_request_branch_filter_enabled: true, pull_request_branch_filter_configuration: 'main' });
    expect((await deliverGitLab(ctx(), filtered, 'Merge Request Hook', mergeRequestHook()).expect(200)).body.message).toMatch(
      /base branch "master" of merge request #7 does not match/,
    );
    const t = await target();
    await deliverGitLab(ctx(), t, 'Push Hook', pushHook({ ref: 'refs/heads/ms-viewport' })).expect(201);
    expect((await deliverGitLab(ctx(), t, 'Merge Request Hook', mergeRequestHook()).expect(200)).body.message).toMatch(
      /skip_pull_request_builds_for_existing_commits/,
    );
  });

  it('builds merge requests from forks (GitLab has no fork setting) under the source branch name', async () => {
    const t = await target();
    const fork = mergeRequestHook({
      source_project_id: 99,
      source: { path_with_namespace: 'someone/awesome_project', git_http_url: 'https://gitlab.com/someone/awesome_project.git' },
    });
    await deliverGitLab(ctx(), t, 'Merge Request Hook', fork).expect(201);
    expect((await buildsOf(ctx(), t))[0]).toMatchObject({
      branch: 'ms-viewport',
      pull_request: { repository: 'https://gitlab.com/someone/awesome_project.git' },
    });
  });

  it('follows trigger_mode and filter_condition', async () => {
    const none = await target({ trigger_mode: 'none' });
    expect((await deliverGitLab(ctx(), none, 'Push Hook', pushHook()).expect(200)).body.message).toBe(
      'No build: trigger_mode is "none", so deliveries never build.',
    );
    const deployment = await target({ trigger_mode: 'deployment' });
    expect((await deliverGitLab(ctx(), deployment, 'Merge Request Hook', mergeRequestHook()).expect(200)).body.message).toMatch(
      /^No build: merge request events build only when trigger_mode is "code", and it is "deployment"/,
    );
    const filtered = await target({ filter_enabled: true, filter_condition: 'build.pull_request.labels includes "API"' });
    await deliverGitLab(ctx(), filtered, 'Merge Request Hook', mergeRequestHook()).expect(201);
    expect((await deliverGitLab(ctx(), filtered, 'Push Hook', pushHook()).expect(200)).body.message).toMatch(/^No build: filter_condition/);
  });

  it('answers 400 for a malformed payload, 200 for other hooks, and 422 for a GitHub delivery', async () => {
    const t = await target();
    expect((await deliverGitLab(ctx(), t, 'Push Hook', { ...pushHook(), ref: 7 }).expect(400)).body).toEqual({
      message: 'Malformed GitLab push payload: ref is missing',
    });
    expect((await deliverGitLab(ctx(), t, 'Note Hook', { object_kind: 'note' }).expect(200)).body).toEqual({
      message: 'No build: Note Hook events do not build.',
    });
    await ctx().http().post(t.path).set('X-GitHub-Event', 'push').send({}).expect(422);
    // The pipeline's own API view is unaffected.
    await ctx().http().get(`/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}`).set(auth(t.token)).expect(200);
  });
});
