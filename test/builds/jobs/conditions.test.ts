/**
 * A step's `if` (the docs' "Conditionals in steps"): checked when the configuration is read,
 * evaluated when the step is added to a build (at its creation, or at the upload that adds it),
 * and a step whose condition is false becomes a `broken` job, as the docs' "Conditionals and
 * the broken state" says; a group's condition holds for each of its steps.
 */
import { codesOf, yaml } from '../../support/configuration';
import { parseConfiguration } from '../../../src/pipelines/configuration';
import { parseCondition } from '../../../src/pipelines/filter-condition';
import { auth, describeEachDatabase } from '../../support/context';
import { agentAuth, givenAgent, givenRegistrationToken, runNextJob, takeNextJob } from '../../support/agents';
import { givenPipeline } from '../../support/given';
import type { BuildJson } from '../../support/types';

describe('if in a configuration', () => {
  it('keeps a condition on every kind of step, a group’s joined to each of its steps’, comments and all', () => {
    const steps = parseConfiguration(
      yaml(
        'steps:',
        '  - command: ./scripts/tests.sh',
        '    if: build.message !~ /skip tests/',
        '  - wait: ~',
        '    if: build.branch == "main"',
        '  - block: Release',
        '    if: build.tag != null',
        '  - trigger: deployer',
        '    if: build.branch == "main"',
        '  - group: Docker',
        '    if: build.source != "schedule" // not at night',
        '    steps:',
        '      - command: docker build .',
        '        if: |',
        '          // Only run on feature branches',
        '          build.branch =~ /^feature\\//',
        '      - command: docker push',
      ),
    ).steps;
    expect(steps.map((s) => s.if)).toEqual([
      'build.message !~ /skip tests/',
      'build.branch == "main"',
      'build.tag != null',
      'build.branch == "main"',
      '(build.source != "schedule" // not at night\n) && (// Only run on feature branches\nbuild.branch =~ /^feature\\//\n\n)',
      'build.source != "schedule" // not at night',
    ]);
    // The joined condition still parses, its comments ending at their lines.
    const joined = parseCondition(steps[4]!.if!);
    expect(joined.ok).toBe(true);
    if (joined.ok) {
      const ctx = (branch: string, source: string) =>
        new Map([
          ['build.branch', branch],
          ['build.source', source],
        ]);
      expect(joined.condition.evaluate(ctx('feature/x', 'webhook'))).toBe(true);
      expect(joined.condition.evaluate(ctx('feature/x', 'schedule'))).toBe(false);
      expect(joined.condition.evaluate(ctx('main', 'webhook'))).toBe(false);
    }
  });

  it('refuses a condition that does not parse, one with branches, build.state, and build.env not called with a name', () => {
    expect(
      codesOf(
        yaml(
          'steps:',
          '  - command: a',
          '    if: build.branch = "main"',
          '  - command: b',
          '    branches: main',
          '    if: build.tag != null',
          '  - command: c',
          '    if: build.state == "failing"',
          '  - command: d',
          '    if: [build.branch]',
          '  - command: e',
          '    if: build.env == "x" || build.env(NAME)',
          '  - group: g',
          '    if: build.tag != null',
          '    steps:',
          '      - { command: f, branches: main }',
        ),
      ),
    ).toEqual([
      'step 1 (line 3): "if" is not a valid condition: expected `&&`, `||` or the end of the condition but found `=` at character 14',
      'step 2 (line 6): "if" cannot be used together with "branches"',
      'step 3 (line 8): "if" is not a valid condition: unknown variable `build.state` at character 1',
      'step 4 (line 10): "if" must be a condition, such as build.branch == "main"',
      'step 5 (line 12): "if" is not a valid condition: expected `(`: `build.env` is a function, as in build.env("NAME") but found `==` at character 11',
      'step 6.1 (line 16): "branches" cannot be used in a group that has an "if"',
    ]);
  });
});

describe('if: the docs’ variables', () => {
  it('takes every variable of the docs’ conditionals reference but the build-level ones, and the docs’ examples', () => {
    const steps = [
      '!build.pull_request.draft',
      'build.env("DOCKER_PASSWORD") != null',
      "build.env('BUILDKITE_TAG') =~ /^v[0-9]+\\.0$/",
      'build.creator.teams includes "deploy"',
      'build.merge_queue.base_branch == "main"',
      'build.id != null && build.number != 0 && pipeline.id != null && organization.id != null && organization.slug == "acme"',
      'build.creator.id != null || build.creator.name == "x" || build.creator.email == "y" || build.author.id == "z" || build.author.teams includes "t"',
      'build.pull_request.label == "x" || build.pull_request.repository.fork || build.source_event == "push" || build.source_action == "opened"',
      'build.merge_queue.base_commit == null',
    ];
    const parsed = parseConfiguration(yaml('steps:', ...steps.flatMap((c, i) => [`  - command: s${i}`, `    if: ${JSON.stringify(c)}`])));
    expect(parsed.steps.map((s) => s.if)).toEqual(steps);
  });
});

