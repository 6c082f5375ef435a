/**
 * The web interface in Chromium (test/support/browser.ts) against Windsock on loopback, on both
 * stores: sign in with a token, create a pipeline and a build through the forms, watch a job's
 * log grow while the reference agent runs it and the page's states change without a reload,
 * unblock a block step with its field, retry a failed job, find a flaky test after two uploads, and another organization's token sees 404
 * pages. Every page visited passes axe-core (no serious or critical violations), and the build
 * page fits a 375 px wide screen. A failing test leaves screenshots in test-results/screenshots.
 */
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { auth, describeEachDatabase } from '../support/context';
import { launchBrowser, withPage } from '../support/browser';
import { describeWithTool } from '../support/tools';
import { onLoopback, withReferenceAgents } from '../support/agents';
import { givenSuite, result, suiteAuth, upload } from '../uploads/helpers';
import { accessibilityProblems, fitsWidth, signIn } from './web-support';

jest.setTimeout(120_000);

const STEPS = [
  'steps:',
  '  - label: counting',
  '    command: for i in 1 2 3 4 5 6 7 8 9 10; do echo "--- line $i"; printf \'\\033[32mgreen %s\\033[0m\\n\' $i; sleep 0.6; done',
  '  - block: Ship it?',
  '    fields:',
  '      - text: Release name',
  '        key: release',
  '  - label: flaky',
  '    command: echo "about to fail"; exit 1',
].join('\n');

