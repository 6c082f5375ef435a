import * as buildTriggeredFrom from '../../src/db/migrations/20261125130000_build_triggered_from';
import { withoutOutboxTriggers } from '../../src/db/migrations/20261126090000_outbox';
import * as notify from '../../src/db/migrations/20261126102000_notify';
import * as pipelineBadgeKey from '../../src/db/migrations/20261126110000_pipeline_badge_key';
import * as buildWebhookEvent from '../../src/db/migrations/20261129040000_build_webhook_event';
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('the build triggered_from migration', (ctx) => {
  it('fills the link of builds triggered before it from their trigger jobs', async () => {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipelines`;
    for (const [name, configuration] of [
      ['deploy', 'steps:\n  - command: ./deploy.sh\n'],
      ['app', 'steps:\n  - trigger: deploy\n'],
    ]) {
      await ctx().http().post(base).set(auth(token)).send({ name, repository: 'git@github.com:acme/app.git', configuration }).expect(201);
    }
    const parent = (await ctx().http().post(`${base}/app/builds`).set(auth(token)).send({ commit: 'abc', branch: 'main' }).expect(201)).body;
    const expected = { build_id: parent.id, build_number: parent.number, build_pipeline_slug: 'app' };
    const child = async () => (await ctx().http().get(`${base}/deploy/builds/1`).set(auth(token)).expect(200)).body;
    expect((await child()).triggered_from).toEqual(expected);

    const db = ctx().services.db;
    // Rolled back and forward in migration order, the later `notify`, `pipelines.badge_key` and `builds.webhook_event` too, so the columns
    // keep the order the statements the app has already prepared were made for; the outbox's
    // triggers set aside while SQLite rebuilds the builds table.
    await buildWebhookEvent.down(db);
    await pipelineBadgeKey.down(db);
    await notify.down(db);
    await withoutOutboxTriggers(db, async () => {
      await buildTriggeredFrom.down(db);
      expect(await db.schema.hasColumn('builds', 'triggered_from')).toBe(false);
      await buildTriggeredFrom.up(db);
    });
    await notify.up(db);
    await pipelineBadgeKey.up(db);
    await buildWebhookEvent.up(db);
    expect((await child()).triggered_from).toEqual(expected);
    expect((await ctx().http().get(`${base}/app/builds/1`).set(auth(token)).expect(200)).body.triggered_from).toBeNull();
  });
});
