/**
 * The web interface over HTTP: sign-in and its cookie, CSRF, security headers, escaping,
 * tenancy, a read-only token's pages, the log endpoints, and that API clients still get JSON.
 * (test/browser/web-*.test.ts drives the same pages in Chromium.)
 */
import express from 'express';
import request from 'supertest';
import { webRoutes } from '../../src/web/routes';
import { auth, type TestContext, describeEachDatabase } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenArtifacts, givenRunningJob } from '../artifacts/helpers';
import { csrfOf, HTML, signedIn } from './support';

describeEachDatabase('web interface', (get) => {
  let ctx: TestContext;
  beforeAll(() => {
    ctx = get();
  });

  it('signs in with a token into an HttpOnly SameSite session cookie, checks CSRF, and signs out', async () => {
    const { org, token } = await ctx.givenAdmin();
    const agent = request.agent(ctx.app);
    const form = await agent.get('/login').set(HTML).expect(200);
    expect(form.headers['content-security-policy']).toContain("default-src 'self'");
    expect(form.headers['content-security-policy']).toContain("frame-ancestors 'none'");
    expect(form.headers['x-frame-options']).toBe('DENY');
    // A post without the form's token is refused, and so is a wrong token.
    await agent.post('/login').type('form').send({ token }).expect(403);
    const wrong = await agent
      .post('/login')
      .type('form')
      .send({ _csrf: csrfOf(form.text), token: 'not-a-token' })
      .expect(401);
    expect(wrong.text).toContain('not accepted');
    const ok = await agent
      .post('/login')
      .type('form')
      .send({ _csrf: csrfOf(form.text), token })
      .expect(303);
    expect(ok.headers.location).toBe(`/${org.slug}`);
    const cookie = (ok.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('windsock_session='))!;
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Lax/);
    expect(cookie).not.toContain(token);
    const home = await agent.get(`/${org.slug}`).set(HTML).expect(200);
    // Sign-out needs the session's CSRF token too.
    await agent.post('/logout').type('form').send({ _csrf: 'nope' }).expect(403);
    await agent
      .post('/logout')
      .type('form')
      .send({ _csrf: csrfOf(home.text) })
      .expect(303);
    const after = await agent.get(`/${org.slug}`).set(HTML).expect(303);
    expect(after.headers.location).toBe(`/login?next=${encodeURIComponent(`/${org.slug}`)}`);
  });

  it('sends a browser opening the root to sign-in, and an API client the root document', async () => {
    const browser = await ctx.http().get('/').set('Accept', 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8').expect(303);
    expect(browser.headers.location).toBe('/login');
    for (const accept of ['application/json', '*/*']) {
      const api = await ctx.http().get('/').set('Accept', accept).expect(200);
      expect(api.body.message).toMatch(/Windsock REST API/);
    }
  });

  it('marks the session cookie Secure when PUBLIC_URL is https', async () => {
    const { token } = await ctx.givenAdmin();
    const app = express();
    app.use(webRoutes({ ...ctx.services, publicUrl: 'https://ci.example.com' }));
    // (The cookies are Secure: supertest would not send them back over http, so they are sent by hand.)
    const form = await request(app).get('/login').set(HTML).expect(200);
    const signin = (form.headers['set-cookie'] as unknown as string[])[0]!.split(';')[0]!;
    const ok = await request(app)
      .post('/login')
      .set('Cookie', signin)
      .type('form')
      .send({ _csrf: csrfOf(form.text), token })
      .expect(303);
    const cookie = (ok.headers['set-cookie'] as unknown as string[]).find((c) => c.startsWith('windsock_session='))!;
    expect(cookie).toMatch(/; Secure/);
    // A form posted from another site is refused before its fields are read.
    await request(app)
      .post('/login')
      .set('Cookie', signin)
      .set('Origin', 'https://evil.example')
      .type('form')
      .send({ _csrf: csrfOf(form.text), token })
      .expect(403);
  });

  it('escapes what users wrote, hides other organizations behind 404 pages, and leaves API clients their JSON', async () => {
    const { org, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, { name: '<script>alert(1)</script>' });
    const build = await givenBuild(ctx, org.slug, pipeline.slug, token, { message: '<img src=x onerror=alert(1)>', branch: 'feat/<b>' });
    const web = await signedIn(ctx.app, token);
    const home = await web.get(`/${org.slug}`).set(HTML).expect(200);
    expect(home.text).toContain('&lt;script&gt;alert(1)&lt;/script&gt;');
    expect(home.text).not.toContain('<script>alert');
    await ctx
      .http()
      .post(`${new URL(build.url).pathname}/annotations`)
      .set(auth(token))
      .send({ body: '**Coverage** fell <script>alert(1)</script>', context: 'coverage', style: 'error' })
      .expect(201);
    const page = await web.get(new URL(build.web_url).pathname).set(HTML).expect(200);
    // The annotation as the API sanitised it: its Markdown rendered, its script gone.
    expect(page.text).toMatch(/<section class="annotation style-error"[^>]*>\s*<p><strong>Coverage<\/strong> fell/);
    expect(page.text).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(page.text).toContain('feat/&lt;b&gt;');
    expect(page.text).not.toMatch(/<script>(?!<\/script>)/);

    // The pipeline's builds, filtered by branch as the API filters them.
    await givenBuild(ctx, org.slug, pipeline.slug, token, { message: 'On main', branch: 'main' });
    const all = await web.get(new URL(pipeline.web_url).pathname).set(HTML).expect(200);
    expect(all.text).toContain('On main');
    const filtered = await web
      .get(`${new URL(pipeline.web_url).pathname}?branch=${encodeURIComponent('feat/<b>')}`)
      .set(HTML)
      .expect(200);
    expect(filtered.text).not.toContain('On main');
    expect(filtered.text).toContain(`/builds/${build.number}"`);

    // Ids that are not UUIDs are 404s, never a database error (Postgres compares uuid columns strictly).
    await web.get(`/organizations/${org.slug}/agents/not-a-uuid`).set(HTML).expect(404);
    await web.get(`${new URL(build.web_url).pathname}/jobs/not-a-uuid/log`).expect(404);
    await web.get(`${new URL(build.web_url).pathname}/jobs/${build.jobs[0]!.id}/artifacts/nope`).expect(404);
    await web
      .get(`${new URL(build.web_url).pathname.replace(/\d+$/, '99999999999')}`)
      .set(HTML)
      .expect(404);
    await web
      .get(`${new URL(pipeline.web_url).pathname}?creator=nope&state=nope&page=-1`)
      .set(HTML)
      .expect(200);

    const other = await ctx.givenAdmin();
    const outsider = await signedIn(ctx.app, other.token);
    for (const path of [`/${org.slug}`, new URL(pipeline.web_url).pathname, new URL(build.web_url).pathname, `/organizations/${org.slug}/agents`]) {
      const res = await outsider.get(path).set(HTML).expect(404);
      expect(res.text).not.toContain(pipeline.slug);
    }
    await outsider.get(`${new URL(build.web_url).pathname}/jobs/${build.jobs[0]!.id}/log`).expect(404);

    // No Accept: text/html, no page: the API's JSON 404 as before.
    const json = await ctx.http().get(`/${org.slug}/${pipeline.slug}`).set(auth(token)).expect(404);
    expect(json.body).toEqual({ message: expect.any(String) });
  });

  it('shows a read-only token no action buttons and refuses its posts', async () => {
    const { org, user, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: make test\n  - block: Ship?\n');
    const build = await givenBuild(ctx, org.slug, pipeline.slug, token);
    const path = new URL(build.web_url).pathname;
    const admin = await signedIn(ctx.app, token);
    const full = await admin.get(path).set(HTML).expect(200);
    expect(full.text).toContain('Cancel build');

    const readOnly = await ctx.givenToken(user, [org], ['read_builds', 'read_pipelines', 'read_build_logs']);
    const viewer = await signedIn(ctx.app, readOnly);
    const page = await viewer.get(path).set(HTML).expect(200);
    expect(page.text).not.toContain('Cancel build');
    expect(page.text).not.toContain('Rebuild');
    expect(page.text).not.toContain('Unblock');
    await viewer
      .post(`${path}/cancel`)
      .type('form')
      .send({ _csrf: csrfOf(page.text) })
      .expect(403);
    // A post with the wrong CSRF token does nothing, even for the admin.
    await admin.post(`${path}/cancel`).type('form').send({ _csrf: 'forged' }).expect(403);
    const cancel = await admin
      .post(`${path}/cancel`)
      .type('form')
      .send({ _csrf: csrfOf(full.text) })
      .expect(303);
    expect(cancel.headers.location).toBe(path);
    const after = await ctx.http().get(build.url.replace('http://windsock.test', '')).set(auth(token)).expect(200);
    expect(['canceled', 'canceling']).toContain(after.body.state);
    const canceled = await admin.get(path).set(HTML).expect(200);
    const rebuilt = await admin
      .post(`${path}/rebuild`)
      .type('form')
      .send({ _csrf: csrfOf(canceled.text) })
      .expect(303);
    expect(rebuilt.headers.location).toBe(path.replace(/\d+$/, String(build.number + 1)));
    const page2 = await admin.get(rebuilt.headers.location!).set(HTML).expect(200);
    expect(page2.text).toContain(`Rebuilt from`);
    // Made from the web page: the docs' `ui` source, where the API's rebuild says `api`.
    const apiRebuilt = await ctx
      .http()
      .get(`${build.url.replace('http://windsock.test', '').replace(/\d+$/, '')}${build.number + 1}`)
      .set(auth(token))
      .expect(200);
    expect(apiRebuilt.body.source).toBe('ui');
  });

  it("guards pages with the API's scopes and answers errors with the API's status and body", async () => {
    const { org, user, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org.slug, token, 'steps:\n  - command: make test\n');
    const build = await givenBuild(ctx, org.slug, pipeline.slug, token);
    const path = new URL(build.web_url).pathname;
    const apiBuild = `/v2/organizations/${org.slug}/pipelines/${pipeline.slug}/builds/${build.number}`;
    const jobId = build.jobs[0]!.id;

    // A token without read_agents: the page's 403 names the scope exactly as the API's does.
    const buildsOnly = await ctx.givenToken(user, [org], ['read_builds', 'read_pipelines']);
    const viewer = await signedIn(ctx.app, buildsOnly);
    const api403 = await ctx.http().get(`/v2/organizations/${org.slug}/agents`).set(auth(buildsOnly)).expect(403);
    const page403 = await viewer.get(`/organizations/${org.slug}/agents`).set(HTML).expect(403);
    expect(api403.body.message).toBe("Your access token doesn't have the read_agents scope");
    expect(page403.text).toContain(api403.body.message.replace(/'/g, '&#39;'));
    // The log script's JSON is the API's answer itself: the same status and body.
    const apiLog = await ctx.http().get(`${apiBuild}/jobs/${jobId}/log`).set(auth(buildsOnly)).expect(403);
    const webLog = await viewer.get(`${path}/jobs/${jobId}/log`).expect(403);
    expect(webLog.body).toEqual(apiLog.body);
    const missingJob = crypto.randomUUID();
    const admin = await signedIn(ctx.app, token);
    const apiMissing = await ctx.http().get(`${apiBuild}/jobs/${missingJob}/log`).set(auth(token)).expect(404);
    expect((await admin.get(`${path}/jobs/${missingJob}/log`).expect(404)).body).toEqual(apiMissing.body);

    // A job that cannot be retried yet: the service's refusal is the API's status on the page too.
    const page = await admin.get(path).set(HTML).expect(200);
    const apiRetry = await ctx.http().put(`${apiBuild}/jobs/${jobId}/retry`).set(auth(token));
    expect(apiRetry.status).toBe(400); // jobs.md: only failed, timed out or canceled jobs can be retried
    const pageRetry = await admin
      .post(`${path}/jobs/${jobId}/retry`)
      .type('form')
      .send({ _csrf: csrfOf(page.text) })
      .expect(apiRetry.status);
    expect(pageRetry.headers['content-type']).toMatch(/text\/html/);
    expect(pageRetry.text).toContain('Not accepted');
    expect(pageRetry.text).toContain(apiRetry.body.message.replace(/'/g, '&#39;'));
  });

  it('shows the agents, busy or idle, and pauses and resumes one', async () => {
    const { org, token } = await ctx.givenAdmin();
    const reg = await givenRegistrationToken(ctx, org.slug, token);
    const agent = await givenAgent(ctx, reg, 'web-agent <1>', ['queue=default']);
    const web = await signedIn(ctx.app, token);
    const list = await web.get(`/organizations/${org.slug}/agents`).set(HTML).expect(200);
    expect(list.text).toContain('1 connected: 0 busy, 1 idle, 0 paused.');
    expect(list.text).toContain('web-agent &lt;1&gt;');
    const path = `/organizations/${org.slug}/agents/${agent.id}`;
    const page = await web.get(path).set(HTML).expect(200);
    expect(page.text).toContain('This agent has run no job yet.');
    await web
      .post(`${path}/pause`)
      .type('form')
      .send({ _csrf: csrfOf(page.text) })
      .expect(303);
    const paused = await web.get(path).set(HTML).expect(200);
    expect(paused.text).toMatch(/state-paused/);
    expect(paused.text).toContain('Resume');
    await web
      .post(`${path}/resume`)
      .type('form')
      .send({ _csrf: csrfOf(page.text) })
      .expect(303);
    expect((await web.get(`/organizations/${org.slug}/agents`).set(HTML).expect(200)).text).toContain('1 idle, 0 paused');
  });

  it('renders a log with colours and folded sections, serves the raw log, the artifacts and hashed assets', async () => {
    const { org, token, build, agent, job, slug } = await givenRunningJob(ctx);
    const [artifactId] = await givenArtifacts(ctx, agent, job.id, [{ path: 'reports/<b>.txt', content: 'artifact bytes' }]);
    const log = '--- Setup\nplain <b>tag</b>\n+++ \x1b[32mTests\x1b[0m\n\x1b[1;31mFAIL\x1b[0m one\n';
    await ctx.http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence: 1, offset: 0, content: log }).expect(201);
    const web = await signedIn(ctx.app, token);
    const base = `/${org.slug}/${slug}/builds/${build.number}/jobs/${job.id}`;
    const rendered = await web.get(`${base}/log`).expect(200);
    expect(rendered.body.finished).toBe(false);
    expect(rendered.body.lines).toEqual([
      { h: 'Setup', g: '---' },
      { h: 'plain &lt;b&gt;tag&lt;/b&gt;' },
      { h: 'Tests', g: '+++' },
      { h: '<span class="a-f1 a-b">FAIL</span> one' },
    ]);
    // Read on from where it ended: nothing new.
    const same = await web.get(`${base}/log?offset=${rendered.body.offset}&state=${rendered.body.state}`).expect(200);
    expect(same.body).toMatchObject({ lines: [], tail: null, offset: Buffer.byteLength(log), size: Buffer.byteLength(log) });
    const raw = await web.get(`${base}/log.txt`).expect(200);
    expect(raw.text).toBe(log);
    expect(raw.headers['content-disposition']).toMatch(/attachment/);

    const page = await web.get(`/${org.slug}/${slug}/builds/${build.number}`).set(HTML).expect(200);
    expect(page.text).toContain(`<a href="${base}/artifacts/${artifactId}">reports/&lt;b&gt;.txt</a>`);
    // The agent's page lists the job it runs among its jobs, linked to the build page.
    const agentPage = await web.get(`/organizations/${org.slug}/agents/${agent.id}`).set(HTML).expect(200);
    const jobLink = `/${org.slug}/${slug}/builds/${build.number}#${job.id}`;
    expect(agentPage.text.split(jobLink).length - 1).toBe(2);
    expect(agentPage.text).toMatch(/<h2>Jobs<\/h2>[\s\S]*state-running/);
    const download = await web.get(`${base}/artifacts/${artifactId}`).expect(302);
    const signed = new URL(download.headers.location!);
    expect(
      (
        await ctx
          .http()
          .get(signed.pathname + signed.search)
          .expect(200)
      ).text,
    ).toBe('artifact bytes');
    const css = /href="(\/_assets\/app\.[0-9a-f]{12}\.css)"/.exec(page.text)![1]!;
    const asset = await ctx.http().get(css).expect(200);
    expect(asset.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(asset.headers['content-type']).toMatch(/text\/css/);
  });
});

// A fixed clock 10 s into a minute: the three attempts never straddle two windows.
const SIGN_IN_CLOCK = Date.UTC(2032, 0, 1, 0, 0, 10);
describeEachDatabase(
  'web sign-in attempts',
  { rateLimits: { perOrganization: 1_000_000, perUser: 1_000_000_000, failedAuthPerAddress: 2 }, now: () => SIGN_IN_CLOCK },
  (get) => {
    let ctx: TestContext;
    beforeAll(() => {
      ctx = get();
    });

    it('counts refused tokens against the address like the API does, and refuses the form over the budget', async () => {
      const agent = request.agent(ctx.app);
      const form = await agent.get('/login').set(HTML).expect(200);
      const attempt = () =>
        agent
          .post('/login')
          .type('form')
          .send({ _csrf: csrfOf(form.text), token: 'guess' });
      await attempt().expect(401);
      await attempt().expect(401);
      const refused = await attempt().expect(429);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expect(refused.text).toContain('Too many failed authentication attempts');
    });
  },
);
