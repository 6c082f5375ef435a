// What both consumers do with the client: create a pipeline and a build, read them back, page
// through the builds by `Link`, and read a 404 as a typed error.
import type { createClient, paginate as paginateFn, WindsockApiError as ApiError } from 'windsock/client';

type Client = ReturnType<typeof createClient>;

export async function scenario(client: Client, paginate: typeof paginateFn, WindsockApiError: typeof ApiError, name: string) {
  const org_slug = 'default';
  const { data: pipeline } = await client.POST('/v2/organizations/{org_slug}/pipelines', {
    params: { path: { org_slug } },
    body: { name, repository: 'git@github.com:acme/consumer.git', configuration: 'steps:\n  - command: make test\n' },
  });
  const pipeline_slug = pipeline!.slug;
  for (const branch of ['main', 'main', 'feature']) {
    await client.POST('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds', {
      params: { path: { org_slug, pipeline_slug } },
      body: { commit: 'HEAD', branch, message: `on ${branch}` },
    });
  }
  const { data: build } = await client.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}', {
    params: { path: { org_slug, pipeline_slug, build_number: 3 } },
  });
  const numbers: number[] = [];
  for await (const b of paginate(client, '/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds', {
    params: { path: { org_slug, pipeline_slug }, query: { per_page: 1 } },
  })) {
    numbers.push(b.number);
  }
  let notFound: { status: number; message: string } | undefined;
  try {
    await client.GET('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}', { params: { path: { org_slug, pipeline_slug: 'no-such-pipeline' } } });
  } catch (err) {
    if (!(err instanceof WindsockApiError)) throw err;
    notFound = { status: err.status, message: err.message };
  }
  return { pipeline: pipeline_slug, build: build!, numbers, notFound };
}
