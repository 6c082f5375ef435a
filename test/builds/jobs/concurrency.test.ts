/**
 * Concurrency groups, as the docs' "Controlling concurrency" describes them: what a command step
 * may say, the group's queue (pure), then builds of several pipelines run by agents through the
 * agent API: a job waits `limited` until its group has room, oldest first; a concurrency gate;
 * a block step keeps its jobs out of the queue; a cancel frees a slot; the sweeper admits what
 * a process left waiting.
 */
import { codesOf, yaml } from '../../support/configuration';
import { parseConfiguration } from '../../../src/pipelines/configuration';
import { admissions, type QueuedJob } from '../../../src/builds/jobs/concurrency';
import { auth, describeEachDatabase } from '../../support/context';
import { givenAgent, givenRegistrationToken, runNextJob } from '../../support/agents';
import { givenBuild, givenPipeline } from '../../support/given';
import type { BuildJson } from '../../support/types';

describe('concurrency groups in a configuration', () => {
  it('keeps the group, its limit and its method; a limit without a group is said to limit nothing', () => {
    const parsed = parseConfiguration(
      yaml(
        'steps:',
        '  - { command: deploy.sh, concurrency: 1, concurrency_group: our-payment-gateway/deploy }',
        '  - { command: sauce.sh, concurrency: 10, concurrency_group: saucelabs, concurrency_method: eager }',
        '  - { command: alone.sh, concurrency: 2 }',
      ),
    );
    expect(parsed.steps.map((s) => (s.type === 'script' ? [s.concurrency, s.concurrency_group, s.concurrency_method] : null))).toEqual([
      [1, 'our-payment-gateway/deploy', undefined],
      [10, 'saucelabs', 'eager'],
      [2, undefined, undefined],
    ]);
    expect(parsed.notices).toEqual([
      'step 3: "concurrency" is accepted but not acted on: a limit applies to the jobs of a concurrency group, and the step names none ("concurrency_group")',
    ]);
  });

  it('refuses a group without a limit (the docs: "you must also define the concurrency attribute") and an unknown method', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - { command: a, concurrency_group: deploy }',
          '  - { command: b, concurrency: 1, concurrency_group: deploy, concurrency_method: fifo }',
        ),
      ),
    ).toEqual([
      'step 1 (line 2): "concurrency_group" needs "concurrency": how many of its jobs may run at once',
      'step 2 (line 3): "concurrency_method" must be "ordered" or "eager"',
    ]);
  });
});

describe('a concurrency group’s queue', () => {
  /** A job of a build of its own, unless `buildId` says otherwise. */
  const job = (
    id: string,
    state: QueuedJob['state'],
    limit = 1,
    method: QueuedJob['method'] = 'ordered',
    behindBlock = false,
    buildId = `build-${id}`,
  ): QueuedJob => ({
    id,
    buildId,
    state,
    limit,
    method,
    behindBlock,
  });

  it('admits the oldest while slots are free, and none past a job still waiting ahead (ordered)', () => {
    expect(admissions([job('a', 'limited', 2), job('b', 'limited', 2), job('c', 'limited', 2)])).toEqual(['a', 'b']);
    expect(admissions([job('a', 'running', 2), job('b', 'limited', 2), job('c', 'limited', 2)])).toEqual(['b']);
    // A gate's closing step, waiting in an older build, keeps the next build's opening step out.
    expect(admissions([job('close', 'waiting'), job('open', 'limited')])).toEqual([]);
    // Unless a block step of its build holds it back: it is not in the queue yet.
    expect(admissions([job('held', 'waiting', 1, 'ordered', true), job('open', 'limited')])).toEqual(['open']);
  });

  it('does not count a waiting job of the same build as ahead (one waiting on a later step of its own group would hold it for ever)', () => {
    expect(admissions([job('deploy', 'waiting', 1, 'ordered', false, 'b1'), job('migrate', 'limited', 1, 'ordered', false, 'b1')])).toEqual(['migrate']);
    expect(admissions([job('deploy', 'waiting', 1, 'ordered', false, 'b1'), job('migrate', 'limited', 1, 'ordered', false, 'b2')])).toEqual([]);
  });

  it('lets a job with a higher limit start past one with a lower limit ahead of it, and eager jobs past the queue', () => {
    // The docs' "Changing concurrency limits": the job behind keeps its place in line but has room under its own limit.
    expect(admissions([job('a', 'running', 20), job('old', 'limited', 1), job('new', 'limited', 100)])).toEqual(['new']);
    expect(admissions([job('a', 'running', 2), job('w', 'waiting', 2), job('e', 'limited', 2, 'eager'), job('o', 'limited', 2)])).toEqual(['e']);
  });
});

