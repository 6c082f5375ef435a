/**
 * Artifact content is served so it can never run in Windsock's origin (src/artifacts/content-policy.ts):
 * nosniff and a sandboxing CSP on every content response, `attachment` for every type that can be
 * active, inline only for raster images and plain text, script and style types served as opaque
 * bytes; the web pages' links to artifacts (the artifacts table, an annotation's
 * `artifact://path`) reach the content, and a browser's request for a content URL is the API's,
 * not a page's; ARTIFACTS_ORIGIN moves the content URLs of people and REST clients to another
 * origin (validated at start).
 */
import crypto from 'node:crypto';
import type request from 'supertest';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { agentAuth } from '../support/agents';
import { givenArtifacts, givenRunningJob } from './helpers';
import { HTML, signedIn } from '../web/support';
import { contentDisposition, servedAs } from '../../src/artifacts/content-policy';
import { ConfigError, loadConfig } from '../../src/config';

const CSP = "sandbox; default-src 'none'";
const ARTIFACTS_ORIGIN = 'http://artifacts.windsock.test';

/** Declared type (or none: the path's extension decides) -> the served type and disposition. */
const CASES: { path: string; declared?: string; type: string; disposition: 'inline' | 'attachment' }[] = [
  { path: 'report.html', type: 'text/html', disposition: 'attachment' },
  { path: 'page.htm', declared: 'TEXT/HTML; charset=utf-8', type: 'text/html', disposition: 'attachment' },
  { path: 'x.xhtml', declared: 'application/xhtml+xml', type: 'application/xhtml+xml', disposition: 'attachment' },
  { path: 'logo.svg', type: 'image/svg+xml', disposition: 'attachment' },
  { path: 'feed.xml', declared: 'application/xml', type: 'application/xml', disposition: 'attachment' },
  { path: 'data.xml', declared: 'text/xml', type: 'text/xml', disposition: 'attachment' },
  { path: 'app.js', type: 'application/octet-stream', disposition: 'attachment' },
  { path: 'mod.mjs', declared: 'application/javascript', type: 'application/octet-stream', disposition: 'attachment' },
  { path: 'site.css', type: 'application/octet-stream', disposition: 'attachment' },
  { path: 'lib.wasm', declared: 'application/wasm', type: 'application/octet-stream', disposition: 'attachment' },
  { path: 'doc.pdf', type: 'application/pdf', disposition: 'attachment' },
  { path: 'data.json', type: 'application/json', disposition: 'attachment' },
  { path: 'unknown-file', type: 'binary/octet-stream', disposition: 'attachment' },
  { path: 'odd.bin', declared: 'application/x-made-up', type: 'application/x-made-up', disposition: 'attachment' },
  { path: 'two.png', declared: 'image/png, text/html', type: 'application/octet-stream', disposition: 'attachment' },
  { path: 'junk', declared: 'not a type', type: 'application/octet-stream', disposition: 'attachment' },
  { path: 'shot.png', type: 'image/png', disposition: 'inline' },
  { path: 'photo.jpg', type: 'image/jpeg', disposition: 'inline' },
  { path: 'anim.gif', type: 'image/gif', disposition: 'inline' },
  { path: 'pic.webp', declared: 'image/webp', type: 'image/webp', disposition: 'inline' },
  { path: 'build.log', declared: 'text/plain', type: 'text/plain', disposition: 'inline' },
  { path: 'notes.txt', declared: 'text/plain; charset=UTF-8', type: 'text/plain; charset=utf-8', disposition: 'inline' },
];

