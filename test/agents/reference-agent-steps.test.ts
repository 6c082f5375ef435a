import { auth, describeEachDatabase } from '../support/context';
import { finishedBuild, givenRegistrationToken, onLoopback, withReferenceAgents } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

describeEachDatabase('the reference agent with pipeline uploads and trigger steps', (ctx) => {
  const { endpoint } = onLoopback(ctx);

  it('runs `buildkite-agent pipeline upload` and the step it adds, then a sync trigger whose build it also runs', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug: deploy } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: echo "deployed to $TARGET"; exit $EXIT\n');
    const { slug } = await givenPipeline(
      ctx(),
      org.slug,
      token,
      [
        'steps:',
        '  - label: upload',
        '    command: |',
        '      mkdir -p .buildkite',
        '      printf \'steps:\\n  - label: uploaded\\n    command: echo "--- uploaded step"; echo ran\\n\' > .buildkite/pipeline.yml',
        '      buildkite-agent pipeline upload',
        "      printf 'steps:\\n  - label: from stdin\\n    command: echo stdin ran\\n' | buildkite-agent pipeline upload",
        '  - wait',
        `  - trigger: ${deploy}`,
        '    label: Deploy',
        '    build:',
        '      env: { TARGET: prod, EXIT: "0" }',
      ].join('\n'),
    );
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const read = async (path: string) => (await ctx().http().get(path).set(auth(token)).expect(200)).body;
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: ['queue=default'], name: 'steps', spawn: 2, pollIntervalMs: 20 }, async () => {
      let b = await finishedBuild(ctx(), url, token);
      expect(b.jobs.map((j) => [j.type, j.name ?? null, j.state])).toEqual([
        ['script', 'upload', 'passed'],
        ['script', 'uploaded', 'passed'],
        ['script', 'from stdin', 'passed'],
        ['waiter', null, 'passed'],
        ['trigger', 'Deploy', 'passed'],
      ]);
      expect(b.state).toBe('passed');
      const log = async (id: string) => read(`${url}/jobs/${id}/log`) as Promise<{ content: string; header_times: number[] }>;
      const upload = await log(b.jobs[0]!.id);
      expect(upload.content).toContain('buildkite-agent: uploaded .buildkite/pipeline.yml (1 jobs)');
      expect(upload.content).toContain('buildkite-agent: uploaded (stdin) (1 jobs)');
      const uploaded = await log(b.jobs[1]!.id);
      expect(uploaded.content).toBe('--- uploaded step\nran\n');
      expect(uploaded.header_times).toHaveLength(1);
      expect((await log(b.jobs[2]!.id)).content).toBe('stdin ran\n');

      const triggered = b.jobs[4]!.triggered_build!;
      const child = await read(`/v2/organizations/${org.slug}/pipelines/${deploy}/builds/${triggered.number}`);
      expect(child).toMatchObject({ id: triggered.id, state: 'passed', source: 'trigger_job' });
      const childLog = await ctx()
        .http()
        .get(`/v2/organizations/${org.slug}/pipelines/${deploy}/builds/${triggered.number}/jobs/${child.jobs[0].id}/log.txt`)
        .set(auth(token))
        .expect(200);
      expect(childLog.text).toBe('deployed to prod\n');

      // The same through a build whose triggered build fails: the trigger job fails with it.
      const { slug: failing } = await givenPipeline(
        ctx(),
        org.slug,
        token,
        `steps:\n  - trigger: ${deploy}\n    build:\n      env: { TARGET: staging, EXIT: "3" }\n`,
      );
      const second = await givenBuild(ctx(), org.slug, failing, token);
      const secondUrl = `/v2/organizations/${org.slug}/pipelines/${failing}/builds/${second.number}`;
      b = await finishedBuild(ctx(), secondUrl, token);
      expect(b).toMatchObject({ state: 'failed', jobs: [{ type: 'trigger', state: 'failed' }] });
      const failed = await read(`/v2/organizations/${org.slug}/pipelines/${deploy}/builds/${b.jobs[0]!.triggered_build!.number}`);
      expect(failed).toMatchObject({ state: 'failed', jobs: [{ state: 'failed', exit_status: 3 }] });
    });
  });
});
