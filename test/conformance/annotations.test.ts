/**
 * Annotations against the documented examples (test/fixtures/samples/annotations__*): list and
 * create on a build and on a job answer every key of the examples, in the examples' order, with
 * the same JSON types, and the docs' own request renders to the docs' own `body_html`.
 */
import listBuild from '../fixtures/samples/annotations__01_list-annotations-for-a-build.json';
import createBuild from '../fixtures/samples/annotations__02_create-an-annotation-on-a-build.json';
import listJob from '../fixtures/samples/annotations__04_list-annotations-for-a-job.json';
import createJob from '../fixtures/samples/annotations__05_create-an-annotation-on-a-job.json';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';

describeEachDatabase('conformance: annotations', (ctx) => {
  it('answers create and list on a build and on a job in the documented shapes', async () => {
    const { org, token } = await ctx().givenAdmin();
    const { slug } = await givenPipeline(ctx(), org.slug, token);
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const buildUrl = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;

    const created = (
      await ctx()
        .http()
        .post(`${buildUrl}/annotations`)
        .set(auth(token))
        .send({ body: 'Hello world!', style: 'info', priority: 5, context: 'greeting' })
        .expect(201)
    ).body;
    expectConforms(created, [createBuild], responseSchema('createBuildAnnotation', '201'));
    expect(Object.keys(created)).toEqual(Object.keys(createBuild));
    expect(created).toMatchObject({ context: 'greeting', style: 'info', scope: 'build', priority: 5, body_html: createBuild.body_html });
    expectConforms((await ctx().http().get(`${buildUrl}/annotations`).set(auth(token)).expect(200)).body, [listBuild], responseSchema('listBuildAnnotations'));

    const jobUrl = `${buildUrl}/jobs/${build.jobs[0]!.id}/annotations`;
    const onJob = (
      await ctx().http().post(jobUrl).set(auth(token)).send({ body: 'Test results: 42 passed', style: 'success', context: 'test-results' }).expect(201)
    ).body;
    expectConforms(onJob, [createJob], responseSchema('createJobAnnotation', '201'));
    expect(onJob).toMatchObject({ context: 'test-results', style: 'success', scope: 'job', priority: 3, body_html: createJob.body_html });
    expectConforms((await ctx().http().get(jobUrl).set(auth(token)).expect(200)).body, [listJob], responseSchema('listJobAnnotations'));
  });
});
