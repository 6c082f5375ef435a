/**
 * Issue 32's other pages in Chromium against Windsock on loopback, on both stores: a pipeline's
 * settings (a refused YAML shown beside the steps, then saved), its steps view and badge with a
 * working Copy button, a member who sees no Pause button, and the Test Engine pages (a run
 * linked to its build, a test's history). Every page passes axe-core (no serious or critical
 * violations) in the light and the dark colour scheme, and fits a 375 px wide screen.
 */
import type { Browser, Page } from 'playwright-core';
import { auth, describeEachDatabase } from '../support/context';
import { launchBrowser, withPage } from '../support/browser';
import { describeWithTool } from '../support/tools';
import { givenAgent, givenRegistrationToken, onLoopback } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { result, suiteAuth, upload } from '../uploads/helpers';
import { accessibilityProblems, fitsWidth, signIn } from './web-support';

jest.setTimeout(120_000);

describeWithTool('chromium')('with Chromium', () => {
  describeEachDatabase('the web interface: settings, permissions and Test Engine pages', (ctx) => {
    const { endpoint } = onLoopback(ctx);
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    });
    afterAll(async () => {
      await browser?.close();
    });

    /** axe-core in both colour schemes: the dark one has its own colours to check. */
    const expectAccessible = async (page: Page) => {
      expect(await accessibilityProblems(page)).toEqual([]);
      await page.emulateMedia({ colorScheme: 'dark' });
      // The dark scheme is in force (the stylesheet's dark background), and its colours pass too.
      expect(
        await page.evaluate(
          () =>
            (globalThis as unknown as { getComputedStyle(e: unknown): { backgroundColor: string }; document: { body: unknown } }).getComputedStyle(
              (globalThis as unknown as { document: { body: unknown } }).document.body,
            ).backgroundColor,
        ),
      ).toBe('rgb(15, 20, 26)');
      expect(await accessibilityProblems(page)).toEqual([]);
      await page.emulateMedia({ colorScheme: 'light' });
    };

    it('edits a pipeline in its settings with the YAML error in place, shows its steps and copies the badge', async () => {
      const { org, token } = await ctx().givenAdmin();
      const pipeline = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: make test\n');
      await withPage(browser, async (page, context) => {
        await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: endpoint() });
        await signIn(page, endpoint(), token);
        await page.goto(`${endpoint()}/${org.slug}/${pipeline.slug}`);
        await Promise.all([page.waitForURL(`**/${pipeline.slug}/settings`), page.click('main a:has-text("Settings")')]);
        await expectAccessible(page);

        await page.fill('#configuration', 'steps:\n  - command: make test\n    timeout_in_minutes: "soon"\n');
        await Promise.all([page.waitForNavigation(), page.click('button:has-text("Save settings")')]);
        // The error is beside the steps, tied to the field, and what was typed is still there.
        const error = page.locator('#configuration-error');
        expect(await error.innerText()).toMatch(/step 1 \(line 3\)/);
        expect(await page.locator('#configuration').getAttribute('aria-describedby')).toContain('configuration-error');
        expect(await page.locator('#configuration').inputValue()).toContain('timeout_in_minutes: "soon"');
        await expectAccessible(page);

        await page.fill('#configuration', 'steps:\n  - label: ":hammer: Lint"\n    command: make lint\n');
        await page.fill('#branch_configuration', 'main release/*');
        await Promise.all([page.waitForURL('**/settings?saved=1'), page.click('button:has-text("Save settings")')]);
        expect(await page.locator('main .notice').first().innerText()).toContain('Settings saved.');
        const api = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${pipeline.slug}`).set(auth(token)).expect(200)).body;
        expect(api.branch_configuration).toBe('main release/*');
        expect(api.steps[0].command).toBe('make lint');

        await page.click('nav.subnav a:has-text("Steps")');
        expect(await page.locator('pre.steps-yaml').innerText()).toContain('make lint');
        // The badge image loads from this origin, and Copy puts its Markdown on the clipboard.
        expect(await page.locator('img[alt^="Build status"]').evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(0);
        await page.click('button[data-copy="badge-markdown"]');
        await page.locator('button[data-copy="badge-markdown"]:has-text("Copied")').waitFor();
        expect(
          await page.evaluate(() => (globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }).navigator.clipboard.readText()),
        ).toBe(`[![Build status](${api.badge_url})](${api.web_url})`);
        await expectAccessible(page);
      });

      await withPage(
        browser,
        async (page) => {
          await signIn(page, endpoint(), token);
          await page.goto(`${endpoint()}/${org.slug}/${pipeline.slug}/settings`);
          expect(await fitsWidth(page)).toBe(true);
          await page.goto(`${endpoint()}/${org.slug}/${pipeline.slug}/steps`);
          expect(await fitsWidth(page)).toBe(true);
        },
        { viewport: { width: 375, height: 800 } },
      );
    });

    it('passes axe-core in both colour schemes on the pages that were there before', async () => {
      const { org, token } = await ctx().givenAdmin();
      const pipeline = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: make test\n  - block: Ship?\n');
      const build = await givenBuild(ctx(), org.slug, pipeline.slug, token);
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const agent = await givenAgent(ctx(), reg, 'dark-agent');
      await withPage(browser, async (page) => {
        await page.goto(`${endpoint()}/login`);
        await expectAccessible(page);
        await signIn(page, endpoint(), token);
        for (const path of [
          `/${org.slug}`,
          `/${org.slug}/${pipeline.slug}`,
          `/${org.slug}/${pipeline.slug}/builds/${build.number}`,
          `/${org.slug}/${pipeline.slug}/builds/new`,
          `/organizations/${org.slug}/pipelines/new`,
          `/organizations/${org.slug}/agents`,
          `/organizations/${org.slug}/agents/${agent.id}`,
          `/organizations/${org.slug}/analytics`,
        ]) {
          const res = await page.goto(`${endpoint()}${path}`);
          expect(res!.status()).toBe(200);
          await expectAccessible(page);
        }
      });
    });

    it('shows a member no Pause button, and a run linked to its build with the test history', async () => {
      const { org, token } = await ctx().givenAdmin();
      const created = await ctx()
        .http()
        .post(`/v2/analytics/organizations/${org.slug}/suites`)
        .set(auth(token))
        .send({ name: 'Browser suite', show_api_token: true })
        .expect(201);
      const s = { org, token, apiToken: created.body.api_token as string, suite: { slug: created.body.slug as string } };
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const agent = await givenAgent(ctx(), reg, 'browser-agent');
      const memberToken = await ctx().givenToken(await ctx().givenUser(org, 'member'), [org]);
      await withPage(browser, async (page) => {
        await signIn(page, endpoint(), memberToken);
        await page.goto(`${endpoint()}/organizations/${s.org.slug}/agents/${agent.id}`);
        expect(await page.locator('button:has-text("Pause")').count()).toBe(0);
        await expectAccessible(page);
      });

      const pipeline = await givenPipeline(ctx(), s.org.slug, s.token, 'steps:\n  - command: make test\n');
      const build = await givenBuild(ctx(), s.org.slug, pipeline.slug, s.token);
      const post = (body: object) => ctx().http().post('/v1/uploads').set(suiteAuth(s.apiToken)).send(body).expect(202);
      await post(
        upload({ ci: 'buildkite', key: build.id, branch: 'main', commit_sha: 'c0ffee' }, [
          result('applies the discount', 'failed', { failure_expanded: [{ expanded: ['expected 10', 'got 12'], backtrace: ['cart_spec.rb:42'] }] }),
        ]),
      );
      await post(upload({ key: 'run-2', branch: 'main', commit_sha: 'c0ffee' }, [result('applies the discount', 'passed')]));
      await withPage(browser, async (page) => {
        await signIn(page, endpoint(), s.token);
        await page.goto(`${endpoint()}/organizations/${s.org.slug}/analytics/suites/${s.suite.slug}`);
        await expectAccessible(page);
        await page
          .locator('main tbody tr', { has: page.locator(`a[href="/${s.org.slug}/${pipeline.slug}/builds/${build.number}"]`) })
          .locator('a')
          .first()
          .click();
        await page.click('summary:has-text("Expanded failure")');
        expect(await page.locator('details.failure-expanded').innerText()).toContain('cart_spec.rb:42');
        await expectAccessible(page);
        await page.click('main a:has-text("applies the discount")');
        expect(await page.locator('main').innerText()).toContain('50.0%');
        expect(await page.locator('svg.history rect').count()).toBe(2);
        await expectAccessible(page);
        await page.click('text=Browser suite');
        await page.click('text=Flaky tests');
        expect(await page.locator('main thead').innerText()).toContain('First seen');
        await expectAccessible(page);
        await page.setViewportSize({ width: 375, height: 800 });
        expect(await fitsWidth(page)).toBe(true);
        // The build link leads to the build's page.
        await page.goto(`${endpoint()}/organizations/${s.org.slug}/analytics/suites/${s.suite.slug}`);
        await Promise.all([page.waitForURL(`**/builds/${build.number}`), page.click(`a[href="/${s.org.slug}/${pipeline.slug}/builds/${build.number}"]`)]);
      });
    });
  });
});
