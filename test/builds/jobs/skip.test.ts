/**
 * `skip` on command and trigger steps and on groups (merged into their steps), as the step-type
 * pages of the Buildkite docs describe it: the step's jobs are `broken`, never run, and their
 * `broken_reason` is the reason written (the REST docs: "a free-text skip reason supplied at
 * upload time"), beside the reason codes of the other broken jobs (`branch_mismatch`,
 * `conditional_failed`). A skipped step counts as done for a wait and for `depends_on`.
 */
import { codesOf, yaml } from '../../support/configuration';
import { parseConfiguration } from '../../../src/pipelines/configuration';
import { auth, describeEachDatabase } from '../../support/context';
import { givenBuildAndAgent, runNextJob } from '../../support/agents';
import { givenPipeline } from '../../support/given';
import type { BuildJson } from '../../support/types';

const skipsOf = (text: string) => parseConfiguration(text).steps.map((s) => ('skip' in s ? s.skip : s.type));

describe('skip in a configuration', () => {
  it('keeps true or a reason on command and trigger steps, and a group’s on its command and trigger steps that have none', () => {
    expect(
      skipsOf(
        yaml(
          'steps:',
          '  - { command: a.sh, skip: true }',
          '  - command: broken.sh',
          '    skip: "Currently broken and needs to be fixed"',
          '  - { command: b.sh, skip: false }',
          '  - { trigger: deployer, skip: Frozen }',
          '  - group: Nightly',
          '    skip: "Not tonight"',
          '    steps:',
          '      - command: c.sh',
          '      - { command: d.sh, skip: "Its own reason" }',
          '      - trigger: reporter',
          '      - wait',
          '      - block: Go',
        ),
      ),
    ).toEqual([true, 'Currently broken and needs to be fixed', 'script', 'Frozen', 'Not tonight', 'Its own reason', 'Not tonight', 'waiter', 'manual']);
  });

  it('refuses a reason longer than the documented 70 characters, and a skip that is neither true, false nor a reason', () => {
    expect(
      codesOf(yaml('steps:', `  - { command: a, skip: "${'x'.repeat(71)}" }`, '  - { command: b, skip: [yes] }', '  - { trigger: c, skip: { why: x } }')),
    ).toEqual([
      'step 1 (line 2): "skip" is too long (maximum is 70 characters)',
      'step 2 (line 3): "skip" must be true, false or a reason',
      'step 3 (line 4): "skip" must be true, false or a reason',
    ]);
    expect(parseConfiguration(yaml('steps:', `  - { command: a, skip: "${'x'.repeat(70)}" }`)).steps[0]).toMatchObject({ skip: 'x'.repeat(70) });
  });
});

describeEachDatabase('skip in a build', (ctx) => {
  it('makes a skipped step’s jobs broken with its reason, and lets waits and dependents go on', async () => {
    const s = await givenBuildAndAgent(
      ctx(),
      yaml(
        'steps:',
        '  - { command: flaky.sh, key: flaky, skip: "Currently broken and needs to be fixed" }',
        '  - { command: shards.sh, parallelism: 2, skip: true }',
        '  - { command: only-release.sh, branches: release/* }',
        '  - { command: never.sh, if: build.message == "never" }',
        '  - { command: report.sh, depends_on: flaky }',
        '  - wait',
        '  - command: deploy.sh',
      ),
    );
    const read = async () => (await ctx().http().get(s.url).set(auth(s.token)).expect(200)).body as BuildJson;
    const build = await read();
    expect(build.jobs.filter((j) => j.type === 'script').map((j) => [j.command, j.state, j.broken_reason, j.started_at])).toEqual([
      ['flaky.sh', 'broken', 'Currently broken and needs to be fixed', null],
      ['shards.sh', 'broken', null, null],
      ['shards.sh', 'broken', null, null],
      ['only-release.sh', 'broken', 'branch_mismatch', null],
      ['never.sh', 'broken', 'conditional_failed', null],
      ['report.sh', 'scheduled', null, null],
      ['deploy.sh', 'waiting', null, null],
    ]);
    expect((await runNextJob(ctx(), s.agent, 0)).command).toBe('report.sh');
    expect((await runNextJob(ctx(), s.agent, 0)).command).toBe('deploy.sh');
    expect((await read()).state).toBe('passed');
  });

  it('makes a build whose every step is skipped not_run, and shows each step’s skip as written', async () => {
    const { org, token } = await ctx().givenAdmin();
    const { slug } = await givenPipeline(
      ctx(),
      org.slug,
      token,
      yaml('steps:', '  - group: All', '    skip: Paused', '    steps:', '      - command: a.sh', '      - command: b.sh'),
    );
    const builds = `/v2/organizations/${org.slug}/pipelines/${slug}/builds`;
    const build = (await ctx().http().post(builds).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(201)).body as BuildJson;
    expect(build.state).toBe('not_run');
    expect(build.jobs.map((j) => [j.state, j.broken_reason])).toEqual([
      ['broken', 'Paused'],
      ['broken', 'Paused'],
    ]);
    const pipeline = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}`).set(auth(token)).expect(200)).body;
    expect(pipeline.steps.map((st: { skip?: unknown }) => st.skip)).toEqual(['Paused', 'Paused']);
  });
});
