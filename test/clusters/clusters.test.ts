/**
 * Clusters, queues and cluster agent tokens through the REST API, and what they do to agents:
 * an agent registered with a cluster's token joins the cluster (refused from an address the
 * token does not allow), takes only its cluster's jobs of its queue, none while the queue is
 * paused; agents of no cluster take only jobs of pipelines in none. Jobs show their cluster and queue.
 */
import crypto from 'node:crypto';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

const base = (org: string) => `/v2/organizations/${org}/clusters`;

async function givenCluster(ctx: TestContext, org: string, token: string, name = `Cluster ${Math.random().toString(36).slice(2, 8)}`) {
  const res = await ctx.http().post(base(org)).set(auth(token)).send({ name, description: 'Agents', emoji: ':technologist:', color: '#FFE0F1' });
  expect(res.status).toBe(201);
  return res.body as { id: string; default_queue_id: string | null; url: string };
}

async function givenQueue(ctx: TestContext, org: string, token: string, clusterId: string, key: string) {
  const res = await ctx
    .http()
    .post(`${base(org)}/${clusterId}/queues`)
    .set(auth(token))
    .send({ key, description: `The ${key} queue` });
  expect(res.status).toBe(201);
  return res.body as { id: string; key: string };
}

/** Makes the queue its cluster's default: the one agents that name no queue join. */
async function givenDefaultQueue(ctx: TestContext, org: string, token: string, clusterId: string, queueId: string) {
  await ctx
    .http()
    .put(`${base(org)}/${clusterId}`)
    .set(auth(token))
    .send({ default_queue_id: queueId })
    .expect(200);
}

async function givenClusterToken(ctx: TestContext, org: string, token: string, clusterId: string, allowed?: string) {
  const res = await ctx
    .http()
    .post(`${base(org)}/${clusterId}/tokens`)
    .set(auth(token))
    .send({ description: 'Linux agents', ...(allowed ? { allowed_ip_addresses: allowed } : {}) });
  expect(res.status).toBe(201);
  return res.body as { id: string; token: string };
}

async function poll(ctx: TestContext, token: string): Promise<{ id: string; command: string } | null> {
  const res = await ctx.http().get('/v3/ping').set(agentAuth(token));
  expect(res.status).toBe(200);
  return (res.body.job as { id: string; command: string } | null) ?? null;
}

