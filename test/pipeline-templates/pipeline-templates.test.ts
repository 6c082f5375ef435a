/**
 * Pipeline templates: the documented representation, CRUD, the admin rules (administrators
 * manage them; other members see and assign only `available` ones), and what a template does:
 * a pipeline naming one in `pipeline_template_uuid` builds from the template's configuration,
 * an update of the template changes the next builds, and a template in use cannot be deleted.
 */
import createSample from '../fixtures/samples/pipeline_templates__03_create-a-pipeline-template.json';
import listSample from '../fixtures/samples/pipeline_templates__01_list-pipeline-templates.json';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { branchPush, buildsOf, deliverGitHub, givenTarget } from '../incoming-webhooks/helpers';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const BUILD_YAML = 'steps:\n  - label: ":hammer: Build"\n    command: "scripts/build.sh"';

async function givenTemplate(ctx: TestContext, org: { slug: string }, token: string, body: Record<string, unknown> = {}) {
  const res = await ctx
    .http()
    .post(`/v2/organizations/${org.slug}/pipeline-templates`)
    .set(auth(token))
    .send({ name: `Template ${Math.random().toString(36).slice(2, 8)}`, configuration: BUILD_YAML, ...body });
  if (res.status !== 201) throw new Error(`template: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body as { uuid: string; name: string; configuration: string; available: boolean };
}

const commands = (build: { jobs: { type: string; command?: string | null }[] }) => build.jobs.filter((j) => j.type === 'script').map((j) => j.command);

describeEachDatabase('pipeline templates', (ctx) => {
  it('are created, read, listed, updated and deleted with the documented fields', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipeline-templates`;
    const created = await ctx()
      .http()
      .post(base)
      .set(auth(token))
      .send({ name: ' Build template ', description: 'Shared build steps configuration', configuration: BUILD_YAML, available: true })
      .expect(201);
    expect(Object.keys(created.body).sort()).toEqual(Object.keys(createSample).sort());
    const uuid = created.body.uuid as string;
    expect(created.body).toMatchObject({
      name: 'Build template',
      description: 'Shared build steps configuration',
      configuration: BUILD_YAML,
      available: true,
      url: `http://windsock.test/v2/organizations/${org.slug}/pipeline-templates/${uuid}`,
      web_url: `http://windsock.test/organizations/${org.slug}/pipeline-templates/${uuid}`,
      created_by: { id: user.id, name: user.name, email: user.email },
      updated_by: { id: user.id },
    });
    expect(Buffer.from(created.body.graphql_id, 'base64').toString()).toBe(`PipelineTemplate---${uuid}`);
    expect(created.body.created_at).toMatch(ISO);
    expect(created.body.updated_at).toBe(created.body.created_at);

    // `available` defaults to false; `description` to null.
    const plain = await givenTemplate(ctx(), org, token, { name: 'Another' });
    expect(plain).toMatchObject({ available: false, description: null });

    const got = await ctx().http().get(`${base}/${uuid}`).set(auth(token)).expect(200);
    expect(got.body).toEqual(created.body);
    // The UUID is read case-insensitively.
    await ctx().http().get(`${base}/${uuid.toUpperCase()}`).set(auth(token)).expect(200);

    const list = await ctx().http().get(base).set(auth(token)).expect(200);
    expect(Object.keys(list.body[0]).sort()).toEqual(Object.keys(listSample[0]!).sort());
    expect(list.body.map((t: { name: string }) => t.name)).toEqual(['Another', 'Build template']);
    const page = await ctx().http().get(`${base}?per_page=1`).set(auth(token)).expect(200);
    expect(page.body).toHaveLength(1);
    expect(page.headers.link).toContain('rel="next"');

    const updated = await ctx().http().patch(`${base}/${uuid}`).set(auth(token)).send({ available: false, description: '' }).expect(200);
    expect(updated.body).toMatchObject({ uuid, name: 'Build template', available: false, description: null, configuration: BUILD_YAML });
    expect(Date.parse(updated.body.updated_at)).toBeGreaterThanOrEqual(Date.parse(created.body.updated_at));

    await ctx().http().delete(`${base}/${uuid}`).set(auth(token)).expect(204);
    await ctx().http().get(`${base}/${uuid}`).set(auth(token)).expect(404);
    await ctx().http().delete(`${base}/${uuid}`).set(auth(token)).expect(404);
  });

  it('refuse a blank name or configuration and a configuration that is not a pipeline, naming the field', async () => {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipeline-templates`;
    const blank = await ctx().http().post(base).set(auth(token)).send({ name: ' ', configuration: ' ' }).expect(422);
    expect(blank.body.errors.map((e: { field: string }) => e.field).sort()).toEqual(['configuration', 'name']);
    const missing = await ctx().http().post(base).set(auth(token)).send({ name: 'x' }).expect(422);
    expect(missing.body.message).toBeDefined();
    const bad = await ctx().http().post(base).set(auth(token)).send({ name: 'x', configuration: 'steps: [[[' }).expect(422);
    expect(bad.body.errors.length).toBeGreaterThan(0);
    const t = await givenTemplate(ctx(), org, token);
    const badUpdate = await ctx().http().patch(`${base}/${t.uuid}`).set(auth(token)).send({ configuration: 'steps:\n  - wait: ~\n    bogus: [' }).expect(422);
    expect(badUpdate.body.errors.length).toBeGreaterThan(0);
    // Nothing changed.
    expect((await ctx().http().get(`${base}/${t.uuid}`).set(auth(token)).expect(200)).body.configuration).toBe(BUILD_YAML);
    await ctx().http().get(`${base}/not-a-uuid`).set(auth(token)).expect(404);
  });

  it('are managed by administrators only; other members see and assign only available ones', async () => {
    const { org, token } = await ctx().givenAdmin();
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    const base = `/v2/organizations/${org.slug}/pipeline-templates`;
    const hidden = await givenTemplate(ctx(), org, token, { name: 'Hidden' });
    const shared = await givenTemplate(ctx(), org, token, { name: 'Shared', available: true });

    const seen = await ctx().http().get(base).set(auth(memberToken)).expect(200);
    expect(seen.body.map((t: { uuid: string }) => t.uuid)).toEqual([shared.uuid]);
    await ctx().http().get(`${base}/${hidden.uuid}`).set(auth(memberToken)).expect(404);
    await ctx().http().get(`${base}/${shared.uuid}`).set(auth(memberToken)).expect(200);

    await ctx().http().post(base).set(auth(memberToken)).send({ name: 'Mine', configuration: BUILD_YAML }).expect(403);
    await ctx().http().patch(`${base}/${shared.uuid}`).set(auth(memberToken)).send({ name: 'Renamed' }).expect(403);
    await ctx().http().delete(`${base}/${shared.uuid}`).set(auth(memberToken)).expect(403);

    // A member assigns an available template, not one that is not.
    const refused = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(memberToken))
      .send({ name: 'Member pipeline', repository: 'git@github.com:acme/app.git', pipeline_template_uuid: hidden.uuid })
      .expect(422);
    expect(refused.body.errors).toEqual([expect.objectContaining({ field: 'pipeline_template_uuid' })]);
    const p = await givenPipeline(ctx(), org, memberToken, { pipeline_template_uuid: shared.uuid });
    expect(p.pipeline_template_uuid).toBe(shared.uuid);
    // An administrator may assign any template of the organization.
    const q = await givenPipeline(ctx(), org, token, { pipeline_template_uuid: hidden.uuid });
    expect(q.pipeline_template_uuid).toBe(hidden.uuid);
  });

  it('need the read_pipeline_templates and write_pipeline_templates scopes', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const t = await givenTemplate(ctx(), org, token);
    const base = `/v2/organizations/${org.slug}/pipeline-templates`;
    const readOnly = await ctx().givenToken(user, [org], ['read_pipeline_templates']);
    const none = await ctx().givenToken(user, [org], ['read_pipelines', 'write_pipelines']);
    await ctx().http().get(base).set(auth(readOnly)).expect(200);
    const denied = await ctx().http().post(base).set(auth(readOnly)).send({ name: 'x', configuration: BUILD_YAML }).expect(403);
    expect(denied.body.message).toBe("Your access token doesn't have the write_pipeline_templates scope");
    await ctx().http().patch(`${base}/${t.uuid}`).set(auth(readOnly)).send({ name: 'x' }).expect(403);
    await ctx().http().delete(`${base}/${t.uuid}`).set(auth(readOnly)).expect(403);
    const noRead = await ctx().http().get(`${base}/${t.uuid}`).set(auth(none)).expect(403);
    expect(noRead.body.message).toBe("Your access token doesn't have the read_pipeline_templates scope");
  });

  it('govern the builds of the pipelines that use them, and an update governs the next builds', async () => {
    const { org, token } = await ctx().givenAdmin();
    const t = await givenTemplate(ctx(), org, token, { configuration: 'env:\n  FROM: template\nsteps:\n  - label: Build\n    command: scripts/build.sh\n' });
    // A pipeline with a template needs no configuration of its own.
    const p = await givenPipeline(ctx(), org, token, { configuration: undefined, pipeline_template_uuid: t.uuid });
    expect(p.pipeline_template_uuid).toBe(t.uuid);
    expect((await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).expect(200)).body.pipeline_template_uuid).toBe(t.uuid);
    const first = await givenBuild(ctx(), org, p, token);
    expect(commands(first)).toEqual(['scripts/build.sh']);
    expect(first.jobs[0]!.name).toBe('Build');

    // A pipeline with steps of its own builds from the template's all the same.
    const own = await givenPipeline(ctx(), org, token, { configuration: 'steps:\n  - command: own.sh\n', pipeline_template_uuid: t.uuid });
    expect(commands(await givenBuild(ctx(), org, own, token))).toEqual(['scripts/build.sh']);

    // The template's env is the build's pipeline env.
    const job = first.jobs[0]!;
    const env = await ctx()
      .http()
      .get(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds/${first.number}/jobs/${job.id}/env`)
      .set(auth(token))
      .expect(200);
    expect(env.body.env.FROM).toBe('template');

    await ctx()
      .http()
      .patch(`/v2/organizations/${org.slug}/pipeline-templates/${t.uuid}`)
      .set(auth(token))
      .send({ configuration: 'steps:\n  - command: scripts/lint.sh\n  - wait: ~\n  - command: scripts/test.sh\n' })
      .expect(200);
    const second = await givenBuild(ctx(), org, p, token);
    expect(commands(second)).toEqual(['scripts/lint.sh', 'scripts/test.sh']);
    // The first build keeps the jobs it was created with.
    const again = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds/${first.number}`).set(auth(token)).expect(200);
    expect(commands(again.body)).toEqual(['scripts/build.sh']);
    // A rebuild takes the template's current steps, as a rebuild takes the pipeline's.
    const rebuilt = await ctx().http().put(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds/${first.number}/rebuild`).set(auth(token)).expect(200);
    expect(commands(rebuilt.body)).toEqual(['scripts/lint.sh', 'scripts/test.sh']);

    // Detached (null or ""), the pipeline builds from its own steps again.
    const detached = await ctx()
      .http()
      .patch(`/v2/organizations/${org.slug}/pipelines/${own.slug}`)
      .set(auth(token))
      .send({ pipeline_template_uuid: '' })
      .expect(200);
    expect(detached.body.pipeline_template_uuid).toBeNull();
    expect(commands(await givenBuild(ctx(), org, own, token))).toEqual(['own.sh']);
    // And attached by an update.
    await ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${own.slug}`).set(auth(token)).send({ pipeline_template_uuid: t.uuid }).expect(200);
    expect(commands(await givenBuild(ctx(), org, own, token))).toEqual(['scripts/lint.sh', 'scripts/test.sh']);
  });

  it('govern builds that trigger steps and webhooks create, too', async () => {
    const { org, token } = await ctx().givenAdmin();
    const t = await givenTemplate(ctx(), org, token, { configuration: 'steps:\n  - command: scripts/from-template.sh\n' });
    const child = await givenPipeline(ctx(), org, token, { configuration: 'steps:\n  - command: own.sh\n', pipeline_template_uuid: t.uuid });
    const parent = await givenPipeline(ctx(), org, token, { configuration: `steps:\n  - trigger: ${child.slug}\n    async: true\n` });
    await givenBuild(ctx(), org, parent, token);
    const builds = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${child.slug}/builds`).set(auth(token)).expect(200);
    expect(builds.body).toHaveLength(1);
    expect(builds.body[0].source).toBe('trigger_job');
    expect(commands(builds.body[0])).toEqual(['scripts/from-template.sh']);

    // A push delivered by GitHub builds from the template as well.
    const target = await givenTarget(ctx());
    const hooked = await givenTemplate(ctx(), target.org, target.token, { configuration: 'steps:\n  - command: scripts/on-push.sh\n' });
    await ctx()
      .http()
      .patch(`/v2/organizations/${target.org.slug}/pipelines/${target.pipeline.slug}`)
      .set(auth(target.token))
      .send({ pipeline_template_uuid: hooked.uuid })
      .expect(200);
    await deliverGitHub(ctx(), target, 'push', branchPush()).expect(201);
    const [pushed] = await buildsOf(ctx(), target);
    expect(commands(pushed as never)).toEqual(['scripts/on-push.sh']);
  });

  it('cannot be assigned across organizations or when they do not exist', async () => {
    const a = await ctx().givenAdmin();
    const b = await ctx().givenAdmin();
    const theirs = await givenTemplate(ctx(), b.org, b.token, { available: true });
    for (const uuid of [theirs.uuid, '00000000-0000-4000-8000-000000000000', 'not-a-uuid']) {
      const res = await ctx()
        .http()
        .post(`/v2/organizations/${a.org.slug}/pipelines`)
        .set(auth(a.token))
        .send({ name: `P ${uuid}`, repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: x\n', pipeline_template_uuid: uuid })
        .expect(422);
      expect(res.body.errors).toEqual([expect.objectContaining({ field: 'pipeline_template_uuid' })]);
    }
    const p = await givenPipeline(ctx(), a.org, a.token);
    const res = await ctx()
      .http()
      .patch(`/v2/organizations/${a.org.slug}/pipelines/${p.slug}`)
      .set(auth(a.token))
      .send({ pipeline_template_uuid: theirs.uuid })
      .expect(422);
    expect(res.body.errors).toEqual([expect.objectContaining({ field: 'pipeline_template_uuid' })]);
    // Another organization's template is not found there either.
    await ctx().http().get(`/v2/organizations/${a.org.slug}/pipeline-templates/${theirs.uuid}`).set(auth(a.token)).expect(404);
    await ctx().http().delete(`/v2/organizations/${a.org.slug}/pipeline-templates/${theirs.uuid}`).set(auth(a.token)).expect(404);
  });

  it('cannot be deleted while a pipeline uses them (as the docs say), and can once none does', async () => {
    const { org, token } = await ctx().givenAdmin();
    const t = await givenTemplate(ctx(), org, token);
    const p = await givenPipeline(ctx(), org, token, { pipeline_template_uuid: t.uuid });
    const url = `/v2/organizations/${org.slug}/pipeline-templates/${t.uuid}`;
    const refused = await ctx().http().delete(url).set(auth(token)).expect(422);
    expect(refused.body.message).toMatch(/1 pipeline uses it/);
    // Archived pipelines count too.
    await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/archive`).set(auth(token)).expect(200);
    await ctx().http().delete(url).set(auth(token)).expect(422);
    await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/unarchive`).set(auth(token)).expect(200);
    await ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).send({ pipeline_template_uuid: null }).expect(200);
    await ctx().http().delete(url).set(auth(token)).expect(204);
  });
});
