/**
 * The `BUILDKITE_*` variables a job runs with that describe its build, pipeline and organization,
 * as the docs' Environment variables page lists them: the source of the build, the pipeline's id,
 * name and default branch, and the build a trigger step or a rebuild came from ("" when none);
 * the job's group step, its cluster, who unblocked the build, the creator's and the pipeline's
 * non-private teams, the GitHub event behind a webhook's build, and the compute type. Each is
 * checked present with its value, and absent (or "") where the docs' condition does not hold.
 */
import { auth, describeEachDatabase, type TestContext } from '../../support/context';
import { agentAuth, givenAgent, givenRegistrationToken, runNextJob, type OfferedJob } from '../../support/agents';
import { givenBuild, givenPipeline } from '../../support/given';
import type { BuildJson } from '../../support/types';
import { branchPush, deliverGitHub, givenTarget, pullRequest } from '../../incoming-webhooks/helpers';

type Env = Record<string, string>;

/** The job's env as `GET .../jobs/{id}/env` answers it. */
async function envOf(ctx: TestContext, token: string, org: string, pipeline: string, build: { number: number }, jobId: string): Promise<Env> {
  const url = `/v2/organizations/${org}/pipelines/${pipeline}/builds/${build.number}/jobs/${jobId}/env`;
  return (await ctx.http().get(url).set(auth(token)).expect(200)).body.env as Env;
}

/** The build as the API shows it. */
async function readBuild(ctx: TestContext, token: string, org: string, pipeline: string, number: number): Promise<BuildJson> {
  return (await ctx.http().get(`/v2/organizations/${org}/pipelines/${pipeline}/builds/${number}`).set(auth(token)).expect(200)).body as BuildJson;
}

