/**
 * `depends_on` and `allow_dependency_failure` on command and trigger steps, as the Buildkite
 * docs' "Depends on" page describes them: what a configuration may say (and what is refused
 * with the step and line), then builds run by an agent through the agent API, each case one of
 * the page's examples or rows of its table.
 */
import { codesOf, yaml } from '../../support/configuration';
import { normaliseVisualSteps, parseConfiguration, type ScriptStep } from '../../../src/pipelines/configuration';
import { auth, describeEachDatabase } from '../../support/context';
import { agentAuth, givenSteppedBuild, takeNextJob } from '../../support/agents';

const dependenciesOf = (text: string) =>
  parseConfiguration(text).steps.map((s) => (s.type === 'script' || s.type === 'trigger' ? [s.depends_on, s.allow_dependency_failure] : null));

describe('depends_on in a configuration', () => {
  it('reads one key, a list of keys, a list of {step, allow_failure}, and ~ or [] for "nothing"', () => {
    expect(
      dependenciesOf(
        yaml(
          'steps:',
          '  - { command: tests.sh, key: tests }',
          '  - { command: build.sh, key: build, depends_on: tests, allow_dependency_failure: true }',
          '  - command: a.sh',
          '    depends_on: [tests, build]',
          '  - command: b.sh',
          '    depends_on:',
          '      - step: tests',
          '        allow_failure: true',
          '      - step: build',
          '  - { command: c.sh, depends_on: ~ }',
          '  - { command: d.sh, depends_on: [] }',
          '  - { trigger: deployer, depends_on: build }',
          '  - wait',
        ),
      ),
    ).toEqual([
      [undefined, undefined],
      [[{ step: 'tests', allow_failure: false }], true],
      [
        [
          { step: 'tests', allow_failure: false },
          { step: 'build', allow_failure: false },
        ],
        undefined,
      ],
      [
        [
          { step: 'tests', allow_failure: true },
          { step: 'build', allow_failure: false },
        ],
        undefined,
      ],
      [[], undefined],
      [[], undefined],
      [[{ step: 'build', allow_failure: false }], undefined],
      null,
    ]);
    // The visual form takes the objects a read shows; a null there is a field not set, not "nothing".
    const [step, unset] = normaliseVisualSteps([
      { type: 'script', command: 'a', depends_on: [{ step: 'x', allow_failure: true }], allow_dependency_failure: true },
      { type: 'script', command: 'b', depends_on: null },
    ]);
    expect([(step as ScriptStep).depends_on, (step as ScriptStep).allow_dependency_failure]).toEqual([[{ step: 'x', allow_failure: true }], true]);
    expect(unset).not.toHaveProperty('depends_on');
    // allow_dependency_failure alone has nothing to act on: said so.
    expect(parseConfiguration(yaml('steps:', '  - command: a', '    allow_dependency_failure: true')).notices).toEqual([
      'step 1: "allow_dependency_failure" is accepted but not acted on: it applies to the steps named in "depends_on", and this step names none',
    ]);
  });

  it('refuses a step that names itself or its group, a cycle (through a wait step too), and a depends_on that names no key', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - { command: a, key: a, depends_on: a }',
          '  - wait: ~',
          '    key: release',
          '    depends_on: b',
          '  - { command: b, key: b, depends_on: [release] }',
          '  - group: g',
          '    key: g',
          '    steps:',
          '      - { command: e, depends_on: g }',
          '  - { command: f, depends_on: { step: a } }',
        ),
      ),
    ).toEqual([
      'step 1 (line 2): "depends_on" names "a", the step\'s own key',
      'step 2 (line 5): "depends_on" makes a cycle: "release" -> "b" -> "release"',
      'step 4.1 (line 10): "depends_on" names "g", the group the step is in',
      'step 5 (line 11): "depends_on" must be a step\'s key, or a list of keys and mappings with "step"',
    ]);
  });
});

