/**
 * Commit statuses end to end: pipelines made through the REST API with their provider settings
 * and notify entries, builds run by an agent through the agent API, the worker driven by the
 * test, and a stand-in for the GitHub (or GitLab) API on loopback receiving the statuses: the
 * build's `buildkite/<slug>` pending then its outcome, per-step contexts, a notify entry's own
 * context, and nothing at all for a commit that is not a full SHA.
 */
import crypto from 'node:crypto';
import { createTestContext, type TestContext, describeEachDatabase } from '../support/context';
import { givenAgent, givenRegistrationToken, runNextJob } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { startReceiver, type Receiver } from './receiver';

const GITHUB_TOKEN = `ghp_status${crypto.randomBytes(8).toString('hex')}`;
const GITLAB_TOKEN = `glpat-status${crypto.randomBytes(8).toString('hex')}`;
const sha = () => crypto.randomBytes(20).toString('hex');

describeEachDatabase('commit statuses end to end', null, (_get, kind) => {
  let ctx: TestContext;
  let api: Receiver;
  beforeAll(async () => {
    api = await startReceiver('');
    ctx = await createTestContext(kind, {
      github: { apiUrl: api.url, token: GITHUB_TOKEN },
      commitStatuses: { gitlab: { apiUrl: `${api.url}/api/v4`, token: GITLAB_TOKEN } },
      notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 3 },
    });
  });
  afterAll(async () => {
    await ctx?.close();
    await api?.close();
  });
  beforeEach(() => {
    api.received.length = 0;
  });

  const settle = () => ctx.services.notificationWorker.settle();
  const statusesOf = (commit: string) =>
    api.received
      .filter((r) => r.path.endsWith(`/statuses/${commit}`))
      .map((r) => ({ path: r.path, context: String(r.body.context ?? r.body.name), state: String(r.body.state), r }));

  async function setup(fields: Record<string, unknown>) {
    const { org, token } = await ctx.givenAdmin();
    const reg = await givenRegistrationToken(ctx, org.slug, token);
    const agent = await givenAgent(ctx, reg, 'runner');
    const pipeline = await givenPipeline(ctx, org, token, fields);
    return { org, token, agent, pipeline };
  }

  it("publishes the build's status to GitHub: pending, then success", async () => {
    const s = await setup({ provider_settings: { publish_commit_status: true } });
    const commit = sha();
    const b = await givenBuild(ctx, s.org, s.pipeline, s.token, { commit });
    await runNextJob(ctx, s.agent, 0);
    await settle();
    const statuses = statusesOf(commit);
    expect(statuses.map((x) => [x.context, x.state])).toEqual([
      [`buildkite/${s.pipeline.slug}`, 'pending'],
      [`buildkite/${s.pipeline.slug}`, 'pending'],
      [`buildkite/${s.pipeline.slug}`, 'success'],
    ]);
    const last = statuses.at(-1)!.r;
    expect(last.method).toBe('POST');
    expect(last.path).toBe(`/repos/acme/app/statuses/${commit}`);
    expect(String(last.headers.authorization)).toContain(GITHUB_TOKEN);
    expect(last.body.target_url).toBe(b.web_url);
    expect(String(last.body.description)).toMatch(new RegExp(`^Build #${b.number} passed`));
  });

  it('publishes a failure, per-step contexts, and the context of a github_commit_status notify', async () => {
    const s = await setup({
      configuration: 'notify:\n  - github_commit_status:\n      context: "my-ctx"\nsteps:\n  - label: Unit\n    command: one\n',
      provider_settings: { publish_commit_status: true, publish_commit_status_per_step: true },
    });
    const commit = sha();
    await givenBuild(ctx, s.org, s.pipeline, s.token, { commit });
    await runNextJob(ctx, s.agent, 1);
    await settle();
    const statuses = statusesOf(commit);
    const final = (context: string) => statuses.filter((x) => x.context === context).at(-1)?.state;
    expect(new Set(statuses.map((x) => x.context))).toEqual(new Set([`buildkite/${s.pipeline.slug}`, `buildkite/${s.pipeline.slug}/Unit`, 'my-ctx']));
    expect(final(`buildkite/${s.pipeline.slug}`)).toBe('failure');
    expect(final(`buildkite/${s.pipeline.slug}/Unit`)).toBe('failure');
    // A build-level entry publishes at build.failing and build.finished (the docs), not while the build is scheduled or running.
    expect(statuses.filter((x) => x.context === 'my-ctx').map((x) => x.state)).toEqual(['failure']);
  });

  it("publishes a parallel step's entries once per step moment: failing at its first failure, then its end", async () => {
    const s = await setup({
      configuration: [
        'steps:',
        '  - label: Unit',
        '    command: one',
        '    parallelism: 3',
        '    notify:',
        '      - github_commit_status: { context: unit }',
        '      - github_check: { name: Lint, output: { title: Lint results } }',
        '        if: step.outcome == "hard_failed"',
        '  - label: Docs',
        '    command: two',
        '    notify: [{ github_commit_status: { context: docs } }]',
      ].join('\n'),
      provider_settings: { publish_commit_status: false },
    });
    const commit = sha();
    await givenBuild(ctx, s.org, s.pipeline, s.token, { commit });
    for (const exit of [0, 1, 0, 0]) await runNextJob(ctx, s.agent, exit);
    await settle();
    const statuses = statusesOf(commit);
    const of = (context: string) => statuses.filter((x) => x.context === context).map((x) => [x.state, String(x.r.body.description)]);
    expect(of('unit')).toEqual([
      ['pending', 'Unit is failing'],
      ['failure', expect.stringMatching(/^Unit failed/)],
    ]);
    // Its `if` holds at both moments: a failing step's outcome is already hard_failed.
    expect(of('Lint')).toEqual(of('unit'));
    expect(of('docs')).toEqual([['success', expect.stringMatching(/^Docs passed/)]]);
    expect(statuses).toHaveLength(5);
  });

  it('publishes nothing for a build of HEAD', async () => {
    const s = await setup({ provider_settings: { publish_commit_status: true } });
    await givenBuild(ctx, s.org, s.pipeline, s.token, { commit: 'HEAD' });
    await runNextJob(ctx, s.agent, 0);
    await settle();
    expect(api.received.filter((r) => r.path.includes('/statuses/'))).toEqual([]);
    const ds = await ctx.services.notifications.ofOrganization(s.org.id);
    expect(ds.filter((d) => d.targetKind === 'commit_status')).toEqual([]);
  });

  it('publishes a GitLab status under the project path with the PRIVATE-TOKEN', async () => {
    const s = await setup({ repository: 'git@gitlab.com:acme/group/app.git', provider_settings: { publish_commit_status: true } });
    const commit = sha();
    await givenBuild(ctx, s.org, s.pipeline, s.token, { commit });
    await runNextJob(ctx, s.agent, 0);
    await settle();
    const statuses = statusesOf(commit);
    expect(statuses.length).toBeGreaterThan(0);
    for (const x of statuses) expect(x.path).toBe(`/api/v4/projects/${encodeURIComponent('acme/group/app')}/statuses/${commit}`);
    expect(statuses.map((x) => x.state)).toEqual(['pending', 'running', 'success']);
    expect(statuses[0]!.context).toBe(`buildkite/${s.pipeline.slug}`);
    expect(statuses[0]!.r.headers['private-token']).toBe(GITLAB_TOKEN);
  });
});
