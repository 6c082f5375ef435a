/**
 * The reference agent running steps that call `buildkite-agent annotate`, `annotation remove`
 * and `meta-data` (the shim on each job's PATH, as the real agent puts itself there): a first
 * step annotates (argument, stdin, --append, job scope, a removed one) and sets meta-data
 * (argument and stdin), a later step reads it back (get, --default, exists, keys); then the REST
 * API shows the annotations and `meta_data`, and the builds list finds the build by it.
 */
import { ok } from '../../clients/typescript/src';
import { describeEachDatabase } from '../support/context';
import { givenAgentPipeline, onLoopback, withReferenceAgents } from '../support/agents';
import { finishedBuild, givenWatchedBuild, jobLogText } from '../support/sdk';

describeEachDatabase('the reference agent with annotations and meta-data', (ctx) => {
  const { endpoint } = onLoopback(ctx);

  it('annotates the build and sets meta-data in one step, reads it in a later one', async () => {
    const { org, token, reg, slug } = await givenAgentPipeline(
      ctx(),
      [
        'steps:',
        '  - label: write',
        '    command: |',
        '      set -e',
        '      buildkite-agent annotate "## Coverage" --style info --context coverage --priority 7',
        "      printf '\\n\\n**93%%**' | buildkite-agent annotate --context coverage --append",
        '      printf "<script>alert(1)</script>Tests *passed*" | buildkite-agent annotate --style success',
        '      buildkite-agent annotate "on the job" --context job.note --scope job',
        '      buildkite-agent annotate "temporary" --context temp',
        '      buildkite-agent annotation remove --context temp',
        '      buildkite-agent meta-data set release-version 1.2.3',
        "      printf 'multi\\nline' | buildkite-agent meta-data set notes",
        '      buildkite-agent meta-data set-batch channel=stable "formula=a=b"',
        '      if buildkite-agent meta-data set "   " x; then exit 9; fi',
        '  - wait',
        '  - label: read',
        '    command: |',
        '      set -e',
        '      echo "version=$(buildkite-agent meta-data get release-version)"',
        '      echo "notes=$(buildkite-agent meta-data get notes)"',
        '      echo "fallback=$(buildkite-agent meta-data get missing --default none)"',
        '      buildkite-agent meta-data exists release-version && echo "exists=yes"',
        '      set +e',
        '      buildkite-agent meta-data exists missing; echo "missing exit=$?"',
        '      buildkite-agent meta-data get missing; echo "get missing exit=$?"',
        '      set -e',
        '      buildkite-agent meta-data keys | tr "\\n" ","; echo',
        '      BUILDKITE_METADATA_BUILD_ID=$BUILDKITE_BUILD_ID buildkite-agent meta-data get release-version; echo',
      ].join('\n'),
    );
    const { api, ref } = await givenWatchedBuild(ctx(), endpoint(), org.slug, slug, token);
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: ['queue=default'], name: 'annotator', spawn: 1, pollIntervalMs: 20 }, async () => {
      const b = await finishedBuild(api, ref);
      const log = (id: string) => jobLogText(api, ref, id);
      const [write, , readJob] = b.jobs;
      expect([b.state, write!.state, readJob!.state]).toEqual(['passed', 'passed', 'passed']);
      expect(await log(write!.id)).toContain('buildkite-agent: removed the annotation temp');
      expect(await log(write!.id)).toContain('the key is blank');
      const readLog = await log(readJob!.id);
      expect(readLog).toContain('version=1.2.3\n');
      expect(readLog).toContain('notes=multi\nline\n');
      expect(readLog).toContain('fallback=none\n');
      expect(readLog).toContain('exists=yes\n');
      expect(readLog).toContain('missing exit=100\n');
      expect(readLog).toContain('get missing exit=1\n');
      expect(readLog).toContain('channel,formula,notes,release-version,\n');
      expect(readLog).toMatch(/\n1\.2\.3\n/);

      expect(b.meta_data).toEqual({ 'release-version': '1.2.3', notes: 'multi\nline', channel: 'stable', formula: 'a=b' });
      const found = await ok(api.GET('/v2/organizations/{org_slug}/builds', { params: { path: ref, query: { meta_data: { 'release-version': '1.2.3' } } } }));
      expect(found.map((x) => x.id)).toEqual([b.id]);

      const annotations = await ok(
        api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/annotations', { params: { path: ref, query: { scope: 'all' } } }),
      );
      expect(annotations.map((a) => [a.context, a.style, a.scope, a.priority, a.body_html])).toEqual([
        // The append sent the agent's default priority (3), as the real agent always sends one.
        ['coverage', 'info', 'build', 3, '<h2>Coverage</h2>\n<p><strong>93%</strong></p>\n'],
        // A line that opens with an HTML block is raw HTML (CommonMark): the script goes, the text stays.
        ['default', 'success', 'build', 3, 'Tests *passed*'],
        ['job.note', 'default', 'job', 3, '<p>on the job</p>\n'],
      ]);
      const jobAnnotations = '/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/annotations';
      expect(await ok(api.GET(jobAnnotations, { params: { path: { ...ref, job_id: write!.id } } }))).toEqual([annotations[2]]);
    });
  });
});