describeEachDatabase('if in a build', (ctx) => {
  it('reads the build’s env, its creator’s teams, the organization and the pipeline; a new build has no number yet', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const team = await ctx().givenTeam(org, [user]);
    const configuration = yaml(
      'env:',
      '  DEPLOY_TARGET: staging',
      'steps:',
      '  - group: Docker',
      '    if: build.env("DOCKER_PASSWORD") != null',
      '    steps: [{ command: docker.sh }]',
      '  - command: staging.sh',
      '    if: build.env("DEPLOY_TARGET") == "staging" && build.env("BUILDKITE_BRANCH") == "main"',
      '  - command: team.sh',
      `    if: build.creator.teams includes "${team.slug}" && build.creator.email == "${user.email}"`,
      '  - command: other-team.sh',
      '    if: build.creator.teams includes "nobody"',
      '  - command: org.sh',
      `    if: organization.slug == "${org.slug}" && organization.id == "${org.id}"`,
      '  - command: ids.sh',
      '    if: build.id != null && pipeline.id == build.env("BUILDKITE_PIPELINE_ID") && build.number == null',
      '  - command: ready.sh',
      '    if: "!build.pull_request.draft && build.merge_queue.base_branch == null"',
    );
    const { slug } = await givenPipeline(ctx(), org.slug, token, configuration);
    const builds = `/v2/organizations/${org.slug}/pipelines/${slug}/builds`;
    const create = async (env: Record<string, string>) =>
      (await ctx().http().post(builds).set(auth(token)).send({ commit: 'HEAD', branch: 'main', env }).expect(201)).body as BuildJson;
    const states = (b: BuildJson) => b.jobs.map((j) => [j.command, j.state]);
    expect(states(await create({}))).toEqual([
      ['docker.sh', 'broken'],
      ['staging.sh', 'scheduled'],
      ['team.sh', 'scheduled'],
      ['other-team.sh', 'broken'],
      ['org.sh', 'scheduled'],
      ['ids.sh', 'scheduled'],
      ['ready.sh', 'scheduled'],
    ]);
    // The build's env counts as the pipeline's does, and overrides it.
    const withEnv = await create({ DOCKER_PASSWORD: 's3cret', DEPLOY_TARGET: 'production' });
    expect(states(withEnv).slice(0, 2)).toEqual([
      ['docker.sh', 'scheduled'],
      ['staging.sh', 'broken'],
    ]);
  });

  it('makes a step whose condition is false a broken job, with the reason; a false wait is no barrier', async () => {
    const { org, token } = await ctx().givenAdmin();
    const configuration = yaml(
      'steps:',
      '  - command: tests.sh',
      '    if: build.message !~ /skip tests/',
      '  - command: main-only.sh',
      '    if: build.branch == "main" && pipeline.slug != null',
      '  - wait: ~',
      '    if: build.branch == "main"',
      '  - command: after.sh',
    );
    const { slug } = await givenPipeline(ctx(), org.slug, token, configuration);
    const builds = `/v2/organizations/${org.slug}/pipelines/${slug}/builds`;
    const create = async (branch: string, message: string) =>
      (await ctx().http().post(builds).set(auth(token)).send({ commit: 'HEAD', branch, message }).expect(201)).body as BuildJson;

    const onMain = await create('main', 'Ship it');
    expect(onMain.jobs.map((j) => [j.type, j.state])).toEqual([
      ['script', 'scheduled'],
      ['script', 'scheduled'],
      ['waiter', 'waiting'],
      ['script', 'waiting'],
    ]);

    const skipped = await create('feature/x', 'WIP, skip tests');
    expect(skipped.jobs.map((j) => j.state)).toEqual(['broken', 'broken', 'broken', 'scheduled']);
    const read = (await ctx().http().get(`${builds}/${skipped.number}`).set(auth(token)).expect(200)).body as BuildJson;
    expect(read.jobs.map((j) => j.state)).toEqual(['broken', 'broken', 'broken', 'scheduled']);

    // The REST API shows each step's condition as written.
    const pipeline = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}`).set(auth(token)).expect(200)).body;
    expect(pipeline.steps.map((s: { if?: string }) => s.if)).toEqual([
      'build.message !~ /skip tests/',
      'build.branch == "main" && pipeline.slug != null',
      'build.branch == "main"',
      undefined,
    ]);
  });

  it('evaluates an uploaded step’s condition when it is uploaded, on the build', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: buildkite-agent pipeline upload\n');
    const builds = `/v2/organizations/${org.slug}/pipelines/${slug}/builds`;
    const build = (await ctx().http().post(builds).set(auth(token)).send({ commit: 'HEAD', branch: 'release/1.0' }).expect(201)).body as BuildJson;
    const agent = await givenAgent(ctx(), reg, 'uploader');
    const uploader = await takeNextJob(ctx(), agent);
    await ctx()
      .http()
      .post(`/v3/jobs/${uploader.id}/pipelines`)
      .set(agentAuth(agent.token))
      .send({
        pipeline: {
          steps: [
            { command: 'release.sh', if: 'build.branch =~ /^release\\//' },
            { command: 'main.sh', if: 'build.branch == "main"' },
            { command: 'numbered.sh', if: `build.number == ${build.number} && build.env("BUILDKITE_BUILD_NUMBER") == "${build.number}"` },
          ],
        },
      })
      .expect(201);
    await ctx().http().put(`/v3/jobs/${uploader.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: '0' }).expect(200);
    const after = (await ctx().http().get(`${builds}/${build.number}`).set(auth(token)).expect(200)).body as BuildJson;
    expect(after.jobs.map((j) => [j.command, j.state])).toEqual([
      ['buildkite-agent pipeline upload', 'passed'],
      ['release.sh', 'scheduled'],
      ['main.sh', 'broken'],
      ['numbered.sh', 'scheduled'],
    ]);
    expect((await runNextJob(ctx(), agent, 0)).command).toBe('release.sh');
  });
});
