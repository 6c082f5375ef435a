/**
 * Group steps as the docs' group step page describes them ("Parallel groups", "Using wait steps
 * in job groups"): a group puts the build in DAG scheduling, so a group runs beside the groups and
 * steps written after it, its wait and block steps hold back only its own steps, and a wait
 * written after it waits for all of it. Each case is one of the page's examples or follows from
 * them, run by an agent through the agent API on both stores.
 */
import { yaml } from '../../support/configuration';
import { parseConfiguration } from '../../../src/pipelines/configuration';
import { describeEachDatabase } from '../../support/context';
import { agentAuth, givenSteppedBuild, takeNextJob } from '../../support/agents';

describe('a group in a configuration', () => {
  it('gives each of its steps, of every kind, the group step’s place in the configuration as group_index', () => {
    const { steps } = parseConfiguration(
      yaml(
        'steps:',
        '  - command: first',
        '  - group: Tests',
        '    steps:',
        '      - command: unit',
        '      - wait',
        '      - block: Go',
        '      - trigger: deployer',
        '  - command: between',
        '  - group: ~',
        '    label: Deploy',
        '    steps: [{command: deploy}]',
      ),
    );
    expect(steps.map((s) => [s.type, s.group_index])).toEqual([
      ['script', undefined],
      ['script', 1],
      ['waiter', 1],
      ['manual', 1],
      ['trigger', 1],
      ['script', undefined],
      ['script', 3],
    ]);
  });
});

