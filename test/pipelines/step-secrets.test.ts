/**
 * A command step's and a pipeline's `secrets` (the Buildkite secrets documentation's "within a
 * job's environment variables"): read in the three forms the docs and the agent write, merged
 * as the agent's pipeline library merges them, checked (a 422 naming the step, the line and the
 * field), shown on the pipeline's steps, and handed to the agent in its job's `step.secrets`.
 */
import { errorsOf, yaml } from '../support/configuration';
import { normaliseVisualSteps, parseConfiguration, type ScriptStep } from '../../src/pipelines/configuration';
import { auth, describeEachDatabase } from '../support/context';
import { agentAuth, givenBuildAndAgent, takeNextJob } from '../support/agents';
import { givenPipeline } from '../support/given';

const secretsOf = (text: string) => parseConfiguration(text).steps.map((s) => (s as ScriptStep).secrets);

/** The refusals of a parse: a configuration's codes, or a visual step's field and code. */
const problemsOf = (parse: () => unknown) => errorsOf(parse).map((e) => (e.field === 'configuration' ? e.code : `${e.field}: ${e.code}`));

describe('secrets in a pipeline configuration', () => {
  it('reads a list of keys, a mapping of variables to keys and the agent’s objects, and merges the top level in', () => {
    expect(
      secretsOf(
        yaml(
          'secrets:',
          '  - API_ACCESS_TOKEN',
          '  - SHARED',
          'steps:',
          '  - command: do_something.sh',
          '  - command: api_call.sh',
          '    secrets:',
          '      MY_APP_ACCESS_TOKEN: API_ACCESS_TOKEN',
          '      SHARED: STEP_SHARED',
          '  - command: upload.sh',
          '    secrets:',
          '      - { key: NPM_TOKEN, environment_variable: NODE_AUTH_TOKEN }',
          '      - { key: REDACT_ONLY }',
          '      - { key: ALSO_REDACT_ONLY, environment_variable: ~ }',
          '  - wait',
        ),
      ),
    ).toEqual([
      [
        { key: 'API_ACCESS_TOKEN', environment_variable: 'API_ACCESS_TOKEN' },
        { key: 'SHARED', environment_variable: 'SHARED' },
      ],
      // The step's own first; the pipeline's fill in the variables the step does not set.
      [
        { key: 'API_ACCESS_TOKEN', environment_variable: 'MY_APP_ACCESS_TOKEN' },
        { key: 'STEP_SHARED', environment_variable: 'SHARED' },
        { key: 'API_ACCESS_TOKEN', environment_variable: 'API_ACCESS_TOKEN' },
      ],
      [
        { key: 'NPM_TOKEN', environment_variable: 'NODE_AUTH_TOKEN' },
        { key: 'REDACT_ONLY' },
        { key: 'ALSO_REDACT_ONLY' },
        { key: 'API_ACCESS_TOKEN', environment_variable: 'API_ACCESS_TOKEN' },
        { key: 'SHARED', environment_variable: 'SHARED' },
      ],
      undefined,
    ]);
    // No secrets anywhere: the step has none (not an empty list).
    expect(secretsOf(yaml('steps:', '  - command: a'))).toEqual([undefined]);
    // A matrix step's jobs keep them.
    expect(secretsOf(yaml('steps:', '  - command: "echo {{matrix}}"', '    matrix: [a, b]', '    secrets: [K]'))).toEqual([
      [{ key: 'K', environment_variable: 'K' }],
    ]);
  });

  it('refuses a key that is no secret key, a variable that is no variable name, and the agent’s own variables, naming each', () => {
    expect(
      problemsOf(() =>
        parseConfiguration(
          yaml(
            'secrets: API_TOKEN',
            'steps:',
            '  - command: a',
            '    secrets:',
            '      - 1BAD',
            '      - [nested]',
            '      - { environment_variable: X }',
            '  - command: b',
            '    secrets:',
            '      BUILDKITE_AGENT_ACCESS_TOKEN: K',
            '      BK_THING: K',
            '      "1VAR": K',
            '      OK: "has space"',
            '      BUILDKITE_API_TOKEN: K',
            '      BUILDKITE_ANALYTICS_TOKEN: K',
          ),
        ),
      ),
    ).toEqual([
      'line 1: "secrets" must be a list of secret keys, or a mapping of environment variable names to secret keys',
      'step 1 (line 5): "secrets[0]" must name a secret: a letter, then letters, digits and underscores (at most 255 characters)',
      'step 1 (line 6): "secrets[1]" must be a secret\'s key, or a mapping with "key" and "environment_variable"',
      'step 1 (line 7): "secrets[2]" must name a secret: a letter, then letters, digits and underscores (at most 255 characters)',
      'step 2 (line 10): "secrets.BUILDKITE_AGENT_ACCESS_TOKEN" cannot set "BUILDKITE_AGENT_ACCESS_TOKEN": names starting with BUILDKITE or BK are the agent\'s (BUILDKITE_API_TOKEN and BUILDKITE_ANALYTICS_TOKEN excepted)',
      'step 2 (line 11): "secrets.BK_THING" cannot set "BK_THING": names starting with BUILDKITE or BK are the agent\'s (BUILDKITE_API_TOKEN and BUILDKITE_ANALYTICS_TOKEN excepted)',
      'step 2 (line 12): "secrets.1VAR" has an invalid environment variable name "1VAR": use letters, digits and underscores, not starting with a digit',
      'step 2 (line 13): "secrets.OK" must name a secret: a letter, then letters, digits and underscores (at most 255 characters)',
    ]);
  });

  it('reads the visual form’s objects, as the REST API shows them', () => {
    const [step] = normaliseVisualSteps([{ type: 'script', command: 'a', secrets: [{ key: 'K', environment_variable: 'V' }, { key: 'R' }] }]);
    expect((step as ScriptStep).secrets).toEqual([{ key: 'K', environment_variable: 'V' }, { key: 'R' }]);
    expect(problemsOf(() => normaliseVisualSteps([{ type: 'script', command: 'a', secrets: 'K' }]))).toEqual([
      'steps[0].secrets: must be a list of secret keys, or an object of environment variable names to secret keys',
    ]);
  });
});