describeEachDatabase('clusters', (ctx) => {
  it('creates, lists, gets, updates and deletes clusters as documented', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const created = await ctx()
      .http()
      .post(base(org.slug))
      .set(auth(token))
      .send({ name: 'Open Source', description: 'OSS', emoji: ':technologist:', color: '#FFE0F1' });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const cluster = `${base(org.slug)}/${id}`;
    expect(created.body).toMatchObject({
      name: 'Open Source',
      description: 'OSS',
      emoji: ':technologist:',
      color: '#FFE0F1',
      default_queue_id: null,
      default_queue_url: null,
      url: expect.stringMatching(new RegExp(`^https?://[^/]+/v2/organizations/${org.slug}/clusters/${id}$`)),
      web_url: expect.stringMatching(new RegExp(`/organizations/${org.slug}/clusters/${id}$`)),
      queues_url: `${created.body.url}/queues`,
      created_by: { id: user.id, email: user.email },
    });
    expect(Buffer.from(created.body.graphql_id, 'base64').toString()).toBe(`Cluster---${id}`);
    const dup = await ctx().http().post(base(org.slug)).set(auth(token)).send({ name: 'Open Source' });
    expect(dup.status).toBe(422);
    expect(dup.body.errors).toEqual([{ field: 'name', code: 'has already been taken' }]);

    const list = await ctx().http().get(base(org.slug)).set(auth(token));
    expect(list.status).toBe(200);
    expect(list.body.map((c: { id: string }) => c.id)).toEqual([id]);
    expect((await ctx().http().get(cluster).set(auth(token))).body.name).toBe('Open Source');

    const queue = await givenQueue(ctx(), org.slug, token, id, 'default');
    const bad = await ctx().http().put(cluster).set(auth(token)).send({ default_queue_id: '00000000-0000-4000-8000-000000000000' });
    expect(bad.status).toBe(422);
    const updated = await ctx().http().put(cluster).set(auth(token)).send({ name: 'OSS', default_queue_id: queue.id, emoji: null });
    expect(updated.status).toBe(200);
    expect(updated.body).toMatchObject({ name: 'OSS', default_queue_id: queue.id, default_queue_url: `${created.body.url}/queues/${queue.id}`, emoji: null });

    // Members read; only administrators write.
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    await ctx().http().get(cluster).set(auth(memberToken)).expect(200);
    await ctx().http().put(cluster).set(auth(memberToken)).send({ name: 'x' }).expect(403);
    expect((await ctx().http().post(base(org.slug)).set(auth(memberToken)).send({ name: 'x' })).status).toBe(403);

    // A pipeline in the cluster keeps it from being deleted.
    const pipeline = await givenPipeline(ctx(), org.slug, token, { configuration: 'steps:\n  - command: x\n', cluster_id: id });
    expect(pipeline).toMatchObject({ cluster_id: id, cluster_url: created.body.url });
    const refused = await ctx().http().delete(cluster).set(auth(token));
    expect(refused.status).toBe(422);
    expect(refused.body.message).toMatch(/pipeline/);
    const moved = await ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`).set(auth(token)).send({ cluster_id: '' });
    expect(moved.status).toBe(200);
    expect(moved.body).toMatchObject({ cluster_id: null, cluster_url: null });
    await ctx().http().delete(cluster).set(auth(token)).expect(204);
    await ctx().http().get(cluster).set(auth(token)).expect(404);
  });

  it("refuses a pipeline cluster_id that names no cluster of the pipeline's organization", async () => {
    const { org, token } = await ctx().givenAdmin();
    const other = await ctx().givenAdmin();
    const theirs = await givenCluster(ctx(), other.org.slug, other.token);
    for (const clusterId of [theirs.id, 'not-a-cluster']) {
      const res = await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(token))
        .send({ name: 'P', repository: 'git@github.com:a/b.git', configuration: 'steps:\n  - command: x\n', cluster_id: clusterId });
      expect(res.status).toBe(422);
      expect(res.body.errors).toEqual([{ field: 'cluster_id', code: 'is not a cluster of this organization' }]);
    }
    // Another organization's cluster is not found through this one.
    await ctx()
      .http()
      .get(`${base(org.slug)}/${theirs.id}`)
      .set(auth(token))
      .expect(404);
  });

  it('manages queues: unique keys, pause with a note and resume as documented, no deleting the default queue', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const q = await givenQueue(ctx(), org.slug, token, cluster.id, 'linux');
    const url = `${base(org.slug)}/${cluster.id}/queues/${q.id}`;
    await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/queues`)
      .set(auth(token))
      .send({ key: 'linux' })
      .expect(422);
    const hosted = await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/queues`)
      .set(auth(token))
      .send({ key: 'hosted', hostedAgents: { instanceShape: 'LINUX_AMD64_2X4' } });
    expect(hosted.status).toBe(422);
    // The docs' key rule: letters, digits, hyphens and underscores, at most 100 characters.
    for (const key of ['mac.arm', 'with space', 'k'.repeat(101)]) {
      const res = await ctx()
        .http()
        .post(`${base(org.slug)}/${cluster.id}/queues`)
        .set(auth(token))
        .send({ key });
      expect({ key, status: res.status, field: res.body.errors?.[0]?.field }).toEqual({ key, status: 422, field: 'key' });
    }
    await givenQueue(ctx(), org.slug, token, (await givenCluster(ctx(), org.slug, token)).id, `mac_arm-${'k'.repeat(92)}`);

    const got = await ctx().http().get(url).set(auth(token));
    expect(got.body).toMatchObject({
      key: 'linux',
      retry_agent_affinity: 'prefer-warmest',
      dispatch_paused: false,
      cluster_url: cluster.url,
      created_by: { id: user.id },
    });
    const paused = await ctx().http().post(`${url}/pause_dispatch`).set(auth(token)).send({ note: 'Investigating' });
    expect(paused.status).toBe(200);
    expect(paused.body).toMatchObject({ dispatch_paused: true, dispatch_paused_note: 'Investigating', dispatch_paused_by: { id: user.id } });
    expect(paused.body.dispatch_paused_at).toMatch(/Z$/);
    const again = await ctx().http().post(`${url}/pause_dispatch`).set(auth(token)).send({});
    expect(again.status).toBe(422);
    expect(again.body.message).toBe('Cluster queue is already paused');
    const resumed = await ctx().http().post(`${url}/resume_dispatch`).set(auth(token));
    expect(resumed.body).toMatchObject({ dispatch_paused: false, dispatch_paused_by: null, dispatch_paused_at: null, dispatch_paused_note: null });
    expect((await ctx().http().post(`${url}/resume_dispatch`).set(auth(token))).body.message).toBe('Cluster queue is not paused');

    const updated = await ctx().http().put(url).set(auth(token)).send({ description: 'Linux boxes', retry_agent_affinity: 'prefer-different' });
    expect(updated.body).toMatchObject({ description: 'Linux boxes', retry_agent_affinity: 'prefer-different' });
    await givenDefaultQueue(ctx(), org.slug, token, cluster.id, q.id);
    expect((await ctx().http().delete(url).set(auth(token))).status).toBe(422);
    const other = await givenQueue(ctx(), org.slug, token, cluster.id, 'mac');
    await ctx()
      .http()
      .delete(`${base(org.slug)}/${cluster.id}/queues/${other.id}`)
      .set(auth(token))
      .expect(204);
    const list = await ctx()
      .http()
      .get(`${base(org.slug)}/${cluster.id}/queues`)
      .set(auth(token));
    expect(list.body.map((x: { key: string }) => x.key)).toEqual(['linux']);
  });

  it('lets maintainers (users and teams of the organization) manage a cluster, and only administrators name them', async () => {
    const { org, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const cluster = await givenCluster(ctx(), org.slug, token);
    const url = `${base(org.slug)}/${cluster.id}`;
    const alice = await ctx().givenUser(org, 'member');
    const bob = await ctx().givenUser(org, 'member');
    const team = await ctx().givenTeam(org, [bob]);
    const aliceToken = await ctx().givenToken(alice, [org]);
    const bobToken = await ctx().givenToken(bob, [org]);
    expect((await ctx().http().put(url).set(auth(aliceToken)).send({ description: 'x' })).status).toBe(403);

    const asUser = await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ user: alice.id });
    expect(asUser.status).toBe(201);
    expect(asUser.body).toEqual({
      id: expect.any(String),
      actor: { id: alice.id, graphql_id: Buffer.from(`User---${alice.id}`).toString('base64'), name: alice.name, email: alice.email, type: 'user' },
    });
    const asTeam = await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ team: team.id });
    expect(asTeam.body.actor).toEqual({
      id: team.id,
      graphql_id: Buffer.from(`Team---${team.id}`).toString('base64'),
      name: team.name,
      slug: team.slug,
      type: 'team',
    });
    // The cluster shows them, users and teams apart, as clusters.md's examples do (and on the list and an update).
    const maintainers = { users: [asUser.body], teams: [asTeam.body] };
    expect((await ctx().http().get(url).set(auth(bobToken)).expect(200)).body.maintainers).toEqual(maintainers);
    const listed = (await ctx().http().get(base(org.slug)).set(auth(token)).expect(200)).body as { id: string; maintainers: unknown }[];
    expect(listed.find((c) => c.id === cluster.id)!.maintainers).toEqual(maintainers);
    expect((await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ user: alice.id })).status).toBe(422);
    expect((await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ user: alice.id, team: team.id })).status).toBe(422);
    expect((await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({})).status).toBe(422);
    const stranger = await ctx().givenUser();
    const notMember = await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ user: stranger.id });
    expect(notMember.body.errors).toEqual([{ field: 'user', code: 'is not a member of this organization' }]);
    // Maintainers manage; they do not name maintainers.
    expect((await ctx().http().post(`${url}/maintainers`).set(auth(aliceToken)).send({ user: bob.id })).status).toBe(403);
    expect((await ctx().http().put(url).set(auth(aliceToken)).send({ description: 'by alice' })).status).toBe(200);
    expect((await ctx().http().post(`${url}/queues`).set(auth(bobToken)).send({ key: 'bobs' })).status).toBe(201);

    const list = await ctx().http().get(`${url}/maintainers`).set(auth(aliceToken));
    expect(list.body.map((m: { actor: { type: string } }) => m.actor.type)).toEqual(['user', 'team']);
    expect((await ctx().http().get(`${url}/maintainers/${asTeam.body.id}`).set(auth(bobToken))).body).toEqual(asTeam.body);
    expect((await ctx().http().delete(`${url}/maintainers/${asTeam.body.id}`).set(auth(token))).status).toBe(204);
    expect((await ctx().http().get(`${url}/maintainers/${asTeam.body.id}`).set(auth(token))).status).toBe(404);
    expect((await ctx().http().post(`${url}/queues`).set(auth(bobToken)).send({ key: 'again' })).status).toBe(403);
    // A maintainer may "Update or delete the cluster" (the docs' cluster permissions); another member may not.
    expect((await ctx().http().delete(url).set(auth(bobToken))).status).toBe(403);
    expect((await ctx().http().delete(url).set(auth(aliceToken))).status).toBe(204);
    expect((await ctx().http().get(url).set(auth(token))).status).toBe(404);
  });

  it('shows a cluster token secret once, keeps only its hash, validates CIDR ranges and revokes', async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const created = await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/tokens`)
      .set(auth(token))
      .send({ description: 'Windows agents', allowed_ip_addresses: '202.144.0.0/24  10.0.0.0/8', expires_at: '2099-01-01T00:00:00Z' });
    expect(created.status).toBe(201);
    const secret = created.body.token as string;
    expect(created.body).toMatchObject({
      description: 'Windows agents',
      allowed_ip_addresses: '202.144.0.0/24 10.0.0.0/8',
      expires_at: '2099-01-01T00:00:00.000Z',
      cluster_url: cluster.url,
    });
    const url = `${base(org.slug)}/${cluster.id}/tokens/${created.body.id}`;
    const got = await ctx().http().get(url).set(auth(token));
    expect(got.body).not.toHaveProperty('token');
    expect(JSON.stringify(got.body)).not.toContain(secret);
    const list = await ctx()
      .http()
      .get(`${base(org.slug)}/${cluster.id}/tokens`)
      .set(auth(token));
    expect(JSON.stringify(list.body)).not.toContain(secret);
    const stored = await ctx().services.db('cluster_tokens').where({ id: created.body.id }).first();
    expect(JSON.stringify(stored)).not.toContain(secret);

    const bad = await ctx().http().put(url).set(auth(token)).send({ allowed_ip_addresses: '10.0.0.0/8 nonsense' });
    expect(bad.status).toBe(422);
    expect(bad.body.errors[0].field).toBe('allowed_ip_addresses');
    // tokens.md: "Expiration date for a token cannot be updated": ignored, as the docs' example shows.
    const kept = await ctx().http().put(url).set(auth(token)).send({ expires_at: '2001-01-01T00:00:00Z' });
    expect([kept.status, kept.body.expires_at]).toEqual([200, '2099-01-01T00:00:00.000Z']);
    // manage.md: an address alone (the docs' example), IPv4 only, at most 24 blocks.
    const single = await ctx().http().put(url).set(auth(token)).send({ allowed_ip_addresses: '192.0.2.0/24 198.51.100.12' });
    expect([single.status, single.body.allowed_ip_addresses]).toEqual([200, '192.0.2.0/24 198.51.100.12']);
    const v6 = await ctx().http().put(url).set(auth(token)).send({ allowed_ip_addresses: '2001:db8::/32' });
    expect([v6.status, v6.body.errors?.[0]?.field]).toEqual([422, 'allowed_ip_addresses']);
    const many = Array.from({ length: 25 }, (_, i) => `10.0.${i}.0/24`).join(' ');
    expect((await ctx().http().put(url).set(auth(token)).send({ allowed_ip_addresses: many })).status).toBe(422);
    // No restriction shows as the documented default.
    const updated = await ctx().http().put(url).set(auth(token)).send({ description: 'Linux', allowed_ip_addresses: null });
    expect(updated.body).toMatchObject({ description: 'Linux', allowed_ip_addresses: '0.0.0.0/0' });
    const soon = await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/tokens`)
      .set(auth(token))
      .send({ description: 'Too short', expires_at: new Date(Date.now() + 5 * 60_000).toISOString() });
    expect([soon.status, soon.body.errors?.[0]?.field]).toEqual([422, 'expires_at']);
    expect((await ctx().http().delete(url).set(auth(token))).status).toBe(204);
    expect((await ctx().http().get(url).set(auth(token))).status).toBe(404);
    const reg = await ctx().http().post('/v3/register').set(agentAuth(secret)).send({ name: 'late', meta_data: [] });
    expect(reg.status).toBe(401);
  });

  it('refuses registration from an address the token does not allow, and from an expired token', async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    await givenQueue(ctx(), org.slug, token, cluster.id, 'default');
    const elsewhere = await givenClusterToken(ctx(), org.slug, token, cluster.id, '10.1.2.0/24');
    const refused = await ctx()
      .http()
      .post('/v3/register')
      .set(agentAuth(elsewhere.token))
      .send({ name: 'a', meta_data: ['queue=default'] });
    expect(refused.status).toBe(401);
    expect(refused.body.message).toMatch(/does not allow registration from/);
    const loopback = await givenClusterToken(ctx(), org.slug, token, cluster.id, '10.1.2.0/24 127.0.0.0/8');
    const ok = await ctx()
      .http()
      .post('/v3/register')
      .set(agentAuth(loopback.token))
      .send({ name: 'b', meta_data: ['queue=default'] });
    expect(ok.status).toBe(201);
    await ctx()
      .services.db('cluster_tokens')
      .where({ id: loopback.id })
      .update({ expires_at: new Date(Date.now() - 1000) });
    const expired = await ctx()
      .http()
      .post('/v3/register')
      .set(agentAuth(loopback.token))
      .send({ name: 'c', meta_data: ['queue=default'] });
    expect(expired.status).toBe(401);
    expect(expired.body.message).toMatch(/expired/);
    // manage.md: `0.0.0.0/0` removes the restriction, whatever else the list holds.
    const anywhere = await givenClusterToken(ctx(), org.slug, token, cluster.id, '10.1.2.0/24 0.0.0.0/0');
    expect(
      (
        await ctx()
          .http()
          .post('/v3/register')
          .set(agentAuth(anywhere.token))
          .send({ name: 'd', meta_data: ['queue=default'] })
      ).status,
    ).toBe(201);
  });

  // queues.md and the agent prioritization page: "Prefer Different Agent: retry jobs on any agent
  // which is different to the one that ran the previous attempt, if they're available."
  it("sends a retry to another waiting agent with the queue's prefer-different affinity, and to the same one when none is", async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const queue = await givenQueue(ctx(), org.slug, token, cluster.id, 'default');
    await givenDefaultQueue(ctx(), org.slug, token, cluster.id, queue.id);
    await ctx()
      .http()
      .patch(`${base(org.slug)}/${cluster.id}/queues/${queue.id}`)
      .set(auth(token))
      .send({ retry_agent_affinity: 'prefer-different' })
      .expect(200);
    const clusterToken = await givenClusterToken(ctx(), org.slug, token, cluster.id);
    const [first, second] = [await givenAgent(ctx(), clusterToken.token, 'first'), await givenAgent(ctx(), clusterToken.token, 'second')];
    const pipeline = await givenPipeline(ctx(), org.slug, token, { configuration: 'steps:\n  - command: flaky\n', cluster_id: cluster.id });
    const build = await givenBuild(ctx(), org.slug, pipeline.slug, token);
    const url = `/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${build.number}`;
    const runAndFail = async (agent: { token: string }) => {
      const job = await poll(ctx(), agent.token);
      await ctx().http().put(`/v3/jobs/${job!.id}/accept`).set(agentAuth(agent.token)).expect(200);
      await ctx().http().put(`/v3/jobs/${job!.id}/start`).set(agentAuth(agent.token)).expect(200);
      await ctx().http().put(`/v3/jobs/${job!.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 1 }).expect(200);
      return job!.id;
    };
    const failed = await runAndFail(first);
    expect(await poll(ctx(), second.token)).toBeNull(); // waiting for work
    await ctx().http().put(`${url}/jobs/${failed}/retry`).set(auth(token)).expect(200);
    // The agent that ran the attempt leaves the retry to the one waiting.
    expect(await poll(ctx(), first.token)).toBeNull();
    const retried = await runAndFail(second);
    // With no other agent waiting (the first is gone), the retry goes to the one that ran the last attempt.
    await ctx().http().post('/v3/disconnect').set(agentAuth(first.token)).expect(200);
    await ctx().http().put(`${url}/jobs/${retried}/retry`).set(auth(token)).expect(200);
    expect(await poll(ctx(), second.token)).not.toBeNull();
  });

  it("dispatches a cluster's jobs to its agents of the job's queue only, holds them while the queue is paused, and keeps unclustered agents to unclustered pipelines", async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const linux = await givenQueue(ctx(), org.slug, token, cluster.id, 'linux');
    const mac = await givenQueue(ctx(), org.slug, token, cluster.id, 'mac');
    await givenDefaultQueue(ctx(), org.slug, token, cluster.id, linux.id);
    const clusterToken = await givenClusterToken(ctx(), org.slug, token, cluster.id);

    // A queue the cluster lacks is refused at registration; no queue tag joins the default queue.
    const unknown = await ctx()
      .http()
      .post('/v3/register')
      .set(agentAuth(clusterToken.token))
      .send({ name: 'x', meta_data: ['queue=gpu'] });
    expect(unknown.status).toBe(422);
    const linuxAgent = await givenAgent(ctx(), clusterToken.token, 'linux-agent');
    const macAgent = await givenAgent(ctx(), clusterToken.token, 'mac-agent', ['queue=mac']);
    const orgAgent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'org-agent');

    const agentJson = await ctx().http().get(`/v2/organizations/${org.slug}/agents/${linuxAgent.id}`).set(auth(token));
    expect(agentJson.body).toMatchObject({ queue: 'linux', meta_data: ['queue=linux'], cluster_id: cluster.id });
    expect(agentJson.body.web_url).toContain(`/clusters/${cluster.id}/queues/${linux.id}/agents/${linuxAgent.id}`);
    // The organization's agent list by queue: the agents registered to it only.
    const inQueue = async (queueId: string) =>
      (await ctx().http().get(`/v2/organizations/${org.slug}/agents?cluster_queue_id=${queueId}`).set(auth(token)).expect(200)).body.map(
        (a: { id: string }) => a.id,
      );
    expect(await inQueue(linux.id)).toEqual([linuxAgent.id]);
    expect(await inQueue(mac.id)).toEqual([macAgent.id]);
    expect(await inQueue(crypto.randomUUID())).toEqual([]);
    await ctx().http().get(`/v2/organizations/${org.slug}/agents?cluster_queue_id=linux`).set(auth(token)).expect(400);

    const clustered = await givenPipeline(ctx(), org.slug, token, {
      configuration: 'steps:\n  - command: on-default\n  - command: on-mac\n    agents: { queue: mac }\n',
      cluster_id: cluster.id,
    });
    const plain = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: unclustered\n');
    const build = await givenBuild(ctx(), org.slug, clustered.slug, token);
    expect(build.jobs[0]).toMatchObject({
      cluster_id: cluster.id,
      cluster_url: cluster.url,
      cluster_queue_id: linux.id,
      cluster_queue_url: `${cluster.url}/queues/${linux.id}`,
    });
    expect(build.jobs[1]).toMatchObject({ cluster_id: cluster.id, cluster_queue_id: mac.id });
    const plainBuild = await givenBuild(ctx(), org.slug, plain.slug, token);
    expect(plainBuild.jobs[0]).toMatchObject({ cluster_id: null, cluster_url: null, cluster_queue_id: null, cluster_queue_url: null });

    // Paused: the mac queue's agent is offered nothing; resumed, its job.
    const macQueueUrl = `${base(org.slug)}/${cluster.id}/queues/${mac.id}`;
    await ctx().http().post(`${macQueueUrl}/pause_dispatch`).set(auth(token)).send({ note: 'hold' }).expect(200);
    expect(await poll(ctx(), macAgent.token)).toBeNull();
    await ctx().http().post(`${macQueueUrl}/resume_dispatch`).set(auth(token)).expect(200);
    expect((await poll(ctx(), macAgent.token))?.command).toBe('on-mac');

    // The unclustered agent takes the unclustered job and never a cluster's.
    expect((await poll(ctx(), orgAgent.token))?.command).toBe('unclustered');
    expect((await poll(ctx(), linuxAgent.token))?.command).toBe('on-default');

    const got = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${clustered.slug}/builds/${build.number}`).set(auth(token));
    expect(got.body.jobs.map((j: { cluster_queue_id: string }) => j.cluster_queue_id)).toEqual([linux.id, mac.id]);
    // The cluster can't be deleted while its agents are connected (and its pipeline is in it).
    await ctx()
      .http()
      .delete(`${base(org.slug)}/${cluster.id}`)
      .set(auth(token))
      .expect(422);
  });

  it('shows a secret team among the maintainers only to its members and administrators', async () => {
    const { org, token } = await ctx().givenAdmin({ teamsEnabled: true });
    const cluster = await givenCluster(ctx(), org.slug, token);
    const url = `${base(org.slug)}/${cluster.id}`;
    const [insider, outsider] = [await ctx().givenUser(org, 'member'), await ctx().givenUser(org, 'member')];
    const [insiderToken, outsiderToken] = await Promise.all([ctx().givenToken(insider, [org]), ctx().givenToken(outsider, [org])]);
    const teams = `/v2/organizations/${org.slug}/teams`;
    const secret = (await ctx().http().post(teams).set(auth(token)).send({ name: 'Hidden', privacy: 'secret' }).expect(201)).body as { id: string };
    const visible = (await ctx().http().post(teams).set(auth(token)).send({ name: 'Shown' }).expect(201)).body as { id: string };
    await ctx().http().post(`${teams}/${secret.id}/members`).set(auth(token)).send({ user_id: insider.id }).expect(201);
    const hidden = (await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ team: secret.id }).expect(201)).body as { id: string };
    await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ team: visible.id }).expect(201);
    const teamIds = async (t: string) =>
      ((await ctx().http().get(url).set(auth(t)).expect(200)).body.maintainers.teams as { actor: { id: string } }[]).map((m) => m.actor.id).sort();
    expect(await teamIds(token)).toEqual([secret.id, visible.id].sort());
    expect(await teamIds(insiderToken)).toEqual([secret.id, visible.id].sort());
    expect(await teamIds(outsiderToken)).toEqual([visible.id]);
    const listed = (await ctx().http().get(`${url}/maintainers`).set(auth(outsiderToken)).expect(200)).body as { actor: { id: string } }[];
    expect(listed.map((m) => m.actor.id)).toEqual([visible.id]);
    await ctx().http().get(`${url}/maintainers/${hidden.id}`).set(auth(outsiderToken)).expect(404);
    await ctx().http().get(`${url}/maintainers/${hidden.id}`).set(auth(insiderToken)).expect(200);
  });

  it("lets a cluster's maintainers pause, resume and stop its agents, and no other member", async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const queue = await givenQueue(ctx(), org.slug, token, cluster.id, 'default');
    await givenDefaultQueue(ctx(), org.slug, token, cluster.id, queue.id);
    const clustered = await givenAgent(ctx(), (await givenClusterToken(ctx(), org.slug, token, cluster.id)).token, 'clustered');
    const unclustered = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'unclustered');
    const maintainer = await ctx().givenUser(org, 'member');
    const other = await ctx().givenUser(org, 'member');
    const [maintainerToken, otherToken] = await Promise.all([ctx().givenToken(maintainer, [org]), ctx().givenToken(other, [org])]);
    await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/maintainers`)
      .set(auth(token))
      .send({ user: maintainer.id })
      .expect(201);
    const agents = `/v2/organizations/${org.slug}/agents`;
    await ctx().http().put(`${agents}/${clustered.id}/pause`).set(auth(otherToken)).expect(403);
    await ctx().http().put(`${agents}/${clustered.id}/pause`).set(auth(maintainerToken)).expect(204);
    await ctx().http().put(`${agents}/${clustered.id}/resume`).set(auth(maintainerToken)).expect(204);
    await ctx().http().put(`${agents}/${unclustered.id}/pause`).set(auth(maintainerToken)).expect(403);
    await ctx().http().put(`${agents}/${clustered.id}/stop`).set(auth(otherToken)).send({}).expect(403);
    await ctx().http().put(`${agents}/${clustered.id}/stop`).set(auth(maintainerToken)).send({}).expect(204);
  });

  it('shows the hosted-agent cache fields to those who may manage the cluster, and refuses to enable them', async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const url = `${base(org.slug)}/${cluster.id}`;
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    const fields = (b: Record<string, unknown>) => [b.hosted_git_mirror_enabled, b.hosted_container_cache_enabled];
    expect(fields((await ctx().http().get(url).set(auth(token)).expect(200)).body)).toEqual([false, false]);
    expect(fields((await ctx().http().get(url).set(auth(memberToken)).expect(200)).body)).toEqual([undefined, undefined]);
    await ctx().http().post(`${url}/maintainers`).set(auth(token)).send({ user: member.id }).expect(201);
    const listed = (await ctx().http().get(base(org.slug)).set(auth(memberToken)).expect(200)).body as Record<string, unknown>[];
    expect(fields(listed.find((c) => c.id === cluster.id)!)).toEqual([false, false]);
    // Every cluster here runs self-hosted agents: false is kept, true is the documented 422.
    await ctx().http().put(url).set(auth(token)).send({ hosted_git_mirror_enabled: false, hosted_container_cache_enabled: false }).expect(200);
    const enabled = await ctx().http().put(url).set(auth(token)).send({ hosted_container_cache_enabled: true });
    expect({ status: enabled.status, fields: enabled.body.errors.map((e: { field: string }) => e.field) }).toEqual({
      status: 422,
      fields: ['hosted_container_cache_enabled'],
    });
    const notBoolean = await ctx().http().put(url).set(auth(token)).send({ hosted_git_mirror_enabled: 'yes' });
    expect(notBoolean.status).toBe(422);
  });

  it("lets only the cluster's maintainers and administrators move pipelines into or out of a cluster", async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    const pipelines = `/v2/organizations/${org.slug}/pipelines`;
    const body = { name: 'Moved', repository: 'git@github.com:a/b.git', configuration: 'steps:\n  - command: x\n' };
    const refused = await ctx()
      .http()
      .post(pipelines)
      .set(auth(memberToken))
      .send({ ...body, cluster_id: cluster.id });
    expect({ status: refused.status, message: refused.body.message }).toEqual({
      status: 403,
      message: "Only the cluster's maintainers and organization administrators can move pipelines into or out of this cluster.",
    });
    // Outside any cluster the member may create it, and edit it, but not move it in.
    const p = (await ctx().http().post(pipelines).set(auth(memberToken)).send(body).expect(201)).body as { slug: string };
    await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(memberToken)).send({ description: 'fine' }).expect(200);
    await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(memberToken)).send({ cluster_id: cluster.id }).expect(403);
    // A maintainer may; an administrator may take it out again, and then the member may not put it back.
    await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/maintainers`)
      .set(auth(token))
      .send({ user: member.id })
      .expect(201);
    expect((await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(memberToken)).send({ cluster_id: cluster.id }).expect(200)).body.cluster_id).toBe(
      cluster.id,
    );
    const other = await ctx().givenUser(org, 'member');
    const otherToken = await ctx().givenToken(other, [org]);
    await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(otherToken)).send({ cluster_id: null }).expect(403);
    // Sending the cluster it is already in changes nothing and needs nothing.
    await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(otherToken)).send({ cluster_id: cluster.id, description: 'same cluster' }).expect(200);
    expect((await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(token)).send({ cluster_id: '' }).expect(200)).body.cluster_id).toBeNull();

    // From one cluster to another needs both: a maintainer of the target alone may not take it out of the other.
    const second = await givenCluster(ctx(), org.slug, token);
    await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(token)).send({ cluster_id: second.id }).expect(200);
    await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(memberToken)).send({ cluster_id: cluster.id }).expect(403);
    // An id in upper case is the same cluster: stored in lower case, and no move when it is the current one.
    await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(otherToken)).send({ cluster_id: second.id.toUpperCase(), description: 'upper' }).expect(200);
    // A team's members maintain as its named users do.
    const team = await ctx().givenTeam(org, [other]);
    await ctx()
      .http()
      .post(`${base(org.slug)}/${second.id}/maintainers`)
      .set(auth(token))
      .send({ team: team.id })
      .expect(201);
    const moved = await ctx().http().patch(`${pipelines}/${p.slug}`).set(auth(otherToken)).send({ cluster_id: null }).expect(200);
    expect(moved.body.cluster_id).toBeNull();

    // The organization's default cluster needs no maintainer on create (a new pipeline goes there anyway).
    await ctx().http().patch(`/v2/organizations/${org.slug}/pipeline-settings`).set(auth(token)).send({ default_cluster_id: cluster.id }).expect(200);
    const inDefault = await ctx()
      .http()
      .post(pipelines)
      .set(auth(otherToken))
      .send({ ...body, name: 'In default', cluster_id: cluster.id.toUpperCase() })
      .expect(201);
    expect(inDefault.body.cluster_id).toBe(cluster.id);
  });

  it('lists builds without those waiting only on paused queues, and without their paused jobs, with include_paused=false', async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const linux = await givenQueue(ctx(), org.slug, token, cluster.id, 'linux');
    const mac = await givenQueue(ctx(), org.slug, token, cluster.id, 'mac');
    await givenDefaultQueue(ctx(), org.slug, token, cluster.id, linux.id);
    const both = await givenPipeline(ctx(), org.slug, token, {
      configuration: 'steps:\n  - command: on-linux\n  - wait\n  - command: on-mac\n    agents: { queue: mac }\n',
      cluster_id: cluster.id,
    });
    const macOnly = await givenPipeline(ctx(), org.slug, token, {
      configuration: 'steps:\n  - command: mac-only\n    agents: { queue: mac }\n',
      cluster_id: cluster.id,
    });
    const plain = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: unclustered\n');
    const mixedBuild = await givenBuild(ctx(), org.slug, both.slug, token);
    const macBuild = await givenBuild(ctx(), org.slug, macOnly.slug, token);
    const plainBuild = await givenBuild(ctx(), org.slug, plain.slug, token);
    await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/queues/${mac.id}/pause_dispatch`)
      .set(auth(token))
      .send({})
      .expect(200);

    type Listed = { id: string; jobs?: { command: string | null; type: string }[]; job_state_counts: { total: number } };
    const list = async (path: string, query: string) => (await ctx().http().get(`${path}${query}`).set(auth(token)).expect(200)).body as Listed[];
    const orgBuilds = `/v2/organizations/${org.slug}/builds`;
    const all = await list(orgBuilds, '');
    expect(all.map((b) => b.id).sort()).toEqual([mixedBuild.id, macBuild.id, plainBuild.id].sort());
    expect(await list(orgBuilds, '?include_paused=true')).toEqual(all);
    const active = await list(orgBuilds, '?include_paused=false');
    expect(active.map((b) => b.id).sort()).toEqual([mixedBuild.id, plainBuild.id].sort());
    const mixed = active.find((b) => b.id === mixedBuild.id)!;
    // The job on the paused queue is left out; the wait step and the linux job stay, and the counts count all three.
    expect(mixed.jobs!.map((j) => j.command ?? j.type)).toEqual(['on-linux', 'waiter']);
    expect(mixed.job_state_counts.total).toBe(3);
    for (const path of [`/v2/organizations/${org.slug}/pipelines/${macOnly.slug}/builds`, '/v2/builds']) {
      const ids = (await list(path, '?include_paused=false')).map((b) => b.id);
      expect({ path, hidden: ids.includes(macBuild.id) }).toEqual({ path, hidden: false });
    }
    await ctx()
      .http()
      .post(`${base(org.slug)}/${cluster.id}/queues/${mac.id}/resume_dispatch`)
      .set(auth(token))
      .expect(200);
    expect((await list(orgBuilds, '?include_paused=false')).map((b) => b.id).sort()).toEqual(all.map((b) => b.id).sort());
  });

  it('gives an unclustered agent no job of a clustered pipeline', async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const q = await givenQueue(ctx(), org.slug, token, cluster.id, 'default');
    await givenDefaultQueue(ctx(), org.slug, token, cluster.id, q.id);
    const pipeline = await givenPipeline(ctx(), org.slug, token, { configuration: 'steps:\n  - command: clustered\n', cluster_id: cluster.id });
    await givenBuild(ctx(), org.slug, pipeline.slug, token);
    const orgAgent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'org-agent', ['queue=default']);
    expect(await poll(ctx(), orgAgent.token)).toBeNull();
    const clusterAgent = await givenAgent(ctx(), (await givenClusterToken(ctx(), org.slug, token, cluster.id)).token, 'cluster-agent', ['queue=default']);
    expect((await poll(ctx(), clusterAgent.token))?.command).toBe('clustered');
  });
});