describe('the serving rules', () => {
  it('serve only raster images and plain text inline, and no script or style type as itself', () => {
    for (const c of CASES.filter((c) => c.declared))
      expect({ declared: c.declared, ...servedAs(c.declared!) }).toEqual({ declared: c.declared, contentType: c.type, disposition: c.disposition });
    expect(servedAs('text/plain; charset="x\r\nSet-Cookie: a=b"')).toEqual({ contentType: 'text/plain', disposition: 'inline' });
    expect(servedAs('')).toEqual({ contentType: 'application/octet-stream', disposition: 'attachment' });
  });

  it('name the file in Content-Disposition without letting a name end the header or add a parameter', () => {
    expect(contentDisposition('attachment', 'report.html')).toBe(`attachment; filename="report.html"; filename*=UTF-8''report.html`);
    expect(contentDisposition('inline', 'we"ird\\ é;x=1%.png')).toBe(
      `inline; filename="we_ird_ _;x=1_.png"; filename*=UTF-8''we%22ird%5C%20%C3%A9%3Bx%3D1%25.png`,
    );
    expect(contentDisposition('attachment', "a'(b)*\ud800")).toBe(`attachment; filename="a'(b)*_"; filename*=UTF-8''a%27%28b%29%2A%EF%BF%BD`);
    expect(contentDisposition('attachment', '')).toBe(`attachment; filename="artifact"; filename*=UTF-8''artifact`);
  });
});

describe('ARTIFACTS_ORIGIN', () => {
  const env = { PUBLIC_URL: 'https://ci.example.com', DATA_DIR: '/tmp/windsock-config-test' };
  it('is an origin alone, other than the public one', () => {
    expect(loadConfig(env).artifacts.origin).toBeUndefined();
    expect(loadConfig({ ...env, ARTIFACTS_ORIGIN: 'https://artifacts.example.com' }).artifacts.origin).toBe('https://artifacts.example.com');
    expect(loadConfig({ ...env, ARTIFACTS_ORIGIN: 'https://Artifacts.Example.com:8443/' }).artifacts.origin).toBe('https://artifacts.example.com:8443');
    for (const bad of [
      'artifacts.example.com',
      'ftp://artifacts.example.com',
      'https://artifacts.example.com/files',
      'https://u:p@artifacts.example.com',
      'https://artifacts.example.com/?x=1',
      'https://artifacts.example.com#x',
    ]) {
      expect(() => loadConfig({ ...env, ARTIFACTS_ORIGIN: bad })).toThrow(ConfigError);
      expect(() => loadConfig({ ...env, ARTIFACTS_ORIGIN: bad })).toThrow(/ARTIFACTS_ORIGIN must be an origin alone/);
    }
    expect(() => loadConfig({ ...env, ARTIFACTS_ORIGIN: 'https://ci.example.com' })).toThrow(/another origin than PUBLIC_URL/);
  });
});

