/**
 * The end-to-end build with the reference agent, through an independent validator (issue 28):
 * Stoplight's Prism in proxy mode (test/support/prism.ts) in front of a live Windsock, once with
 * the OpenAPI 3.1 document (`/openapi.json`) and once with the 3.0.3 rendering
 * (`/openapi-3.0.json`), as the server serves them. The agent (register, ping, accept, start, log
 * chunks, pipeline upload, meta-data, annotations, artifacts, finish) and a REST client watching
 * the build both talk to the proxy; Prism checks every answer against the document with its own
 * validator, and finds none at odds with it. (test/generators/clients.test.ts sends the generated
 * clients' scenarios through the same proxies.)
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ok } from '../../clients/typescript/src';
import { givenRegistrationToken, withReferenceAgents } from '../support/agents';
import { databases } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { validatingProxy, type ValidatingProxy } from '../support/prism';
import { buildRef, finishedBuild, jobLogText, restClient } from '../support/sdk';
import { liveWindsock, type LiveWindsock } from '../sdk/support';

const DOCUMENTS = ['openapi.json', 'openapi-3.0.json'] as const;

let live: LiveWindsock;
let work: string;
const proxies = new Map<(typeof DOCUMENTS)[number], ValidatingProxy>();

beforeAll(async () => {
  work = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-prism-'));
  live = await liveWindsock(databases[0]!);
  await Promise.all(
    DOCUMENTS.map(async (name) => {
      const res = await fetch(`${live.url}/${name}`);
      if (res.status !== 200) throw new Error(`GET /${name}: ${res.status}`);
      const file = path.join(work, name);
      fs.writeFileSync(file, await res.text());
      // The agent's log chunks are gzip bytes, which Prism would forward as text: they go straight to the server.
      proxies.set(name, await validatingProxy(file, live.url, { direct: /^\/v3\/jobs\/[^/]+\/chunks$/ }));
    }),
  );
}, 240_000);

afterAll(async () => {
  await Promise.allSettled([...proxies.values()].map((p) => p.close()));
  await live?.close();
  fs.rmSync(work, { recursive: true, force: true });
});

describe.each(DOCUMENTS)('a build run by the reference agent, through Prism with /%s', (name) => {
  it('passes, and Prism finds no answer, to the agent or to the REST client, at odds with the document', async () => {
    const proxy = proxies.get(name)!;
    const ctx = live.ctx;
    const { org, token } = await ctx.givenAdmin();
    const reg = await givenRegistrationToken(ctx, org.slug, token);
    const { slug } = await givenPipeline(
      ctx,
      org.slug,
      token,
      [
        'steps:',
        '  - label: build',
        '    command: |',
        '      echo "--- building"',
        '      buildkite-agent meta-data set release 1.2.3',
        '      echo hello > out.txt && buildkite-agent artifact upload out.txt',
        "      buildkite-agent annotate 'Built **1.2.3**' --style success --context build",
        "      printf 'steps:\\n  - label: uploaded\\n    command: echo uploaded ran\\n' | buildkite-agent pipeline upload",
        '  - wait',
        '  - label: parts',
        '    command: echo "part $BUILDKITE_PARALLEL_JOB"',
        '    parallelism: 2',
        '  - label: soft',
        '    command: exit 3',
        '    soft_fail: true',
      ].join('\n'),
    );
    const build = await givenBuild(ctx, org.slug, slug, token);
    const api = restClient(proxy.url, token);
    const ref = buildRef(org.slug, slug, build.number);
    const b = await withReferenceAgents({ endpoint: proxy.url, token: reg, tags: ['queue=default'], name: `prism-${name}`, spawn: 2, pollIntervalMs: 20 }, () =>
      finishedBuild(api, ref),
    );
    expect(b.state).toBe('passed');
    expect(b.jobs.map((j) => [j.name ?? null, j.state])).toEqual([
      ['build', 'passed'],
      ['uploaded', 'passed'],
      [null, 'passed'],
      ['parts', 'passed'],
      ['parts', 'passed'],
      ['soft', 'failed'],
    ]);
    expect(await jobLogText(api, ref, b.jobs[1]!.id)).toBe('uploaded ran\n');
    // What a client reads of the finished build: its jobs' logs, artifacts, annotations, meta-data.
    const path = { ...ref, job_id: b.jobs[0]!.id };
    await ok(api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/log', { params: { path } }));
    const artifacts = await ok(api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/artifacts', { params: { path: ref } }));
    expect(artifacts.map((a) => a.path)).toEqual(['out.txt']);
    const annotations = await ok(
      api.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/annotations', { params: { path: ref } }),
    );
    expect(annotations.map((a) => a.context)).toEqual(['build']);
    await ok(api.GET('/v2/organizations/{org_slug}/agents', { params: { path: { org_slug: org.slug } } }));

    await proxy.close();
    expect(proxy.responseViolations()).toEqual([]);
    expect(proxy.requestViolations()).toEqual([]);
  }, 300_000);
});

describe('the validating proxy itself', () => {
  it('reports an answer at odds with its document (a copy of /openapi-3.0.json that requires a field Pipeline does not have)', async () => {
    const doc = JSON.parse(fs.readFileSync(path.join(work, 'openapi-3.0.json'), 'utf8')) as {
      components: { schemas: Record<string, { required?: string[] }> };
    };
    const pipeline = doc.components.schemas.Pipeline!;
    pipeline.required = [...(pipeline.required ?? []), 'not_a_field'];
    const file = path.join(work, 'altered.json');
    fs.writeFileSync(file, JSON.stringify(doc));
    const proxy = await validatingProxy(file, live.url);
    try {
      const { org, token } = await live.ctx.givenAdmin();
      await givenPipeline(live.ctx, org.slug, token);
      const res = await fetch(`${proxy.url}/v2/organizations/${org.slug}/pipelines`, { headers: { Authorization: `Bearer ${token}` } });
      expect(res.status).toBe(200);
    } finally {
      await proxy.close();
    }
    expect(proxy.responseViolations()).toEqual([expect.stringMatching(/^response\.body\.0 .*not_a_field/)]);
  }, 240_000);
});
