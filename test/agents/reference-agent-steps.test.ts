import { ok } from '../../clients/typescript/src';
import { describeEachDatabase } from '../support/context';
import { givenRegistrationToken, onLoopback, withReferenceAgents } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { buildRef, finishedBuild, givenWatchedBuild, jobLogText, readBuild } from '../support/sdk';

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
    const { api, ref } = await givenWatchedBuild(ctx(), endpoint(), org.slug, slug, token);
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: ['queue=default'], name: 'steps', spawn: 2, pollIntervalMs: 20 }, async () => {
      let b = await finishedBuild(api, ref);
      expect(b.jobs.map((j) => [j.type, j.name ?? null, j.state])).toEqual([
        ['script', 'upload', 'passed'],
        ['script', 'uploaded', 'passed'],
        ['script', 'from stdin', 'passed'],
        ['waiter', null, 'passed'],
        ['trigger', 'Deploy', 'passed'],
      ]);
      expect(b.state).toBe('passed');
      const log = (job_id: string) =>
        // The JSON form (the operation also answers text for a range, 206).
        ok(
          api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/log', { params: { path: { ...ref, job_id } } }),
        ).then((l) => l as { content: string; header_times: number[] });
      const upload = await log(b.jobs[0]!.id);
      expect(upload.content).toContain('buildkite-agent: uploaded .buildkite/pipeline.yml (1 jobs)');
      expect(upload.content).toContain('buildkite-agent: uploaded (stdin) (1 jobs)');
      const uploaded = await log(b.jobs[1]!.id);
      expect(uploaded.content).toBe('--- uploaded step\nran\n');
      expect(uploaded.header_times).toHaveLength(1);
      expect((await log(b.jobs[2]!.id)).content).toBe('stdin ran\n');

      const triggered = b.jobs[4]!.triggered_build!;
      const childRef = buildRef(org.slug, deploy, triggered.number);
      const child = await readBuild(api, childRef);
      expect(child).toMatchObject({ id: triggered.id, state: 'passed', source: 'trigger_job' });
      expect(await jobLogText(api, childRef, child.jobs[0]!.id)).toBe('deployed to prod\n');

      // The same through a build whose triggered build fails: the trigger job fails with it.
      const { slug: failing } = await givenPipeline(
        ctx(),
        org.slug,
        token,
        `steps:\n  - trigger: ${deploy}\n    build:\n      env: { TARGET: staging, EXIT: "3" }\n`,
      );
      const second = await givenBuild(ctx(), org.slug, failing, token);
      b = await finishedBuild(api, buildRef(org.slug, failing, second.number));
      expect(b).toMatchObject({ state: 'failed', jobs: [{ type: 'trigger', state: 'failed' }] });
      const failed = await readBuild(api, buildRef(org.slug, deploy, b.jobs[0]!.triggered_build!.number));
      expect(failed).toMatchObject({ state: 'failed', jobs: [{ state: 'failed', exit_status: 3 }] });
    });
  });
});
