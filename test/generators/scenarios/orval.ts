/** The smoke scenario with orval's fetch client, generated from the served 3.0 rendering (base URL from its `servers`). */
import { createBuild, createPipeline, getBuild, listPipelineBuilds, listPipelines } from './client/client';
import { MISSING_BUILD, NEW_BUILD, NEW_PIPELINE, nextPage, run, settings, type Report } from './common';

run(async (): Promise<Report> => {
  const s = settings();
  const options = { headers: { Authorization: `Bearer ${s.token}` } };
  const list = await listPipelines(s.org, undefined, options);
  if (list.status !== 200) throw new Error(`listPipelines: ${list.status}`);
  const created = await createPipeline(s.org, { name: s.name, ...NEW_PIPELINE }, options);
  if (created.status !== 201) throw new Error(`createPipeline: ${created.status}`);
  const build = await createBuild(s.org, created.data.slug, NEW_BUILD, options);
  if (build.status !== 201) throw new Error(`createBuild: ${build.status}`);
  const got = await getBuild(s.org, created.data.slug, build.data.number, undefined, options);
  if (got.status !== 200) throw new Error(`getBuild: ${got.status}`);
  const pages: number[][] = [];
  for (let page: number | undefined = 1; page !== undefined;) {
    const res = await listPipelineBuilds(s.org, s.pipeline, { page, per_page: 2 }, options);
    if (res.status !== 200) throw new Error(`listPipelineBuilds: ${res.status}`);
    pages.push(res.data.map((b) => b.number));
    page = nextPage(res.headers.get('link'));
  }
  const invalid = await createBuild(s.org, created.data.slug, { ...NEW_BUILD, branch: '' }, options);
  if (invalid.status !== 422) throw new Error(`createBuild with an empty branch: ${invalid.status}`);
  const missing = await getBuild(s.org, created.data.slug, MISSING_BUILD, undefined, options);
  if (missing.status !== 404) throw new Error(`getBuild of a missing build: ${missing.status}`);
  return {
    listed: list.data.map((p) => p.slug),
    created: created.data.slug,
    build: { number: build.data.number, state: build.data.state },
    got: got.data.number,
    pages,
    invalid: { status: invalid.status, message: invalid.data.message, fields: (invalid.data.errors ?? []).map((e) => e.field) },
    missing: { status: missing.status, message: missing.data.message },
  };
});
