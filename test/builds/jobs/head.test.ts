/**
 * HEAD (issue 30, item 1): Express routes HEAD to a GET route, and the shared request handling
 * (http/openapi-validator.ts) validates it as that GET, so every GET operation of the spec
 * answers HEAD with GET's status and headers and no body. Checked for every GET operation the
 * tenant's fixtures reach, with the same token and path as the GET.
 */
import { describeEachDatabase } from '../../support/context';
import { fillPath, givenTenant, specOperations, suiteAuth, agentAuth, type Tenant, TENANT_SETUP_MS } from '../../reliability/spec-operations';
import { auth } from '../../support/context';

const gets = specOperations().filter((op) => op.method === 'get');

describeEachDatabase('HEAD answers as GET does, without a body', (ctx) => {
  let t: Tenant;

  beforeAll(async () => {
    t = await givenTenant(ctx(), 'head');
  }, TENANT_SETUP_MS);

  it('covers the spec: every GET operation is in the matrix', () => {
    expect(gets.length).toBeGreaterThan(50);
    expect(gets.map((op) => op.operationId)).toEqual(
      expect.arrayContaining(['getBuild', 'getJobLog', 'listJobs', 'getOrganizationJob', 'getOrganizationJobLog']),
    );
  });

  it.each(gets.map((op) => [op.operationId, op] as const))('%s', async (_id, op) => {
    const path = fillPath(op, t.params);
    const credential =
      op.auth === 'bearer' ? auth(t.token) : op.auth === 'suiteToken' ? suiteAuth(t.suiteToken) : op.auth === 'agentToken' ? agentAuth(t.agent.token) : {};
    const get = await ctx().http().get(path).set(credential);
    expect(get.status).toBeLessThan(500);
    const head = await ctx().http().head(path).set(credential);
    expect({ status: head.status, type: head.headers['content-type'], body: head.text }).toEqual({
      status: get.status,
      type: get.headers['content-type'],
      body: undefined,
    });
  });

  it('is still a 404 where no GET is documented (a path with only PUT, a path outside the spec)', async () => {
    const put = `/v2/organizations/${t.org.slug}/jobs/${t.params.job_id}/retry`;
    expect((await ctx().http().head(put).set(auth(t.token))).status).toBe(404);
    expect((await ctx().http().head(`/v2/organizations/${t.org.slug}/nothing-here`).set(auth(t.token))).status).toBe(404);
  });
});