/** A team of the organization, visible unless told otherwise. */
async function givenTeam(ctx: TestContext, org: string, token: string, name: string, privacy: 'visible' | 'secret' = 'visible') {
  const res = await ctx.http().post(`/v2/organizations/${org}/teams`).set(auth(token)).send({ name, privacy });
  if (res.status !== 201) throw new Error(`team: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { id: string; slug: string };
}

const GROUP = ['BUILDKITE_GROUP_ID', 'BUILDKITE_GROUP_KEY', 'BUILDKITE_GROUP_LABEL'];
const UNBLOCKER = ['BUILDKITE_UNBLOCKER', 'BUILDKITE_UNBLOCKER_EMAIL', 'BUILDKITE_UNBLOCKER_ID', 'BUILDKITE_UNBLOCKER_TEAMS'];
const absent = (env: Env, names: string[]) => names.filter((n) => n in env);

describeEachDatabase('a job’s build environment', (ctx) => {
  it('names the pipeline, the source, the triggering build and the rebuilt one', async () => {
    const { org, token } = await ctx().givenAdmin();
    const deploy = await givenPipeline(ctx(), org, token, {
      name: 'Deploy Things',
      default_branch: 'release',
      configuration: 'steps:\n  - command: ./deploy.sh\n',
    });
    const app = await givenPipeline(ctx(), org, token, { configuration: `steps:\n  - trigger: ${deploy.slug}\n` });
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const envOf = async (slug: string, b: BuildJson) =>
      (await ctx().http().get(`${base}/${slug}/builds/${b.number}/jobs/${b.jobs[0]!.id}/env`).set(auth(token)).expect(200)).body.env as Record<string, string>;

    const parent = await givenBuild(ctx(), org, app.slug, token);
    const [child] = (await ctx().http().get(`${base}/${deploy.slug}/builds`).set(auth(token)).expect(200)).body as BuildJson[];
    expect(await envOf(deploy.slug, child!)).toMatchObject({
      BUILDKITE_SOURCE: 'trigger_job',
      BUILDKITE_PIPELINE_ID: deploy.id,
      BUILDKITE_PIPELINE_NAME: 'Deploy Things',
      BUILDKITE_PIPELINE_DEFAULT_BRANCH: 'release',
      BUILDKITE_TRIGGERED_FROM_BUILD_ID: parent.id,
      BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: String(parent.number),
      BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: app.slug,
      BUILDKITE_REBUILT_FROM_BUILD_ID: '',
      BUILDKITE_REBUILT_FROM_BUILD_NUMBER: '',
    });

    const rebuilt = (await ctx().http().put(`${base}/${deploy.slug}/builds/${child!.number}/rebuild`).set(auth(token)).expect(200)).body as BuildJson;
    expect(await envOf(deploy.slug, rebuilt)).toMatchObject({
      BUILDKITE_SOURCE: 'api',
      BUILDKITE_REBUILT_FROM_BUILD_ID: child!.id,
      BUILDKITE_REBUILT_FROM_BUILD_NUMBER: String(child!.number),
      BUILDKITE_TRIGGERED_FROM_BUILD_ID: '',
      BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: '',
      BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: '',
    });
  });

  it('names the group step a job belongs to (its uuid, key and label), and none for a job outside a group', async () => {
    const { org, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token, {
      configuration: [
        'steps:',
        '  - command: solo',
        '  - group: ":lock: Audit"',
        '    key: audit-tasks',
        '    steps:',
        '      - command: audit-a',
        '      - command: audit-b',
        '  - label: Unkeyed',
        '    group: ~',
        '    steps:',
        '      - command: unkeyed',
      ].join('\n'),
    });
    const build = await givenBuild(ctx(), org, pipeline, token);
    const env = async (command: string) => envOf(ctx(), token, org.slug, pipeline.slug, build, build.jobs.find((j) => j.command === command)!.id);
    const [solo, a, b, unkeyed] = [await env('solo'), await env('audit-a'), await env('audit-b'), await env('unkeyed')];
    expect(absent(solo, GROUP)).toEqual([]);
    expect(a).toMatchObject({ BUILDKITE_GROUP_KEY: 'audit-tasks', BUILDKITE_GROUP_LABEL: ':lock: Audit' });
    expect(a.BUILDKITE_GROUP_ID).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    // One id per group step of the build: its other step's job shares it, another group's does not.
    expect(b).toMatchObject({ BUILDKITE_GROUP_ID: a.BUILDKITE_GROUP_ID, BUILDKITE_GROUP_KEY: 'audit-tasks', BUILDKITE_GROUP_LABEL: ':lock: Audit' });
    // A group without a key: still in a group step, its key "".
    expect(unkeyed).toMatchObject({ BUILDKITE_GROUP_KEY: '', BUILDKITE_GROUP_LABEL: 'Unkeyed' });
    expect(unkeyed.BUILDKITE_GROUP_ID).toMatch(/^[0-9a-f-]{36}$/);
    expect(unkeyed.BUILDKITE_GROUP_ID).not.toBe(a.BUILDKITE_GROUP_ID);
    // The label is kept for the environment only: neither the job nor the pipeline's steps show it.
    const job = build.jobs.find((j) => j.command === 'audit-a') as unknown as Record<string, unknown>;
    expect(job.group_key).toBe('audit-tasks');
    expect(Object.keys(job).filter((k) => /group_(label|id)/.test(k))).toEqual([]);
    const shown = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`).set(auth(token)).expect(200)).body.steps;
    expect(shown[1]).toMatchObject({ command: 'audit-a', group_key: 'audit-tasks', group_index: 1 });
    expect(shown.filter((st: Record<string, unknown>) => 'group_label' in st)).toEqual([]);
  });

  it("names the job's cluster: its id only where the job has a cluster queue, its name wherever it runs in one", async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = (await ctx().http().post(`/v2/organizations/${org.slug}/clusters`).set(auth(token)).send({ name: 'Production' }).expect(201)).body;
    await ctx().http().post(`/v2/organizations/${org.slug}/clusters/${cluster.id}/queues`).set(auth(token)).send({ key: 'linux' }).expect(201);
    const configuration = ['steps:', '  - command: queued', '    agents: { queue: linux }', '  - command: unqueued', '    agents: { queue: missing }'].join(
      '\n',
    );
    const inCluster = await givenPipeline(ctx(), org, token, { configuration, cluster_id: cluster.id });
    const build = await givenBuild(ctx(), org, inCluster, token);
    const [queued, unqueued] = build.jobs as unknown as { id: string; cluster_id: string; cluster_queue_id: string | null }[];
    expect([queued!.cluster_queue_id, unqueued!.cluster_queue_id === null]).toEqual([expect.any(String), true]);
    expect(await envOf(ctx(), token, org.slug, inCluster.slug, build, queued!.id)).toMatchObject({
      BUILDKITE_CLUSTER_ID: cluster.id,
      BUILDKITE_CLUSTER_NAME: 'Production',
    });
    // The docs: the id "only if the build has an associated cluster_queue".
    const noQueue = await envOf(ctx(), token, org.slug, inCluster.slug, build, unqueued!.id);
    expect(noQueue.BUILDKITE_CLUSTER_ID).toBeUndefined();
    expect(noQueue.BUILDKITE_CLUSTER_NAME).toBe('Production');

    const outside = await givenPipeline(ctx(), org, token, { configuration });
    const plain = await givenBuild(ctx(), org, outside, token);
    const none = await envOf(ctx(), token, org.slug, outside.slug, plain, plain.jobs[0]!.id);
    expect(absent(none, ['BUILDKITE_CLUSTER_ID', 'BUILDKITE_CLUSTER_NAME'])).toEqual([]);
  });

  it('names who unblocked the build last before the job became runnable, with their non-private teams', async () => {
    const { org, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const [approver, releaser] = [await ctx().givenUser(org, 'member'), await ctx().givenUser(org, 'member')];
    for (const [name, privacy, members] of [
      ['Ops', 'visible', [approver]],
      ['Platform', 'visible', [approver, releaser]],
      ['Hush', 'secret', [approver]],
    ] as const) {
      const team = await givenTeam(ctx(), org.slug, token, name, privacy);
      for (const m of members)
        await ctx().http().post(`/v2/organizations/${org.slug}/teams/${team.id}/members`).set(auth(token)).send({ user_id: m.id }).expect(201);
    }
    const pipeline = await givenPipeline(
      ctx(),
      org,
      token,
      ['steps:', '  - command: first', '  - block: One', '  - command: middle', '  - block: Two', '  - command: last'].join('\n'),
    );
    const build = await givenBuild(ctx(), org, pipeline, token);
    const agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'runner');
    const idOf = (label: string) => build.jobs.find((j) => j.command === label || j.label === label)!.id;
    const env = (label: string) => envOf(ctx(), token, org.slug, pipeline.slug, build, idOf(label));
    const unblock = (label: string, unblocker: string) =>
      ctx()
        .http()
        .put(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${build.number}/jobs/${idOf(label)}/unblock`)
        .set(auth(token))
        .send({ unblocker })
        .expect(200);
    const offered = async () => (await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body.job as OfferedJob;

    // Nothing unblocked yet: not set, neither on the job that runs nor on one waiting behind the block step.
    expect(absent((await offered()).env, UNBLOCKER)).toEqual([]);
    expect(absent(await env('middle'), UNBLOCKER)).toEqual([]);
    await ctx()
      .http()
      .put(`/v3/jobs/${idOf('first')}/accept`)
      .set(agentAuth(agent.token))
      .expect(200);
    await ctx()
      .http()
      .put(`/v3/jobs/${idOf('first')}/start`)
      .set(agentAuth(agent.token))
      .expect(200);
    await ctx()
      .http()
      .put(`/v3/jobs/${idOf('first')}/finish`)
      .set(agentAuth(agent.token))
      .send({ exit_status: 0 })
      .expect(200);

    await unblock('One', approver.id);
    // What the agent is given, teams colon-separated in slug order, the secret one left out.
    const middle = await offered();
    expect(middle.id).toBe(idOf('middle'));
    expect(middle.env).toMatchObject({
      BUILDKITE_UNBLOCKER: approver.name,
      BUILDKITE_UNBLOCKER_EMAIL: approver.email,
      BUILDKITE_UNBLOCKER_ID: approver.id,
      BUILDKITE_UNBLOCKER_TEAMS: 'ops:platform',
    });
    // The job that ran before the unblock keeps its env: no unblocker.
    expect(absent(await env('first'), UNBLOCKER)).toEqual([]);
    await runNextJob(ctx(), agent, 0);

    await unblock('Two', releaser.id);
    expect(await env('last')).toMatchObject({ BUILDKITE_UNBLOCKER: releaser.name, BUILDKITE_UNBLOCKER_ID: releaser.id, BUILDKITE_UNBLOCKER_TEAMS: 'platform' });
    // The latest unblock before each job: the middle one still names the first unblocker.
    expect(await env('middle')).toMatchObject({
      BUILDKITE_UNBLOCKER: approver.name,
      BUILDKITE_UNBLOCKER_ID: approver.id,
      BUILDKITE_UNBLOCKER_TEAMS: 'ops:platform',
    });
    const read = await readBuild(ctx(), token, org.slug, pipeline.slug, build.number);
    expect(read.jobs.map((j) => j.state)).toEqual(['passed', 'unblocked', 'passed', 'unblocked', 'scheduled']);
  });

  it("lists the creator's and the pipeline's non-private team slugs, colon-separated ('' for none), and says the agents are self-hosted", async () => {
    const { org, user, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const pipeline = await givenPipeline(ctx(), org, token);
    const bare = await givenPipeline(ctx(), org, token);
    for (const [name, privacy, member, grant] of [
      ['Platform', 'visible', true, true],
      ['Everyone', 'visible', true, false],
      ['Deploy', 'visible', false, true],
      ['Hush', 'secret', true, true],
    ] as const) {
      const team = await givenTeam(ctx(), org.slug, token, name, privacy);
      if (member) await ctx().http().post(`/v2/organizations/${org.slug}/teams/${team.id}/members`).set(auth(token)).send({ user_id: user.id }).expect(201);
      if (grant)
        await ctx().http().post(`/v2/organizations/${org.slug}/teams/${team.id}/pipelines`).set(auth(token)).send({ pipeline_id: pipeline.id }).expect(201);
    }
    const build = await givenBuild(ctx(), org, pipeline, token);
    expect(await envOf(ctx(), token, org.slug, pipeline.slug, build, build.jobs[0]!.id)).toMatchObject({
      BUILDKITE_BUILD_CREATOR_TEAMS: 'everyone:platform',
      BUILDKITE_PIPELINE_TEAMS: 'deploy:platform',
      BUILDKITE_COMPUTE_TYPE: 'self-hosted',
    });
    // A creator in no team, a pipeline of no team.
    const loner = await ctx().givenUser(org, 'admin');
    const other = await givenBuild(ctx(), org, bare, await ctx().givenToken(loner, [org]));
    expect(await envOf(ctx(), token, org.slug, bare.slug, other, other.jobs[0]!.id)).toMatchObject({
      BUILDKITE_BUILD_CREATOR: loner.name,
      BUILDKITE_BUILD_CREATOR_TEAMS: '',
      BUILDKITE_PIPELINE_TEAMS: '',
      BUILDKITE_COMPUTE_TYPE: 'self-hosted',
    });
  });

  it("takes a GitHub webhook build's creator from its HEAD commit, and names the event and its action", async () => {
    const t = await givenTarget(ctx());
    const builds = `/v2/organizations/${t.org.slug}/pipelines/${t.pipeline.slug}/builds`;
    const envOfBuild = async (number: number) => {
      const b = (await ctx().http().get(`${builds}/${number}`).set(auth(t.token)).expect(200)).body as BuildJson;
      return envOf(ctx(), t.token, t.org.slug, t.pipeline.slug, b, b.jobs[0]!.id);
    };
    const push = branchPush((p) => {
      const q = p as unknown as { head_commit: { author: object }; pusher: object };
      q.head_commit.author = { name: 'Commit Author', email: 'author@example.com', username: 'c-author' };
      q.pusher = { name: 'merger-bot', email: 'bot@example.com' };
    });
    await deliverGitHub(ctx(), t, 'push', push).expect(201);
    const pushed = await envOfBuild(1);
    expect(pushed).toMatchObject({
      BUILDKITE_SOURCE: 'webhook',
      BUILDKITE_BUILD_CREATOR: 'Commit Author',
      BUILDKITE_BUILD_CREATOR_EMAIL: 'author@example.com',
      BUILDKITE_BUILD_CREATOR_TEAMS: '',
      BUILDKITE_GITHUB_EVENT: 'push',
    });
    // A push has no action: not set.
    expect(pushed.BUILDKITE_GITHUB_ACTION).toBeUndefined();

    await deliverGitHub(ctx(), t, 'pull_request', pullRequest('opened')).expect(201);
    expect(await envOfBuild(2)).toMatchObject({
      BUILDKITE_GITHUB_EVENT: 'pull_request',
      BUILDKITE_GITHUB_ACTION: 'opened',
      BUILDKITE_BUILD_CREATOR: 'Codertocat',
    });

    // A build the API made: its creator, and no event.
    const api = (await ctx().http().post(builds).set(auth(t.token)).send({ commit: 'HEAD', branch: 'master' }).expect(201)).body as BuildJson;
    const made = await envOf(ctx(), t.token, t.org.slug, t.pipeline.slug, api, api.jobs[0]!.id);
    expect(absent(made, ['BUILDKITE_GITHUB_EVENT', 'BUILDKITE_GITHUB_ACTION'])).toEqual([]);
    expect(made.BUILDKITE_BUILD_CREATOR).not.toBe('Commit Author');
    expect(made.BUILDKITE_BUILD_CREATOR).toMatch(/\S/);
  });
});
