import * as pipelineWebhookSecret from '../../src/db/migrations/20261126101000_pipeline_webhook_secret';
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('the pipeline webhook secret migration', (ctx) => {
  it('gives pipelines made before it generation 0: their secret is the one they always had', async () => {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const created = await ctx()
      .http()
      .post(base)
      .set(auth(token))
      .send({ name: 'older', repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make\n' })
      .expect(201);
    const before = ctx().services.keys.derive('pipeline-webhook-secret', created.body.id, 64);

    const db = ctx().services.db;
    await pipelineWebhookSecret.down(db);
    expect(await db.schema.hasColumn('pipelines', 'webhook_secret_generation')).toBe(false);
    await pipelineWebhookSecret.up(db);
    expect(await db('pipelines').where({ id: created.body.id }).first('webhook_secret_generation')).toEqual({ webhook_secret_generation: 0 });
    expect((await ctx().http().get(`${base}/older/webhook-secret`).set(auth(token)).expect(200)).body).toEqual({ secret: before });
  });
});
