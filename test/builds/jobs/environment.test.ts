/**
 * The `BUILDKITE_*` variables a job runs with that describe its build, pipeline and organization,
 * as the docs' Environment variables page lists them: the source of the build, the pipeline's id,
 * name and default branch, and the build a trigger step or a rebuild came from ("" when none).
 */
import { auth, describeEachDatabase } from '../../support/context';
import { givenBuild, givenPipeline } from '../../support/given';
import type { BuildJson } from '../../support/types';

describeEachDatabase('a job’s build environment', (ctx) => {
  it('names the pipeline, the source, the triggering build and the rebuilt one', async () => {
    const { org, token } = await ctx().givenAdmin();
    const deploy = await givenPipeline(ctx(), org, token, {
      name: 'Deploy Things',
      default_branch: 'release',
      configuration: 'steps:\n  - command: ./deploy.sh\n',
    });
    const app = await givenPipeline(ctx(), org, token, { configuration: `steps:\n  - trigger: ${deploy.slug}\n` });
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const envOf = async (slug: string, b: BuildJson) =>
      (await ctx().http().get(`${base}/${slug}/builds/${b.number}/jobs/${b.jobs[0]!.id}/env`).set(auth(token)).expect(200)).body.env as Record<string, string>;

    const parent = await givenBuild(ctx(), org, app.slug, token);
    const [child] = (await ctx().http().get(`${base}/${deploy.slug}/builds`).set(auth(token)).expect(200)).body as BuildJson[];
    expect(await envOf(deploy.slug, child!)).toMatchObject({
      BUILDKITE_SOURCE: 'trigger_job',
      BUILDKITE_PIPELINE_ID: deploy.id,
      BUILDKITE_PIPELINE_NAME: 'Deploy Things',
      BUILDKITE_PIPELINE_DEFAULT_BRANCH: 'release',
      BUILDKITE_TRIGGERED_FROM_BUILD_ID: parent.id,
      BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: String(parent.number),
      BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: app.slug,
      BUILDKITE_REBUILT_FROM_BUILD_ID: '',
      BUILDKITE_REBUILT_FROM_BUILD_NUMBER: '',
    });

    const rebuilt = (await ctx().http().put(`${base}/${deploy.slug}/builds/${child!.number}/rebuild`).set(auth(token)).expect(200)).body as BuildJson;
    expect(await envOf(deploy.slug, rebuilt)).toMatchObject({
      BUILDKITE_SOURCE: 'api',
      BUILDKITE_REBUILT_FROM_BUILD_ID: child!.id,
      BUILDKITE_REBUILT_FROM_BUILD_NUMBER: String(child!.number),
      BUILDKITE_TRIGGERED_FROM_BUILD_ID: '',
      BUILDKITE_TRIGGERED_FROM_BUILD_NUMBER: '',
      BUILDKITE_TRIGGERED_FROM_BUILD_PIPELINE_SLUG: '',
    });
  });
});
