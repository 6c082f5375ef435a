/**
 * Issue 15's end-to-end case, all three together through the reference agent and its
 * `buildkite-agent` shim: a build's first step uploads an artifact, writes an annotation and sets
 * meta-data; a later step downloads the artifact and reads the meta-data; then the REST API shows
 * the artifact (and serves its bytes), the annotation and the build's meta-data.
 */
import { auth, describeEachDatabase } from '../support/context';
import { finishedBuild, givenRegistrationToken, onLoopback, withReferenceAgents } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import type { BuildJson } from '../support/types';

describeEachDatabase('artifacts, annotations and meta-data in one pipeline', (ctx) => {
  const { endpoint } = onLoopback(ctx);

  it('passes a file and a value from one step to the next, and the REST API shows all three', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(
      ctx(),
      org.slug,
      token,
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
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
    const read = async (path: string) => (await ctx().http().get(path).set(auth(token)).expect(200)).body;
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'e2e', spawn: 1, pollIntervalMs: 20 }, async () => {
      const b = await finishedBuild(ctx(), url, token, 3000);
      expect(b.jobs.map((j) => [j.name ?? null, j.state])).toEqual([
        ['produce', 'passed'],
        [null, 'passed'],
        ['consume', 'passed'],
      ]);
      const log = (await ctx().http().get(`${url}/jobs/${b.jobs[2]!.id}/log.txt`).set(auth(token))).text;
      expect(log).toContain('file=v1.2.3\n');
      expect(log).toContain('meta=v1.2.3\n');
      expect(log).toContain('missing: 100\n');

      // The REST API: the build's meta-data and its list filter, the annotation, the artifact and its bytes.
      expect(b.meta_data).toEqual({ release: 'v1.2.3' });
      const found = await read(`/v2/organizations/${org.slug}/builds?meta_data[release]=v1.2.3`);
      expect(found.map((x: BuildJson) => x.id)).toEqual([b.id]);
      const annotations = await read(`${url}/annotations`);
      expect(annotations).toHaveLength(1);
      expect(annotations[0]).toMatchObject({ context: 'release', style: 'success', scope: 'build' });
      expect(annotations[0].body_html).toContain('<strong>v1.2.3</strong>');
      const artifacts = await read(`${url}/artifacts`);
      expect(artifacts.map((a: { path: string; state: string; job_id: string }) => [a.path, a.state, a.job_id])).toEqual([
        ['out/version.txt', 'finished', b.jobs[0]!.id],
      ]);
      const download = await ctx().http().get(new URL(artifacts[0].download_url).pathname).set(auth(token)).expect(302);
      const bytes = await ctx()
        .http()
        .get(new URL(download.headers.location!).pathname + new URL(download.headers.location!).search);
      expect([bytes.status, bytes.text ?? bytes.body.toString()]).toEqual([200, 'v1.2.3\n']);
    });
  });
});