describe('a group’s depends_on', () => {
  it('goes to each of its steps before its first wait or block step, and to those with their own, with allow_dependency_failure per dependency', () => {
    const steps = parseConfiguration(
      yaml(
        'steps:',
        '  - { command: tests.sh, key: tests }',
        '  - { trigger: infra, key: infra }',
        '  - group: Deploy',
        '    key: deploy',
        '    depends_on: [tests, { step: infra }]',
        '    allow_dependency_failure: true',
        '    steps:',
        '      - command: a.sh',
        '      - { command: b.sh, depends_on: lint }',
        '      - { block: Go, key: go }',
        '      - command: after-block.sh',
        '      - { command: own.sh, depends_on: [{ step: tests, allow_failure: false }] }',
        '      - { trigger: downstream, key: downstream }',
        '  - { command: lint.sh, key: lint }',
      ),
    ).steps;
    const dependencies = steps.map((st) => (st.type === 'waiter' ? null : (st.depends_on ?? null)));
    const tests = { step: 'tests', allow_failure: true };
    const infra = { step: 'infra', allow_failure: true };
    expect(dependencies).toEqual([
      null,
      null,
      [tests, infra],
      [{ step: 'lint', allow_failure: false }, tests, infra],
      [tests, infra],
      // After the group's block step: it waits for that one.
      null,
      // A step's own entry comes first and wins for a key both name.
      [{ step: 'tests', allow_failure: false }, infra],
      null,
      null,
    ]);
    // Its own allow_dependency_failure stays the step's: the group's is on each dependency it gave.
    expect(steps.map((st) => (st.type === 'waiter' ? undefined : st.allow_dependency_failure))).toEqual(Array(9).fill(undefined));
  });

  it('refuses a group that names its own key or one of its steps, and a cycle through a group', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - group: g',
          '    key: g',
          '    depends_on: [g, inner]',
          '    steps:',
          '      - { command: a, key: inner }',
          '  - group: h',
          '    key: h',
          '    depends_on: after',
          '    steps:',
          '      - command: b',
          '  - { command: c, key: after, depends_on: h }',
        ),
      ),
    ).toEqual([
      'step 1 (line 4): "depends_on" names "g", the group\'s own key',
      'step 1 (line 4): "depends_on" names "inner", the key of one of its own steps',
      'step 3 (line 12): "depends_on" makes a cycle: "after" -> "h" -> "after"',
    ]);
  });
});

