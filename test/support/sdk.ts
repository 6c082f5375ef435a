/**
 * The REST API through the project's own TypeScript SDK (clients/typescript), for end-to-end
 * tests against a server listening on loopback: they watch what the reference agent did as any
 * client of the service would, over the network, and a failed call throws its `WindsockApiError`.
 */
import { createWindsockClient, ok, type WindsockClient } from '../../clients/typescript/src';
import { until } from './agents';
import type { TestContext } from './context';
import { givenBuild } from './given';
import type { BuildJson } from './types';

/** A client of the server at `endpoint`, as this API access token. */
export const restClient = (endpoint: string, token: string): WindsockClient => createWindsockClient({ baseUrl: endpoint, token });

/** A build as the REST paths name it. */
export interface BuildRef {
  org_slug: string;
  pipeline_slug: string;
  build_number: number;
}

export const buildRef = (org_slug: string, pipeline_slug: string, build_number: number): BuildRef => ({ org_slug, pipeline_slug, build_number });

/** A build of the pipeline, and a client of the server at `endpoint` (as `token`) to watch it through, with the build's path. */
export async function givenWatchedBuild(ctx: TestContext, endpoint: string, orgSlug: string, pipelineSlug: string, token: string) {
  const build = await givenBuild(ctx, orgSlug, pipelineSlug, token);
  return { build, api: restClient(endpoint, token), ref: buildRef(orgSlug, pipelineSlug, build.number) };
}

/** The build, read without `exclude_jobs`: its jobs are there. */
export async function readBuild(client: WindsockClient, build: BuildRef): Promise<BuildJson> {
  return (await ok(client.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}', { params: { path: build } }))) as BuildJson;
}

/** A job's log as text (`log.txt`; an empty log has no body, so `data` is undefined: ''). */
export async function jobLogText(client: WindsockClient, build: BuildRef, job_id: string): Promise<string> {
  const text = await ok(
    client.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/log.txt', {
      params: { path: { ...build, job_id } },
      parseAs: 'text',
    }),
  );
  return text ?? '';
}

/** The build once it has finished (read every 20 ms, at most `tries` times). */
export function finishedBuild(client: WindsockClient, build: BuildRef, tries = 1000): Promise<BuildJson> {
  return until(
    () => readBuild(client, build),
    (b) => b.finished_at !== null,
    'the build finishing',
    tries,
  );
}

/** The organization's agents. */
export function listAgents(client: WindsockClient, org_slug: string) {
  return ok(client.GET('/v2/organizations/{org_slug}/agents', { params: { path: { org_slug } } }));
}
