/**
 * The web pages of issue 32's second part over HTTP: pipeline settings and the steps view, forms
 * shown again with each error beside its field, action buttons only for those the API lets act,
 * agents gone for long hidden, the favicon, and the Test Engine pages (runs linked to builds,
 * expanded failures, a test's history and reliability, flaky tests' first and last seen).
 */
import { auth, type TestContext, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { agentAuth, givenAgent, givenRegistrationToken, movableClock } from '../support/agents';
import { givenSuite, result, suiteAuth, upload } from '../uploads/helpers';
import { csrfOf, HTML, signedIn, versionOf } from './support';

describeEachDatabase('web pages: settings, forms, permissions, Test Engine', (get) => {
  let ctx: TestContext;
  beforeAll(() => {
    ctx = get();
  });
  const clock = movableClock();
  afterEach(() => clock.reset());

  it('edits a pipeline through its settings, showing a refused YAML beside the steps with the input kept', async () => {
    const { org, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: make test\n');
    const web = await signedIn(ctx.app, token);
    const base = `/${org.slug}/${pipeline.slug}`;
    const list = await web.get(base).set(HTML).expect(200);
    expect(list.text).toContain(`href="${base}/settings"`);
    expect(list.text).toContain(`href="${base}/steps"`);

    const form = await web.get(`${base}/settings`).set(HTML).expect(200);
    expect(form.text).toContain('make test');
    // The badge: its image on this origin, and Markdown naming the badge URL the API gives.
    const apiPipeline = (await ctx.http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`).set(auth(token)).expect(200)).body;
    expect(form.text).toContain(`src="${new URL(apiPipeline.badge_url).pathname}"`);
    expect(form.text).toContain(`[![Build status](${apiPipeline.badge_url})]`);
    const badge = await ctx.http().get(new URL(apiPipeline.badge_url).pathname).expect(200);
    expect(badge.headers['content-type']).toMatch(/image\/svg\+xml/);

    // A step with a misspelt attribute, and a blank name: 422, both messages in place, the text kept.
    const badYaml = 'steps:\n  - command: make test\n    timeout_in_minutes: "soon"\n';
    const refused = await web
      .post(`${base}/settings`)
      .type('form')
      .send({
        _csrf: csrfOf(form.text),
        version: versionOf(form.text),
        name: '  ',
        repository: 'git@example.com:acme/app.git',
        configuration: badYaml,
        cancel_running_branch_builds: 'on',
      })
      .expect(422);
    // The ticked box stays ticked, the unticked one unticked.
    expect(refused.text).toMatch(/id="cancel_running_branch_builds"\s+name="cancel_running_branch_builds"\s+checked/);
    expect(refused.text).toMatch(/id="skip_queued_branch_builds"\s+name="skip_queued_branch_builds"\s*\/>/);
    expect(refused.headers['content-type']).toMatch(/text\/html/);
    const api = await ctx
      .http()
      .patch(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`)
      .set(auth(token))
      .send({ name: ' ', configuration: badYaml })
      .expect(422);
    const configurationError = api.body.errors.find((e: { field: string }) => e.field === 'configuration').code as string;
    expect(configurationError).toMatch(/line 3/);
    const fieldBlock = (name: string) => {
      const m = new RegExp(`<div class="field invalid">\\s*<label for="${name}">[\\s\\S]*?</div>`).exec(refused.text);
      if (!m) throw new Error(`no invalid field ${name} on the page`);
      return m[0];
    };
    expect(fieldBlock('configuration')).toContain(configurationError.replace(/"/g, '&quot;'));
    expect(fieldBlock('configuration')).toContain('aria-invalid="true"');
    expect(fieldBlock('configuration')).toContain('timeout_in_minutes: &quot;soon&quot;');
    expect(fieldBlock('name')).toContain('can&#39;t be blank');
    expect(refused.text).toContain('role="alert"');

    // Saved: the API reads what the form wrote.
    const saved = await web
      .post(`${base}/settings`)
      .type('form')
      .send({
        _csrf: csrfOf(form.text),
        version: versionOf(form.text),
        name: 'Renamed <app>',
        description: 'What ships',
        repository: 'git@example.com:acme/app.git',
        default_branch: 'trunk',
        branch_configuration: 'trunk release/*',
        skip_queued_branch_builds: 'on',
        skip_queued_branch_builds_filter: 'trunk',
        // As a browser sends a textarea: CRLF line ends.
        configuration: 'steps:\r\n  - command: make lint\r\n',
      })
      .expect(303);
    // The new name renames the slug, as the API's update does: the page moves with it.
    expect(saved.headers.location).toBe(`/${org.slug}/renamed-app/settings?saved=1`);
    const after = (await ctx.http().get(`/v2/organizations/${org.slug}/pipelines/renamed-app`).set(auth(token)).expect(200)).body;
    expect(after).toMatchObject({
      name: 'Renamed <app>',
      slug: 'renamed-app',
      description: 'What ships',
      default_branch: 'trunk',
      branch_configuration: 'trunk release/*',
      skip_queued_branch_builds: true,
      skip_queued_branch_builds_filter: 'trunk',
      cancel_running_branch_builds: false,
      configuration: 'steps:\n  - command: make lint',
    });
    const again = await web.get(saved.headers.location!).set(HTML).expect(200);
    expect(again.text).toContain('Settings saved.');
    expect(again.text).toContain('Renamed &lt;app&gt;');
  });

  it('leaves steps set through the API as they are when a save does not change them', async () => {
    const { org, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, { configuration: undefined, steps: [{ type: 'script', name: 'Unit', command: 'make unit' }] });
    expect(pipeline.configuration ?? null).toBeNull();
    const web = await signedIn(ctx.app, token);
    const base = `/${org.slug}/${pipeline.slug}`;
    const form = await web.get(`${base}/settings`).set(HTML).expect(200);
    const shown = /<textarea id="configuration"[^>]*>\n([\s\S]*?)<\/textarea>/.exec(form.text)![1]!;
    expect(shown).toContain('command: make unit');
    const decoded = shown
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
    await web
      .post(`${base}/settings`)
      .type('form')
      .send({
        _csrf: csrfOf(form.text),
        version: versionOf(form.text),
        name: pipeline.name,
        repository: pipeline.repository,
        description: 'Only this',
        configuration: decoded.replace(/\n/g, '\r\n'),
      })
      .expect(303);
    const after = (await ctx.http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`).set(auth(token)).expect(200)).body;
    expect(after.description).toBe('Only this');
    expect(after.configuration ?? null).toBeNull();
    expect(after.steps).toEqual(pipeline.steps);
  });

  it('refuses a settings form shown before the pipeline changed (409, input kept), and saves it once shown again', async () => {
    const { org, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: make test\n');
    const web = await signedIn(ctx.app, token);
    const base = `/${org.slug}/${pipeline.slug}`;
    const api = `/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`;
    const form = await web.get(`${base}/settings`).set(HTML).expect(200);
    // Meanwhile, the steps change through the API.
    await ctx.http().patch(api).set(auth(token)).send({ configuration: 'steps:\n  - command: make deploy\n' }).expect(200);
    const fields = {
      name: pipeline.name,
      repository: pipeline.repository,
      description: 'From the old form',
      configuration: 'steps:\n  - command: make test\n',
    };
    const stale = await web
      .post(`${base}/settings`)
      .type('form')
      .send({ _csrf: csrfOf(form.text), version: versionOf(form.text), ...fields })
      .expect(409);
    expect(stale.headers['content-type']).toMatch(/text\/html/);
    expect(stale.text).toContain('changed since the form was shown');
    expect(stale.text).toContain('From the old form');
    expect((await ctx.http().get(api).set(auth(token)).expect(200)).body).toMatchObject({
      configuration: 'steps:\n  - command: make deploy\n',
      description: null,
    });
    // Shown again over the current settings: saving it again is the person's choice, and goes through.
    await web
      .post(`${base}/settings`)
      .type('form')
      .send({ _csrf: csrfOf(stale.text), version: versionOf(stale.text), ...fields })
      .expect(303);
    expect((await ctx.http().get(api).set(auth(token)).expect(200)).body).toMatchObject({
      configuration: 'steps:\n  - command: make test',
      description: 'From the old form',
    });
  });

  it('shows a reader the steps but no settings, and refuses the settings to them as the API does', async () => {
    const { org, user, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: "echo <hi>"\n');
    const base = `/${org.slug}/${pipeline.slug}`;
    const reader = await signedIn(ctx.app, await ctx.givenToken(user, [org], ['read_pipelines', 'read_builds']));
    const list = await reader.get(base).set(HTML).expect(200);
    expect(list.text).not.toContain(`${base}/settings`);
    expect(list.text).not.toContain('New build');
    const steps = await reader.get(`${base}/steps`).set(HTML).expect(200);
    expect(steps.text).toContain('echo &lt;hi&gt;');
    expect(steps.text).not.toContain('Edit steps');
    const forbidden = await reader.get(`${base}/settings`).set(HTML).expect(403);
    expect(forbidden.text).toContain('write_pipelines');
    await reader.get(`${base}/builds/new`).set(HTML).expect(403);
  });

  it('shows the pause button only to administrators, and the new pipeline form only to who may create one', async () => {
    const { org, token } = await ctx.givenAdmin({ teamsEnabled: true });
    const reg = await givenRegistrationToken(ctx, org.slug, token);
    const agent = await givenAgent(ctx, reg, 'shared-agent');
    const path = `/organizations/${org.slug}/agents/${agent.id}`;
    const admin = await signedIn(ctx.app, token);
    const adminPage = await admin.get(path).set(HTML).expect(200);
    expect(adminPage.text).toContain(`action="${path}/pause"`);
    expect((await admin.get(`/${org.slug}`).set(HTML).expect(200)).text).toContain('New pipeline');

    // A member whose token has every scope: the API refuses them the pause, so no button shows.
    const member = await ctx.givenUser(org, 'member');
    const memberToken = await ctx.givenToken(member, [org]);
    const api = await ctx.http().put(`/v2/organizations/${org.slug}/agents/${agent.id}/pause`).set(auth(memberToken)).send({}).expect(403);
    const web = await signedIn(ctx.app, memberToken);
    const page = await web.get(path).set(HTML).expect(200);
    expect(page.text).not.toContain('/pause');
    expect(page.text).not.toContain('Resume');
    const post = await web
      .post(`${path}/pause`)
      .type('form')
      .send({ _csrf: csrfOf(page.text) })
      .expect(403);
    expect(post.text).toContain(api.body.message);
    // In an organization with teams a member names a team for a new pipeline, which the form does not ask.
    expect((await web.get(`/${org.slug}`).set(HTML).expect(200)).text).not.toContain('New pipeline');
  });

  it("shows New build and Settings by the member's team access to the pipeline, as the API allows them", async () => {
    const { org, token } = await ctx.givenAdmin({ teamsEnabled: true });
    const member = await ctx.givenUser(org, 'member');
    const team = await ctx.givenTeam(org, [member]);
    const pipeline = await givenPipeline(ctx, org.slug, token);
    const grant = `/v2/organizations/${org.slug}/teams/${team.id}/pipelines`;
    await ctx.http().post(grant).set(auth(token)).send({ pipeline_id: pipeline.id, access_level: 'read_only' }).expect(201);
    const web = await signedIn(ctx.app, await ctx.givenToken(member, [org]));
    const base = `/${org.slug}/${pipeline.slug}`;
    const buttons = async () => {
      const page = (await web.get(base).set(HTML).expect(200)).text;
      return { build: page.includes(`href="${base}/builds/new"`), settings: page.includes(`href="${base}/settings"`) };
    };
    expect(await buttons()).toEqual({ build: false, settings: false });
    await web.get(`${base}/settings`).set(HTML).expect(403);
    await ctx.http().patch(`${grant}/${pipeline.id}`).set(auth(token)).send({ access_level: 'build_and_read' }).expect(200);
    expect(await buttons()).toEqual({ build: true, settings: false });
    await ctx.http().patch(`${grant}/${pipeline.id}`).set(auth(token)).send({ access_level: 'manage_build_and_read' }).expect(200);
    expect(await buttons()).toEqual({ build: true, settings: true });
    await web.get(`${base}/settings`).set(HTML).expect(200);
  });

  it('shows a refused new pipeline and new build again with their messages beside the fields', async () => {
    const { org, token } = await ctx.givenAdmin();
    const web = await signedIn(ctx.app, token);
    const form = await web.get(`/organizations/${org.slug}/pipelines/new`).set(HTML).expect(200);
    const refused = await web
      .post(`/organizations/${org.slug}/pipelines`)
      .type('form')
      .send({ _csrf: csrfOf(form.text), name: '', repository: '', configuration: 'steps:\n  - command: "kept <text>"\n' })
      .expect(422);
    expect(refused.text).toMatch(/<label for="name">Name<\/label>[\s\S]*?aria-invalid="true"[\s\S]*?id="name-error">\s*<li>can&#39;t be blank/);
    expect(refused.text).toMatch(/<label for="repository">Repository<\/label>[\s\S]*?id="repository-error">\s*<li>can&#39;t be blank/);
    expect(refused.text).toContain('kept &lt;text&gt;');
    expect(refused.text).toContain('New pipeline');

    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: make\n');
    const newBuild = await web.get(`/${org.slug}/${pipeline.slug}/builds/new`).set(HTML).expect(200);
    const badBuild = await web
      .post(`/${org.slug}/${pipeline.slug}/builds`)
      .type('form')
      .send({ _csrf: csrfOf(newBuild.text), message: 'Keep this message', commit: 'HEAD', branch: 'main', env: 'NOT A PAIR' })
      .expect(422);
    expect(badBuild.text).toMatch(/<label for="env">[\s\S]*?id="env-error">\s*<li>line &quot;NOT A PAIR&quot; is not KEY=value/);
    expect(badBuild.text).toContain('value="Keep this message"');
    // Nothing was created by either.
    const builds = await ctx.http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds`).set(auth(token)).expect(200);
    expect(builds.body).toHaveLength(0);
    // A good one is made with the docs' `ui` source.
    await web
      .post(`/${org.slug}/${pipeline.slug}/builds`)
      .type('form')
      .send({ _csrf: csrfOf(newBuild.text), commit: 'HEAD', branch: 'main' })
      .expect(303);
    const made = await ctx.http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/1`).set(auth(token)).expect(200);
    expect(made.body.source).toBe('ui');
  });

  it('hides agents gone for more than an hour, with a link to every agent', async () => {
    const { org, token } = await ctx.givenAdmin();
    const reg = await givenRegistrationToken(ctx, org.slug, token);
    await givenAgent(ctx, reg, 'stays-connected');
    const gone = await givenAgent(ctx, reg, 'went-away');
    await ctx.http().post('/v3/disconnect').set(agentAuth(gone.token)).expect(200);
    const web = await signedIn(ctx.app, token);
    const listPath = `/organizations/${org.slug}/agents`;
    const recent = await web.get(listPath).set(HTML).expect(200);
    expect(recent.text).toContain('went-away');
    expect(recent.text).toContain('stays-connected');

    clock.advance(61 * 60_000);
    const later = await web.get(listPath).set(HTML).expect(200);
    expect(later.text).not.toContain('went-away');
    expect(later.text).toContain('stays-connected');
    expect(later.text).toContain('1 agent gone for more than an hour');
    const all = await web.get(`${listPath}?all=1`).set(HTML).expect(200);
    expect(all.text).toContain('went-away');
    // Its own page stays, as the API's get answers any agent.
    await web.get(`${listPath}/${gone.id}`).set(HTML).expect(200);
  });

  it('links the favicon from every page and serves it', async () => {
    const { org, token } = await ctx.givenAdmin();
    const web = await signedIn(ctx.app, token);
    const page = await web.get(`/${org.slug}`).set(HTML).expect(200);
    const href = /<link rel="icon" type="image\/svg\+xml" href="([^"]+)"/.exec(page.text)?.[1];
    expect(href).toMatch(/^\/_assets\/favicon\.[0-9a-f]{12}\.svg$/);
    const icon = await ctx.http().get(href!).expect(200);
    expect(icon.headers['content-type']).toMatch(/image\/svg\+xml/);
    expect(icon.headers['cache-control']).toContain('immutable');
    const legacy = await ctx.http().get('/favicon.ico').expect(301);
    expect(legacy.headers.location).toBe(href);
  });

  it("links a suite's runs to their builds and shows failures expanded, a test's history and reliability, and flaky tests' first and last seen", async () => {
    const s = await givenSuite(ctx, 'Web suite');
    const pipeline = await givenPipeline(ctx, s.org.slug, s.token, 'steps:\n  - command: make test\n');
    const build = await givenBuild(ctx, s.org.slug, pipeline.slug, s.token);
    const post = (body: object) => ctx.http().post('/v1/uploads').set(suiteAuth(s.apiToken)).send(body).expect(202);
    await post(
      upload({ ci: 'buildkite', key: build.id, branch: 'main', commit_sha: 'c0ffee1234567' }, [
        result('applies the discount', 'failed', { failure_expanded: [{ expanded: ['expected <10>', 'got 12'], backtrace: ['cart_spec.rb:42'] }] }),
      ]),
    );
    clock.advance(60_000);
    await post(
      upload({ key: 'run-2', branch: 'main', commit_sha: 'c0ffee1234567' }, [
        result('applies the discount', 'passed', { history: { section: 'top', start_at: 0, end_at: 1.5, duration: 1.5 } }),
      ]),
    );
    clock.advance(60_000);
    await post(upload({ key: 'run-3', branch: 'main', commit_sha: 'beef' }, [result('applies the discount', 'passed')]));

    const web = await signedIn(ctx.app, s.token);
    const base = `/organizations/${s.org.slug}/analytics/suites/${s.suite.slug}`;
    const buildHref = `/${s.org.slug}/${pipeline.slug}/builds/${build.number}`;
    const runs = await web.get(base).set(HTML).expect(200);
    expect(runs.text).toContain(`href="${buildHref}"`);
    expect(runs.text).toContain('main @ c0ffee1234');
    const apiRuns = (await ctx.http().get(`/v2/analytics/organizations/${s.org.slug}/suites/${s.suite.slug}/runs`).set(auth(s.token)).expect(200)).body;
    const failedRun = apiRuns.find((r: { build_id: string | null }) => r.build_id === build.id);
    const run = await web.get(`${base}/runs/${failedRun.id}`).set(HTML).expect(200);
    expect(run.text).toContain(`href="${buildHref}"`);
    expect(run.text).toContain('Expanded failure');
    expect(run.text).toContain('expected &lt;10&gt;\ngot 12');
    expect(run.text).toContain('cart_spec.rb:42');

    const testId = /href="[^"]+\/tests\/([0-9a-f-]{36})"/.exec(run.text)![1]!;
    const test = await web.get(`${base}/tests/${testId}`).set(HTML).expect(200);
    // Two passes of three decided executions; newest first in the table.
    expect(test.text).toContain('66.7%');
    expect(test.text).toContain('over the last 3 executions');
    expect(test.text).toMatch(/passed<\/td>\s*<td>250 ms<\/td>[\s\S]*passed<\/td>\s*<td>1.50 s<\/td>[\s\S]*failed<\/td>/);
    expect(test.text).toContain(`href="${buildHref}"`);
    expect(test.text).toContain('aria-label="The last 3 executions, oldest first: 2 passed, 1 not; bar heights are durations, the longest 1.50 s."');
    // Bars oldest first: the failure (0.25 s of 1.5 s: 7 of 40 px), then 1.5 s (full height), then 0.25 s.
    expect([...test.text.matchAll(/<rect class="result-(\w+)" x="\d+" y="\d+" width="10" height="(\d+)"/g)].map((m) => `${m[1]} ${m[2]}`)).toEqual([
      'failed 7',
      'passed 40',
      'passed 7',
    ]);

    const flaky = await web.get(`${base}/flaky-tests`).set(HTML).expect(200);
    expect(flaky.text).toContain('First seen');
    expect(flaky.text).toContain('applies the discount');
  });

  it('keeps a reader without read_builds from the builds the runs name', async () => {
    const { org, user, token } = await ctx.givenAdmin();
    const suite = (
      await ctx.http().post(`/v2/analytics/organizations/${org.slug}/suites`).set(auth(token)).send({ name: 'Quiet suite', show_api_token: true }).expect(201)
    ).body;
    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: make test\n');
    const build = await givenBuild(ctx, org.slug, pipeline.slug, token);
    await ctx
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(suite.api_token))
      .send(upload({ ci: 'buildkite', key: build.id, branch: 'main' }, [result('adds', 'passed')]))
      .expect(202);
    const base = `/organizations/${org.slug}/analytics/suites/${suite.slug}`;
    const admin = await signedIn(ctx.app, token);
    expect((await admin.get(base).set(HTML).expect(200)).text).toContain(`/builds/${build.number}"`);
    const suitesOnly = await signedIn(ctx.app, await ctx.givenToken(user, [org], ['read_suites']));
    const page = await suitesOnly.get(base).set(HTML).expect(200);
    expect(page.text).not.toContain(`/builds/${build.number}"`);
    expect(page.text).not.toContain(pipeline.name);
  });

  it("applies the organization's API IP allow-list to pages, posts and data routes, as the API does", async () => {
    const { org, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: make test\n');
    const build = await givenBuild(ctx, org.slug, pipeline.slug, token);
    const web = await signedIn(ctx.app, token);
    const base = `/${org.slug}/${pipeline.slug}`;
    const form = await web.get(`${base}/settings`).set(HTML).expect(200);
    const settings = `/v2/organizations/${org.slug}/api-settings`;
    // Requests come from 127.0.0.1: a list without it shuts the session out with the token.
    await ctx.http().patch(settings).set(auth(token)).send({ allowed_ip_addresses: '10.0.0.0/8' }).expect(200);
    await ctx.http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(token)).expect(403);
    const page = await web.get(base).set(HTML).expect(403);
    expect(page.headers['content-type']).toMatch(/text\/html/);
    await web.get(`${base}/builds/${build.number}`).set(HTML).expect(403);
    await web
      .post(`${base}/settings`)
      .type('form')
      .send({ _csrf: csrfOf(form.text), name: 'Renamed', repository: 'git@example.com:a/b.git' })
      .expect(403);
    const data = await web.get(`${base}/builds/${build.number}/state`).expect(403);
    expect(data.body.message).toEqual(expect.any(String));
    const api = await ctx.http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`).set(auth(token)).expect(403);
    expect(data.body).toEqual(api.body);
    // The refused post changed nothing.
    const stored = await ctx.services.db('pipelines').where({ slug: pipeline.slug }).first();
    expect(stored?.name).toBe(pipeline.name);
  });
});
