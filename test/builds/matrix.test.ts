/**
 * Matrix steps, step priority and reported attributes through the REST API and the agent API's
 * pipeline upload, on each store.
 */
import { auth, describeEachDatabase } from '../support/context';
import { takeNextJob, agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import type { BuildJson, JobJson } from '../support/types';

const MATRIX_PIPELINE = [
  'priority: 3',
  'notify:',
  '  - email: dev@example.com',
  'steps:',
  '  - label: "{{matrix.os}}/{{matrix.arch}}"',
  '    command: "make OS={{matrix.os}} ARCH={{matrix.arch}}"',
  '    agents: {queue: "build-{{matrix.arch}}"}',
  '    matrix:',
  '      setup:',
  '        os: [linux, windows]',
  '        arch: [amd64, arm64]',
  '      adjustments:',
  '        - with: {os: windows, arch: arm64}',
  '          skip: "no runners"',
  '        - with: {os: plan9, arch: amd64}',
  '  - wait',
  '  - command: deploy',
  '    priority: 10',
  '',
].join('\n');

describeEachDatabase('matrix steps and priority through the REST API', (ctx) => {
  async function pipeline(configuration: string) {
    const { org, token } = await ctx().givenAdmin();
    const res = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({ name: `Matrix ${Math.random().toString(36).slice(2, 8)}`, repository: 'git@github.com:acme/app.git', configuration });
    return { org, token, res };
  }

  it('makes one job per combination, with the values in name, command, agents and the job’s matrix, and fills jobs.priority', async () => {
    const { org, token, res } = await pipeline(MATRIX_PIPELINE);
    expect(res.status).toBe(201);
    // notify is read and kept (test/pipelines/notify.test.ts): nothing to warn about.
    expect(res.headers.warning).toBeUndefined();
    expect(res.body.steps[0].matrix).toEqual({
      setup: { os: ['linux', 'windows'], arch: ['amd64', 'arm64'] },
      adjustments: [{ with: { os: 'windows', arch: 'arm64' }, skip: 'no runners' }, { with: { os: 'plan9', arch: 'amd64' } }],
    });

    const build = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines/${res.body.slug}/builds`)
      .set(auth(token))
      .send({ commit: 'HEAD', branch: 'main' });
    expect(build.status).toBe(201);
    const jobs = build.body.jobs as JobJson[];
    expect(jobs.map((j) => [j.type, j.name, j.command ?? null, j.matrix ?? null, j.agent_query_rules ?? null])).toEqual([
      ['script', 'linux/amd64', 'make OS=linux ARCH=amd64', { os: 'linux', arch: 'amd64' }, ['queue=build-amd64']],
      ['script', 'linux/arm64', 'make OS=linux ARCH=arm64', { os: 'linux', arch: 'arm64' }, ['queue=build-arm64']],
      ['script', 'windows/amd64', 'make OS=windows ARCH=amd64', { os: 'windows', arch: 'amd64' }, ['queue=build-amd64']],
      ['script', 'plan9/amd64', 'make OS=plan9 ARCH=amd64', { os: 'plan9', arch: 'amd64' }, ['queue=build-amd64']],
      ['waiter', null, null, null, null],
      ['script', null, 'deploy', null, []],
    ]);
    expect(jobs.slice(0, 4).map((j) => j.state)).toEqual(['scheduled', 'scheduled', 'scheduled', 'scheduled']);

    // Another engineer serializes priority; the column is what dispatch reads.
    const rows = await ctx()
      .services.db('jobs')
      .whereIn(
        'id',
        jobs.map((j) => j.id),
      )
      .select('id', 'priority');
    const priority = new Map(rows.map((r: { id: string; priority: number | string }) => [r.id, Number(r.priority)]));
    expect(jobs.map((j) => priority.get(j.id))).toEqual([3, 3, 3, 3, 0, 10]);
  });

  it("shows the key of a group step as the group_key of its command jobs, and the group key on the pipeline's steps", async () => {
    const { org, token, res } = await pipeline('steps:\n  - group: Tests\n    key: tests\n    steps:\n      - command: unit\n  - command: last\n');
    expect(res.status).toBe(201);
    expect(res.headers.warning).toBeUndefined();
    expect(res.body.steps.map((s: { group_key?: string }) => s.group_key ?? null)).toEqual(['tests', null]);
    const build = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines/${res.body.slug}/builds`)
      .set(auth(token))
      .send({ commit: 'HEAD', branch: 'main' })
      .expect(201);
    expect((build.body.jobs as JobJson[]).map((j) => [j.command, j.group_key])).toEqual([
      ['unit', 'tests'],
      ['last', null],
    ]);
  });

  it('refuses a matrix beyond the documented limits with a 422 naming the field and the limit', async () => {
    const values = Array.from({ length: 100 }, (_, i) => `v${i}`).join(', ');
    const { res } = await pipeline(
      `steps:\n  - command: "echo {{matrix.a}} {{matrix.b}}"\n    matrix:\n      setup:\n        a: [${values}]\n        b: [${values}]\n`,
    );
    expect(res.status).toBe(422);
    expect(res.body.errors).toEqual([
      { field: 'configuration', code: 'step 1 (line 5): "matrix.setup.a" has 100 elements: a dimension has at most 25' },
      { field: 'configuration', code: 'step 1 (line 6): "matrix.setup.b" has 100 elements: a dimension has at most 25' },
    ]);
    expect(res.body.message).toEqual(expect.any(String));
  });

  it('refuses step attributes no step type has, and reports on update what it only accepts', async () => {
    const refused = await pipeline('steps:\n  - command: a\n    colour: blue\n');
    expect(refused.res.status).toBe(422);
    expect(refused.res.body.errors[0].code).toContain('"colour" is not an attribute of a command step');

    const { org, token, res } = await pipeline('steps:\n  - command: a\n');
    expect(res.headers.warning).toBeUndefined();
    const updated = await ctx()
      .http()
      .patch(`/v2/organizations/${org.slug}/pipelines/${res.body.slug}`)
      .set(auth(token))
      .send({ configuration: 'steps:\n  - command: a\n    image: node:20\n    if_changed: src/**\n' });
    expect(updated.status).toBe(200);
    expect(updated.headers.warning).toBe(
      [
        '299 windsock "step 1: \\"image\\" is accepted but not acted on: the image is not passed to the agent (BUILDKITE_IMAGE)"',
        '299 windsock "step 1: \\"if_changed\\" is accepted but not acted on: the agent applies it at upload; the server does not"',
      ].join(', '),
    );
  });

  it('runs each combination as its own job, an adjustment’s soft_fail applying to its combination only', async () => {
    const { org, token, res } = await pipeline(
      'steps:\n  - command: "exit {{matrix}}"\n    matrix:\n      setup: [1, 2]\n      adjustments:\n        - with: 2\n          soft_fail: true\n',
    );
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${res.body.slug}/builds`;
    const build = await ctx().http().post(url).set(auth(token)).send({ commit: 'HEAD', branch: 'main' });
    const agent = await givenAgent(ctx(), reg, 'runner');
    for (let i = 0; i < 2; i++) {
      const job = await takeNextJob(ctx(), agent.token);
      const exitStatus = Number(/exit (\d)/.exec(job.command as string)![1]);
      await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: exitStatus }).expect(200);
    }
    const read = (await ctx().http().get(`${url}/${build.body.number}`).set(auth(token)).expect(200)).body as BuildJson;
    expect(read.jobs.map((j) => [j.command, j.state, j.soft_failed])).toEqual([
      ['exit 1', 'failed', false],
      ['exit 2', 'failed', true],
    ]);
    expect(read.state).toBe('failed');
  });

  it('expands a matrix uploaded through the agent API, with plugins handed to the agent', async () => {
    const { org, token, res } = await pipeline('steps:\n  - command: buildkite-agent pipeline upload\n');
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${res.body.slug}/builds`;
    const build = await ctx().http().post(url).set(auth(token)).send({ commit: 'HEAD', branch: 'main' });
    const agent = await givenAgent(ctx(), reg, 'uploader');
    const offered = await takeNextJob(ctx(), agent.token);

    const upload = await ctx()
      .http()
      .post(`/v3/jobs/${offered.id}/pipelines`)
      .set(agentAuth(agent.token))
      .send({
        pipeline: {
          steps: [
            {
              label: 'node {{matrix}}',
              command: 'npm test',
              plugins: [{ 'docker#v5.0.0': { image: 'node:{{matrix}}' } }],
              notify: [{ slack: '#ci' }],
              priority: 7,
              matrix: ['18', '20', '22'],
            },
          ],
        },
      });
    expect(upload.status).toBe(201);
    expect(upload.body.jobs).toHaveLength(3);
    // A step's notify is kept on its jobs' steps: nothing to warn about.
    expect(upload.headers.warning).toBeUndefined();

    const read = (await ctx().http().get(`${url}/${build.body.number}`).set(auth(token)).expect(200)).body as { jobs: JobJson[] };
    expect(read.jobs.slice(1).map((j) => [j.name, j.matrix])).toEqual([
      ['node 18', { '': '18' }],
      ['node 20', { '': '20' }],
      ['node 22', { '': '22' }],
    ]);
    const env = (await ctx().http().get(`${url}/${build.body.number}/jobs/${read.jobs[2]!.id}/env`).set(auth(token)).expect(200)).body.env;
    expect(JSON.parse(env.BUILDKITE_PLUGINS)).toEqual([{ 'docker#v5.0.0': { image: 'node:20' } }]);
    const rows = await ctx()
      .services.db('jobs')
      .whereIn(
        'id',
        read.jobs.map((j) => j.id),
      )
      .select('id', 'priority');
    expect(rows.map((r: { priority: number | string }) => Number(r.priority)).sort()).toEqual([0, 7, 7, 7]);

    // The same parser refuses the same things through the upload, on the field `pipeline`.
    const refused = await ctx()
      .http()
      .post(`/v3/jobs/${offered.id}/pipelines`)
      .set(agentAuth(agent.token))
      .send({ pipeline: 'steps:\n  - command: x\n    matrix: {setup: {a: [1]}}\n    label: "{{matrix.b}}"\n' });
    expect(refused.status).toBe(422);
    expect(refused.body.errors).toEqual([
      { field: 'pipeline', code: 'step 1 (line 4): "label" uses {{matrix.b}}, but the matrix has no such dimension (it has {{matrix.a}})' },
    ]);
  });
});
