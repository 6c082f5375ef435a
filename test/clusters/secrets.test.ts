/**
 * Cluster secrets: details through the REST API and never the value (stored sealed, not in the
 * clear); jobs read values through the agent API only when their pipeline is in the secret's
 * cluster and the secret's access policy allows them (claims of the documented policy schema).
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { takeNextJob, agentAuth, givenAgent } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

async function givenClusterWithAgent(ctx: TestContext, org: string, token: string) {
  const base = `/v2/organizations/${org}/clusters`;
  const cluster = (
    await ctx
      .http()
      .post(base)
      .set(auth(token))
      .send({ name: `C ${Math.random()}` })
      .expect(201)
  ).body;
  const queue = (await ctx.http().post(`${base}/${cluster.id}/queues`).set(auth(token)).send({ key: 'deploy' }).expect(201)).body;
  await ctx.http().put(`${base}/${cluster.id}`).set(auth(token)).send({ default_queue_id: queue.id }).expect(200);
  const secret = (await ctx.http().post(`${base}/${cluster.id}/tokens`).set(auth(token)).send({ description: 'agents' }).expect(201)).body.token;
  return { cluster, queue, url: `${base}/${cluster.id}`, agent: await givenAgent(ctx, secret, 'deployer') };
}

/** The agent takes its next job and starts it; answers the job's id. */
async function startNextJob(ctx: TestContext, token: string): Promise<string> {
  return (await takeNextJob(ctx, token)).id;
}

