/**
 * The build page in Chromium (issue 32): a 3 MB running log is windowed (a few dozen lines in
 * the DOM), a line link scrolls to its line, search counts and finds a match in a collapsed
 * place, true colour is applied, `_bk;t=` times show on demand, and new bytes come from the
 * offset already shown; parallel jobs read 1/3, 2/3, 3/3 with their emoji; a tab on a build with
 * 200 jobs waiting for agents opens no log and keeps to one event stream.
 */
import type { Browser, Page } from 'playwright-core';
import { describeEachDatabase } from '../support/context';
import { launchBrowser, withPage } from '../support/browser';
import { describeWithTool } from '../support/tools';
import { agentAuth, givenAgent, givenRegistrationToken, onLoopback, takeNextJob, until } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { accessibilityProblems, fitsWidth, runPageClock, signIn } from './web-support';

jest.setTimeout(180_000);

const T0 = Date.UTC(2026, 10, 27, 9, 30, 0);

/** `count` numbered lines from `from`, each stamped; every 1000th carries a true-colour needle. */
function logLines(from: number, count: number): string {
  let out = '';
  for (let n = from; n < from + count; n++) {
    const needle = n % 1000 === 0 ? ` \x1b[38;2;255;0;128mneedle-${n}\x1b[0m` : '';
    out += `\x1b_bk;t=${T0 + n}\x07line ${n} of the build's output${needle}\n`;
  }
  return out;
}

