/**
 * Artifacts against the documented examples (test/fixtures/samples/artifacts__*): list by build,
 * list by job, get and download answer every documented key with the same JSON type, and an
 * artifact has exactly the documented fields, no more.
 */
import listForBuild from '../fixtures/samples/artifacts__01_list-artifacts-for-a-build.json';
import listForJob from '../fixtures/samples/artifacts__02_list-artifacts-for-a-job.json';
import getArtifact from '../fixtures/samples/artifacts__03_get-an-artifact.json';
import download from '../fixtures/samples/artifacts__04_download-an-artifact.json';
import { givenArtifacts, givenRunningJob } from '../artifacts/helpers';
import { expectConforms, responseSchema } from '../support/conformance';
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('conformance: artifacts', (ctx) => {
  it('answers list, get and download in the documented shapes, with exactly the documented fields', async () => {
    const { agent, job, token, url } = await givenRunningJob(ctx());
    const [id] = await givenArtifacts(ctx(), agent, job.id, [{ path: 'dist/app.tar.gz', content: 'gzip' }]);
    const jobUrl = `${url}/jobs/${job.id}`;
    const byBuild = (await ctx().http().get(`${url}/artifacts`).set(auth(token)).expect(200)).body;
    expectConforms(byBuild, [listForBuild], responseSchema('listBuildArtifacts'));
    const byJob = (await ctx().http().get(`${jobUrl}/artifacts`).set(auth(token)).expect(200)).body;
    expectConforms(byJob, [listForJob], responseSchema('listJobArtifacts'));
    const one = (await ctx().http().get(`${jobUrl}/artifacts/${id}`).set(auth(token)).expect(200)).body;
    expectConforms(one, [getArtifact], responseSchema('getArtifact'));
    expect(Object.keys(one).sort()).toEqual(Object.keys(getArtifact).sort());
    for (const documented of [...listForBuild, ...listForJob]) expect(Object.keys(byBuild[0]).sort()).toEqual(Object.keys(documented).sort());
    const res = await ctx().http().get(`${jobUrl}/artifacts/${id}/download`).set(auth(token)).expect(302);
    expectConforms(res.body, [download], responseSchema('downloadArtifact', '302'));
    expect(Object.keys(res.body)).toEqual(Object.keys(download));
  });
});
