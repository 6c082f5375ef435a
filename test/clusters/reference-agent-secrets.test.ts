/**
 * `buildkite-agent secret get` end to end: the reference agent, registered with a cluster's
 * token, runs a step of the cluster's pipeline that reads secrets through its shim (one key, the
 * JSON and env formats, a key the policy refuses), and the job's log shows what the step printed.
 */
import { auth, describeEachDatabase } from '../support/context';
import { onLoopback, withReferenceAgents } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { buildRef, finishedBuild, jobLogText, restClient } from '../support/sdk';

describeEachDatabase('buildkite-agent secret get', (ctx) => {
  const { endpoint } = onLoopback(ctx);

  it('reads the cluster secrets the policy allows, in the three formats, and fails on one it refuses', async () => {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/clusters`;
    const cluster = (await ctx().http().post(base).set(auth(token)).send({ name: 'Secrets' }).expect(201)).body;
    const queue = (await ctx().http().post(`${base}/${cluster.id}/queues`).set(auth(token)).send({ key: 'default' }).expect(201)).body;
    await ctx().http().put(`${base}/${cluster.id}`).set(auth(token)).send({ default_queue_id: queue.id }).expect(200);
    const reg = (await ctx().http().post(`${base}/${cluster.id}/tokens`).set(auth(token)).send({ description: 'ref' }).expect(201)).body.token;
    for (const [key, value, policy] of [
      ['DEPLOY_KEY', "it's-a-key", undefined],
      ['API_TOKEN', 'tok-123', '- build_branch: main\n'],
      ['PROD_ONLY', 'never', '- build_branch: production\n'],
    ] as const)
      await ctx()
        .http()
        .post(`${base}/${cluster.id}/secrets`)
        .set(auth(token))
        .send({ key, value, ...(policy ? { policy } : {}) })
        .expect(201);
    const { slug } = await givenPipeline(ctx(), org.slug, token, {
      cluster_id: cluster.id,
      configuration: [
        'steps:',
        '  - command: |',
        '      echo "one=$(buildkite-agent secret get deploy_key)"',
        '      echo "json=$(buildkite-agent secret get DEPLOY_KEY api_token)"',
        '      buildkite-agent secret get --format env api_token deploy_key',
        '      buildkite-agent secret get PROD_ONLY || echo "refused: $?"',
      ].join('\n'),
    });
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const api = restClient(endpoint(), token);
    const ref = buildRef(org.slug, slug, build.number);
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'secrets', spawn: 1, pollIntervalMs: 20 }, async () => {
      const b = await finishedBuild(api, ref, 3000);
      const log = await jobLogText(api, ref, b.jobs[0]!.id);
      expect(b.jobs[0]!.state).toBe('passed');
      expect(log).toContain("one=it's-a-key\n");
      expect(log).toContain(`json={"DEPLOY_KEY":"it's-a-key","api_token":"tok-123"}\n`);
      expect(log).toContain("API_TOKEN='tok-123'\nDEPLOY_KEY='it'\\''s-a-key'\n");
      expect(log).toContain('PROD_ONLY: 403');
      expect(log).toContain('refused: 1\n');
      expect(log).not.toContain('never');
    });
  });
});
