import { onLoopback } from '../support/agents';
import { launchBrowser, withPage } from '../support/browser';
import { describeWithTool } from '../support/tools';
import { describeEachDatabase } from '../support/context';
import type { Browser } from 'playwright-core';

describeEachDatabase('the API reference at /docs', (ctx) => {
  const server = onLoopback(ctx);

  it('serves a page with a strict CSP and no inline script, and its bundle by hash with a long cache', async () => {
    const page = await ctx()
      .http()
      .get('/docs')
      .expect(200)
      .expect('Content-Type', /text\/html/);
    const csp = String(page.headers['content-security-policy']);
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).not.toMatch(/script-src[^;]*(unsafe-inline|unsafe-eval|https?:)/);
    expect(csp).toContain("frame-ancestors 'none'");
    const scripts = [...page.text.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
    expect(scripts).toHaveLength(1);
    expect(scripts[0]![2]!.trim()).toBe('');
    const src = /src="([^"]+)"/.exec(scripts[0]![1]!)![1]!;
    expect(src).toMatch(/^\/docs\/redoc\.standalone\.[0-9a-f]{16}\.js$/);
    const bundle = await ctx()
      .http()
      .get(src)
      .expect(200)
      .expect('Content-Type', /javascript/);
    expect(bundle.headers['cache-control']).toBe('public, max-age=31536000, immutable');
    expect(bundle.text.length).toBeGreaterThan(100_000);
    await ctx().http().get('/docs/redoc.standalone.0000000000000000.js').expect(404);
  });

  describeWithTool('chromium')('in a browser', () => {
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('renders the operations from /openapi.json with nothing fetched off the loopback and no console error', async () => {
      await withPage(browser, async (page) => {
        const requested: string[] = [];
        const errors: string[] = [];
        const onLoopback = (u: string) => u.startsWith(`${server.endpoint()}/`) || u.startsWith('blob:') || u.startsWith('data:');
        // Whatever reaches the network layer for another host is recorded and aborted.
        const leaked: string[] = [];
        await page.route(
          (u) => !onLoopback(u.href),
          async (route) => {
            leaked.push(route.request().url());
            await route.abort();
          },
        );
        page.on('request', (r) => requested.push(r.url()));
        page.on('console', (m) => {
          if (m.type() === 'error') errors.push(m.text());
        });
        page.on('pageerror', (e) => errors.push(e.message));
        await page.goto(`${server.endpoint()}/docs`);
        // The operation's heading in the rendered content (the side menu's entries start collapsed).
        await page
          .locator('h2', { hasText: /^List pipelines\s*$/ })
          .first()
          .waitFor({ timeout: 60_000 });
        await page
          .locator('h2', { hasText: /^Create a build\s*$/ })
          .first()
          .waitFor();
        // Redoc's side menu always renders Redocly's logo from their CDN (no option drops it): the
        // page's CSP refuses it before any request is made; that refusal is the one console line allowed.
        expect(leaked).toEqual([]);
        expect(requested.filter((u) => !onLoopback(u) && u !== 'https://cdn.redoc.ly/redoc/logo-mini.svg')).toEqual([]);
        const refusedLogo = /^Loading the image 'https:\/\/cdn\.redoc\.ly\/redoc\/logo-mini\.svg' violates the following Content Security Policy directive/;
        expect(errors.filter((e) => !refusedLogo.test(e))).toEqual([]);
        expect(requested).toContain(`${server.endpoint()}/openapi.json`);
      });
    }, 120_000);
  });
});
