/**
 * Artifacts end to end with the reference agent: a step writes files and names them in
 * `artifact_paths` (uploaded after its command, though it exits non-zero), a later step of the
 * same build downloads one with `buildkite-agent artifact download` and prints its hashes with
 * `artifact shasum`, and the REST API lists them and serves their bytes. On the disk store and on
 * an S3-compatible one (s3rver on loopback), where the agent uploads to and downloads from the
 * bucket through the pre-signed URLs it is given.
 */
import crypto from 'node:crypto';
import { ok } from '../../clients/typescript/src';
import { describeEachDatabase, PUBLIC_URL } from '../support/context';
import { givenRegistrationToken, onLoopback, withReferenceAgents } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { buildRef, finishedBuild, jobLogText, restClient } from '../support/sdk';
import { testS3 } from '../support/s3';

const s3 = testS3();
beforeAll(() => s3.start());
afterAll(() => s3.stop());

for (const store of ['disk', 's3'] as const) {
  describeEachDatabase(`artifacts with the reference agent (${store} store)`, store === 's3' ? { artifacts: { s3: s3.settings } } : {}, (ctx) => {
    const { endpoint } = onLoopback(ctx);

    it("uploads a step's artifact_paths, downloads and hashes them in a later step, and lists them over REST", async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const content = 'hello artifact\n';
      const sha1 = crypto.createHash('sha1').update(content).digest('hex');
      const sha256 = crypto.createHash('sha256').update(content).digest('hex');
      const { slug } = await givenPipeline(
        ctx(),
        org.slug,
        token,
        [
          'steps:',
          '  - label: make',
          '    key: make',
          "    command: mkdir -p dist/deep && printf 'hello artifact\\n' > dist/app.txt && echo deep > dist/deep/x.bin && echo log > top.log && echo no > skip.txt && exit 3",
          '    soft_fail: [{ exit_status: 3 }]',
          '    artifact_paths:',
          '      - "dist/**/*"',
          '      - "*.log"',
          '  - wait',
          '  - label: use',
          '    command: |',
          '      buildkite-agent artifact download "dist/app.txt" .',
          '      cat dist/app.txt',
          '      echo "sha1=$(buildkite-agent artifact shasum dist/app.txt --step make)"',
          '      echo "sha256=$(buildkite-agent artifact shasum --sha256 dist/app.txt)"',
          '      mkdir out && buildkite-agent artifact download "dist/*" out --step make && ls -R out | tr "\\n" " "',
          '      buildkite-agent artifact download "nothing*" . || echo "download of nothing failed"',
        ].join('\n'),
      );
      const build = await givenBuild(ctx(), org.slug, slug, token);
      const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
      const api = restClient(endpoint(), token);
      const ref = buildRef(org.slug, slug, build.number);
      await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: ['queue=default'], name: 'artifacts', spawn: 1, pollIntervalMs: 20 }, async () => {
        const b = await finishedBuild(api, ref, 1500);
        expect(b.jobs.map((j) => [j.name ?? null, j.state])).toEqual([
          ['make', 'failed'],
          [null, 'passed'],
          ['use', 'passed'],
        ]);
        const makeLog = await jobLogText(api, ref, b.jobs[0]!.id);
        expect(makeLog).toContain('buildkite-agent: uploaded dist/app.txt (15 bytes)');
        const useLog = await jobLogText(api, ref, b.jobs[2]!.id);
        expect(useLog).toContain('hello artifact\n');
        expect(useLog).toContain(`sha1=${sha1}\n`);
        expect(useLog).toContain(`sha256=${sha256}\n`);
        // dist/* crosses directories; the destination's `out` does not repeat dist.
        expect(useLog).toMatch(/out:\s+dist\s+out\/dist:\s+app\.txt\s+deep\s+out\/dist\/deep:\s+x\.bin/);
        expect(useLog).toContain('no artifacts found for downloading');
        expect(useLog).toContain('download of nothing failed');

        const listed = await ok(api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/artifacts', { params: { path: ref } }));
        expect(listed.map((a) => a.path).sort()).toEqual(['dist/app.txt', 'dist/deep/x.bin', 'top.log']);
        const app = listed.find((a) => a.path === 'dist/app.txt')!;
        expect(app).toMatchObject({
          job_id: b.jobs[0]!.id,
          state: 'finished',
          dirname: 'dist',
          filename: 'app.txt',
          mime_type: 'text/plain',
          file_size: 15,
          sha1sum: sha1,
          glob_path: null,
          original_path: null,
          url: `${PUBLIC_URL}${url}/jobs/${b.jobs[0]!.id}/artifacts/${app.id}`,
        });
        const jobArtifacts = '/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/artifacts';
        expect(await ok(api.GET(jobArtifacts, { params: { path: { ...ref, job_id: b.jobs[2]!.id } } }))).toEqual([]);
        const download = await api.GET(
          '/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/artifacts/{artifact_id}/download',
          {
            params: { path: { ...ref, job_id: b.jobs[0]!.id, artifact_id: app.id } },
            redirect: 'manual',
          },
        );
        expect(download.response.status).toBe(302);
        const location = download.response.headers.get('location')!;
        if (store === 's3') {
          // The bucket's pre-signed URL; the content is there at its address, the agent's upload key gone.
          expect(new URL(location).origin).toBe(s3.settings.endpoint);
          expect(await s3.exists(`${s3.settings.prefix}objects/${sha256}`)).toBe(true);
          expect(await s3.keys(`uploads/`)).toEqual([]);
        }
        // Windsock's signed URL names the service's public URL: its path and query are asked of this server.
        const bytes = await fetch(store === 's3' ? location : endpoint() + location.slice(PUBLIC_URL.length));
        expect([bytes.status, await bytes.text()]).toEqual([200, content]);
      });
    });
  });
}
