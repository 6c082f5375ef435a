/** The smoke scenario with @hey-api/openapi-ts's SDK (fetch client), generated from the served 3.1 document. */
import { client } from './client/client.gen';
import { createBuild, createPipeline, getBuild, listPipelineBuilds, listPipelines } from './client/sdk.gen';
import { fieldsOf, MISSING_BUILD, NEW_BUILD, NEW_PIPELINE, nextPage, run, settings, type Report } from './common';

run(async (): Promise<Report> => {
  const s = settings();
  client.setConfig({ baseUrl: s.url, auth: () => s.token });
  const org = { org_slug: s.org };
  const list = await listPipelines({ path: org });
  if (!list.data) throw new Error(`listPipelines: ${list.response?.status}`);
  const created = await createPipeline({ path: org, body: { name: s.name, ...NEW_PIPELINE } });
  if (!created.data) throw new Error(`createPipeline: ${created.response?.status}`);
  const pipeline = { ...org, pipeline_slug: created.data.slug };
  const build = await createBuild({ path: pipeline, body: NEW_BUILD });
  if (!build.data) throw new Error(`createBuild: ${build.response?.status}`);
  const got = await getBuild({ path: { ...pipeline, build_number: build.data.number } });
  if (!got.data) throw new Error(`getBuild: ${got.response?.status}`);
  const pages: number[][] = [];
  for (let page: number | undefined = 1; page !== undefined;) {
    const res = await listPipelineBuilds({ path: { ...org, pipeline_slug: s.pipeline }, query: { page, per_page: 2 } });
    if (!res.data) throw new Error(`listPipelineBuilds: ${res.response?.status}`);
    pages.push(res.data.map((b) => b.number));
    page = nextPage(res.response?.headers.get('link'));
  }
  const invalid = await createBuild({ path: pipeline, body: { ...NEW_BUILD, branch: '' } });
  if (!invalid.error) throw new Error('createBuild with an empty branch succeeded');
  const missing = await getBuild({ path: { ...pipeline, build_number: MISSING_BUILD } });
  if (!missing.error) throw new Error('getBuild of a missing build succeeded');
  return {
    listed: list.data.map((p) => p.slug),
    created: created.data.slug,
    build: { number: build.data.number, state: build.data.state },
    got: got.data.number,
    pages,
    invalid: { status: invalid.response?.status ?? 0, message: invalid.error.message, fields: fieldsOf(invalid.error) },
    missing: { status: missing.response?.status ?? 0, message: missing.error.message },
  };
});