describeEachDatabase('concurrency groups in builds', (ctx) => {
  async function setup(configurations: Record<string, string>) {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const agent = await givenAgent(ctx(), reg, 'runner');
    for (const [name, configuration] of Object.entries(configurations)) await givenPipeline(ctx(), org, token, { name, configuration });
    const build = (pipeline: string) => givenBuild(ctx(), org, pipeline, token);
    const url = (pipeline: string, number: number) => `/v2/organizations/${org.slug}/pipelines/${pipeline}/builds/${number}`;
    const read = async (pipeline: string, number: number) => (await ctx().http().get(url(pipeline, number)).set(auth(token)).expect(200)).body as BuildJson;
    const states = async (pipeline: string, number: number) => (await read(pipeline, number)).jobs.filter((j) => j.type === 'script').map((j) => j.state);
    return { org, token, build, url, read, states, run: async () => (await runNextJob(ctx(), agent, 0)).command };
  }

  it('runs the jobs of a group one at a time, oldest first, across builds and pipelines', async () => {
    const deploy = 'steps:\n  - { command: deploy.sh, concurrency: 1, concurrency_group: prod/deploy }\n';
    const t = await setup({ app: deploy, api: deploy.replace('deploy.sh', 'deploy-api.sh') });
    const first = await t.build('app');
    const second = await t.build('api');
    const third = await t.build('app');
    expect(first.jobs.map((j) => j.state)).toEqual(['scheduled']);
    expect([second.jobs[0]!.state, third.jobs[0]!.state]).toEqual(['limited', 'limited']);
    // Scheduled (it could run), not runnable until its group admits it.
    expect([second.jobs[0]!.scheduled_at === null, second.jobs[0]!.runnable_at, second.jobs[0]!.concurrency_wait_time_ms]).toEqual([false, null, null]);
    expect(second.state).toBe('scheduled');
    expect(await t.run()).toBe('deploy.sh');
    expect(await t.states('api', second.number)).toEqual(['scheduled']);
    expect(await t.states('app', third.number)).toEqual(['limited']);
    const admitted = (await t.read('api', second.number)).jobs[0]!;
    expect(admitted.runnable_at).not.toBeNull();
    expect(admitted.concurrency_wait_time_ms).toBe(Date.parse(admitted.runnable_at!) - Date.parse(admitted.scheduled_at!));
    // The first one was admitted as its build was made: it waited a few milliseconds at most.
    expect(first.jobs[0]!.concurrency_wait_time_ms).toEqual(expect.any(Number));
    expect(await t.run()).toBe('deploy-api.sh');
    expect(await t.run()).toBe('deploy.sh');
    expect((await t.read('app', third.number)).state).toBe('passed');
  });

  it('keeps a concurrency gate: one build at a time between its opening and closing steps', async () => {
    const gate = yaml(
      'steps:',
      '  - { command: open.sh, concurrency: 1, concurrency_group: gate }',
      '  - wait',
      '  - command: work.sh',
      '  - wait',
      '  - { command: close.sh, concurrency: 1, concurrency_group: gate }',
    );
    const t = await setup({ gated: gate });
    const a = await t.build('gated');
    const b = await t.build('gated');
    expect(await t.states('gated', b.number)).toEqual(['limited', 'waiting', 'waiting']);
    expect(await t.run()).toBe('open.sh');
    // A's closing step, waiting, is ahead of B's opening step in the group.
    expect(await t.states('gated', b.number)).toEqual(['limited', 'waiting', 'waiting']);
    expect(await t.run()).toBe('work.sh');
    expect(await t.states('gated', a.number)).toEqual(['passed', 'passed', 'scheduled']);
    expect(await t.run()).toBe('close.sh');
    expect(await t.states('gated', b.number)).toEqual(['scheduled', 'waiting', 'waiting']);
  });

  it('leaves out of the queue the jobs behind a block step not unblocked yet, and frees a slot when a build is canceled', async () => {
    const t = await setup({
      release: yaml('steps:', '  - block: Release?', '  - { command: release.sh, concurrency: 1, concurrency_group: prod }'),
      hotfix: 'steps:\n  - { command: hotfix.sh, concurrency: 1, concurrency_group: prod }\n',
    });
    const held = await t.build('release');
    const hotfix = await t.build('hotfix');
    const again = await t.build('hotfix');
    expect(await t.states('release', held.number)).toEqual(['waiting']);
    expect([hotfix.jobs[0]!.state, again.jobs[0]!.state]).toEqual(['scheduled', 'limited']);
    await ctx()
      .http()
      .put(`${t.url('hotfix', hotfix.number)}/cancel`)
      .set(auth(t.token))
      .expect(200);
    expect(await t.states('hotfix', again.number)).toEqual(['scheduled']);
  });

  it('runs a step waiting on a later step of its own group, and ignores a step left waiting in a finished build or behind an input step', async () => {
    const t = await setup({
      app: yaml(
        'steps:',
        '  - { command: deploy.sh, concurrency: 1, concurrency_group: prod, depends_on: migrate }',
        '  - { command: migrate.sh, key: migrate, concurrency: 1, concurrency_group: prod }',
      ),
      form: yaml('steps:', '  - input: Details', '  - { command: form-deploy.sh, concurrency: 1, concurrency_group: prod }'),
      // Its first step waits on one behind a wait that waits for it: the build fails at once, the step left waiting.
      stuck: yaml('steps:', '  - { command: stuck.sh, concurrency: 1, concurrency_group: prod, depends_on: c }', '  - wait', '  - { command: c.sh, key: c }'),
    });
    const stuck = await t.build('stuck');
    expect([(await t.read('stuck', stuck.number)).state, await t.states('stuck', stuck.number)]).toEqual(['failed', ['waiting', 'waiting']]);
    // A job in no concurrency group has no concurrency wait.
    expect((await t.read('stuck', stuck.number)).jobs.find((j) => j.command === 'c.sh')!.concurrency_wait_time_ms).toBeNull();
    const app = await t.build('app');
    expect(await t.states('app', app.number)).toEqual(['waiting', 'scheduled']);
    expect(await t.run()).toBe('migrate.sh');
    expect(await t.run()).toBe('deploy.sh');
    // An input step holds nothing back: its build's step joins the group at once, and runs.
    const form = await t.build('form');
    expect(await t.states('form', form.number)).toEqual(['scheduled']);
    expect(await t.run()).toBe('form-deploy.sh');
  });

  it('admits in a sweep what a process left limited with room in its group', async () => {
    const t = await setup({ app: 'steps:\n  - { command: deploy.sh, concurrency: 1, concurrency_group: prod }\n' });
    const first = await t.build('app');
    const second = await t.build('app');
    expect(second.jobs[0]!.state).toBe('limited');
    // The first job ends as a process that died before admitting the next would leave it.
    await ctx().services.db('jobs').where({ id: first.jobs[0]!.id }).update({ state: 'passed', finished_at: new Date() });
    expect((await ctx().services.sweeper.sweep()).admitted).toBe(1);
    expect(await t.states('app', second.number)).toEqual(['scheduled']);
    expect((await ctx().services.sweeper.sweep()).admitted).toBe(0);
  });
});
