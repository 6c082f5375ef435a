import * as pipelineBadgeKey from '../../src/db/migrations/20261126110000_pipeline_badge_key';
import { describeEachDatabase } from '../support/context';
import { givenPipeline } from '../support/given';

describeEachDatabase('the pipeline badge key migration', (ctx) => {
  it('goes down and up, and a pipeline made before it gets its badge at the URL it always had', async () => {
    const { org, token } = await ctx().givenAdmin();
    const pipeline = await givenPipeline(ctx(), org, token);
    const db = ctx().services.db;
    await pipelineBadgeKey.down(db);
    expect(await db.schema.hasColumn('pipelines', 'badge_key')).toBe(false);
    await pipelineBadgeKey.up(db);
    expect(await db('pipelines').where({ id: pipeline.id }).first('badge_key')).toEqual({ badge_key: null });
    await ctx()
      .http()
      .get(new URL(pipeline.badge_url).pathname.replace(/\.svg$/, '.json'))
      .expect(200, { status: 'unknown' });
    expect(await db('pipelines').where({ id: pipeline.id }).first('badge_key')).toEqual({ badge_key: ctx().services.pipelines.badgeKey(pipeline.id) });
  });
});
