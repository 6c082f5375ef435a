/**
 * The largest builds: a pipeline whose steps make thousands of jobs builds on both stores (on
 * Postgres such a build no longer fits the one-statement insert's 65,535 bindings and takes the
 * chunked path), and one that would go over the 4,000 jobs a build may have is a 422, not a 500.
 */
import { auth, describeEachDatabase } from '../support/context';

describeEachDatabase('large builds', (ctx) => {
  async function pipelineWithParallelSteps(token: string, orgSlug: string, steps: number): Promise<string> {
    const configuration = `steps:\n${Array.from({ length: steps }, (_, i) => `  - command: run ${i}\n    parallelism: 1000\n`).join('')}`;
    const p = await ctx()
      .http()
      .post(`/v2/organizations/${orgSlug}/pipelines`)
      .set(auth(token))
      .send({ name: `Wide ${steps}`, repository: 'git@github.com:acme/wide.git', configuration })
      .expect(201);
    return `/v2/organizations/${orgSlug}/pipelines/${p.body.slug}/builds`;
  }

  it('creates a build of 3,000 jobs and reads every one back', async () => {
    const { token, org } = await ctx().givenAdmin();
    const builds = await pipelineWithParallelSteps(token, org.slug, 3);
    const created = await ctx().http().post(builds).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    expect(created.body.jobs).toHaveLength(3000);
    const read = await ctx().http().get(`${builds}/${created.body.number}`).set(auth(token)).expect(200);
    expect(read.body.jobs).toHaveLength(3000);
    expect(new Set(read.body.jobs.map((j: { id: string }) => j.id)).size).toBe(3000);
    expect(read.body.jobs.filter((j: { command: string }) => j.command === 'run 2')).toHaveLength(1000);
  });

  it("refuses a build that would have more than 4,000 jobs (the docs' default quota) with a 422 saying why, and stores nothing", async () => {
    const { token, org } = await ctx().givenAdmin();
    const builds = await pipelineWithParallelSteps(token, org.slug, 6);
    const res = await ctx().http().post(builds).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(422);
    expect(res.body.message).toMatch(/more than 4000 jobs: the pipeline's steps make 6000/);
    const list = await ctx().http().get(builds).set(auth(token)).expect(200);
    expect(list.body).toEqual([]);
  });
});