describeEachDatabase('cluster secrets', (ctx) => {
  it('keeps the value write-only and sealed at rest, and validates keys, values and policies as documented', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const { url } = await givenClusterWithAgent(ctx(), org.slug, token);
    const value = 'hunter2-' + Math.random().toString(36).slice(2);
    const created = await ctx()
      .http()
      .post(`${url}/secrets`)
      .set(auth(token))
      .send({ key: 'MY_SECRET', value, description: 'Deploy key', policy: '- pipeline_slug: my-pipeline\n  build_branch: main' });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({
      key: 'MY_SECRET',
      description: 'Deploy key',
      policy: '- pipeline_slug: my-pipeline\n  build_branch: main',
      created_by: { id: user.id, name: user.name, email: user.email },
      updated_by: null,
      last_read_at: null,
      cluster_url: expect.stringMatching(new RegExp(`${url}$`)),
      organization: { id: org.id, slug: org.slug },
    });
    expect(created.body).not.toHaveProperty('value');
    const secretUrl = `${url}/secrets/${created.body.id}`;
    const answers = [
      created,
      await ctx().http().get(secretUrl).set(auth(token)),
      await ctx().http().get(`${url}/secrets`).set(auth(token)),
      await ctx().http().put(secretUrl).set(auth(token)).send({ description: 'Changed' }),
      await ctx()
        .http()
        .put(`${secretUrl}/value`)
        .set(auth(token))
        .send({ value: value + '-2' }),
    ];
    expect(answers.map((r) => r.status)).toEqual([201, 200, 200, 200, 200]);
    for (const r of answers) expect(r.text).not.toContain(value);
    expect(answers[3]!.body.updated_by).toMatchObject({ id: user.id });
    const row = await ctx().services.db('cluster_secrets').where({ id: created.body.id }).first();
    expect(JSON.stringify(row)).not.toContain(value);

    const refusals = [
      [{ key: 'bk_thing', value: 'v' }, 'key'],
      [{ key: 'BUILDKITE_X', value: 'v' }, 'key'],
      [{ key: '1ABC', value: 'v' }, 'key'],
      [{ key: 'my_secret', value: 'v' }, 'key'],
      [{ key: 'BLANK', value: '  ' }, 'value'],
      [{ key: 'BIG', value: 'x'.repeat(8191) + 'é' }, 'value'],
      [{ key: 'BAD_POLICY', value: 'v', policy: '- pipeline_slug: [a\n' }, 'policy'],
      [{ key: 'BAD_CLAIM', value: 'v', policy: '- favourite_colour: blue\n' }, 'policy'],
    ] as const;
    for (const [body, field] of refusals) {
      const res = await ctx().http().post(`${url}/secrets`).set(auth(token)).send(body);
      expect([res.status, res.body.errors?.[0]?.field]).toEqual([422, field]);
    }
    expect((await ctx().http().put(secretUrl).set(auth(token)).send({ key: 'OTHER' })).body.message).toBe('The key parameter cannot be updated.');
    expect((await ctx().http().put(secretUrl).set(auth(token)).send({ value: 'x' })).body.message).toBe(
      'The value parameter cannot be updated on this endpoint.',
    );

    const member = await ctx().givenToken(await ctx().givenUser(org, 'member'), [org]);
    expect((await ctx().http().get(secretUrl).set(auth(member))).status).toBe(200);
    expect((await ctx().http().put(`${secretUrl}/value`).set(auth(member)).send({ value: 'stolen' })).status).toBe(403);
    expect((await ctx().http().delete(secretUrl).set(auth(token))).status).toBe(204);
    expect((await ctx().http().get(secretUrl).set(auth(token))).status).toBe(404);
  });

  it("gives a job its cluster's secret (any case of the key) as its policy allows, and nothing to a job of another cluster or none", async () => {
    const { org, token } = await ctx().givenAdmin();
    const { cluster, queue, url, agent } = await givenClusterWithAgent(ctx(), org.slug, token);
    const mk = async (key: string, policy?: string) =>
      (
        await ctx()
          .http()
          .post(`${url}/secrets`)
          .set(auth(token))
          .send({ key, value: `${key}-value`, ...(policy ? { policy } : {}) })
          .expect(201)
      ).body;
    const open = await mk('OPEN');
    const pipeline = await givenPipeline(ctx(), org.slug, token, { configuration: 'steps:\n  - command: deploy\n', cluster_id: cluster.id });
    await mk('MAIN_ONLY', `- pipeline_slug: ${pipeline.slug}\n  build_branch: [main, "release/*"]\n`);
    await mk('QUEUE', `- cluster_queue_key: deploy\n  pipeline_id: ${pipeline.id}\n- cluster_queue_id: ${queue.id}\n`);
    await mk('ELSEWHERE', '- pipeline_slug: another\n');
    await mk('CREATOR', `- build_creator: nobody@example.com\n- build_source: webhook\n`);

    await givenBuild(ctx(), org.slug, pipeline.slug, token, { branch: 'release/1.0' });
    const jobId = await startNextJob(ctx(), agent.token);
    const get = (key: string) => ctx().http().get(`/v3/jobs/${jobId}/secrets?key=${key}`).set(agentAuth(agent.token));
    expect((await get('open')).body).toEqual({ name: 'OPEN', key: 'OPEN', value: 'OPEN-value', uuid: open.id });
    expect((await get('MAIN_ONLY')).body.value).toBe('MAIN_ONLY-value');
    expect((await get('QUEUE')).body.value).toBe('QUEUE-value');
    expect((await get('ELSEWHERE')).status).toBe(403);
    expect((await get('CREATOR')).status).toBe(403);
    expect((await get('MISSING')).status).toBe(404);
    expect((await ctx().http().get(`/v3/jobs/${jobId}/secrets`).set(agentAuth(agent.token))).status).toBe(400);
    const read = await ctx().http().get(`${url}/secrets/${open.id}`).set(auth(token));
    expect(read.body.last_read_at).toEqual(expect.any(String));

    // Another agent can't read through a job it does not hold; a job of a pipeline in no cluster reads nothing.
    const other = await givenClusterWithAgent(ctx(), org.slug, token);
    expect((await ctx().http().get(`/v3/jobs/${jobId}/secrets?key=OPEN`).set(agentAuth(other.agent.token))).status).toBe(404);
    const plain = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: unclustered\n');
    await givenBuild(ctx(), org.slug, plain.slug, token);
    const reg = (await ctx().http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(token)).send({ description: 'x' })).body.token;
    const orgAgent = await givenAgent(ctx(), reg, 'plain');
    const plainJob = await startNextJob(ctx(), orgAgent.token);
    expect((await ctx().http().get(`/v3/jobs/${plainJob}/secrets?key=OPEN`).set(agentAuth(orgAgent.token))).status).toBe(404);
  });
});