describeEachDatabase('artifact content served safely', (ctx) => {
  async function given() {
    const g = await givenRunningJob(ctx());
    const unique = crypto.randomUUID();
    const files = CASES.map((c) => ({
      path: c.path,
      content: `<script>alert(1)</script> ${c.path} ${unique}`,
      ...(c.declared ? { content_type: c.declared } : {}),
    }));
    const ids = await givenArtifacts(ctx(), g.agent, g.job.id, files);
    return { ...g, ids, jobUrl: `${g.url}/jobs/${g.job.id}` };
  }

  /** The bytes as sent, whatever the type says (supertest would parse a JSON type). */
  const bytes = (res: request.Response, done: (err: Error | null, body: Buffer) => void) => {
    const stream = res as unknown as NodeJS.ReadableStream;
    const chunks: Buffer[] = [];
    stream.on('data', (c: Buffer) => chunks.push(c));
    stream.on('end', () => done(null, Buffer.concat(chunks)));
  };

  const contentPath = (location: string) => {
    const u = new URL(location);
    return u.pathname + u.search;
  };

  it('sends every type with nosniff, the sandbox CSP and its disposition, on downloads and the agent search alike', async () => {
    const { token, jobUrl, ids, agent, build } = await given();
    const seen = [];
    for (const [i, c] of CASES.entries()) {
      const download = await ctx().http().get(`${jobUrl}/artifacts/${ids[i]}/download`).set(auth(token)).expect(302);
      expect(download.headers.location!.startsWith(`${PUBLIC_URL}/artifact-content/`)).toBe(true);
      const res = await ctx().http().get(contentPath(download.headers.location!)).buffer(true).parse(bytes).expect(200);
      seen.push({
        path: c.path,
        type: res.headers['content-type'],
        nosniff: res.headers['x-content-type-options'],
        csp: res.headers['content-security-policy'],
        disposition: res.headers['content-disposition'],
      });
    }
    expect(seen).toEqual(
      CASES.map((c) => ({
        path: c.path,
        type: c.type,
        nosniff: 'nosniff',
        csp: CSP,
        disposition: `${c.disposition}; filename="${c.path}"; filename*=UTF-8''${c.path}`,
      })),
    );
    // The agent's search hands out the same kind of URL: the same rules.
    const found = await ctx().http().get(`/v3/builds/${build.id}/artifacts/search?query=report.html`).set(agentAuth(agent.token)).expect(200);
    const res = await ctx().http().get(contentPath(found.body[0].url)).expect(200);
    expect([res.headers['content-disposition'], res.headers['x-content-type-options'], res.headers['content-security-policy']]).toEqual([
      `attachment; filename="report.html"; filename*=UTF-8''report.html`,
      'nosniff',
      CSP,
    ]);
  });

  it('keeps the headers on ranges and refusals', async () => {
    const { token, jobUrl, ids } = await given();
    const download = await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}/download`).set(auth(token)).expect(302);
    const target = contentPath(download.headers.location!);
    const range = await ctx().http().get(target).set('Range', 'bytes=0-7').buffer(true).parse(bytes).expect(206);
    expect([range.headers['content-disposition'], range.headers['x-content-type-options'], range.headers['content-security-policy']]).toEqual([
      `attachment; filename="report.html"; filename*=UTF-8''report.html`,
      'nosniff',
      CSP,
    ]);
    expect(Buffer.from(range.body as Buffer).toString()).toBe('<script>');
    const forged = await ctx()
      .http()
      .get(target.replace(/signature=./, 'signature=z'))
      .expect(403);
    expect([forged.headers['x-content-type-options'], forged.headers['content-security-policy']]).toEqual(['nosniff', CSP]);
  });

  it("answers a browser's request for a content URL with the content, not with a page", async () => {
    const { token, jobUrl, ids } = await given();
    const download = await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}/download`).set(auth(token)).expect(302);
    const res = await ctx().http().get(contentPath(download.headers.location!)).set(HTML).buffer(true).parse(bytes).expect(200);
    expect(res.headers['content-type']).toBe('text/html');
    expect(res.headers['content-disposition']).toMatch(/^attachment;/);
    expect(String(res.body)).toContain('<script>alert(1)</script> report.html');
  });

  it("links the web page's artifacts and an annotation's artifact:// links and images to the content", async () => {
    const { token, org, slug, build, ids, agent, job } = await given();
    const body = [
      'Read the <a href="artifact://report.html">report</a> and [the log](artifact://build.log).',
      '',
      '<img src="artifact://shot.png" alt="screenshot">',
      '',
      'Missing: <a href="artifact://nowhere/x.html">gone</a>. Text href="artifact://shot.png" stays text.',
    ].join('\n');
    await ctx().http().post(`/v3/jobs/${job.id}/annotations`).set(agentAuth(agent.token)).send({ body, context: 'links' }).expect(201);
    const web = await signedIn(ctx().app, token);
    const pagePath = `/${org.slug}/${slug}/builds/${build.number}`;
    const page = await web.get(pagePath).set(HTML).expect(200);
    expect(page.text).not.toMatch(/<(?:a|img)\s[^>]*artifact:/);
    const hrefs = [...page.text.matchAll(/(?:href|src)="([^"]*\/artifacts[?/][^"]*)"/g)].map((m) => m[1]!.replace(/&amp;/g, '&'));
    expect(hrefs).toEqual(
      expect.arrayContaining([
        `${pagePath}/artifacts?path=report.html`,
        `${pagePath}/artifacts?path=build.log`,
        `${pagePath}/artifacts?path=shot.png`,
        `${pagePath}/artifacts?path=nowhere%2Fx.html`,
        `${pagePath}/jobs/${job.id}/artifacts/${ids[0]}`,
      ]),
    );
    expect(page.text).toContain('Text href="artifact://shot.png" stays text.');

    // Each link is a short-lived signed URL, which the content route answers.
    const follow = async (href: string) => {
      const redirect = await web.get(href).expect(302);
      expect(redirect.headers.location!.startsWith(`${PUBLIC_URL}/artifact-content/`)).toBe(true);
      return ctx().http().get(contentPath(redirect.headers.location!)).expect(200);
    };
    const image = await follow(`${pagePath}/artifacts?path=shot.png`);
    expect([image.headers['content-type'], image.headers['content-disposition']]).toEqual([
      'image/png',
      `inline; filename="shot.png"; filename*=UTF-8''shot.png`,
    ]);
    const report = await follow(`${pagePath}/jobs/${job.id}/artifacts/${ids[0]}`);
    expect(report.headers['content-disposition']).toMatch(/^attachment;/);
    const missing = await web.get(`${pagePath}/artifacts?path=nowhere%2Fx.html`).expect(404);
    // The web's data routes answer as the API does (its status, headers and JSON body).
    expect(missing.body).toEqual({ message: 'No artifact found' });
    // Another organization's token reaches neither.
    const other = await signedIn(ctx().app, (await ctx().givenAdmin()).token);
    await other.get(`${pagePath}/artifacts?path=shot.png`).expect(404);
    await other.get(`${pagePath}/jobs/${job.id}/artifacts/${ids[0]}`).expect(404);
  });
});

