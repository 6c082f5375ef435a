/**
 * Attributes of wait and block steps that the step type pages document and Windsock once
 * refused: a wait step's `branches` (wait_step.md: "which branches will include this wait step
 * in their builds") and a block step's `submit` (block_step.md: "The label on the button that
 * submits the dialog and unblocks the step").
 */
import { yaml } from '../../support/configuration';
import { auth, describeEachDatabase } from '../../support/context';
import { givenAgentPipeline, givenAgent, runNextJob } from '../../support/agents';
import { givenBuild } from '../../support/given';
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
});
