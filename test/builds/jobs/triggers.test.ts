import { MAX_TRIGGER_DEPTH } from '../../../src/builds/jobs/triggers';
import { auth, describeEachDatabase, PUBLIC_URL } from '../../support/context';
import { takeNextJob, agentAuth, runNextJob as runNext, givenAgent, givenRegistrationToken } from '../../support/agents';
import { givenBuild, givenPipeline } from '../../support/given';
import type { BuildJson } from '../../support/types';

describeEachDatabase('trigger steps', (ctx) => {
  async function setup() {
    const { org, user, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const agent = await givenAgent(ctx(), reg, 'runner');
    const pipeline = async (slug: string, configuration: string, extra: Record<string, unknown> = {}) =>
      (await givenPipeline(ctx(), org, token, { name: slug, configuration, ...extra })).slug;
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const create = (slug: string) => givenBuild(ctx(), org, slug, token, { message: 'Ship it' });
    const read = async (slug: string, number: number) =>
      (await ctx().http().get(`${base}/${slug}/builds/${number}`).set(auth(token)).expect(200)).body as BuildJson;
    const list = async (slug: string) => (await ctx().http().get(`${base}/${slug}/builds`).set(auth(token)).expect(200)).body as BuildJson[];
    const log = async (slug: string, number: number, jobId: string) =>
      (await ctx().http().get(`${base}/${slug}/builds/${number}/jobs/${jobId}/log`).set(auth(token)).expect(200)).body.content as string;
    return { org, user, token, agent, pipeline, create, read, list, log, base };
  }

  it('creates the build with the step attributes, runs it through agents and takes its result (sync)', async () => {
    const s = await setup();
    await s.pipeline('deploy', 'steps:\n  - command: ./deploy.sh\n', { default_branch: 'release' });
    await s.pipeline(
      'app',
      [
        'steps:',
        '  - command: make',
        '  - wait',
        '  - trigger: deploy',
        '    label: Deploy',
        '    build:',
        '      env: { TARGET: prod }',
        '      meta_data: { release-version: "1.2" }',
      ].join('\n'),
    );
    const parent = await s.create('app');
    expect(parent.jobs.map((j) => j.state)).toEqual(['scheduled', 'waiting', 'waiting']);
    expect(await s.list('deploy')).toHaveLength(0);

    await runNext(ctx(), s.agent, 0);
    let p = await s.read('app', parent.number);
    const trigger = p.jobs[2]!;
    expect(trigger).toMatchObject({ type: 'trigger', state: 'running', async: false });
    expect(trigger.started_at).not.toBeNull();
    const [child] = await s.list('deploy');
    expect(child).toMatchObject({
      number: 1,
      state: 'scheduled',
      source: 'trigger_job',
      commit: 'HEAD',
      branch: 'release',
      // The step's label: the docs' default message.
      message: 'Deploy',
      env: { TARGET: 'prod' },
      meta_data: { 'release-version': '1.2' },
      creator: { id: s.user.id },
    });
    expect(trigger.triggered_build).toEqual({
      id: child!.id,
      number: 1,
      url: `${PUBLIC_URL}${s.base}/deploy/builds/1`,
      web_url: `${PUBLIC_URL}/${s.org.slug}/deploy/builds/1`,
    });
    expect(p.state).toBe('running');

    // The triggered build's job runs on an agent; its end ends the trigger job and the parent.
    expect((await runNext(ctx(), s.agent, 0)).command).toBe('./deploy.sh');
    expect((await s.read('deploy', 1)).state).toBe('passed');
    p = await s.read('app', parent.number);
    expect(p.jobs[2]).toMatchObject({ state: 'passed' });
    expect(p.jobs[2]!.finished_at).not.toBeNull();
    expect(p.state).toBe('passed');
  });

  it('fails a sync trigger job when its build fails or is canceled, and the parent build with it', async () => {
    const s = await setup();
    await s.pipeline('child', 'steps:\n  - command: test\n');
    await s.pipeline('parent', 'steps:\n  - trigger: child\n    build:\n      branch: topic\n      commit: deadbeef\n      message: From parent\n');
    const first = await s.create('parent');
    // A trigger step first runs at once: the create answers it running.
    expect(first.jobs[0]).toMatchObject({ state: 'running', triggered_build: { number: 1 } });
    expect(await s.read('child', 1)).toMatchObject({ branch: 'topic', commit: 'deadbeef', message: 'From parent' });
    await runNext(ctx(), s.agent, 3);
    expect((await s.read('child', 1)).state).toBe('failed');
    expect(await s.read('parent', first.number)).toMatchObject({ state: 'failed', jobs: [{ state: 'failed' }] });

    const second = await s.create('parent');
    const cancel = await ctx().http().put(`${s.base}/child/builds/2/cancel`).set(auth(s.token));
    expect(cancel.status).toBe(200);
    expect(await s.read('parent', second.number)).toMatchObject({ state: 'failed', jobs: [{ state: 'failed' }] });
  });

  it('marks a sync trigger step skipped when a newer build of its branch skips or cancels its build (the docs’ "Canceling intermediate builds and triggers")', async () => {
    const s = await setup();
    await s.pipeline('child', 'steps:\n  - command: test\n', { skip_queued_branch_builds: true, cancel_running_branch_builds: true });
    await s.pipeline('parent', 'steps:\n  - trigger: child\n  - wait\n  - command: after\n');
    // Child build 1 waits for an agent (scheduled): parent build 2's child skips it.
    const first = await s.create('parent');
    const second = await s.create('parent');
    expect((await s.read('child', 1)).state).toBe('skipped');
    const one = await s.read('parent', first.number);
    expect(one.jobs.map((j) => j.state)).toEqual(['skipped', 'passed', 'scheduled']);
    expect(one.state).not.toBe('failed');
    // Child build 2 runs on an agent: parent build 3's child cancels it, and parent build 2's trigger step is skipped at once.
    const running = await takeNextJob(ctx(), s.agent);
    expect(running.command).toBe('after');
    await ctx().http().put(`/v3/jobs/${running.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: 0 }).expect(200);
    expect((await s.read('parent', first.number)).state).toBe('passed');
    const childJob = await takeNextJob(ctx(), s.agent);
    expect(childJob.command).toBe('test');
    await s.create('parent');
    expect((await s.read('child', 2)).state).toBe('canceling');
    expect((await s.read('parent', second.number)).jobs.map((j) => j.state)).toEqual(['skipped', 'passed', 'scheduled']);
  });

  it('refuses a retry in a build a synchronous trigger step of a since canceled build made, as the jobs docs say', async () => {
    const s = await setup();
    const kids = await givenAgent(ctx(), await givenRegistrationToken(ctx(), s.org.slug, s.token), 'kids', ['queue=kids']);
    await s.pipeline('child', 'steps:\n  - command: test\n    agents: { queue: kids }\n');
    for (const [parentSlug, async] of [
      ['sync-parent', false],
      ['async-parent', true],
    ] as const) {
      await s.pipeline(parentSlug, `steps:\n  - trigger: child\n    async: ${async}\n  - command: slow\n    agents: { queue: nobody }\n`);
      const parent = await s.create(parentSlug);
      const childNumber = parent.jobs[0]!.triggered_build!.number;
      const failed = await runNext(ctx(), kids, 1);
      expect((await s.read('child', childNumber)).state).toBe('failed');
      await ctx().http().put(`${s.base}/${parentSlug}/builds/${parent.number}/cancel`).set(auth(s.token)).expect(200);
      expect((await s.read(parentSlug, parent.number)).state).toBe('canceled');
      const retry = await ctx().http().put(`${s.base}/child/builds/${childNumber}/jobs/${failed.id}/retry`).set(auth(s.token));
      if (async) expect(retry.status).toBe(200);
      else
        expect([retry.status, retry.body]).toEqual([
          422,
          { message: "This job can't be retried because this build was triggered by a synchronous trigger step in a canceled build" },
        ]);
    }
  });

  it('soft-fails a trigger job with soft_fail when its build fails or cannot be made, and the build passes; a skipped one never runs', async () => {
    const s = await setup();
    await s.pipeline('child', 'steps:\n  - command: test\n');
    await s.pipeline(
      'parent',
      [
        'steps:',
        '  - { trigger: child, soft_fail: true }',
        '  - { trigger: nowhere, soft_fail: true }',
        '  - { trigger: child, skip: "Deploys are frozen" }',
        '  - wait',
        '  - command: after.sh',
      ].join('\n'),
    );
    const parent = await s.create('parent');
    // A trigger job shows no `soft_failed` (the real API's trigger job has none): the build says it.
    expect(parent.jobs.map((j) => j.state)).toEqual(['running', 'failed', 'broken', 'waiting', 'waiting']);
    expect([parent.state, parent.failing_at]).toEqual(['running', null]);
    expect(await s.list('child')).toHaveLength(1);
    await runNext(ctx(), s.agent, 3);
    expect((await s.read('child', 1)).state).toBe('failed');
    let p = await s.read('parent', parent.number);
    // Soft failures let the wait pass: the build goes on (not failing) and passes.
    expect(p.jobs.map((j) => j.state)).toEqual(['failed', 'failed', 'broken', 'passed', 'scheduled']);
    expect([p.state, p.failing_at]).toEqual(['running', null]);
    expect(await runNext(ctx(), s.agent, 0)).toMatchObject({ command: 'after.sh' });
    p = await s.read('parent', parent.number);
    expect(p.state).toBe('passed');
    // The step shows what was written.
    const steps = (await ctx().http().get(`${s.base}/parent`).set(auth(s.token)).expect(200)).body.steps as Record<string, unknown>[];
    expect(steps.slice(0, 3).map((st) => [st.soft_fail, st.skip])).toEqual([
      [true, undefined],
      [true, undefined],
      [undefined, 'Deploys are frozen'],
    ]);
  });

  it('passes an async trigger job once the build exists', async () => {
    const s = await setup();
    await s.pipeline('child', 'steps:\n  - command: test\n');
    await s.pipeline('parent', 'steps:\n  - trigger: child\n    async: true\n');
    const parent = await s.create('parent');
    expect(parent.jobs[0]).toMatchObject({ state: 'passed', async: true, triggered_build: { number: 1 } });
    expect(parent.state).toBe('passed');
    expect((await s.read('child', 1)).state).toBe('scheduled');
    // The triggered build's later end changes nothing upstream.
    await runNext(ctx(), s.agent, 1);
    expect(await s.read('parent', parent.number)).toMatchObject({ state: 'passed', jobs: [{ state: 'passed' }] });
  });

  it('runs a parallel trigger step as one trigger job and one build per index, each build told its place', async () => {
    const s = await setup();
    await s.pipeline('generator', 'steps:\n  - command: generate\n');
    // The docs' "triggering parallel builds" example.
    const parentSlug = await s.pipeline(
      'parallel-parent',
      [
        'steps:',
        '  - trigger: generator',
        '    label: ":package: Generate data"',
        '    parallelism: 3',
        '    build:',
        '      meta_data:',
        '        release-version: "1.1"',
      ].join('\n'),
    );
    const step = (await ctx().http().get(`${s.base}/${parentSlug}`).set(auth(s.token)).expect(200)).body.steps[0];
    expect(step).toMatchObject({ type: 'trigger', pipeline: 'generator', parallelism: 3 });
    const parent = await s.create(parentSlug);
    // A trigger job's JSON has no parallel fields (the docs' trigger job); three jobs, three builds.
    expect(parent.jobs.map((j) => j.type)).toEqual(['trigger', 'trigger', 'trigger']);
    const children = await s.list('generator');
    expect(children.map((b) => b.env).sort((a, b) => String(a.BUILDKITE_PARALLEL_JOB).localeCompare(String(b.BUILDKITE_PARALLEL_JOB)))).toEqual(
      [0, 1, 2].map((i) => ({ BUILDKITE_PARALLEL_JOB: String(i), BUILDKITE_PARALLEL_JOB_COUNT: '3' })),
    );
    expect(children.every((b) => b.meta_data['release-version'] === '1.1')).toBe(true);
    // Each trigger job takes its own build's result.
    for (let i = 0; i < 3; i++) await runNext(ctx(), s.agent, i === 1 ? 1 : 0);
    const done = await s.read(parentSlug, parent.number);
    expect(done.jobs.map((j) => j.state).sort()).toEqual(['failed', 'passed', 'passed']);
    expect(done.state).toBe('failed');
  });

  it("keeps the trigger's links right when either pipeline is renamed (the slug follows the name)", async () => {
    const s = await setup();
    await s.pipeline('child', 'steps:\n  - command: test\n');
    await s.pipeline('parent', 'steps:\n  - trigger: child\n    async: true\n');
    const parent = await s.create('parent');
    const rename = async (slug: string, name: string) =>
      (await ctx().http().patch(`${s.base}/${slug}`).set(auth(s.token)).send({ name }).expect(200)).body.slug as string;
    expect(await rename('child', 'Kid')).toBe('kid');
    expect(await rename('parent', 'Mother')).toBe('mother');
    const trigger = (await s.read('mother', parent.number)).jobs[0]!;
    expect(trigger.triggered_build).toMatchObject({ number: 1, url: `${PUBLIC_URL}${s.base}/kid/builds/1` });
    await ctx().http().get(trigger.triggered_build!.url.slice(PUBLIC_URL.length)).set(auth(s.token)).expect(200);
    const child = await s.read('kid', 1);
    expect(child.triggered_from).toMatchObject({ build_id: parent.id, build_number: parent.number, build_pipeline_slug: 'mother' });
  });

  it('fails the trigger job with a reason when the target is missing, archived or filters the branch out', async () => {
    const s = await setup();
    await s.pipeline('archived', 'steps:\n  - command: x\n');
    expect((await ctx().http().post(`${s.base}/archived/archive`).set(auth(s.token))).status).toBe(200);
    await s.pipeline('filtered', 'steps:\n  - command: x\n', { branch_configuration: 'main' });
    await s.pipeline(
      'parent',
      ['steps:', '  - trigger: nowhere', '  - trigger: archived', '  - trigger: filtered', '    build: { branch: feature/x }', '  - command: still runs'].join(
        '\n',
      ),
    );
    const parent = await s.create('parent');
    expect(parent.jobs.map((j) => j.state)).toEqual(['failed', 'failed', 'failed', 'scheduled']);
    expect(parent.jobs.slice(0, 3).map((j) => j.triggered_build)).toEqual([null, null, null]);
    expect(parent.state).toBe('failing');
    expect(await s.log('parent', parent.number, parent.jobs[0]!.id)).toContain('"nowhere" to trigger does not exist');
    expect(await s.log('parent', parent.number, parent.jobs[1]!.id)).toContain('is archived');
    expect(await s.log('parent', parent.number, parent.jobs[2]!.id)).toContain('Branch "feature/x" does not match');
    expect(await s.list('archived')).toHaveLength(0);
    expect(await s.list('filtered')).toHaveLength(0);
    await runNext(ctx(), s.agent, 0);
    expect((await s.read('parent', parent.number)).state).toBe('failed');
  });

  // The trigger step page, "Permissions": the author needs Build access to the triggered pipeline.
  describe("the author's Build access to the pipeline a trigger step triggers, where teams decide it", () => {
    async function teamsSetup() {
      const org = await ctx().givenOrg({ teamsEnabled: true });
      const admin = await ctx().givenUser(org, 'admin');
      const adminToken = await ctx().givenToken(admin, [org]);
      const member = await ctx().givenUser(org, 'member');
      const memberToken = await ctx().givenToken(member, [org]);
      const team = await ctx().givenTeam(org, [member]);
      const base = `/v2/organizations/${org.slug}/pipelines`;
      const pipeline = async (slug: string, configuration: string, level: 'read_only' | 'build_and_read' | null) =>
        (
          await givenPipeline(ctx(), org, adminToken, {
            name: slug,
            configuration,
            teams: level ? [{ id: team.id, access_level: level }] : [],
          })
        ).slug;
      const read = async (slug: string, number: number) =>
        (await ctx().http().get(`${base}/${slug}/builds/${number}`).set(auth(adminToken)).expect(200)).body as BuildJson;
      const log = async (slug: string, number: number, jobId: string) =>
        (await ctx().http().get(`${base}/${slug}/builds/${number}/jobs/${jobId}/log`).set(auth(adminToken)).expect(200)).body.content as string;
      const count = async (slug: string) => ((await ctx().http().get(`${base}/${slug}/builds`).set(auth(adminToken)).expect(200)).body as BuildJson[]).length;
      /** A build no user created (an incoming pipeline trigger's). */
      const creatorless = async (slug: string) => {
        const p = (await ctx().services.pipelines.findInOrganization(org.id, slug))!;
        return ctx().services.builds.createFromPipelineTrigger(p, { commit: 'HEAD', branch: 'main', message: 'hook', env: {}, metaData: {} });
      };
      return { org, member, memberToken, base, pipeline, read, log, count, creatorless };
    }

    it("fails the trigger job when the build's creator can't build the target, and triggers it when they can", async () => {
      const s = await teamsSetup();
      await s.pipeline('readable', 'steps:\n  - command: x\n', 'read_only');
      await s.pipeline('buildable', 'steps:\n  - command: x\n', 'build_and_read');
      await s.pipeline('app', 'steps:\n  - trigger: readable\n  - trigger: buildable\n', 'build_and_read');
      const parent = (await givenBuild(ctx(), s.org, 'app', s.memberToken)) as BuildJson;
      expect(parent.jobs.map((j) => j.state)).toEqual(['failed', 'running']);
      expect(await s.log('app', parent.number, parent.jobs[0]!.id)).toContain(
        `${s.member.name}, the author of this build, doesn't have Build access to the pipeline "readable"`,
      );
      expect(await s.count('readable')).toBe(0);
      expect(await s.count('buildable')).toBe(1);
    });

    it('takes the last unblocker as the author of a build no one created; with neither, a team with Build access to both pipelines', async () => {
      const s = await teamsSetup();
      await s.pipeline('readable', 'steps:\n  - command: x\n', 'read_only');
      await s.pipeline('buildable', 'steps:\n  - command: x\n', 'build_and_read');
      await s.pipeline('unshared', 'steps:\n  - command: x\n', null);
      await s.pipeline('gated', 'steps:\n  - block: Go?\n  - trigger: readable\n  - trigger: buildable\n', 'build_and_read');
      const gated = await s.creatorless('gated');
      const block = (await s.read('gated', gated.number)).jobs[0]!;
      await ctx().http().put(`${s.base}/gated/builds/${gated.number}/jobs/${block.id}/unblock`).set(auth(s.memberToken)).send({}).expect(200);
      const unblocked = await s.read('gated', gated.number);
      expect(unblocked.jobs.map((j) => j.state)).toEqual(['unblocked', 'failed', 'running']);
      expect(await s.log('gated', gated.number, unblocked.jobs[1]!.id)).toContain(`${s.member.name}, the author of this build`);

      await s.pipeline('hook', 'steps:\n  - trigger: buildable\n  - trigger: unshared\n', 'build_and_read');
      const hook = await s.creatorless('hook');
      const jobs = (await s.read('hook', hook.number)).jobs;
      expect(jobs.map((j) => j.state)).toEqual(['running', 'failed']);
      expect(await s.log('hook', hook.number, jobs[1]!.id)).toContain('shares no team with Build access');
      expect(await s.count('unshared')).toBe(0);
    });
  });

  it('launches trigger steps reached by an unblock or added by a pipeline upload', async () => {
    const s = await setup();
    await s.pipeline('child', 'steps:\n  - command: test\n');
    await s.pipeline('parent', 'steps:\n  - command: upload\n  - block: Go\n  - trigger: child\n    async: true\n');
    const parent = await s.create('parent');
    const job = await takeNextJob(ctx(), s.agent.token);
    const uploaded = await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/pipelines`)
      .set(agentAuth(s.agent.token))
      .send({ pipeline: 'steps:\n  - trigger: child\n    async: true\n' });
    expect(uploaded.status).toBe(201);
    expect(uploaded.body.jobs).toEqual([expect.objectContaining({ type: 'trigger', state: 'passed' })]);
    expect(await s.list('child')).toHaveLength(1);
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: 0 }).expect(200);
    let p = await s.read('parent', parent.number);
    expect(p.jobs.map((j) => j.state)).toEqual(['passed', 'passed', 'blocked', 'waiting']);
    await ctx().http().put(`${s.base}/parent/builds/${parent.number}/jobs/${p.jobs[2]!.id}/unblock`).set(auth(s.token)).send({}).expect(200);
    p = await s.read('parent', parent.number);
    expect(p.jobs[3]).toMatchObject({ state: 'passed', triggered_build: { number: 2 } });
    expect(p.state).toBe('passed');
    expect(await s.list('child')).toHaveLength(2);
  });

  it(`stops a pipeline that triggers itself after ${MAX_TRIGGER_DEPTH} levels`, async () => {
    const s = await setup();
    await s.pipeline('loop', 'steps:\n  - trigger: loop\n');
    const first = await s.create('loop');
    const builds = await s.list('loop');
    expect(builds).toHaveLength(MAX_TRIGGER_DEPTH + 1);
    const deepest = builds[0]!;
    expect(deepest.number).toBe(MAX_TRIGGER_DEPTH + 1);
    expect(deepest.jobs[0]).toMatchObject({ state: 'failed', triggered_build: null });
    expect(await s.log('loop', deepest.number, deepest.jobs[0]!.id)).toContain(`more than ${MAX_TRIGGER_DEPTH} levels deep`);
    // Every level waited on the one below: the failure runs all the way up.
    expect(builds.map((b) => b.state)).toEqual(Array(MAX_TRIGGER_DEPTH + 1).fill('failed'));
    expect(first.state).toBe('failed');
  });
});
