/**
 * Pipeline schedules against the documented examples (test/fixtures/samples/pipeline_schedules__*):
 * the docs' own create and update requests answer every key of the examples, in the examples'
 * order, with the same JSON types, and list and get answer the same shapes.
 */
import list from '../fixtures/samples/pipeline_schedules__01_list-pipeline-schedules.json';
import get from '../fixtures/samples/pipeline_schedules__02_get-a-pipeline-schedule.json';
import create from '../fixtures/samples/pipeline_schedules__03_create-a-pipeline-schedule.json';
import update from '../fixtures/samples/pipeline_schedules__04_update-a-pipeline-schedule.json';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase } from '../support/context';
import { givenPipeline } from '../support/given';

describeEachDatabase('conformance: pipeline schedules', (ctx) => {
  it('answers the documented requests in the documented shapes', async () => {
    const { org, token } = await ctx().givenAdmin();
    const { slug } = await givenPipeline(ctx(), org.slug, token);
    const base = `/v2/organizations/${org.slug}/pipelines/${slug}/schedules`;

    const created = (
      await ctx()
        .http()
        .post(base)
        .set(auth(token))
        .send({
          label: 'Nightly build',
          cronline: '@daily',
          message: 'Nightly scheduled build',
          commit: 'HEAD',
          branch: 'main',
          env: { DEPLOY_ENV: 'staging' },
          enabled: true,
        })
        .expect(201)
    ).body;
    expectConforms(created, [create], responseSchema('createPipelineSchedule', '201'));
    expect(Object.keys(created)).toEqual(Object.keys(create));
    const { id: _id, graphql_id: _g, url: _u, next_build_at: _n, created_at: _c, created_by: _by, pipeline: _p, ...fields } = create;
    expect(created).toMatchObject(fields);

    expectConforms((await ctx().http().get(base).set(auth(token)).expect(200)).body, [list], responseSchema('listPipelineSchedules'));
    expectConforms((await ctx().http().get(`${base}/${created.id}`).set(auth(token)).expect(200)).body, [get], responseSchema('getPipelineSchedule'));

    const updated = (await ctx().http().put(`${base}/${created.id}`).set(auth(token)).send({ cronline: '@hourly', enabled: false }).expect(200)).body;
    expectConforms(updated, [update], responseSchema('updatePipelineSchedule'));
    expect(Object.keys(updated)).toEqual(Object.keys(update));
    expect(updated).toMatchObject({ cronline: update.cronline, enabled: update.enabled, next_build_at: update.next_build_at });
  });
});
