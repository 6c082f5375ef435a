/**
 * The clusters area's answers in the shapes of the documentation's examples (test/fixtures/samples):
 * every key of each example, with a value of the same JSON type (null where the example has null,
 * or an object or string where we have one). The secret example lacks the documented `graphql_id`,
 * which we also send.
 */
import clusterSample from '../fixtures/samples/clusters__02_get-a-cluster.json';
import queueSample from '../fixtures/samples/cluster_queues__02_get-a-queue.json';
import tokenSample from '../fixtures/samples/cluster_agent_tokens__02_get-a-token.json';
import tokenCreatedSample from '../fixtures/samples/cluster_agent_tokens__03_create-a-token.json';
import maintainerSample from '../fixtures/samples/cluster_maintainers__02_get-a-cluster-maintainer.json';
import maintainerListSample from '../fixtures/samples/cluster_maintainers__01_list-cluster-maintainers.json';
import secretSample from '../fixtures/samples/cluster_secrets__02_get-a-secret.json';
import { auth, describeEachDatabase } from '../support/context';

const kind = (v: unknown) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Every key of the sample is in `ours`, with the same type unless one of the two is null. */
function expectShape(ours: Record<string, unknown>, sample: Record<string, unknown>) {
  expect(Object.keys(ours)).toEqual(expect.arrayContaining(Object.keys(sample)));
  for (const [k, v] of Object.entries(sample)) if (v !== null && ours[k] !== null) expect([k, kind(ours[k])]).toEqual([k, kind(v)]);
}

describeEachDatabase('clusters in the documented shapes', (ctx) => {
  it('clusters, queues, tokens, maintainers and secrets', async () => {
    const { org, user, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const team = await ctx().givenTeam(org, [user]);
    const base = `/v2/organizations/${org.slug}/clusters`;
    const c = (await ctx().http().post(base).set(auth(token)).send({ name: 'Open Source', emoji: ':technologist:', color: '#FFE0F1' }).expect(201)).body;
    const q = (await ctx().http().post(`${base}/${c.id}/queues`).set(auth(token)).send({ key: 'default' }).expect(201)).body;
    await ctx().http().post(`${base}/${c.id}/queues/${q.id}/pause_dispatch`).set(auth(token)).send({ note: 'why' }).expect(200);
    const cluster = (await ctx().http().put(`${base}/${c.id}`).set(auth(token)).send({ default_queue_id: q.id }).expect(200)).body;
    const queue = (await ctx().http().get(`${base}/${c.id}/queues/${q.id}`).set(auth(token)).expect(200)).body;
    const created = (
      await ctx()
        .http()
        .post(`${base}/${c.id}/tokens`)
        .set(auth(token))
        .send({ description: 'Windows agents', allowed_ip_addresses: '202.144.0.0/24', expires_at: '2099-01-01T00:00:00Z' })
        .expect(201)
    ).body;
    const got = (await ctx().http().get(`${base}/${c.id}/tokens/${created.id}`).set(auth(token)).expect(200)).body;
    const m = (await ctx().http().post(`${base}/${c.id}/maintainers`).set(auth(token)).send({ team: team.id }).expect(201)).body;
    await ctx().http().post(`${base}/${c.id}/maintainers`).set(auth(token)).send({ user: user.id }).expect(201);
    const maintainers = (await ctx().http().get(`${base}/${c.id}/maintainers`).set(auth(token)).expect(200)).body;
    const s = (
      await ctx()
        .http()
        .post(`${base}/${c.id}/secrets`)
        .set(auth(token))
        .send({ key: 'MY_SECRET', value: 'v', description: 'd', policy: '- pipeline_slug: my-pipeline\n  build_branch: main' })
        .expect(201)
    ).body;
    await ctx().http().put(`${base}/${c.id}/secrets/${s.id}`).set(auth(token)).send({ description: 'e' }).expect(200);
    const secret = (await ctx().http().get(`${base}/${c.id}/secrets/${s.id}`).set(auth(token)).expect(200)).body;

    expectShape(cluster, clusterSample);
    expectShape(cluster.created_by, clusterSample.created_by);
    expectShape(queue, queueSample);
    expectShape(queue.dispatch_paused_by, queueSample.created_by);
    expectShape(got, tokenSample);
    expect(got).not.toHaveProperty('token');
    expectShape(created, tokenCreatedSample);
    expectShape(m, maintainerSample);
    expectShape(m.actor, maintainerSample.actor);
    expectShape(maintainers[1].actor, maintainerListSample[0]!.actor);
    expectShape(secret, secretSample);
    expectShape(secret.created_by, secretSample.created_by);
    expectShape(secret.updated_by, secretSample.created_by);
    expectShape(secret.organization, secretSample.organization);
  });
});
