/** The smoke scenario with OpenAPI Generator 4.3.1's typescript-axios client, generated from the served 3.0 rendering. */
import axios from 'axios';
import { ApiError, BuildsApi, Configuration, PipelinesApi } from './client';
import { MISSING_BUILD, NEW_BUILD, NEW_PIPELINE, nextPage, run, settings, type Report } from './common';

/** A refused call's status and typed body (axios rejects on 4xx). */
async function refused(call: Promise<unknown>): Promise<{ status: number; body: ApiError }> {
  try {
    await call;
  } catch (err) {
    if (axios.isAxiosError(err) && err.response) return { status: err.response.status, body: err.response.data as ApiError };
    throw err;
  }
  throw new Error('the call succeeded');
}

run(async (): Promise<Report> => {
  const s = settings();
  const config = new Configuration({ basePath: s.url, accessToken: s.token });
  const pipelines = new PipelinesApi(config);
  const builds = new BuildsApi(config);
  const list = await pipelines.listPipelines(s.org);
  const created = await pipelines.createPipeline(s.org, { name: s.name, ...NEW_PIPELINE });
  const build = await builds.createBuild(s.org, created.data.slug, NEW_BUILD);
  const got = await builds.getBuild(s.org, created.data.slug, build.data.number);
  const pages: number[][] = [];
  for (let page: number | undefined = 1; page !== undefined;) {
    const res = await builds.listPipelineBuilds(s.org, s.pipeline, page, 2);
    pages.push(res.data.map((b) => b.number));
    page = nextPage(res.headers.link as string | undefined);
  }
  const invalid = await refused(builds.createBuild(s.org, created.data.slug, { ...NEW_BUILD, branch: '' }));
  const missing = await refused(builds.getBuild(s.org, created.data.slug, MISSING_BUILD));
  return {
    listed: list.data.map((p) => p.slug),
    created: created.data.slug,
    build: { number: build.data.number, state: build.data.state },
    got: got.data.number,
    pages,
    invalid: { status: invalid.status, message: invalid.body.message, fields: (invalid.body.errors ?? []).map((e) => e.field) },
    missing: { status: missing.status, message: missing.body.message },
  };
});
