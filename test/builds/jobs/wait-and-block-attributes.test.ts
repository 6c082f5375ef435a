/**
 * Attributes of wait and block steps that the step type pages document and Windsock once
 * refused: a wait step's `branches` (wait_step.md: "which branches will include this wait step
 * in their builds") and a block step's `submit` (block_step.md: "The label on the button that
 * submits the dialog and unblocks the step").
 */
import { yaml } from '../../support/configuration';
import { auth, describeEachDatabase } from '../../support/context';
import { givenAgentPipeline, givenAgent, runNextJob } from '../../support/agents';
import { givenBuild, givenPipeline } from '../../support/given';
import { HTML, signedIn } from '../../web/support';

describeEachDatabase('wait and block step attributes', (ctx) => {
  it('includes a wait step with branches only in builds of those branches; elsewhere it holds nothing back', async () => {
    const { org, token, slug } = await givenAgentPipeline(
      ctx(),
      yaml('steps:', '  - command: tests', '  - wait: ~', '    branches: main', '  - command: deploy'),
    );
    const commands = (b: { jobs: { type: string; command?: string | null; state: string }[] }) =>
      b.jobs.map((j) => [j.type === 'waiter' ? 'wait' : j.command, j.state]);
    const feature = await givenBuild(ctx(), org, slug, token, { branch: 'feature/x' });
    expect(commands(feature)).toEqual([
      ['tests', 'scheduled'],
      ['wait', 'broken'],
      ['deploy', 'scheduled'],
    ]);
    const main = await givenBuild(ctx(), org, slug, token, { branch: 'main' });
    expect(commands(main)).toEqual([
      ['tests', 'scheduled'],
      ['wait', 'waiting'],
      ['deploy', 'waiting'],
    ]);
    const pipeline = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}`).set(auth(token)).expect(200)).body;
    expect(pipeline.steps[1]).toMatchObject({ type: 'waiter', branch_configuration: 'main' });
    // `branches` with `if` is refused, as on every other step.
    const both = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({
        name: 'Both',
        repository: 'git@example.com:a/b.git',
        configuration: yaml('steps:', '  - wait: ~', '    branches: main', '    if: build.branch == "main"'),
      });
    expect(both.status).toBe(422);
  });

  it('keeps a block step’s submit label and shows it on the unblock button', async () => {
    const { org, token, reg, slug } = await givenAgentPipeline(
      ctx(),
      yaml('steps:', '  - command: build', '  - block: Release', '    submit: "Yes, deploy it!"'),
    );
    const agent = await givenAgent(ctx(), reg, 'runner');
    const build = await givenBuild(ctx(), org, slug, token);
    await runNextJob(ctx(), agent, 0);
    const pipeline = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}`).set(auth(token)).expect(200)).body;
    expect(pipeline.steps[1]).toMatchObject({ type: 'manual', label: 'Release', submit: 'Yes, deploy it!' });
    const web = await signedIn(ctx().app, token);
    const page = (await web.get(`/${org.slug}/${slug}/builds/${build.number}`).set(HTML).expect(200)).text;
    expect(page).toContain('<button type="submit">Yes, deploy it!</button>');
  });

  it('creates every field’s meta-data key on unblock, with its default where none was given, and the form requires fields unless required: false', async () => {
    const { org, token, slug } = await givenAgentPipeline(
      ctx(),
      yaml(
        'steps:',
        '  - block: Release',
        '    fields:',
        '      - { text: Version, key: version }',
        '      - { text: Notes, key: notes, required: false }',
        '      - { text: Codename, key: codename, required: false, default: Flying Dolphin }',
        '      - { text: Hex, key: hex, format: "[0-9a-f]+" }',
        '      - select: Regions',
        '        key: regions',
        '        multiple: true',
        '        default: [eu, us]',
        '        options: [{ label: EU, value: eu }, { label: US, value: us }]',
      ),
    );
    const build = await givenBuild(ctx(), org, slug, token);
    const web = await signedIn(ctx().app, token);
    const page = (await web.get(`/${org.slug}/${slug}/builds/${build.number}`).set(HTML).expect(200)).text;
    const input = (key: string) => page.match(new RegExp(`<input[^>]*name="field:${key}"[^>]*>`))![0];
    expect(input('version')).toContain(' required');
    expect(input('notes')).not.toContain(' required');
    expect(input('hex')).toContain('pattern="[0-9a-f]+"');
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const block = build.jobs.find((j) => j.type === 'manual')!;
    await ctx()
      .http()
      .put(`${url}/jobs/${block.id}/unblock`)
      .set(auth(token))
      .send({ fields: { version: '1.2' } })
      .expect(200);
    const meta = (await ctx().http().get(url).set(auth(token)).expect(200)).body.meta_data;
    expect(meta).toEqual({ version: '1.2', notes: '', codename: 'Flying Dolphin', hex: '', regions: 'eu\nus' });
    // A format that is no regular expression is refused with the field.
    const bad = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({
        name: 'Bad format',
        repository: 'git@example.com:a/b.git',
        configuration: yaml('steps:', '  - block: B', '    fields: [{ text: T, key: t, format: "[a-" }]'),
      });
    expect(bad.status).toBe(422);
    expect(JSON.stringify(bad.body.errors)).toContain('must be a regular expression');
  });

  it('shows the blocked_state a block step names while it blocks the build, and goes on once it is unblocked', async () => {
    const { org, token, reg, slug } = await givenAgentPipeline(
      ctx(),
      yaml(
        'steps:',
        '  - command: build',
        '  - block: Hold',
        '    blocked_state: running',
        '  - block: Gate',
        '    blocked_state: failed',
        '  - command: after',
      ),
    );
    const agent = await givenAgent(ctx(), reg, 'runner');
    const build = await givenBuild(ctx(), org, slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const read = async () => (await ctx().http().get(url).set(auth(token)).expect(200)).body;
    const unblock = async (label: string) => {
      const job = (await read()).jobs.find((j: { label?: string }) => j.label === label);
      await ctx().http().put(`${url}/jobs/${job.id}/unblock`).set(auth(token)).send({}).expect(200);
    };
    await runNextJob(ctx(), agent, 0);
    expect(await read()).toMatchObject({ state: 'running', blocked: true, finished_at: null });
    await unblock('Hold');
    expect(await read()).toMatchObject({ state: 'failed', blocked: true });
    await unblock('Gate');
    expect(await read()).toMatchObject({ state: 'running', blocked: false });
    await runNextJob(ctx(), agent, 0);
    expect(await read()).toMatchObject({ state: 'passed', blocked: false });
    const bad = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({ name: 'Bad state', repository: 'git@example.com:a/b.git', configuration: yaml('steps:', '  - block: B', '    blocked_state: blocked') });
    expect(bad.status).toBe(422);
  });

  it('keeps a synchronous trigger step running while its build is blocked, whatever state that build shows (the docs’ blocked_state)', async () => {
    const { org, token, reg, slug } = await givenAgentPipeline(ctx(), yaml('steps:', '  - command: build', '  - block: Gate', '    blocked_state: failed'));
    const agent = await givenAgent(ctx(), reg, 'runner');
    const parent = await givenPipeline(ctx(), org, token, { name: 'Parent', configuration: yaml('steps:', `  - trigger: ${slug}`) });
    const build = await givenBuild(ctx(), org, parent.slug, token);
    expect(build.jobs[0]).toMatchObject({ type: 'trigger', state: 'running' });
    await runNextJob(ctx(), agent, 0);
    const child = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}/builds/1`).set(auth(token)).expect(200)).body;
    expect(child).toMatchObject({ state: 'failed', blocked: true });
    const parentUrl = `/v2/organizations/${org.slug}/pipelines/${parent.slug}/builds/${build.number}`;
    expect((await ctx().http().get(parentUrl).set(auth(token)).expect(200)).body.jobs[0].state).toBe('running');
  });
});
