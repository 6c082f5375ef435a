// A consumer of the installed package, as ESM (Node's NodeNext resolution and bundlers take the
// `import` condition of windsock/client). test/package/tarball.test.ts copies it into an empty
// project, type-checks it strictly against the installed declarations and runs it.
import { createClient, paginate, WindsockApiError, type paths } from 'windsock/client';
import { scenario } from './scenario.js';

type BuildState =
  paths['/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}']['get']['responses'][200]['content']['application/json']['state'];

const [baseUrl, token] = process.argv.slice(2);
const client = createClient({ baseUrl: baseUrl!, token: token! });
// The declarations are the spec's, not `any`: a path the API lacks does not compile (never called).
export function notInTheSpec() {
  // @ts-expect-error: no such path in the spec
  return client.GET('/v2/no-such-path');
}
const report = await scenario(client, paginate, WindsockApiError, 'Consumer ESM');
const state: BuildState = report.build.state;
console.log(JSON.stringify({ ...report, build: { number: report.build.number, state }, loadedAs: 'esm' }));
