/**
 * Issue 15's end-to-end case, all three together through the reference agent and its
 * `buildkite-agent` shim: a build's first step uploads an artifact, writes an annotation and sets
 * meta-data; a later step downloads the artifact and reads the meta-data; then the REST API shows
 * the artifact (and serves its bytes), the annotation and the build's meta-data.
 */
import { ok } from '../../clients/typescript/src';
import { describeEachDatabase } from '../support/context';
import { givenAgentPipeline, onLoopback, withReferenceAgents } from '../support/agents';
import { finishedBuild, givenWatchedBuild, jobLogText } from '../support/sdk';

describeEachDatabase('artifacts, annotations and meta-data in one pipeline', (ctx) => {
  const { endpoint } = onLoopback(ctx);

  it('passes a file and a value from one step to the next, and the REST API shows all three', async () => {
    const { org, token, reg, slug } = await givenAgentPipeline(
      ctx(),
      [
        'steps:',
        '  - label: produce',
        '    key: produce',
        '    command: |',
        "      mkdir -p out && printf 'v1.2.3\\n' > out/version.txt",
        '      buildkite-agent annotate "Built **v1.2.3**" --style success --context release',
        '      buildkite-agent meta-data set release v1.2.3',
        '    artifact_paths: "out/*.txt"',
        '  - wait',
        '  - label: consume',
        '    command: |',
        '      buildkite-agent artifact download out/version.txt . --step produce',
        '      echo "file=$(cat out/version.txt)"',
        '      echo "meta=$(buildkite-agent meta-data get release)"',
        '      buildkite-agent meta-data exists missing || echo "missing: $?"',
      ].join('\n'),
    );
    const { api, ref } = await givenWatchedBuild(ctx(), endpoint(), org.slug, slug, token);
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'e2e', spawn: 1, pollIntervalMs: 20 }, async () => {
      const b = await finishedBuild(api, ref, 3000);
      expect(b.jobs.map((j) => [j.name ?? null, j.state])).toEqual([
        ['produce', 'passed'],
        [null, 'passed'],
        ['consume', 'passed'],
      ]);
      const log = await jobLogText(api, ref, b.jobs[2]!.id);
      expect(log).toContain('file=v1.2.3\n');
      expect(log).toContain('meta=v1.2.3\n');
      expect(log).toContain('missing: 100\n');

      // The REST API: the build's meta-data and its list filter, the annotation, the artifact and its bytes.
      expect(b.meta_data).toEqual({ release: 'v1.2.3' });
      const found = await ok(api.GET('/v2/organizations/{org_slug}/builds', { params: { path: ref, query: { meta_data: { release: 'v1.2.3' } } } }));
      expect(found.map((x) => x.id)).toEqual([b.id]);
      const annotations = await ok(
        api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/annotations', { params: { path: ref } }),
      );
      expect(annotations).toHaveLength(1);
      expect(annotations[0]).toMatchObject({ context: 'release', style: 'success', scope: 'build' });
      expect(annotations[0]!.body_html).toContain('<strong>v1.2.3</strong>');
      const artifacts = await ok(api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/artifacts', { params: { path: ref } }));
      expect(artifacts.map((a) => [a.path, a.state, a.job_id])).toEqual([['out/version.txt', 'finished', b.jobs[0]!.id]]);
      const download = await api.GET(
        '/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/artifacts/{artifact_id}/download',
        {
          params: { path: { ...ref, job_id: b.jobs[0]!.id, artifact_id: artifacts[0]!.id } },
          redirect: 'manual',
        },
      );
      expect(download.response.status).toBe(302);
      // The signed URL names the service's public URL; its path and query are asked of this server (no token: the signature is the grant).
      const signed = new URL(download.response.headers.get('location')!);
      const bytes = await fetch(`${endpoint()}${signed.pathname}${signed.search}`);
      expect([bytes.status, await bytes.text()]).toEqual([200, 'v1.2.3\n']);
    });
  });
});
