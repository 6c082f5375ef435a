/**
 * Issue 30 §1: the methods and spellings real clients send. The docs update clusters, queues,
 * cluster agent tokens and pipeline schedules with PUT; the official Go client sends PATCH
 * (go-buildkite clusters.go, cluster_queues.go, cluster_tokens.go, pipeline_schedules.go). Both
 * are the same update. The rate limit status answers at `rate_limit` (the docs' and the Go
 * client's spelling) as at `rate-limit`.
 */
import { auth, describeEachDatabase } from '../support/context';
import { givenPipeline } from '../support/given';
import { specDoc } from '../reliability/spec-operations';

describe('the spec', () => {
  it('documents each PATCH twin with its own operationId and the same body and statuses as its PUT', () => {
    const paths = specDoc().paths as Record<string, Record<string, { operationId: string; requestBody: unknown; responses: Record<string, unknown> }>>;
    const twins = [
      ['/v2/organizations/{org_slug}/clusters/{cluster_id}', 'updateCluster', 'patchCluster'],
      ['/v2/organizations/{org_slug}/clusters/{cluster_id}/queues/{queue_id}', 'updateClusterQueue', 'patchClusterQueue'],
      ['/v2/organizations/{org_slug}/clusters/{cluster_id}/tokens/{token_id}', 'updateClusterAgentToken', 'patchClusterAgentToken'],
      ['/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/schedules/{schedule_id}', 'updatePipelineSchedule', 'patchPipelineSchedule'],
    ] as const;
    for (const [path, put, patch] of twins) {
      const item = paths[path]!;
      expect([item.put!.operationId, item.patch!.operationId]).toEqual([put, patch]);
      expect(item.patch!.requestBody).toEqual(item.put!.requestBody);
      expect(Object.keys(item.patch!.responses).sort()).toEqual(Object.keys(item.put!.responses).sort());
    }
    expect(paths['/v2/organizations/{org_slug}/rate_limit']!.get!.operationId).toBe('getOrganizationRateLimitStatus');
  });
});

describeEachDatabase('methods and spellings real clients send', (ctx) => {
  it('updates a cluster, its queue and its agent token with PATCH as with PUT', async () => {
    const { org, token } = await ctx().givenAdmin();
    const clusters = `/v2/organizations/${org.slug}/clusters`;
    const cluster = (await ctx().http().post(clusters).set(auth(token)).send({ name: 'Linux' }).expect(201)).body as { id: string };
    const url = `${clusters}/${cluster.id}`;
    const patched = await ctx().http().patch(url).set(auth(token)).send({ description: 'Patched', color: '#000000' });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: cluster.id, description: 'Patched', color: '#000000', name: 'Linux' });
    expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toMatchObject({ description: 'Patched' });
    const put = await ctx().http().put(url).set(auth(token)).send({ description: 'Put' });
    expect(put.body).toMatchObject({ description: 'Put', color: '#000000' });
    // The same rules: a bad field is the same 422 on both methods.
    const badPatch = await ctx().http().patch(url).set(auth(token)).send({ name: '' });
    const badPut = await ctx().http().put(url).set(auth(token)).send({ name: '' });
    expect(badPatch.status).toBe(422);
    expect(badPatch.body).toEqual(badPut.body);

    const queue = (await ctx().http().post(`${url}/queues`).set(auth(token)).send({ key: 'linux' }).expect(201)).body as { id: string };
    const q = await ctx().http().patch(`${url}/queues/${queue.id}`).set(auth(token)).send({ description: 'Linux boxes' });
    expect(q.status).toBe(200);
    expect(q.body).toMatchObject({ id: queue.id, key: 'linux', description: 'Linux boxes' });

    const agentToken = (await ctx().http().post(`${url}/tokens`).set(auth(token)).send({ description: 'Agents' }).expect(201)).body as { id: string };
    const tk = await ctx().http().patch(`${url}/tokens/${agentToken.id}`).set(auth(token)).send({ description: 'Linux agents' });
    expect(tk.status).toBe(200);
    expect(tk.body).toMatchObject({ id: agentToken.id, description: 'Linux agents' });
    expect(tk.body.token).toBeUndefined();

    // An unknown id is the same 404 on PATCH.
    const missing = await ctx().http().patch(`${clusters}/00000000-0000-4000-8000-000000000000`).set(auth(token)).send({ description: 'x' });
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('No cluster found');
  });

  it('updates a pipeline schedule with PATCH as with PUT', async () => {
    const { org, token } = await ctx().givenAdmin();
    const p = await givenPipeline(ctx(), org, token);
    const schedules = `/v2/organizations/${org.slug}/pipelines/${p.slug}/schedules`;
    const s = (await ctx().http().post(schedules).set(auth(token)).send({ cronline: '@daily', label: 'Nightly' }).expect(201)).body as { id: string };
    const patched = await ctx().http().patch(`${schedules}/${s.id}`).set(auth(token)).send({ label: 'Every night', enabled: false });
    expect(patched.status).toBe(200);
    expect(patched.body).toMatchObject({ id: s.id, label: 'Every night', enabled: false, cronline: '@daily' });
    const bad = await ctx().http().patch(`${schedules}/${s.id}`).set(auth(token)).send({ cronline: 'not a cronline' });
    expect(bad.status).toBe(422);
  });

  it('answers the rate limit status at rate_limit as at rate-limit', async () => {
    const { org, token } = await ctx().givenAdmin();
    const docs = await ctx().http().get(`/v2/organizations/${org.slug}/rate_limit`).set(auth(token));
    expect(docs.status).toBe(200);
    const ours = await ctx().http().get(`/v2/organizations/${org.slug}/rate-limit`).set(auth(token));
    expect(Object.keys(docs.body.scopes.rest).sort()).toEqual(Object.keys(ours.body.scopes.rest).sort());
    expect(docs.body.scopes.rest.limit).toBe(ours.body.scopes.rest.limit);
    expect((await ctx().http().get(`/v2/organizations/no-such-org/rate_limit`).set(auth(token))).status).toBe(404);
  });
});