describeEachDatabase('secrets through the API', (ctx) => {
  it('shows them on the pipeline’s steps and hands them to the agent in its job’s step; a job without any gets an empty list', async () => {
    const configuration = yaml('steps:', '  - command: deploy.sh', '    secrets:', '      TOKEN: DEPLOY_TOKEN', '  - wait', '  - command: test.sh');
    const { org, token, slug, agent } = await givenBuildAndAgent(ctx(), configuration);
    const pipeline = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${slug}`).set(auth(token)).expect(200)).body;
    expect(pipeline.steps[0].secrets).toEqual([{ key: 'DEPLOY_TOKEN', environment_variable: 'TOKEN' }]);
    expect(pipeline.steps[2]).not.toHaveProperty('secrets');

    const deploy = await takeNextJob(ctx(), agent);
    expect(deploy.step).toEqual({ secrets: [{ key: 'DEPLOY_TOKEN', environment_variable: 'TOKEN' }] });
    // The values are the agent's to read: the server never puts them in the job's environment.
    expect(Object.keys(deploy.env)).not.toContain('TOKEN');
    await ctx().http().put(`/v3/jobs/${deploy.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: '0' }).expect(200);
    const test = await takeNextJob(ctx(), agent);
    expect(test.command).toBe('test.sh');
    expect(test.step).toEqual({ secrets: [] });

    // A visual pipeline takes them too.
    const visual = await givenPipeline(ctx(), org.slug, token, {
      configuration: undefined,
      steps: [{ type: 'script', command: 'a', secrets: [{ key: 'K', environment_variable: 'V' }] }],
    });
    expect(visual.steps[0]!.secrets).toEqual([{ key: 'K', environment_variable: 'V' }]);
  });

  it('answers a 422 naming the step and the field for a refused secret', async () => {
    const { org, token } = await ctx().givenAdmin();
    const res = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({
        name: 'Bad secrets',
        repository: 'git@github.com:acme/app.git',
        configuration: 'steps:\n  - command: a\n    secrets:\n      BUILDKITE_BRANCH: K\n',
      })
      .expect(422);
    expect(res.body.errors).toEqual([
      expect.objectContaining({
        field: 'configuration',
        code: expect.stringContaining('"secrets.BUILDKITE_BRANCH" cannot set "BUILDKITE_BRANCH"'),
      }),
    ]);
  });
});