describeEachDatabase(
  'artifact content on a separate origin',
  (ctx) => {
    it('points downloads and the web pages at ARTIFACTS_ORIGIN, and lets the pages show images from it', async () => {
      const g = await givenRunningJob(ctx());
      const [id] = await givenArtifacts(ctx(), g.agent, g.job.id, [{ path: 'shot.png', content: crypto.randomUUID() }]);
      const jobUrl = `${g.url}/jobs/${g.job.id}`;
      const download = await ctx().http().get(`${jobUrl}/artifacts/${id}/download`).set(auth(g.token)).expect(302);
      const location = new URL(download.headers.location!);
      expect(location.origin).toBe(ARTIFACTS_ORIGIN);
      expect(download.body).toEqual({ url: download.headers.location });
      // The proxy sends the artifacts origin's /artifact-content/ here: the same route answers it.
      await ctx()
        .http()
        .get(location.pathname + location.search)
        .set('Host', new URL(ARTIFACTS_ORIGIN).host)
        .expect(200);

      const web = await signedIn(ctx().app, g.token);
      const pagePath = `/${g.org.slug}/${g.slug}/builds/${g.build.number}`;
      const page = await web.get(pagePath).set(HTML).expect(200);
      expect(page.headers['content-security-policy']).toContain(`img-src 'self' data: ${ARTIFACTS_ORIGIN};`);
      const redirect = await web.get(`${pagePath}/jobs/${g.job.id}/artifacts/${id}`).expect(302);
      expect(new URL(redirect.headers.location!).origin).toBe(ARTIFACTS_ORIGIN);

      // The agent keeps the address it reached Windsock at.
      const found = await ctx().http().get(`/v3/builds/${g.build.id}/artifacts/search?query=shot.png`).set(agentAuth(g.agent.token)).expect(200);
      expect(new URL(found.body[0].url).origin).not.toBe(ARTIFACTS_ORIGIN);
    });
  },
  { artifacts: { origin: ARTIFACTS_ORIGIN } },
);
