import http from 'node:http';
import type { AddressInfo } from 'node:net';
import createSample from '../fixtures/samples/pipelines__03_create-a-yaml-pipeline.json';
import getSample from '../fixtures/samples/pipelines__02_get-a-pipeline.json';
import { auth, createTestContext, describeEachDatabase, PUBLIC_URL, type TestContext } from '../support/context';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const UTC = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/;

const YAML_CONFIG = 'env:\n  FOO: bar\nsteps:\n  - command: "script/release.sh"\n    name: "Build :package:"\n';

let seq = 0;
function body(extra: Record<string, unknown> = {}) {
  seq += 1;
  return { name: `My Pipeline ${seq}`, repository: 'git@github.com:acme-inc/my-pipeline.git', configuration: YAML_CONFIG, ...extra };
}

async function create(ctx: TestContext, org: { slug: string }, token: string, extra: Record<string, unknown> = {}) {
  const res = await ctx.http().post(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).send(body(extra));
  if (res.status !== 201) throw new Error(`create failed: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

describeEachDatabase('pipelines', (ctx) => {
  // pipelines.md: `emoji` and `color` are optional properties of create and update.
  it('keeps the emoji and hex color that represent a pipeline, and refuses a color that is not a hex code', async () => {
    const { org, token } = await ctx().givenAdmin();
    const made = await create(ctx(), org, token, { emoji: ':rocket:', color: '#ff5733' });
    expect(made).toMatchObject({ emoji: ':rocket:', color: '#FF5733' });
    const url = `/v2/organizations/${org.slug}/pipelines/${made.slug}`;
    const bad = await ctx().http().patch(url).set(auth(token)).send({ color: 'red' }).expect(422);
    expect(bad.body.errors).toEqual([{ field: 'color', code: 'must be a hex color code such as #FF5733' }]);
    await ctx().http().patch(url).set(auth(token)).send({ emoji: '', color: null }).expect(200);
    expect((await ctx().http().get(url).set(auth(token)).expect(200)).body).toMatchObject({ emoji: null, color: null });
    expect((await create(ctx(), org, token)).emoji).toBeNull();
  });

  // The tags page: "up to 10 unique tags ... up to 128 characters".
  it('keeps up to 10 unique tags of up to 128 characters, a repeated one once', async () => {
    const { org, token } = await ctx().givenAdmin();
    const long = `:rocket: ${'x'.repeat(119)}`;
    expect((await create(ctx(), org, token, { tags: [long, 'fast', long] })).tags).toEqual([long, 'fast']);
    const tooLong = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send(body({ tags: [`${long}y`] }));
    expect(tooLong.status).toBe(422);
  });

  describe('create', () => {
    it('creates a YAML pipeline in the sample shape, deriving steps, env, slug and provider', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const res = await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(token))
        .send({ name: 'My Pipeline X', repository: 'git@github.com:acme-inc/my-pipeline.git', configuration: YAML_CONFIG })
        .expect(201);
      const p = res.body;
      for (const key of Object.keys(createSample)) expect(p).toHaveProperty(key);
      expect(p.slug).toBe('my-pipeline-x');
      expect(p.url).toBe(`${PUBLIC_URL}/v2/organizations/${org.slug}/pipelines/my-pipeline-x`);
      expect(p.web_url).toBe(`${PUBLIC_URL}/${org.slug}/my-pipeline-x`);
      expect(p.builds_url).toBe(`${p.url}/builds`);
      expect(p.graphql_id).toBe(Buffer.from(`Pipeline---${p.id}`).toString('base64'));
      expect(p.created_at).toMatch(ISO);
      expect(p.archived_at).toBeNull();
      expect(p.env).toEqual({ FOO: 'bar' });
      expect(p.configuration).toBe(YAML_CONFIG);
      expect(p.steps).toEqual([
        expect.objectContaining({
          type: 'script',
          name: 'Build :package:',
          command: 'script/release.sh',
          artifact_paths: null,
          branch_configuration: null,
          env: {},
          timeout_in_minutes: null,
          agent_query_rules: [],
          concurrency: null,
          parallelism: null,
        }),
      ]);
      expect(p.provider.id).toBe('github');
      expect(p.provider.settings).toEqual(createSample.provider.settings);
      expect(p.provider.webhook_url).toMatch(new RegExp(`^${PUBLIC_URL}/deliver/[0-9a-f]{50}$`));
      expect(p.badge_url).toMatch(new RegExp(`^${PUBLIC_URL}/badges/[0-9a-f]{50}\\.svg$`));
      expect(p.created_by.id).toBe(user.id);
      expect(p.default_branch).toBe('main');
      expect(p.visibility).toBe('private');
      expect(p.allow_rebuilds).toBe(true);
      expect([p.scheduled_builds_count, p.running_builds_count, p.scheduled_jobs_count, p.running_jobs_count, p.waiting_jobs_count]).toEqual([0, 0, 0, 0, 0]);
    });

    it('creates a visual-steps pipeline with each step type, and shows a trigger step as the docs do', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, {
        configuration: undefined,
        env: { GLOBAL: '1' },
        steps: [
          { type: 'script', name: 'Test', command: 'make test', agent_query_rules: ['queue=default'], parallelism: 3 },
          { type: 'waiter' },
          { type: 'manual', label: 'Deploy?' },
          // pipelines.md, "Create a visual step pipeline": the request and the step its response shows.
          { type: 'trigger', label: 'Deploy :ship:', trigger_project_slug: 'deploy', trigger_commit: 'HEAD', trigger_branch: 'main', trigger_async: true },
          {
            type: 'trigger',
            name: 'Notify',
            trigger_project_slug: 'notifier',
            trigger_message: 'From upstream',
            trigger_env: { A: '1' },
            trigger_meta_data: { k: 'v' },
          },
        ],
      });
      expect(p.configuration).toBeNull();
      expect(p.env).toEqual({ GLOBAL: '1' });
      expect(p.steps.map((s: { type: string }) => s.type)).toEqual(['script', 'waiter', 'manual', 'trigger', 'trigger']);
      expect(p.steps[0]).toMatchObject({ name: 'Test', command: 'make test', agent_query_rules: ['queue=default'], parallelism: 3 });
      expect(p.steps[2]).toMatchObject({ label: 'Deploy?' });
      expect(p.steps[3]).toEqual({
        type: 'trigger',
        label: 'Deploy :ship:',
        pipeline: 'deploy',
        build: { message: null, branch: 'main', commit: 'HEAD', env: null },
        async: true,
        branch_configuration: null,
        concurrency: null,
        parallelism: null,
      });
      expect(p.steps[4]).toMatchObject({
        label: 'Notify',
        pipeline: 'notifier',
        build: { message: 'From upstream', branch: null, commit: 'HEAD', env: { A: '1' }, meta_data: { k: 'v' } },
        async: false,
      });
      // A step read can be sent back as it is.
      const echoed = await ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).send({ steps: p.steps }).expect(200);
      expect(echoed.body.steps).toEqual(p.steps);
    });

    it('keeps a clone mirror URL, gives it to the jobs as BUILDKITE_GIT_REMOTE_MIRROR_URL, and refuses one with credentials, a query or a fragment', async () => {
      const { org, token } = await ctx().givenAdmin();
      const url = (slug: string) => `/v2/organizations/${org.slug}/pipelines/${slug}`;
      const plain = await create(ctx(), org, token);
      expect(plain.clone_mirror_url).toBeNull();
      const p = await create(ctx(), org, token, { clone_mirror_url: 'git@mirror.example.com:acme/my-pipeline.git' });
      expect(p.clone_mirror_url).toBe('git@mirror.example.com:acme/my-pipeline.git');
      // The env of the first job of a new build of the pipeline.
      const jobEnvOf = async (slug: string) => {
        const build = (
          await ctx()
            .http()
            .post(`${url(slug)}/builds`)
            .set(auth(token))
            .send({ commit: 'HEAD', branch: 'main' })
            .expect(201)
        ).body;
        return (
          await ctx()
            .http()
            .get(`${url(slug)}/builds/${build.number}/jobs/${build.jobs[0].id}/env`)
            .set(auth(token))
            .expect(200)
        ).body.env as Record<string, string>;
      };
      expect((await jobEnvOf(p.slug)).BUILDKITE_GIT_REMOTE_MIRROR_URL).toBe('git@mirror.example.com:acme/my-pipeline.git');
      const plainEnv = await jobEnvOf(plain.slug);
      expect('BUILDKITE_GIT_REMOTE_MIRROR_URL' in plainEnv).toBe(false);

      const patch = (b: object) => ctx().http().patch(url(p.slug)).set(auth(token)).send(b);
      expect((await patch({ clone_mirror_url: 'https://mirror.example.com/acme/app.git' }).expect(200)).body.clone_mirror_url).toBe(
        'https://mirror.example.com/acme/app.git',
      );
      expect((await patch({ clone_mirror_url: 'ssh://git@mirror.example.com/acme/app.git' }).expect(200)).body.clone_mirror_url).toBe(
        'ssh://git@mirror.example.com/acme/app.git',
      );
      for (const [bad, code] of [
        ['https://user:secret@mirror.example.com/a.git', 'must not contain credentials'],
        ['https://token@mirror.example.com/a.git', 'must not contain credentials'],
        ['//user:secret@mirror.example.com/a.git', 'must not contain credentials'],
        ['ftp://user@mirror.example.com/a.git', 'must not contain credentials'],
        ['git:secret@mirror.example.com:a.git', 'must not contain credentials'],
        ['https://mirror.example.com/a.git?ref=x', 'must not contain a query'],
        ['git@mirror.example.com:a.git#main', 'must not contain a fragment'],
        ['not a url', 'is not a repository URL'],
      ]) {
        const res = await patch({ clone_mirror_url: bad });
        expect({ bad, status: res.status, errors: res.body.errors }).toEqual({ bad, status: 422, errors: [{ field: 'clone_mirror_url', code }] });
      }
      expect((await ctx().http().get(url(p.slug)).set(auth(token)).expect(200)).body.clone_mirror_url).toBe('ssh://git@mirror.example.com/acme/app.git');
      // null or "" removes it.
      expect((await patch({ clone_mirror_url: '' }).expect(200)).body.clone_mirror_url).toBeNull();
      await patch({ clone_mirror_url: 'git@mirror.example.com:a.git' }).expect(200);
      expect((await patch({ clone_mirror_url: null }).expect(200)).body.clone_mirror_url).toBeNull();
    });

    it('accepts a configuration that only uploads the pipeline from the repository', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, { configuration: 'steps:\n  - command: "buildkite-agent pipeline upload"\n' });
      expect(p.steps[0]).toMatchObject({ type: 'script', command: 'buildkite-agent pipeline upload' });
    });

    it('is liberal in what clients send: empty cluster_id, tags, unknown and server-owned properties', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, {
        cluster_id: '',
        tags: ['fast'],
        unknown_property: 'ignored',
        id: '00000000-0000-0000-0000-000000000000',
        created_at: '2000-01-01T00:00:00.000Z',
        archived_at: '2000-01-01T00:00:00.000Z',
        scheduled_builds_count: 99,
      });
      expect(p.cluster_id).toBeNull();
      expect(p.tags).toEqual(['fast']);
      expect(p.id).not.toBe('00000000-0000-0000-0000-000000000000');
      expect(p.archived_at).toBeNull();
      expect(p.scheduled_builds_count).toBe(0);
      expect(p).not.toHaveProperty('unknown_property');
      expect(new Date(p.created_at).getFullYear()).toBeGreaterThan(2020);
    });

    it('takes an explicit slug: letters, digits and dashes, not starting with a dash', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, { slug: 'custom-slug' });
      expect(p.slug).toBe('custom-slug');
      const mixed = await create(ctx(), org, token, { slug: 'My--Slug-2-' });
      expect(mixed.slug).toBe('My--Slug-2-');
      await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/My--Slug-2-`).set(auth(token)).expect(200);
      // Another pipeline's slug in other letters is taken.
      const sameLetters = await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(token))
        .send(body({ slug: 'my--slug-2-' }));
      expect({ status: sameLetters.status, errors: sameLetters.body.errors }).toEqual({
        status: 422,
        errors: [{ field: 'slug', code: 'has already been taken' }],
      });
      for (const slug of ['-lead', 'with space', 'under_score', 'ü', 'x'.repeat(101)]) {
        const res = await ctx().http().post(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).send(body({ slug }));
        expect({ slug, status: res.status, field: res.body.errors?.[0]?.field }).toEqual({ slug, status: 422, field: 'slug' });
      }
    });

    it('answers 422 field errors: blank and missing fields, duplicate names, bad slugs', async () => {
      const { org, token } = await ctx().givenAdmin();
      const post = (b: object) => ctx().http().post(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).send(b);
      const missing = await post({ configuration: YAML_CONFIG }).expect(422);
      expect(missing.body.message).toBe('Validation Failed');
      expect(missing.body.errors).toEqual(
        expect.arrayContaining([
          { field: 'name', code: "can't be blank" },
          { field: 'repository', code: "can't be blank" },
        ]),
      );
      const blank = await post({ name: '  ', repository: 'x', configuration: YAML_CONFIG }).expect(422);
      expect(blank.body.errors).toEqual([{ field: 'name', code: "can't be blank" }]);
      await post({ name: 'Dupe', repository: 'x', configuration: YAML_CONFIG }).expect(201);
      const dupe = await post({ name: 'Dupe', repository: 'x', configuration: YAML_CONFIG }).expect(422);
      expect(dupe.body.errors).toEqual(expect.arrayContaining([{ field: 'name', code: 'has already been taken' }]));
      const badSlug = await post({ name: 'Fine', slug: 'Not A Slug', repository: 'x', configuration: YAML_CONFIG }).expect(422);
      expect(badSlug.body.errors[0].field).toBe('slug');
      const wrongType = await post({ name: 123, repository: 'x', configuration: YAML_CONFIG }).expect(422);
      expect(wrongType.body.errors[0].field).toBe('name');
      // The docs' code for a configuration missing or blank.
      for (const body of [{}, { configuration: '' }, { configuration: ' \n ' }]) {
        const neither = await post({ name: 'No steps', repository: 'x', ...body }).expect(422);
        expect(neither.body).toEqual({
          message: 'Validation Failed',
          errors: [{ field: 'configuration', code: 'Step configuration is missing, expected `steps: { yaml: "..." }`' }],
        });
      }
    });

    it('answers 422 with the line for invalid YAML and unknown step shapes', async () => {
      const { org, token } = await ctx().givenAdmin();
      const post = (configuration: string) => ctx().http().post(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).send(body({ configuration }));
      const invalid = await post('steps:\n  - command: "x"\n   bad: [\n').expect(422);
      expect(invalid.body.errors[0].field).toBe('configuration');
      expect(invalid.body.errors[0].code).toMatch(/line \d+/);
      const noSteps = await post('env:\n  A: b\n').expect(422);
      expect(noSteps.body.errors[0].field).toBe('configuration');
      const unknown = await post('steps:\n  - command: "ok"\n  - bogus: true\n').expect(422);
      expect(unknown.body.errors[0].code).toMatch(/line 3/);
    });

    it('answers 422 for provider settings that do not belong to the provider, and validates visual steps', async () => {
      const { org, token } = await ctx().givenAdmin();
      const post = (b: Record<string, unknown>) => ctx().http().post(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).send(body(b));
      const gitlab = await post({ repository: 'git@gitlab.com:acme/app.git', provider_settings: { build_pull_request_forks: true } }).expect(422);
      expect(gitlab.body.errors[0].field).toBe('provider_settings.build_pull_request_forks');
      const mode = await post({ provider_settings: { trigger_mode: 'sometimes' } }).expect(422);
      expect(mode.body.errors[0].field).toBe('provider_settings.trigger_mode');
      const steps = await post({ configuration: undefined, steps: [{ type: 'trigger' }] }).expect(422);
      expect(steps.body.errors[0].field).toBe('steps[0].trigger_project_slug');
    });

    it('merges provider_settings over the provider defaults and ignores an echoed repository', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, { provider_settings: { build_tags: true, trigger_mode: 'deployment', repository: 'evil/other' } });
      expect(p.provider.settings).toMatchObject({ build_tags: true, trigger_mode: 'deployment', repository: 'acme-inc/my-pipeline', build_branches: true });
    });

    it('gives a plain git repository no provider settings', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, { repository: 'https://git.example.org/acme/app.git' });
      expect(p.provider).toEqual({ id: 'git', webhook_url: expect.any(String), settings: {} });
    });
  });

  describe('list and get', () => {
    it('lists newest first with partial, case-insensitive name and repository filters and Link pagination', async () => {
      const { org, token } = await ctx().givenAdmin();
      const a = await create(ctx(), org, token, { name: 'Alpha Service', repository: 'git@github.com:acme/alpha.git' });
      const b = await create(ctx(), org, token, { name: 'Beta Service', repository: 'git@github.com:acme/beta.git' });
      const c = await create(ctx(), org, token, { name: 'gamma 100%_done', repository: 'git@gitlab.com:acme/GAMMA.git' });
      const list = (q: string) => ctx().http().get(`/v2/organizations/${org.slug}/pipelines${q}`).set(auth(token)).expect(200);
      expect((await list('')).body.map((p: { id: string }) => p.id)).toEqual([c.id, b.id, a.id]);
      expect((await list('?name=SERVICE')).body.map((p: { id: string }) => p.id)).toEqual([b.id, a.id]);
      expect((await list('?repository=gamma')).body.map((p: { id: string }) => p.id)).toEqual([c.id]);
      expect((await list('?name=%25_')).body.map((p: { id: string }) => p.id)).toEqual([c.id]);
      expect((await list('?name=a_s')).body).toEqual([]);
      const page = await list('?per_page=2&name=e');
      expect(page.body.map((p: { id: string }) => p.id)).toEqual([c.id, b.id]);
      expect(page.headers.link).toBe(
        `<${PUBLIC_URL}/v2/organizations/${org.slug}/pipelines?per_page=2&name=e&page=2>; rel="next", ` +
          `<${PUBLIC_URL}/v2/organizations/${org.slug}/pipelines?per_page=2&name=e&page=2>; rel="last"`,
      );
      const last = await list('?per_page=2&page=2&name=e');
      expect(last.body.map((p: { id: string }) => p.id)).toEqual([a.id]);
      expect(last.body[0].created_at).toMatch(UTC);
    });

    it('gets a pipeline in the get sample shape with the UTC timestamp style', async () => {
      const { org, token } = await ctx().givenAdmin();
      const created = await create(ctx(), org, token);
      const res = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${created.slug}`).set(auth(token)).expect(200);
      for (const key of Object.keys(getSample)) expect(res.body).toHaveProperty(key);
      expect(res.body.created_at).toMatch(UTC);
      expect(res.body.created_at).toBe(created.created_at.slice(0, 19).replace('T', ' ') + ' UTC');
      const { created_at: _a, ...restCreated } = created;
      const { created_at: _b, ...restGot } = res.body;
      expect(restGot).toEqual(restCreated);
    });

    it('answers 404 No pipeline found', async () => {
      const { org, token } = await ctx().givenAdmin();
      const res = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/nope`).set(auth(token)).expect(404);
      expect(res.body).toEqual({ message: 'No pipeline found' });
    });

    it('answers 400 for per_page out of range', async () => {
      const { org, token } = await ctx().givenAdmin();
      await ctx().http().get(`/v2/organizations/${org.slug}/pipelines?per_page=0`).set(auth(token)).expect(400);
      await ctx().http().get(`/v2/organizations/${org.slug}/pipelines?per_page=abc`).set(auth(token)).expect(400);
    });
  });

  describe('update', () => {
    it('updates only what is sent; a new name renames the slug unless one is given; server-owned fields are ignored', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token);
      const res = await ctx()
        .http()
        .patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`)
        .set(auth(token))
        .send({
          name: 'Renamed',
          description: 'New description',
          branch_configuration: 'main release/*',
          id: 'x',
          created_at: '2000-01-01 00:00:00 UTC',
          archived_at: '2000-01-01 00:00:00 UTC',
          webhook_url: 'http://evil',
          nonsense: true,
        })
        .expect(200);
      expect(res.body).toMatchObject({
        id: p.id,
        name: 'Renamed',
        slug: 'renamed',
        url: `${PUBLIC_URL}/v2/organizations/${org.slug}/pipelines/renamed`,
        description: 'New description',
        branch_configuration: 'main release/*',
        archived_at: null,
      });
      expect(res.body.steps).toEqual(p.steps);
      expect(res.body.provider.webhook_url).toBe(p.provider.webhook_url);
      expect(res.body.created_at).toBe(p.created_at.slice(0, 19).replace('T', ' ') + ' UTC');
      await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).expect(404);
      const patch = (slug: string, b: object) => ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${slug}`).set(auth(token)).send(b);
      // The same name, or a new one with its own slug, leaves the slug as sent or as it was.
      expect((await patch('renamed', { name: 'Renamed' }).expect(200)).body.slug).toBe('renamed');
      expect((await patch('renamed', { name: 'Named Again', slug: 'kept' }).expect(200)).body.slug).toBe('kept');
      // A new name whose slug another pipeline has is refused, and nothing changes.
      const other = await create(ctx(), org, token);
      const taken = await patch('kept', { name: other.name, description: 'not applied' }).expect(422);
      expect(taken.body.errors.map((e: { field: string }) => e.field)).toContain('name');
      expect((await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/kept`).set(auth(token)).expect(200)).body.description).toBe('New description');
    });

    it('replaces the YAML and re-derives steps and env when configuration is sent', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token);
      const configuration = 'env:\n  NEW: "1"\nsteps:\n  - command: new.sh\n    agents:\n      queue: deploy\n';
      const res = await ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).send({ configuration }).expect(200);
      expect(res.body.configuration).toBe(configuration);
      expect(res.body.env).toEqual({ NEW: '1' });
      expect(res.body.steps).toEqual([expect.objectContaining({ command: 'new.sh', agent_query_rules: ['queue=deploy'] })]);
    });

    it('keeps steps and env of a YAML pipeline in the YAML: steps alone are a 422, env is ignored, configuration wins', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token);
      const patch = (b: object) => ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).send(b);
      expect((await patch({ steps: [{ type: 'waiter' }] }).expect(422)).body.errors[0].field).toBe('steps');
      const envAlone = await patch({ env: { A: 'b' }, description: 'env ignored' }).expect(200);
      expect({ env: envAlone.body.env, description: envAlone.body.description, warning: envAlone.headers.warning }).toEqual({
        env: { FOO: 'bar' },
        description: 'env ignored',
        warning: `299 windsock "env was ignored: this pipeline's env is its configuration's top-level env"`,
      });
      const configuration = 'env:\n  NEW: "1"\nsteps:\n  - command: kept.sh\n';
      const both = await patch({ configuration, env: { A: 'b' }, steps: [{ type: 'waiter' }] }).expect(200);
      expect({ env: both.body.env, steps: both.body.steps.map((s: { command?: string }) => s.command), configuration: both.body.configuration }).toEqual({
        env: { NEW: '1' },
        steps: ['kept.sh'],
        configuration,
      });
      expect(both.headers.warning).toBe(
        `299 windsock "steps was ignored: the configuration defines the steps", 299 windsock "env was ignored: the configuration's top-level env is the pipeline env"`,
      );
      const read = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).expect(200);
      expect(read.body.env).toEqual({ NEW: '1' });
    });

    it('updates steps and env of a visual pipeline, and converts it to YAML on configuration', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, { configuration: undefined, steps: [{ type: 'script', command: 'a' }] });
      const patch = (b: object) => ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(token)).send(b);
      const env = await patch({ env: { X: 'y' } }).expect(200);
      expect(env.body.env).toEqual({ X: 'y' });
      expect(env.body.steps[0].command).toBe('a');
      const steps = await patch({ steps: [{ type: 'script', command: 'b' }] }).expect(200);
      expect(steps.body.steps[0].command).toBe('b');
      expect(steps.body.env).toEqual({ X: 'y' });
      const yaml = await patch({ configuration: 'steps:\n  - command: c\n' }).expect(200);
      expect(yaml.body.steps[0].command).toBe('c');
      expect(yaml.body.env).toEqual({});
    });

    it('re-detects the provider when the repository changes and answers a duplicate name with 422', async () => {
      const { org, token } = await ctx().givenAdmin();
      const a = await create(ctx(), org, token);
      const b = await create(ctx(), org, token);
      const patch = (b2: object) => ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/${b.slug}`).set(auth(token)).send(b2);
      const moved = await patch({ repository: 'git@bitbucket.org:acme/app.git' }).expect(200);
      expect(moved.body.provider.id).toBe('bitbucket');
      expect(moved.body.provider.settings.repository).toBe('acme/app');
      const dupe = await patch({ name: a.name }).expect(422);
      // The slug a new name would take is the other pipeline's too, as on create.
      expect(dupe.body.errors).toEqual([
        { field: 'name', code: 'has already been taken' },
        { field: 'slug', code: 'has already been taken' },
      ]);
    });

    it('answers 404 for a missing pipeline', async () => {
      const { org, token } = await ctx().givenAdmin();
      await ctx().http().patch(`/v2/organizations/${org.slug}/pipelines/missing`).set(auth(token)).send({ name: 'x' }).expect(404);
    });
  });

  describe('archive, unarchive, delete', () => {
    it('archives and unarchives once each, and an archived pipeline rejects updates', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token);
      const path = `/v2/organizations/${org.slug}/pipelines/${p.slug}`;
      const archived = await ctx().http().post(`${path}/archive`).set(auth(token)).expect(200);
      expect(archived.body.archived_at).toMatch(UTC);
      const again = await ctx().http().post(`${path}/archive`).set(auth(token)).expect(422);
      expect(again.body).toEqual({ message: 'Pipeline could not be archived.' });
      const update = await ctx().http().patch(path).set(auth(token)).send({ description: 'x' }).expect(422);
      expect(update.body.message).toMatch(/archived/);
      const got = await ctx().http().get(path).set(auth(token)).expect(200);
      expect(got.body.archived_at).toBe(archived.body.archived_at);
      const listed = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).expect(200);
      expect(listed.body.map((x: { id: string }) => x.id)).toContain(p.id);
      const unarchived = await ctx().http().post(`${path}/unarchive`).set(auth(token)).expect(200);
      expect(unarchived.body.archived_at).toBeNull();
      const twice = await ctx().http().post(`${path}/unarchive`).set(auth(token)).expect(422);
      expect(twice.body).toEqual({ message: 'Pipeline could not be unarchived.' });
      await ctx().http().patch(path).set(auth(token)).send({ description: 'x' }).expect(200);
    });

    it('deletes with 204, after which the pipeline is gone', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token);
      const path = `/v2/organizations/${org.slug}/pipelines/${p.slug}`;
      await ctx().http().delete(path).set(auth(token)).expect(204);
      await ctx().http().get(path).set(auth(token)).expect(404);
      await ctx().http().delete(path).set(auth(token)).expect(404);
    });
  });

  describe('scopes, organizations and teams', () => {
    it('answers 404 for every pipeline path of another organization, and leaves its data alone', async () => {
      const a = await ctx().givenAdmin();
      const b = await ctx().givenAdmin();
      const p = await create(ctx(), b.org, b.token);
      const base = `/v2/organizations/${b.org.slug}/pipelines`;
      const calls = [
        ctx().http().get(base),
        ctx().http().post(base).send(body()),
        ctx().http().get(`${base}/${p.slug}`),
        ctx().http().patch(`${base}/${p.slug}`).send({ name: 'hacked' }),
        ctx().http().delete(`${base}/${p.slug}`),
        ctx().http().post(`${base}/${p.slug}/archive`),
        ctx().http().post(`${base}/${p.slug}/unarchive`),
        ctx().http().post(`${base}/${p.slug}/webhook`),
      ];
      for (const call of calls) {
        const res = await call.set(auth(a.token)).expect(404);
        expect(res.body).toEqual({ message: 'No organization found' });
      }
      const after = await ctx().http().get(`${base}/${p.slug}`).set(auth(b.token)).expect(200);
      expect(after.body.name).toBe(p.name);
      expect((await ctx().http().get(base).set(auth(b.token))).body).toHaveLength(1);
    });

    it('answers 403 naming the missing scope', async () => {
      const org = await ctx().givenOrg();
      const user = await ctx().givenUser(org, 'admin');
      const readOnly = await ctx().givenToken(user, [org], ['read_pipelines']);
      const writeOnly = await ctx().givenToken(user, [org], ['write_pipelines']);
      const p = await create(ctx(), org, writeOnly);
      const base = `/v2/organizations/${org.slug}/pipelines`;
      const denied = await ctx().http().post(base).set(auth(readOnly)).send(body()).expect(403);
      expect(denied.body).toEqual({ message: "Your access token doesn't have the write_pipelines scope" });
      for (const req of [
        ctx().http().patch(`${base}/${p.slug}`).send({}),
        ctx().http().delete(`${base}/${p.slug}`),
        ctx().http().post(`${base}/${p.slug}/archive`),
      ]) {
        expect((await req.set(auth(readOnly)).expect(403)).body.message).toBe("Your access token doesn't have the write_pipelines scope");
      }
      const noRead = await ctx().http().get(`${base}/${p.slug}`).set(auth(writeOnly)).expect(403);
      expect(noRead.body).toEqual({ message: "Your access token doesn't have the read_pipelines scope" });
    });

    it('shows the webhook URL only to a token with write_pipelines', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token);
      const readOnly = await ctx().givenToken(user, [org], ['read_pipelines']);
      const res = await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}`).set(auth(readOnly)).expect(200);
      expect(res.body.provider.webhook_url).toBe('');
      expect(p.provider.webhook_url).not.toBe('');
    });

    it('in a Teams organization: members must name their teams, and teams decide who may see and edit', async () => {
      const org = await ctx().givenOrg({ teamsEnabled: true });
      const admin = await ctx().givenUser(org, 'admin');
      const member = await ctx().givenUser(org, 'member');
      const reader = await ctx().givenUser(org, 'member');
      const outsider = await ctx().givenUser(org, 'member');
      const team = await ctx().givenTeam(org, [member]);
      const readers = await ctx().givenTeam(org, [reader]);
      const adminToken = await ctx().givenToken(admin, [org]);
      const memberToken = await ctx().givenToken(member, [org]);
      const readerToken = await ctx().givenToken(reader, [org]);
      const outsiderToken = await ctx().givenToken(outsider, [org]);
      const base = `/v2/organizations/${org.slug}/pipelines`;

      const noTeams = await ctx().http().post(base).set(auth(memberToken)).send(body()).expect(422);
      expect(noTeams.body.errors[0].field).toBe('teams');
      const notMine = await ctx()
        .http()
        .post(base)
        .set(auth(memberToken))
        .send(body({ teams: [readers.id] }))
        .expect(422);
      expect(notMine.body.errors[0].field).toBe('teams[0]');
      const unknownTeam = await ctx()
        .http()
        .post(base)
        .set(auth(memberToken))
        .send(body({ team_uuids: ['00000000-0000-4000-8000-000000000000'] }))
        .expect(422);
      expect(unknownTeam.body.errors[0].field).toBe('team_uuids[0]');
      await ctx().http().post(base).set(auth(adminToken)).send(body()).expect(201);

      const p = await create(ctx(), org, memberToken, { teams: [team.id] });
      await ctx().services.db('pipeline_teams').insert({ pipeline_id: p.id, team_id: readers.id, access_level: 'read_only' });
      const path = `${base}/${p.slug}`;

      await ctx().http().get(path).set(auth(outsiderToken)).expect(404);
      expect((await ctx().http().get(base).set(auth(outsiderToken)).expect(200)).body).toEqual([]);
      const asReader = await ctx().http().get(path).set(auth(readerToken)).expect(200);
      expect(asReader.body.provider.webhook_url).toBe('');
      expect((await ctx().http().get(base).set(auth(readerToken)).expect(200)).body.map((x: { id: string }) => x.id)).toEqual([p.id]);
      expect((await ctx().http().post(`${path}/archive`).set(auth(readerToken)).expect(403)).body).toEqual({ message: 'Forbidden' });
      await ctx().http().patch(path).set(auth(readerToken)).send({ name: 'nope' }).expect(403);
      await ctx().http().delete(path).set(auth(readerToken)).expect(403);
      await ctx().http().post(`${path}/archive`).set(auth(memberToken)).expect(200);
      expect((await ctx().http().get(base).set(auth(adminToken)).expect(200)).body).toHaveLength(2);
    });
  });

  describe('add webhook', () => {
    it('refuses repositories other than GitHub', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token, { repository: 'git@gitlab.com:acme/app.git' });
      const res = await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/webhook`).set(auth(token)).expect(422);
      expect(res.body).toEqual({ message: 'Auto-creating webhooks is not supported for your repository.' });
    });

    it('cannot create one when the GitHub API is not configured', async () => {
      const { org, token } = await ctx().givenAdmin();
      const p = await create(ctx(), org, token);
      const res = await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/webhook`).set(auth(token)).expect(422);
      expect(res.body).toEqual({ message: 'Webhooks could not be created for your repository.' });
    });
  });
});

describeEachDatabase('pipelines: teams on update', (ctx) => {
  it("adds the pipeline to the teams an update names, with their access level, and takes it out of none (the docs' update)", async () => {
    const org = await ctx().givenOrg({ teamsEnabled: true });
    const admin = await ctx().givenUser(org, 'admin');
    const member = await ctx().givenUser(org, 'member');
    const first = await ctx().givenTeam(org, [member]);
    const second = await ctx().givenTeam(org, [member]);
    const adminToken = await ctx().givenToken(admin, [org]);
    const memberToken = await ctx().givenToken(member, [org]);
    const p = await create(ctx(), org, adminToken, { teams: [{ id: first.id, access_level: 'read_only' }] });
    const path = `/v2/organizations/${org.slug}/pipelines/${p.slug}`;
    // Read only through the first team: the member may not rebuild or edit it.
    await ctx().http().patch(path).set(auth(memberToken)).send({ description: 'x' }).expect(403);

    await ctx()
      .http()
      .patch(path)
      .set(auth(adminToken))
      .send({ description: 'Now shared', teams: [{ id: second.id, access_level: 'manage_build_and_read' }] })
      .expect(200);
    const grants = async (teamId: string) =>
      (
        (await ctx().http().get(`/v2/organizations/${org.slug}/teams/${teamId}/pipelines`).set(auth(adminToken)).expect(200)).body as {
          pipeline_id?: string;
          id?: string;
          access_level: string;
        }[]
      ).map((g) => g.access_level);
    expect(await grants(first.id)).toEqual(['read_only']);
    expect(await grants(second.id)).toEqual(['manage_build_and_read']);
    // The member may now edit it, through the second team.
    await ctx().http().patch(path).set(auth(memberToken)).send({ description: 'by the member' }).expect(200);
    // Naming a team again changes its access level; a team of another organization is a 422.
    await ctx()
      .http()
      .patch(path)
      .set(auth(adminToken))
      .send({ teams: [{ id: first.id, access_level: 'build_and_read' }] })
      .expect(200);
    expect(await grants(first.id)).toEqual(['build_and_read']);
    const other = await ctx().givenAdmin();
    const foreign = await ctx().givenTeam(other.org, []);
    const refused = await ctx()
      .http()
      .patch(path)
      .set(auth(adminToken))
      .send({ teams: [{ id: foreign.id }] })
      .expect(422);
    expect(refused.body.errors).toEqual([{ field: 'teams[0]', code: `is not a team of this organization (${foreign.id})` }]);
  });

  it("takes the docs' examples' form of teams, an object of team UUID to access level, on create and update", async () => {
    const org = await ctx().givenOrg({ teamsEnabled: true });
    const adminToken = await ctx().givenToken(await ctx().givenUser(org, 'admin'), [org]);
    const [first, second] = [await ctx().givenTeam(org, []), await ctx().givenTeam(org, [])];
    const p = await create(ctx(), org, adminToken, { teams: { [first.id]: 'read_only' } });
    await ctx()
      .http()
      .patch(`/v2/organizations/${org.slug}/pipelines/${p.slug}`)
      .set(auth(adminToken))
      .send({ teams: { [second.id]: 'build_and_read' } })
      .expect(200);
    const level = async (teamId: string) =>
      (
        (await ctx().http().get(`/v2/organizations/${org.slug}/teams/${teamId}/pipelines`).set(auth(adminToken)).expect(200)).body as { access_level: string }[]
      ).map((g) => g.access_level);
    expect([await level(first.id), await level(second.id)]).toEqual([['read_only'], ['build_and_read']]);
  });
});

describeEachDatabase('add webhook through a local GitHub API stand-in', null, (_get, kind) => {
  let ctx: TestContext;
  let github: http.Server;
  const received: { method: string; url: string; auth: string | undefined; body: Record<string, unknown> }[] = [];
  const existing = new Set<string>();

  beforeAll(async () => {
    github = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', () => {
        const body = JSON.parse(raw || '{}');
        received.push({ method: req.method!, url: req.url!, auth: req.headers.authorization, body });
        if (existing.has(req.url!)) {
          res
            .writeHead(422, { 'content-type': 'application/json' })
            .end(JSON.stringify({ message: 'Validation Failed', errors: [{ message: 'Hook already exists on this repository' }] }));
          return;
        }
        existing.add(req.url!);
        res.writeHead(201, { 'content-type': 'application/json' }).end(JSON.stringify({ id: 1, config: body.config }));
      });
    });
    await new Promise<void>((r) => github.listen(0, '127.0.0.1', r));
    const port = (github.address() as AddressInfo).port;
    ctx = await createTestContext(kind, { github: { apiUrl: `http://127.0.0.1:${port}`, token: 'gh-test-token' } });
  });
  afterAll(async () => {
    await ctx?.close();
    await new Promise((r) => github.close(r));
  });

  it('registers a signed push/pull_request hook at the webhook URL, once', async () => {
    const { org, token, user } = await ctx.givenAdmin();
    const p = await create(ctx, org, token);
    const res = await ctx.http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/webhook`).set(auth(token)).expect(201);
    expect(res.body).toEqual({ webhook_url: p.provider.webhook_url });
    const hook = received.at(-1)!;
    expect(hook.method).toBe('POST');
    expect(hook.url).toBe('/repos/acme-inc/my-pipeline/hooks');
    expect(hook.auth).toBe('Bearer gh-test-token');
    expect(hook.body).toMatchObject({ name: 'web', active: true, events: ['push', 'pull_request', 'deployment', 'fork'] });
    expect(hook.body.config).toMatchObject({ url: p.provider.webhook_url, content_type: 'json', secret: expect.stringMatching(/^[0-9a-f]{64}$/) });

    const again = await ctx.http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/webhook`).set(auth(token)).expect(422);
    expect(again.body).toEqual({ message: 'Webhooks could not be created for your repository.' });

    const reader = await ctx.givenToken(user, [org], ['read_pipelines']);
    await ctx.http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/webhook`).set(auth(reader)).expect(403);
  });

  it('answers 403 Forbidden to a user who may not edit the pipeline', async () => {
    const org = await ctx.givenOrg({ teamsEnabled: true });
    const admin = await ctx.givenUser(org, 'admin');
    const reader = await ctx.givenUser(org, 'member');
    const team = await ctx.givenTeam(org, [reader]);
    const adminToken = await ctx.givenToken(admin, [org]);
    const p = await create(ctx, org, adminToken, { teams: [{ id: team.id, access_level: 'read_only' }] });
    const res = await ctx
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/webhook`)
      .set(auth(await ctx.givenToken(reader, [org])))
      .expect(403);
    expect(res.body).toEqual({ message: 'Forbidden' });
  });
});
