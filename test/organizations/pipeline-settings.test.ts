/**
 * An organization's pipeline settings (issue 30): read and changed by administrators, the
 * switches recorded with who and when, each change in the audit log, and what they change: a new
 * pipeline's default branch, cluster and step timeouts, and who may make a pipeline public.
 * Build export is not offered (403).
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

async function givenCluster(ctx: TestContext, slug: string, token: string): Promise<string> {
  const res = await ctx
    .http()
    .post(`/v2/organizations/${slug}/clusters`)
    .set(auth(token))
    .send({ name: `Cluster ${Math.random().toString(36).slice(2, 8)}` })
    .expect(201);
  return res.body.id as string;
}

const newPipeline = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  repository: 'git@github.com:acme/app.git',
  configuration: 'steps:\n  - command: make\n',
  ...extra,
});

describeEachDatabase('pipeline settings', (ctx) => {
  it('are read with the documented fields and changed field by field, each change recorded', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const url = `/v2/organizations/${org.slug}/pipeline-settings`;
    const initial = await ctx().http().get(url).set(auth(token)).expect(200);
    const off = { enabled: false, enabled_at: null, enabled_by: null };
    expect(initial.body).toEqual({
      url: `http://windsock.test${url}`,
      default_branch: null,
      default_cluster_id: null,
      default_timeout_in_minutes: null,
      maximum_timeout_in_minutes: null,
      scheduled_job_expiry_in_minutes: null,
      hosted_agents_terminal_access: off,
      public_pipeline_creation: off,
      advanced_queue_metrics: { ...off, disable_supported: false },
      build_exports: { available: false, enabled: false, location: null, strategy_id: null, supported_strategies: [] },
    });
    const cluster = await givenCluster(ctx(), org.slug, token);
    const changed = await ctx()
      .http()
      .patch(url)
      .set(auth(token))
      .send({
        default_branch: 'trunk',
        default_cluster_id: cluster.toUpperCase(),
        default_timeout_in_minutes: 30,
        maximum_timeout_in_minutes: 90,
        scheduled_job_expiry_in_minutes: 120,
      })
      .expect(200);
    expect(changed.body).toMatchObject({
      default_branch: 'trunk',
      default_cluster_id: cluster,
      default_timeout_in_minutes: 30,
      maximum_timeout_in_minutes: 90,
      scheduled_job_expiry_in_minutes: 120,
    });
    const partly = await ctx().http().patch(url).set(auth(token)).send({ default_branch: null }).expect(200);
    expect(partly.body).toMatchObject({ default_branch: null, default_cluster_id: cluster, default_timeout_in_minutes: 30 });
    expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toEqual(partly.body);

    // The switches: on with who and when, off again; advanced queue metrics only on.
    for (const [path, field] of [
      ['hosted-agents-ssh', 'hosted_agents_terminal_access'],
      ['public-pipelines', 'public_pipeline_creation'],
    ] as const) {
      const on = await ctx().http().put(`${url}/${path}`).set(auth(token)).expect(200);
      expect(on.body[field]).toMatchObject({ enabled: true, enabled_by: { id: user.id, name: user.name } });
      expect(on.body[field].enabled_at).toMatch(ISO);
      expect((await ctx().http().delete(`${url}/${path}`).set(auth(token)).expect(200)).body[field]).toEqual(off);
    }
    const metrics = await ctx().http().put(`${url}/advanced-queue-metrics`).set(auth(token)).expect(200);
    expect(metrics.body.advanced_queue_metrics).toMatchObject({ enabled: true, enabled_by: { id: user.id }, disable_supported: false });
    await ctx().http().put(`${url}/advanced-queue-metrics`).set(auth(token)).expect(200);

    const events = (await ctx().http().get(`/v2/organizations/${org.slug}/audit_events`).set(auth(token)).expect(200)).body.items as {
      type: string;
      data: unknown;
    }[];
    expect(events.map((e) => e.type)).toEqual([
      'OrganizationAdvancedQueueMetricsEnabledEvent',
      'OrganizationPublicPipelineCreationDisabledEvent',
      'OrganizationPublicPipelineCreationEnabledEvent',
      'OrganizationHostedAgentsTerminalAccessDisabledEvent',
      'OrganizationHostedAgentsTerminalAccessEnabledEvent',
      'OrganizationPipelineSettingsUpdatedEvent',
      'OrganizationPipelineSettingsUpdatedEvent',
      // The cluster was created through the API before the settings.
      'ClusterCreatedEvent',
    ]);
    expect(events[5]!.data).toEqual({ default_branch: null });
  });

  it('refuse a cluster of another organization, a default timeout over the maximum, and bad branch names (422 naming the field)', async () => {
    const { org, token } = await ctx().givenAdmin();
    const other = await ctx().givenAdmin();
    const foreign = await givenCluster(ctx(), other.org.slug, other.token);
    const url = `/v2/organizations/${org.slug}/pipeline-settings`;
    const fields = async (body: Record<string, unknown>) =>
      ((await ctx().http().patch(url).set(auth(token)).send(body).expect(422)).body.errors as { field: string }[]).map((e) => e.field);
    expect(await fields({ default_cluster_id: foreign })).toEqual(['default_cluster_id']);
    expect(await fields({ default_cluster_id: 'not-a-uuid' })).toEqual(['default_cluster_id']);
    expect(await fields({ default_timeout_in_minutes: 100, maximum_timeout_in_minutes: 50 })).toEqual(['default_timeout_in_minutes']);
    expect(await fields({ default_branch: 'has space' })).toEqual(['default_branch']);
    const bad = await ctx().http().patch(url).set(auth(token)).send({ default_timeout_in_minutes: 'soon' });
    expect(bad.status).toBeGreaterThanOrEqual(400);
    expect(bad.status).toBeLessThan(500);
    expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toMatchObject({
      default_cluster_id: null,
      default_timeout_in_minutes: null,
      default_branch: null,
    });
  });

  it('give new pipelines their defaults, and leave what a request sends alone', async () => {
    const { org, token } = await ctx().givenAdmin();
    const cluster = await givenCluster(ctx(), org.slug, token);
    const base = `/v2/organizations/${org.slug}`;
    const before = await ctx().http().post(`${base}/pipelines`).set(auth(token)).send(newPipeline('Before')).expect(201);
    expect(before.body).toMatchObject({ default_branch: 'main', cluster_id: null });
    await ctx()
      .http()
      .patch(`${base}/pipeline-settings`)
      .set(auth(token))
      .send({ default_branch: 'trunk', default_cluster_id: cluster, default_timeout_in_minutes: 30, maximum_timeout_in_minutes: 90 })
      .expect(200);
    const after = await ctx().http().post(`${base}/pipelines`).set(auth(token)).send(newPipeline('After')).expect(201);
    expect(after.body).toMatchObject({ default_branch: 'trunk', cluster_id: cluster, default_command_step_timeout: 30, maximum_command_step_timeout: 90 });
    const own = await ctx()
      .http()
      .post(`${base}/pipelines`)
      .set(auth(token))
      .send(newPipeline('Own', { default_branch: 'develop', cluster_id: '', default_command_step_timeout: 5, maximum_command_step_timeout: 10 }))
      .expect(201);
    expect(own.body).toMatchObject({ default_branch: 'develop', cluster_id: null, default_command_step_timeout: 5, maximum_command_step_timeout: 10 });
    // Existing pipelines keep theirs.
    expect((await ctx().http().get(`${base}/pipelines/${before.body.slug}`).set(auth(token)).expect(200)).body).toMatchObject({
      default_branch: 'main',
      cluster_id: null,
    });
    // manage.md: the default cluster can't be deleted; cleared first, it can.
    const unused = await givenCluster(ctx(), org.slug, token);
    await ctx().http().patch(`${base}/pipeline-settings`).set(auth(token)).send({ default_cluster_id: unused }).expect(200);
    const refused = await ctx().http().delete(`${base}/clusters/${unused}`).set(auth(token)).expect(422);
    expect(refused.body.message).toMatch(/default for new pipelines/);
    await ctx().http().patch(`${base}/pipeline-settings`).set(auth(token)).send({ default_cluster_id: null }).expect(200);
    await ctx().http().delete(`${base}/clusters/${unused}`).set(auth(token)).expect(204);
    expect((await ctx().http().get(`${base}/pipeline-settings`).set(auth(token)).expect(200)).body.default_cluster_id).toBeNull();
    expect((await ctx().http().post(`${base}/pipelines`).set(auth(token)).send(newPipeline('Later')).expect(201)).body.cluster_id).toBeNull();
  });

  it('decide whether members may make pipelines public; administrators always may', async () => {
    const { org, token } = await ctx().givenAdmin();
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    const base = `/v2/organizations/${org.slug}`;
    const refused = await ctx()
      .http()
      .post(`${base}/pipelines`)
      .set(auth(memberToken))
      .send(newPipeline('Public', { visibility: 'public' }))
      .expect(422);
    expect(refused.body.errors).toEqual([{ field: 'visibility', code: "can't be public: public pipeline creation is off for this organization's members" }]);
    const priv = await ctx().http().post(`${base}/pipelines`).set(auth(memberToken)).send(newPipeline('Private')).expect(201);
    await ctx().http().patch(`${base}/pipelines/${priv.body.slug}`).set(auth(memberToken)).send({ visibility: 'public' }).expect(422);
    await ctx()
      .http()
      .post(`${base}/pipelines`)
      .set(auth(token))
      .send(newPipeline('Admin public', { visibility: 'public' }))
      .expect(201);
    await ctx().http().put(`${base}/pipeline-settings/public-pipelines`).set(auth(token)).expect(200);
    await ctx()
      .http()
      .post(`${base}/pipelines`)
      .set(auth(memberToken))
      .send(newPipeline('Public now', { visibility: 'public' }))
      .expect(201);
    await ctx().http().patch(`${base}/pipelines/${priv.body.slug}`).set(auth(memberToken)).send({ visibility: 'public' }).expect(200);
  });

  it('are for administrators only; build export is unavailable (403)', async () => {
    const { org, token } = await ctx().givenAdmin();
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    const url = `/v2/organizations/${org.slug}/pipeline-settings`;
    await ctx().http().get(url).set(auth(memberToken)).expect(403);
    await ctx().http().patch(url).set(auth(memberToken)).send({ default_branch: 'x' }).expect(403);
    for (const path of ['hosted-agents-ssh', 'public-pipelines', 'advanced-queue-metrics'])
      await ctx().http().put(`${url}/${path}`).set(auth(memberToken)).expect(403);
    const exp = await ctx().http().put(`${url}/build-export`).set(auth(token)).send({ location: 's3://bucket', strategy_id: 's3' }).expect(403);
    expect(exp.body).toEqual({ message: "Build data export isn't available on this Windsock installation" });
    await ctx().http().delete(`${url}/build-export`).set(auth(token)).expect(403);
    const missing = await ctx().http().put(`${url}/build-export`).set(auth(token)).send({ strategy_id: 's3' });
    expect(missing.status).toBeGreaterThanOrEqual(400);
    expect(missing.status).toBeLessThan(500);
  });
});