describeEachDatabase('groups in a build', (ctx) => {
  const setup = (configuration: string) => givenSteppedBuild(ctx(), configuration);

  it('runs consecutive groups in parallel, each wait holding back its own group only (the docs’ "Parallel groups" example)', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - group: first',
        '    steps:',
        '      - command: 1.sh',
        '      - wait',
        '      - command: 2.sh',
        '  - group: second',
        '    steps:',
        '      - command: 3.sh',
        '      - wait',
        '      - command: 4.sh',
      ),
    );
    // "1.sh and 3.sh will start at the same time."
    expect(await s.states()).toEqual({ '1.sh': 'scheduled', '2.sh': 'waiting', '3.sh': 'scheduled', '4.sh': 'waiting' });
    // "2.sh will start when 1.sh finishes, and 4.sh will start when 3.sh finishes."
    expect(await s.run(0)).toBe('1.sh');
    expect(await s.states()).toEqual({ '1.sh': 'passed', '2.sh': 'scheduled', '3.sh': 'scheduled', '4.sh': 'waiting' });
    expect(await s.run(0)).toBe('2.sh');
    expect((await s.states())['4.sh']).toBe('waiting');
    expect(await s.run(0)).toBe('3.sh');
    expect((await s.states())['4.sh']).toBe('scheduled');
    expect(await s.run(0)).toBe('4.sh');
    expect((await s.read()).state).toBe('passed');
  });

  it('keeps a wait in one group from waiting on another group (the docs’ "Using wait steps in job groups" example)', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - { command: tests.sh, key: tests }',
        '  - group: Group01',
        '    depends_on: tests',
        '    steps:',
        '      - command: a.sh',
        '      - wait',
        '      - command: b.sh',
        '  - group: Group02',
        '    depends_on: tests',
        '    id: toast',
        '    steps:',
        // Offered first, so Group02 gets ahead of Group01.
        '      - { command: c.sh, priority: 1 }',
        '      - wait',
        '      - command: d.sh',
        '  - command: yay.sh',
        '    depends_on: toast',
      ),
    );
    expect(await s.run(0)).toBe('tests.sh');
    expect(await s.states()).toMatchObject({ 'a.sh': 'scheduled', 'c.sh': 'scheduled', 'b.sh': 'waiting', 'd.sh': 'waiting' });
    expect(await s.run(0)).toBe('c.sh');
    // "d.sh won't wait on a.sh to finish."
    expect(await s.states()).toMatchObject({ 'a.sh': 'scheduled', 'b.sh': 'waiting', 'd.sh': 'scheduled', 'yay.sh': 'waiting' });
    expect(await s.run(0)).toBe('a.sh');
    expect(await s.run(0)).toBe('b.sh');
    expect((await s.states())['yay.sh']).toBe('waiting');
    expect(await s.run(0)).toBe('d.sh');
    expect(await s.run(0)).toBe('yay.sh');
    expect((await s.read()).state).toBe('passed');
  });

  it('runs a step written after a group beside it, while a wait written after the group waits for all of it, its block steps unblocked', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - group: G',
        '    steps:',
        '      - command: a.sh',
        '      - block: Go',
        '      - command: b.sh',
        '  - group: H',
        '    steps:',
        '      - block: First',
        '      - command: h.sh',
        '  - command: beside.sh',
        '  - wait',
        '  - command: after.sh',
      ),
    );
    // A block step first in its group is reached at once; the group before it does not hold it.
    expect(await s.states()).toEqual({
      'a.sh': 'scheduled',
      Go: 'waiting',
      'b.sh': 'waiting',
      First: 'blocked',
      'h.sh': 'waiting',
      'beside.sh': 'scheduled',
      'after.sh': 'waiting',
    });
    expect(await s.run(0)).toBe('a.sh');
    expect(await s.states()).toMatchObject({ Go: 'blocked', 'b.sh': 'waiting', 'h.sh': 'waiting', 'beside.sh': 'scheduled' });
    expect(await s.run(0)).toBe('beside.sh');
    await s.unblock('First');
    expect(await s.run(0)).toBe('h.sh');
    // Go is still blocked: the wait after both groups holds after.sh.
    expect(await s.states()).toMatchObject({ Go: 'blocked', 'b.sh': 'waiting', 'after.sh': 'waiting' });
    await s.unblock('Go');
    expect(await s.run(0)).toBe('b.sh');
    expect(await s.run(0)).toBe('after.sh');
    expect((await s.read()).state).toBe('passed');
  });

  it('stops the rest of a group after its failure, not another group’s; a wait after both fails, and so does the build', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - group: G',
        '    steps:',
        '      - command: fails.sh',
        '      - wait',
        '      - command: after-failure.sh',
        '  - group: H',
        '    steps:',
        '      - command: h1.sh',
        '      - wait',
        '      - command: h2.sh',
        '  - wait',
        '  - command: end.sh',
      ),
    );
    expect(await s.run(1)).toBe('fails.sh');
    expect(await s.states()).toMatchObject({ 'after-failure.sh': 'waiting_failed', 'h1.sh': 'scheduled', 'h2.sh': 'waiting', 'end.sh': 'waiting' });
    expect((await s.read()).state).toBe('failing');
    expect(await s.run(0)).toBe('h1.sh');
    expect(await s.run(0)).toBe('h2.sh');
    expect((await s.states())['end.sh']).toBe('waiting_failed');
    expect((await s.read()).state).toBe('failed');
  });

  it('keeps the groups of two uploads apart, though each is its configuration’s first group', async () => {
    const s = await setup(yaml('steps:', '  - command: generate.sh'));
    const uploader = await takeNextJob(ctx(), s.agent);
    const upload = (name: string) =>
      ctx()
        .http()
        .post(`/v3/jobs/${uploader.id}/pipelines`)
        .set(agentAuth(s.agent.token))
        .send({ uuid: crypto.randomUUID(), pipeline: { steps: [{ group: name, steps: [{ command: `${name}-1.sh` }, 'wait', { command: `${name}-2.sh` }] }] } })
        .expect(201);
    await upload('a');
    await upload('b');
    await ctx().http().put(`/v3/jobs/${uploader.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: 0 }).expect(200);
    // b-1.sh is behind no wait of its own group.
    expect(await s.states()).toMatchObject({ 'a-1.sh': 'scheduled', 'a-2.sh': 'waiting', 'b-1.sh': 'scheduled', 'b-2.sh': 'waiting' });
    expect(await s.run(0)).toBe('a-1.sh');
    expect(await s.states()).toMatchObject({ 'a-2.sh': 'scheduled', 'b-1.sh': 'scheduled', 'b-2.sh': 'waiting' });
    const pipelineSteps = (await s.read()).jobs.filter((j) => j.type === 'script').map((j) => j.command);
    expect(pipelineSteps).toEqual(['generate.sh', 'a-1.sh', 'a-2.sh', 'b-1.sh', 'b-2.sh']);
  });

  it('names every step of a group by its key, block and trigger steps too, and shows the key on each of their jobs', async () => {
    const s = await setup(
      yaml(
        'steps:',
        '  - group: Release',
        '    key: release',
        '    steps:',
        '      - command: build.sh',
        '      - block: Approve',
        '      - { trigger: nowhere, soft_fail: true }',
        '  - { command: announce.sh, depends_on: release }',
        '  - group: Deploys',
        '    key: deploys',
        '    steps: [{ trigger: nowhere-either, soft_fail: true }]',
        '  - { command: after-deploys.sh, depends_on: deploys }',
      ),
    );
    const keys = (await s.read()).jobs.map((j) => [j.type, j.group_key]);
    expect(keys).toEqual([
      ['script', 'release'],
      ['manual', 'release'],
      ['trigger', 'release'],
      ['script', null],
      ['trigger', 'deploys'],
      ['script', null],
    ]);
    // A group of trigger steps alone is a group its dependents wait for (it was a missing dependency).
    expect((await s.states())['after-deploys.sh']).toBe('scheduled');
    expect(await s.run(0)).toBe('build.sh');
    // The group is not done while its block step waits for someone.
    expect(await s.states()).toMatchObject({ Approve: 'blocked', 'announce.sh': 'waiting' });
    await s.unblock('Approve');
    expect((await s.states())['announce.sh']).toBe('scheduled');
  });

  it('shows group_index on the pipeline’s steps', async () => {
    const s = await setup(yaml('steps:', '  - command: first', '  - group: G', '    steps: [{command: a}, {wait: ~}]'));
    expect((await s.pipeline()).steps.map((st) => [st.type, st.group_index])).toEqual([
      ['script', undefined],
      ['script', 1],
      ['waiter', 1],
    ]);
  });
});
