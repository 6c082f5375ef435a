/**
 * Factories for pipelines and builds through the REST API (as a client makes them), for tests
 * that need one to exist rather than tests of creating one: any answer but a 201 throws with the
 * body, so a broken factory is never mistaken for the behaviour under test.
 */
import { auth, type TestContext } from './context';
import type { BuildJson, PipelineJson } from './types';

type Slugged = string | { slug: string };
const slugOf = (x: Slugged) => (typeof x === 'string' ? x : x.slug);

let seq = 0;

/**
 * A pipeline of this organization. `fields` is its configuration (YAML) or any create fields
 * (name, repository, configuration, steps, provider_settings ...) over the defaults: a unique
 * name, `git@github.com:acme/app.git` and one `make test` step.
 */
export async function givenPipeline(ctx: TestContext, org: Slugged, token: string, fields: string | Record<string, unknown> = {}): Promise<PipelineJson> {
  seq += 1;
  const extra = typeof fields === 'string' ? { configuration: fields } : fields;
  const res = await ctx
    .http()
    .post(`/v2/organizations/${slugOf(org)}/pipelines`)
    .set(auth(token))
    .send({
      name: `Pipeline ${seq} ${Math.random().toString(36).slice(2, 8)}`,
      repository: 'git@github.com:acme/app.git',
      configuration: 'steps:\n  - command: make test\n',
      ...extra,
    });
  if (res.status !== 201) throw new Error(`pipeline: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as PipelineJson;
}

/** A build of this pipeline; `body` over the defaults (commit `abc123`, branch `main`, message `Go`). */
export async function givenBuild(ctx: TestContext, org: Slugged, pipeline: Slugged, token: string, body: Record<string, unknown> = {}): Promise<BuildJson> {
  const res = await ctx
    .http()
    .post(`/v2/organizations/${slugOf(org)}/pipelines/${slugOf(pipeline)}/builds`)
    .set(auth(token))
    .send({ commit: 'abc123', branch: 'main', message: 'Go', ...body });
  if (res.status !== 201) throw new Error(`build: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as BuildJson;
}