describeWithTool('chromium')('with Chromium', () => {
  describeEachDatabase('the build page in a browser', (ctx) => {
    const { endpoint } = onLoopback(ctx);
    let browser: Browser;
    beforeAll(async () => {
      browser = await launchBrowser();
    });
    afterAll(async () => {
      await browser?.close();
    });

    it('windows a 3 MB log, links to a line, searches it, shows times and true colour, and tails only new bytes', async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const pipeline = await givenPipeline(ctx(), org, token, {
        configuration: 'steps:\n  - label: ":hammer: Unit tests"\n    command: make test\n    parallelism: 3\n',
      });
      const build = await givenBuild(ctx(), org, pipeline, token);
      const agent = await givenAgent(ctx(), reg, 'big-log-agent');
      const job = await takeNextJob(ctx(), agent);
      // ~3 MB in chunks of at most ~900 KB (the agent API's body limit is 1 MiB).
      let offset = 0;
      let sequence = 1;
      const send = async (content: string) => {
        await ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence, offset, content }).expect(201);
        sequence++;
        offset += Buffer.byteLength(content);
      };
      const LINES = 60_000;
      for (let from = 1; from <= LINES; from += 15_000) await send(logLines(from, 15_000));

      await withPage(browser, async (page: Page) => {
        await signIn(page, endpoint(), token);
        const reads: { offset: number; lines: number }[] = [];
        page.on('response', async (res) => {
          const url = new URL(res.url());
          if (!url.pathname.endsWith(`/jobs/${job.id}/log`)) return;
          // Counted when the answer comes, its lines once its body is read (the page may have shown them already).
          const read = { offset: Number(url.searchParams.get('offset') ?? 0), lines: -1 };
          reads.push(read);
          const body = (await res.json().catch(() => null)) as { lines?: unknown[] } | null;
          read.lines = body?.lines?.length ?? -1;
        });
        const base = `${endpoint()}/${org.slug}/${pipeline.slug}/builds/${build.number}`;
        await page.goto(`${base}#${job.id}/L45000`);
        const viewer = page.locator(`.log-viewer[data-job-id="${job.id}"]`);
        // The link's line is scrolled to and marked, once the whole log is read.
        await viewer.locator('.ln-target', { hasText: 'line 45000 of' }).waitFor({ timeout: 60_000 });
        expect(await viewer.locator('.ln-target .ln-n').getAttribute('href')).toBe(`#${job.id}/L45000`);
        // Windowed: 60,000 lines, a few dozen rows in the DOM.
        expect(await viewer.locator('.ln').count()).toBeLessThan(200);
        expect(reads.length).toBeGreaterThanOrEqual(2); // 3 MB read in parts of at most 2 MiB
        expect(reads[0]!.offset).toBe(0);

        // Search: a count, and the match scrolled to.
        await viewer.locator('.log-search').fill('needle-51000');
        await viewer.locator('.log-count', { hasText: '1 of 1' }).waitFor();
        const hit = viewer.locator('.ln-current');
        expect(await hit.innerText()).toContain('line 51000 of');
        // True colour, applied through the CSSOM (no style attribute in the HTML), lightened just
        // enough to read on the log's background (#ff0080 on #1e1e1e is 4.4:1).
        expect(await hit.locator('span[data-fg="ff0080"]').evaluate((el) => (el as unknown as { style: { color: string } }).style.color)).toBe(
          'rgb(255, 38, 147)',
        );
        await viewer.locator('.log-search').fill('needle-');
        await viewer.locator('.log-count', { hasText: '1 of 60' }).waitFor();
        await viewer.locator('button[data-act="next"]').click();
        await viewer.locator('.log-count', { hasText: '2 of 60' }).waitFor();
        expect(await viewer.locator('.ln-current').innerText()).toContain('needle-2000');

        // Times: hidden until asked for, then the agent's stamp of each line.
        expect(await viewer.locator('.ln-current .ln-t').isVisible()).toBe(false);
        await viewer.locator('input[data-act="times"]').check();
        expect(await viewer.locator('.ln-current .ln-t').innerText()).toMatch(/^\d\d:\d\d:\d\d$/);

        // New bytes: read from the offset shown, only them.
        const shown = offset;
        await send('the newest line\n');
        // (The page reads every 3 s without the live stream; each read's body is recorded as it arrives.)
        await until(
          async () => reads.filter((r) => r.offset === shown && r.lines === 1).length,
          (n) => n > 0,
          'a read of the new line',
          2000,
        );
        // Every read since started at the end already shown, and the one that found the new line brought it alone.
        const later = reads.filter((r) => r.offset >= shown);
        expect(later.map((r) => r.offset)).toEqual(later.map(() => shown));
        expect(Math.max(...later.map((r) => r.lines))).toBe(1);
        expect(
          await page.evaluate((id) => (globalThis as unknown as { windsockLogs: Record<string, { lines: unknown[] }> }).windsockLogs[id]!.lines.length, job.id),
        ).toBe(LINES + 1);
        await viewer.locator('button[data-act="end"]').click();
        await viewer.locator('.ln', { hasText: 'the newest line' }).waitFor();
        // Parallel jobs read n/N with their emoji.
        expect(await page.locator('ol.jobs .job-parallel').allInnerTexts()).toEqual(['1/3', '2/3', '3/3']);
        expect(await page.locator('ol.jobs .job-name .emoji').first().innerText()).toBe('🔨');
        expect(await accessibilityProblems(page)).toEqual([]);
      });
      await withPage(
        browser,
        async (page) => {
          await signIn(page, endpoint(), token);
          await page.goto(`${endpoint()}/${org.slug}/${pipeline.slug}/builds/${build.number}`);
          expect(await fitsWidth(page)).toBe(true);
        },
        { viewport: { width: 375, height: 800 } },
      );
    });

    it('keeps a tab on 200 waiting jobs to one event stream, and opens none of their logs', async () => {
      const { org, token } = await ctx().givenAdmin();
      const pipeline = await givenPipeline(ctx(), org, token, {
        configuration: 'steps:\n  - label: "Shard %n"\n    command: make shard\n    parallelism: 200\n    agents:\n      queue: deploy\n',
      });
      const build = await givenBuild(ctx(), org, pipeline, token);
      await withPage(browser, async (page) => {
        await signIn(page, endpoint(), token);
        const asked: string[] = [];
        page.on('request', (req) => asked.push(new URL(req.url()).pathname));
        // The budget is counted over 11 s of the page's own clock: its timers are what is measured.
        await page.clock.install();
        await page.goto(`${endpoint()}/${org.slug}/${pipeline.slug}/builds/${build.number}`);
        expect(await page.locator('ol.jobs > li.job').count()).toBe(200);
        expect(await page.locator('ol.jobs .stuck').first().innerText()).toBe('Waiting for an agent matching queue=deploy: 0 connected');
        const live = () =>
          page.evaluate(
            () => (globalThis as unknown as { document: { documentElement: { dataset: { live?: string } } } }).document.documentElement.dataset.live,
          );
        await until(live, (v) => v === 'stream', 'the event stream open');
        await runPageClock(page, 11_000);
        const after = asked.filter((p) => !p.startsWith('/_assets/') && p !== `/${org.slug}/${pipeline.slug}/builds/${build.number}`);
        expect(after.filter((p) => p.endsWith('/log'))).toEqual([]);
        // One event stream carries the page's changes; the state poll stands in only without it.
        expect(after.filter((p) => p.endsWith('/events'))).toHaveLength(1);
        expect(after.filter((p) => p.endsWith('/state')).length).toBeLessThanOrEqual(3);
        expect(after.length).toBeLessThanOrEqual(4);
      });
      // Without the stream (refused here, as a proxy that buffers would leave it), one state request per poll.
      await withPage(browser, async (page) => {
        await signIn(page, endpoint(), token);
        await page.route('**/events', (route) => route.abort());
        const asked: string[] = [];
        page.on('request', (req) => asked.push(new URL(req.url()).pathname));
        await page.clock.install();
        await page.goto(`${endpoint()}/${org.slug}/${pipeline.slug}/builds/${build.number}`);
        await runPageClock(page, 11_000);
        const after = asked.filter((p) => !p.startsWith('/_assets/') && p !== `/${org.slug}/${pipeline.slug}/builds/${build.number}`);
        expect(after.filter((p) => p.endsWith('/log'))).toEqual([]);
        const states = after.filter((p) => p.endsWith('/state')).length;
        expect(states).toBeGreaterThanOrEqual(1);
        expect(states).toBeLessThanOrEqual(3);
        expect(after.length - states).toBeLessThanOrEqual(1); // the stream's refused attempt
      });
    });
  });
});
