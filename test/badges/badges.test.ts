import { acceptAndStart, agentAuth, givenAgent, givenRegistrationToken, type TestAgent } from '../support/agents';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { escapeXml, renderBadge } from '../../src/badges/svg';

const CONFIGURATION = 'steps:\n  - label: Unit\n    command: unit\n  - label: Lint\n    command: lint\n';

/** The agent runs every job it is offered, each to the exit status its command is given. */
async function runAll(ctx: TestContext, agent: TestAgent, exits: Record<string, number>): Promise<void> {
  for (;;) {
    const job = (await ctx.http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body.job;
    if (!job) return;
    await acceptAndStart(ctx, agent.token, job.id);
    await ctx
      .http()
      .put(`/v3/jobs/${job.id}/finish`)
      .set(agentAuth(agent.token))
      .send({ exit_status: exits[job.command as string] })
      .expect(200);
  }
}

describeEachDatabase('status badges at badge_url', (ctx) => {
  let badge: string;
  let org: { slug: string };
  let token: string;
  let slug: string;
  let agent: TestAgent;

  /** The badge's JSON status for these query parameters (no token). */
  const status = async (query: Record<string, string> = {}) =>
    (
      await ctx()
        .http()
        .get(badge.replace(/\.svg$/, '.json'))
        .query(query)
        .expect(200)
        .expect('Content-Type', /application\/json/)
    ).body.status;

  beforeAll(async () => {
    ({ org, token } = await ctx().givenAdmin());
    const pipeline = await givenPipeline(ctx(), org, token, CONFIGURATION);
    slug = pipeline.slug;
    // Exactly the path of the URL the pipeline carries.
    badge = new URL(pipeline.badge_url).pathname;
    agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'badge-agent');
  });

  it('is unknown before any build, as an SVG with short caching and no token', async () => {
    const res = await ctx().http().get(badge).expect(200).expect('Content-Type', 'image/svg+xml; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-cache');
    expect(res.headers['etag']).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    const svg = res.text ?? res.body.toString();
    expect(svg).toMatch(/^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    expect(svg).toContain('<title>build: unknown</title>');
    expect(svg).toContain('fill="#aaa"');
    expect(await status()).toBe('unknown');
  });

  it('follows the last finished build, by branch and by step, and ignores builds still running', async () => {
    await givenBuild(ctx(), org, slug, token, { branch: 'main' });
    await runAll(ctx(), agent, { unit: 0, lint: 0 });
    expect(await status()).toBe('passing');

    await givenBuild(ctx(), org, slug, token, { branch: 'feature/x' });
    await runAll(ctx(), agent, { unit: 0, lint: 1 });
    expect(await status()).toBe('failing');
    expect(await status({ branch: 'main' })).toBe('passing');
    expect(await status({ branch: 'feature/x' })).toBe('failing');
    expect(await status({ branch: 'nowhere' })).toBe('unknown');
    expect(await status({ step: 'Unit' })).toBe('passing');
    expect(await status({ step: 'Lint' })).toBe('failing');
    expect(await status({ step: 'Lint', branch: 'main' })).toBe('passing');
    expect(await status({ step: 'No such step' })).toBe('unknown');

    // Scheduled, not run: the badges keep the last results.
    const third = await givenBuild(ctx(), org, slug, token, { branch: 'main' });
    expect(await status()).toBe('failing');
    expect(await status({ branch: 'main' })).toBe('passing');
    expect(await status({ step: 'Lint' })).toBe('failing');

    // Canceled: finished without passing.
    await ctx().http().put(`/v2/organizations/${org.slug}/pipelines/${slug}/builds/${third.number}/cancel`).set(auth(token)).expect(200);
    expect(await status({ branch: 'main' })).toBe('failing');
  });

  it('draws the style and theme asked for', async () => {
    const flat = (await ctx().http().get(badge).expect(200)).body.toString();
    expect(flat).toContain('rx="3"');
    expect(flat).toContain('<linearGradient');
    expect(flat).toContain('fill="#f00"');
    for (const style of ['square', 'flat-square']) {
      const square = (await ctx().http().get(badge).query({ style }).expect(200)).body.toString();
      expect(square).toContain('rx="0"');
      expect(square).not.toContain('<linearGradient');
    }
    const slack = (await ctx().http().get(badge).query({ theme: 'slack' }).expect(200)).body.toString();
    expect(slack).toContain('fill="#d7100c"');
    expect(slack).toContain('fill="#5c3957"');
    const custom = (await ctx().http().get(badge).query({ theme: '9c0,f93,0ad,d6d6d6,000,fff' }).expect(200)).body.toString();
    expect(custom).toContain('fill="#f93"');
    expect(custom).toContain('fill="#d6d6d6"');
    // Not colours: the default theme, nothing of the parameter in the image.
    const injected = (await ctx().http().get(badge).query({ theme: '"/><script>alert(1)</script>,f00,aaa' }).expect(200)).body.toString();
    expect(injected).not.toContain('script');
    expect(injected).toContain('fill="#f00"');
  });

  it('answers 304 to a client holding the current ETag, and a new body once the status changes', async () => {
    const first = await ctx().http().get(badge).expect(200);
    const etag = first.headers['etag'] as string;
    await ctx().http().get(badge).set('If-None-Match', etag).expect(304);
    await givenBuild(ctx(), org, slug, token, { branch: 'main' });
    await runAll(ctx(), agent, { unit: 0, lint: 0 });
    const changed = await ctx().http().get(badge).set('If-None-Match', etag).expect(200);
    expect(changed.body.toString()).toContain('<title>build: passing</title>');
  });

  it('is a 404 for a key no pipeline has, and a 400 for a repeated parameter', async () => {
    const res = await ctx()
      .http()
      .get(`/badges/${'0'.repeat(50)}.svg`)
      .expect(404);
    expect(res.body.message).toEqual(expect.any(String));
    await ctx().http().get('/badges/not-a-key.svg').expect(404);
    await ctx()
      .http()
      .get(badge.replace(/\.svg$/, '.png'))
      .expect(404);
    const twice = await ctx().http().get(`${badge}?branch=a&branch=b`).expect(400);
    expect(twice.body.message).toMatch(/branch must be given once/);
  });

  it('serves samples of each status for trying a theme', async () => {
    const res = await ctx().http().get('/badges/sample.svg').query({ status: 'passing', theme: 'mono' }).expect(200);
    expect(res.body.toString()).toContain('<title>build: passing</title>');
    await ctx().http().get('/badges/sample.json').query({ status: 'failing' }).expect(200, { status: 'failing' });
    await ctx().http().get('/badges/sample.svg').query({ status: 'green' }).expect(400);
  });
});

describe('badge SVG', () => {
  it('escapes the text it places', () => {
    expect(escapeXml(`<a href="x">'&'</a>`)).toBe('&lt;a href=&quot;x&quot;&gt;&apos;&amp;&apos;&lt;/a&gt;');
    const svg = renderBadge('passing', { label: '<b>&' });
    expect(svg).toContain('<title>&lt;b&gt;&amp;: passing</title>');
    expect(svg).not.toContain('<b>');
  });
});
