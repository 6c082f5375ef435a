/**
 * A start loads only what its settings use: the AWS SDK with the S3 artifact store, ioredis with
 * REDIS_URL, node-postgres with a Postgres database, prom-client with metrics on, Octokit with the
 * first GitHub commit status. Each stood for 10 to 130 ms of every start and every CLI command
 * (`windsock --help` took 0.9 s, 0.58 s without them). Each module here is replaced by a factory
 * that notes it was loaded; a SQLite start with none of those settings, serving a request, loads none.
 */
import { auth, createTestContext } from '../support/context';

// The factories run when a module is required, which may be while the imports above load: they
// note it on the global object, there before anything else.
function mockLoaded(name: string) {
  const g = globalThis as { optionalModulesLoaded?: string[] };
  (g.optionalModulesLoaded ??= []).push(name);
  return {};
}
const loaded = () => (globalThis as { optionalModulesLoaded?: string[] }).optionalModulesLoaded ?? [];
jest.mock('@aws-sdk/client-s3', () => mockLoaded('@aws-sdk/client-s3'));
jest.mock('@aws-sdk/s3-presigned-post', () => mockLoaded('@aws-sdk/s3-presigned-post'));
jest.mock('ioredis', () => mockLoaded('ioredis'));
jest.mock('pg', () => mockLoaded('pg'));
jest.mock('prom-client', () => mockLoaded('prom-client'));
jest.mock('@octokit/rest', () => mockLoaded('@octokit/rest'));

it('loads no optional module on a SQLite start that does not use it', async () => {
  const ctx = await createTestContext('sqlite');
  try {
    const { token } = await ctx.givenAdmin();
    await ctx.http().get('/v2/access-token').set(auth(token)).expect(200);
    expect(loaded()).toEqual([]);
  } finally {
    await ctx.close();
  }
});