describeEachDatabase('depends_on in a build', (ctx) => {
  const setup = (configuration: string) => givenSteppedBuild(ctx(), configuration);

  it('runs a step once the step it names passed, and a step depending on nothing at once, past a wait', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - { command: tests.sh, key: tests }',
        '  - { command: build.sh, key: build, depends_on: tests }',
        '  - wait: ~',
        '  - { command: lint.sh, depends_on: ~ }',
        '  - command: after-wait.sh',
      ),
    );
    expect(await s.states()).toEqual({ 'tests.sh': 'scheduled', 'build.sh': 'waiting', 'lint.sh': 'scheduled', 'after-wait.sh': 'waiting' });
    expect(await s.run(0)).toBe('tests.sh');
    expect(await s.states()).toEqual({ 'tests.sh': 'passed', 'build.sh': 'scheduled', 'lint.sh': 'scheduled', 'after-wait.sh': 'waiting' });
    // The wait waited for every step before it, build.sh with its dependency too (lint.sh is after it).
    expect(await s.run(0)).toBe('build.sh');
    expect(await s.states()).toMatchObject({ 'lint.sh': 'scheduled', 'after-wait.sh': 'scheduled' });
    expect(await s.run(0)).toBe('lint.sh');
    expect(await s.run(0)).toBe('after-wait.sh');
    expect((await s.read()).state).toBe('passed');
  });

  it('does not run a step whose dependency failed, but does with allow_dependency_failure, allow_failure or a soft failure', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - { command: step-a.sh, key: step-a }',
        '  - { command: step-b.sh, key: step-b, depends_on: [{ step: step-a }] }',
        '  - command: step-c.sh',
        '    depends_on:',
        '      - step: step-b',
        '        allow_failure: true',
        '  - { command: coverage.sh, depends_on: step-a, allow_dependency_failure: true }',
        '  - { command: soft.sh, key: soft, soft_fail: [{ exit_status: 42 }] }',
        '  - { command: after-soft.sh, depends_on: soft }',
      ),
    );
    expect(await s.run(1)).toBe('step-a.sh');
    // The docs' last example: step-b does not run, step-c runs even so.
    expect(await s.states()).toMatchObject({ 'step-b.sh': 'waiting_failed', 'step-c.sh': 'scheduled', 'coverage.sh': 'scheduled', 'after-soft.sh': 'waiting' });
    expect(await s.run(0)).toBe('step-c.sh');
    expect(await s.run(0)).toBe('coverage.sh');
    expect(await s.run(42)).toBe('soft.sh');
    expect((await s.states())['after-soft.sh']).toBe('scheduled');
    expect(await s.run(0)).toBe('after-soft.sh');
    const b = await s.read();
    expect(b.state).toBe('failed');
    expect(b.jobs.find((j) => j.command === 'step-b.sh')!.started_at).toBeNull();
  });

  it('runs a step that waited on a failure once that failure is retried and passes', async () => {
    const s = await setup(yaml('steps:', '  - { command: tests.sh, key: tests }', '  - { command: deploy.sh, depends_on: tests }'));
    expect(await s.run(1)).toBe('tests.sh');
    expect(await s.states()).toEqual({ 'tests.sh': 'failed', 'deploy.sh': 'waiting_failed' });
    const failed = (await s.read()).jobs[0]!;
    await ctx().http().put(`${s.url}/jobs/${failed.id}/retry`).set(auth(s.token)).expect(200);
    expect((await s.states())['deploy.sh']).toBe('waiting');
    expect(await s.run(0)).toBe('tests.sh');
    expect(await s.run(0)).toBe('deploy.sh');
    expect((await s.read()).state).toBe('passed');
  });

  it('waits for every command step of a group, and every job of a parallel step, named by key; a step excluded by its branch filter counts as done', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - group: Checks',
        '    key: checks',
        '    steps:',
        '      - command: unit.sh',
        '      - { command: shard.sh, parallelism: 2 }',
        '  - { command: release-only.sh, key: release-only, branches: release/* }',
        '  - { command: package.sh, depends_on: [checks, release-only] }',
      ),
    );
    expect((await s.states())['release-only.sh']).toBe('broken');
    for (let i = 0; i < 2; i++) await s.run(0);
    expect((await s.states())['package.sh']).toBe('waiting');
    await s.run(0);
    expect((await s.states())['package.sh']).toBe('scheduled');
  });

  it('blocks a block step with depends_on once its dependency passed, and runs what depends on it once it is unblocked (the docs’ Release button)', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - { command: build.sh, key: built }',
        '  - command: slow-tests.sh',
        '  - block: ":rocket: Release!"',
        '    key: blocked-deploy',
        '    depends_on: [built]',
        '  - command: release.sh',
        '    depends_on: [built, blocked-deploy]',
        '  - command: after-block.sh',
      ),
    );
    const block = () => s.read().then((b) => b.jobs.find((j) => j.type === 'manual')!);
    expect((await block()).state).toBe('waiting');
    expect(await s.run(0)).toBe('build.sh');
    // Blocked once build.sh passed, while slow-tests.sh still runs: it waits for its dependency only.
    expect((await block()).state).toBe('blocked');
    expect(await s.states()).toMatchObject({ 'slow-tests.sh': 'scheduled', 'release.sh': 'waiting', 'after-block.sh': 'waiting' });
    await ctx()
      .http()
      .put(`${s.url}/jobs/${(await block()).id}/unblock`)
      .set(auth(s.token))
      .send({})
      .expect(200);
    expect(await s.states()).toMatchObject({ 'release.sh': 'scheduled', 'after-block.sh': 'scheduled' });
    expect((await s.pipeline()).steps[2]).toMatchObject({ type: 'manual', key: 'blocked-deploy', depends_on: [{ step: 'built', allow_failure: false }] });
  });

  it('runs a group with depends_on once its dependency passed, past the wait before it, its own wait kept; a trigger step’s key can be named', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - { command: tests.sh, key: tests }',
        '  - command: slow.sh',
        '  - wait',
        '  - group: Deploy',
        '    depends_on: tests',
        '    steps:',
        '      - command: deploy-a.sh',
        '      - command: deploy-b.sh',
        '      - wait',
        '      - command: smoke.sh',
        '  - { trigger: nowhere, key: announce, soft_fail: true, depends_on: ~ }',
        '  - { command: after-announce.sh, depends_on: announce }',
      ),
    );
    // The trigger ran at once and (soft) failed: the step naming its key still runs.
    expect(await s.states()).toMatchObject({ 'deploy-a.sh': 'waiting', 'deploy-b.sh': 'waiting', 'smoke.sh': 'waiting', 'after-announce.sh': 'scheduled' });
    expect(await s.run(0)).toBe('tests.sh');
    // slow.sh still runs: the group waits for tests.sh alone.
    expect(await s.states()).toMatchObject({ 'slow.sh': 'scheduled', 'deploy-a.sh': 'scheduled', 'deploy-b.sh': 'scheduled', 'smoke.sh': 'waiting' });
    expect(await s.run(0)).toBe('slow.sh');
    expect(await s.run(0)).toBe('deploy-a.sh');
    expect((await s.states())['smoke.sh']).toBe('waiting');
    expect(await s.run(0)).toBe('deploy-b.sh');
    expect(await s.states()).toMatchObject({ 'smoke.sh': 'scheduled', 'after-announce.sh': 'scheduled' });
    expect([await s.run(0), await s.run(0)].sort()).toEqual(['after-announce.sh', 'smoke.sh']);
    expect((await s.read()).state).toBe('passed');
  });

  it('waits, for a step that uploads steps, for the steps it uploaded too (the docs’ "Explicit dependencies in uploaded steps")', async () => {
    const s = await setup(yaml('steps:', '  - { command: generate.sh, key: generate }', '  - { command: deploy.sh, depends_on: generate }'));
    const uploader = await takeNextJob(ctx(), s.agent);
    await ctx()
      .http()
      .post(`/v3/jobs/${uploader.id}/pipelines`)
      .set(agentAuth(s.agent.token))
      .send({
        pipeline: {
          steps: [
            { command: 'generated-a.sh' },
            { command: 'generated-b.sh' },
            // Uploaded steps that depend on their uploader wait for it, not for each other.
            { command: 'check-1.sh', depends_on: 'generate' },
            { command: 'check-2.sh', depends_on: 'generate' },
          ],
        },
      })
      .expect(201);
    await ctx().http().put(`/v3/jobs/${uploader.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: '0' }).expect(200);
    expect(await s.states()).toEqual({
      'generate.sh': 'passed',
      'deploy.sh': 'waiting',
      'generated-a.sh': 'scheduled',
      'generated-b.sh': 'scheduled',
      'check-1.sh': 'scheduled',
      'check-2.sh': 'scheduled',
    });
    expect(await s.run(0)).toBe('generated-a.sh');
    expect((await s.states())['deploy.sh']).toBe('waiting');
    expect(await s.run(1)).toBe('generated-b.sh');
    // An uploaded step's failure stops the step depending on the uploader, as the uploader's own would.
    expect((await s.states())['deploy.sh']).toBe('waiting_failed');
  });

  it('holds a wait with depends_on until those steps are done too, and runs what depends on the wait’s key', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - command: unit.sh',
        '  - { wait: ~, key: barrier, depends_on: [external] }',
        '  - command: after.sh',
        '  - { command: external.sh, key: external, depends_on: ~ }',
        '  - { command: report.sh, depends_on: barrier }',
      ),
    );
    expect(await s.states()).toEqual({ 'unit.sh': 'scheduled', 'after.sh': 'waiting', 'external.sh': 'scheduled', 'report.sh': 'waiting' });
    expect(await s.run(0)).toBe('unit.sh');
    // Every step before the wait is done, but not the one it names.
    expect(await s.states()).toMatchObject({ 'after.sh': 'waiting', 'report.sh': 'waiting' });
    expect(await s.run(0)).toBe('external.sh');
    expect(await s.states()).toMatchObject({ 'after.sh': 'scheduled', 'report.sh': 'scheduled' });
    expect((await s.read()).jobs.find((j) => j.type === 'waiter')).toMatchObject({ state: 'passed', step_key: 'barrier' });
  });

  it('fails a wait whose named step failed, even one after it, and allows it with allow_dependency_failure', async () => {
    const run = async (allow: boolean) => {
      const s = await setup(
        yaml(
          'steps:',
          '  - command: unit.sh',
          `  - { wait: ~, depends_on: external, allow_dependency_failure: ${allow} }`,
          '  - command: after.sh',
          '  - { command: external.sh, key: external, depends_on: ~ }',
        ),
      );
      expect(await s.run(0)).toBe('unit.sh');
      expect(await s.run(1)).toBe('external.sh');
      return (await s.read()).jobs.map((j) => j.state);
    };
    expect(await run(false)).toEqual(['passed', 'waiting_failed', 'waiting_failed', 'failed']);
    expect(await run(true)).toEqual(['passed', 'passed', 'scheduled', 'failed']);
  });

  it('moves a step whose dependency is decided later in the same event (a later block step that fails)', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - { command: report.sh, depends_on: gate, allow_dependency_failure: true }',
        '  - { command: build.sh, key: build }',
        '  - { block: Release, key: gate, depends_on: build }',
      ),
    );
    expect(await s.run(1)).toBe('build.sh');
    // One event: the block fails (its dependency failed), and so report.sh, which allows that, runs.
    expect(await s.states()).toMatchObject({ 'report.sh': 'scheduled' });
    expect((await s.read()).jobs.find((j) => j.type === 'manual')!.state).toBe('blocked_failed');
  });

  it('fails a build whose steps wait on each other through a wait step, instead of leaving it scheduled for ever', async () => {
    const s = await setup(yaml('steps:', '  - { command: b.sh, depends_on: c }', '  - wait', '  - { command: c.sh, key: c }'));
    const b = await s.read();
    expect(b.state).toBe('failed');
    expect(b.jobs.map((j) => j.state)).toEqual(['waiting', 'waiting', 'waiting']);
  });

  it('does not fail the build for a step that is not run anyway (its condition is false) and names a missing key', async () => {
    const s = await setup(yaml('steps:', '  - command: a.sh', '  - { command: b.sh, depends_on: nowhere, if: build.branch == "nope" }'));
    expect(await s.states()).toEqual({ 'a.sh': 'scheduled', 'b.sh': 'broken' });
    expect(await s.run(0)).toBe('a.sh');
    expect((await s.read()).state).toBe('passed');
  });

  it('fails the build without running a step whose dependency no step of the build has', async () => {
    const s = await setup(yaml('steps:', '  - command: a.sh', '  - { command: b.sh, depends_on: nowhere }'));
    expect(await s.states()).toEqual({ 'a.sh': 'scheduled', 'b.sh': 'waiting_failed' });
    expect((await s.read()).state).toBe('failing');
    expect(await s.run(0)).toBe('a.sh');
    expect((await s.read()).state).toBe('failed');
  });
});