// Chromium decides whether the file runs (test/support/tools.ts): skipped with a line where it is missing, fatal in CI.
describeWithTool('chromium')('with Chromium', () => {
  describeEachDatabase('the web interface in a browser', (ctx) => {
    const { endpoint } = onLoopback(ctx);
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    });
    afterAll(async () => {
      await browser?.close();
    });

    const expectAccessible = async (page: Page) => expect(await accessibilityProblems(page)).toEqual([]);

    it('signs in, creates a pipeline and a build, tails a running log, unblocks a block step and retries a failed job', async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = (await ctx().http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(token)).send({ description: 'web' }).expect(201)).body
        .token as string;
      await withPage(browser, async (page) => {
        await page.goto(`${endpoint()}/login`);
        await expectAccessible(page);
        await signIn(page, endpoint(), token);
        expect(new URL(page.url()).pathname).toBe(`/${org.slug}`);
        await expectAccessible(page);

        await page.click('text=New pipeline');
        await page.fill('#name', 'Web app');
        await page.fill('#repository', 'git@example.com:acme/web.git');
        await page.fill('#configuration', STEPS);
        await Promise.all([page.waitForURL(`**/${org.slug}/web-app`), page.click('button:has-text("Create pipeline")')]);
        await expectAccessible(page);

        await page.click('text=New build');
        await expectAccessible(page);
        await page.fill('#message', 'Ship the <web> app');
        await Promise.all([page.waitForURL('**/web-app/builds/1'), page.click('button:has-text("Create build")')]);
        expect(await page.locator('h1').innerText()).toContain('Ship the <web> app');

        await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'web-e2e', spawn: 1, pollIntervalMs: 50 }, async () => {
          // The running job's log is open and tails by itself: seen part-way, then whole, with no reload.
          const first = page.locator('ol.jobs > li.job').first();
          const viewer = first.locator('.log-viewer');
          // Each `green` line is inside a collapsed section: search finds it and opens its section.
          await viewer.locator('.ln-g', { hasText: /\bline 2$/ }).waitFor({ timeout: 60_000 });
          expect(await viewer.locator('.ln-g', { hasText: /\bline 10$/ }).count()).toBe(0);
          await viewer.locator('.ln-g', { hasText: /\bline 10$/ }).waitFor({ timeout: 60_000 });
          // Section headers fold: `--- line 1` is collapsed, its line not in the page until opened.
          expect(await viewer.locator('.ln', { hasText: /green 1$/ }).count()).toBe(0);
          await viewer
            .locator('.ln-g', { hasText: /\bline 1$/ })
            .locator('.ln-c')
            .click();
          // Colours are classes, not markup from the log.
          expect(await viewer.locator('.ln span.a-f2', { hasText: /^green 1$/ }).textContent()).toBe('green 1');
          await viewer.locator('.log-search').fill('green 7');
          await viewer.locator('.log-count', { hasText: '1 of 1' }).waitFor();
          expect(await viewer.locator('.ln-current').innerText()).toContain('green 7');

          // The agents page in a second tab of the same session.
          const agentsTab = await page.context().newPage();
          try {
            await agentsTab.goto(`${endpoint()}/organizations/${org.slug}/agents`);
            expect(await agentsTab.locator('main').innerText()).toContain('web-e2e');
            await expectAccessible(agentsTab);
          } finally {
            await agentsTab.close();
          }

          // No reload: the page learns that the first job passed and the build is blocked.
          await page.locator('button:has-text("Unblock")').waitFor({ timeout: 60_000 });
          expect(await page.locator('[data-build-badge]').innerText()).toContain('Blocked');
          expect(await first.locator('[data-job-badge]').innerText()).toContain('Passed');
          await expectAccessible(page);
          await page.fill('input[name="field:release"]', 'v1 <beta>');
          await Promise.all([page.waitForNavigation(), page.click('button:has-text("Unblock")')]);
          expect(await page.locator('main').innerText()).toContain('Unblocked by');

          // No reload by the test: the page shows the failed job's Retry when it fails.
          await page.locator('button:has-text("Retry")').waitFor({ timeout: 60_000 });
          await Promise.all([page.waitForNavigation(), page.click('button:has-text("Retry")')]);
          // The retry is a new job in the failed one's place; the failed one is its earlier attempt.
          const flaky = page.locator('ol.jobs > li.job', { has: page.locator('.job-name', { hasText: 'flaky' }) });
          expect(await flaky.count()).toBe(1);
          expect(await flaky.locator('details.attempts > summary').innerText()).toBe('1 earlier attempt');
          await flaky.locator('[data-job-badge] .state-failed').waitFor({ timeout: 60_000 });
        });

        const api = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/web-app/builds/1?include_retried_jobs=true`).set(auth(token)).expect(200))
          .body;
        expect(api.meta_data).toMatchObject({ release: 'v1 <beta>' });
        expect(api.jobs.filter((j: { name: string | null }) => j.name === 'flaky')).toHaveLength(2);
        await page.goto(`${endpoint()}/${org.slug}/web-app?state=failed`);
        expect(await page.locator('main table').innerText()).toContain('Ship the <web> app');
        await expectAccessible(page);
        await page.goto(`${endpoint()}/${org.slug}/web-app/builds/1`);
        if (process.env.UPDATE_SCREENSHOTS === '1') {
          await page.locator('ol.jobs > li.job').first().locator('details.job-log > summary').click();
          await page.locator('ol.jobs > li.job').first().locator('.ln').first().waitFor();
          await page.screenshot({ path: path.resolve(__dirname, '../../docs/web-build-page.png'), fullPage: true });
        }
      });

      // Narrow: the build page stays within 375 px.
      await withPage(
        browser,
        async (page) => {
          await signIn(page, endpoint(), token);
          await page.goto(`${endpoint()}/${org.slug}/web-app/builds/1`);
          expect(await fitsWidth(page)).toBe(true);
          if (process.env.UPDATE_SCREENSHOTS === '1')
            await page.screenshot({ path: path.resolve(__dirname, '../../docs/web-build-page-phone.png'), fullPage: true });
          await page.goto(`${endpoint()}/${org.slug}/web-app`);
          expect(await fitsWidth(page)).toBe(true);
        },
        { viewport: { width: 375, height: 800 } },
      );

      // Another organization's token: 404 pages, nothing of this build.
      const other = await ctx().givenAdmin();
      await withPage(browser, async (page) => {
        await signIn(page, endpoint(), other.token);
        const res = await page.goto(`${endpoint()}/${org.slug}/web-app/builds/1`);
        expect(res!.status()).toBe(404);
        expect(await page.locator('h1').innerText()).toBe('Not found');
        expect(await page.content()).not.toContain('Ship the');
      });
    });

    it('shows the flaky test after two uploads, with search', async () => {
      const s = await givenSuite(ctx(), 'Web suite');
      const post = (body: object) => ctx().http().post('/v1/uploads').set(suiteAuth(s.apiToken)).send(body).expect(202);
      await post(upload({ key: 'run-1', branch: 'main', commit_sha: 'c0ffee' }, [result('applies the discount', 'failed'), result('adds', 'passed')]));
      await post(upload({ key: 'run-2', branch: 'main', commit_sha: 'c0ffee' }, [result('applies the discount', 'passed'), result('adds', 'passed')]));
      await withPage(browser, async (page) => {
        await signIn(page, endpoint(), s.token);
        await page.goto(`${endpoint()}/organizations/${s.org.slug}/analytics`);
        await page.click('text=Web suite');
        await expectAccessible(page);
        // The run with the failure (its Failed column says 1): its failures list the test.
        await page
          .locator('main tbody tr', { has: page.locator('td:nth-child(4)', { hasText: /^1$/ }) })
          .locator('a')
          .click();
        expect(await page.locator('main').innerText()).toContain('applies the discount');
        await expectAccessible(page);
        await page.goBack();
        await page.click('text=Flaky tests');
        await expectAccessible(page);
        const table = page.locator('main table');
        expect(await table.innerText()).toContain('applies the discount');
        expect(await table.innerText()).not.toContain('adds');
        // Keyboard: the first Tab reaches the skip link, and a focused control shows its outline.
        await page.reload();
        await page.keyboard.press('Tab');
        expect(
          await page.evaluate(() => (globalThis as unknown as { document: { activeElement: { textContent: string } } }).document.activeElement.textContent),
        ).toBe('Skip to content');
        await page.focus('#f-search');
        expect(
          await page
            .locator('#f-search')
            .evaluate((el) => (globalThis as unknown as { getComputedStyle(e: unknown): { outlineStyle: string } }).getComputedStyle(el).outlineStyle),
        ).toBe('solid');
        await page.fill('#f-search', 'nothing like it');
        await Promise.all([page.waitForNavigation(), page.click('button:has-text("Filter")')]);
        expect(await page.locator('main').innerText()).toContain('No flaky tests');
      });
    });
  });
});
