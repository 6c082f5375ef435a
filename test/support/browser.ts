/**
 * Browser tests: Playwright (playwright-core) driving the Chromium Debian packages
 * (/usr/bin/chromium, installed by .ci/run; Playwright's own browser download is not reachable
 * here). `CHROMIUM_PATH` points elsewhere; without it `chromium` is looked up on PATH
 * (test/support/tools.ts, which also decides whether browser suites run or are skipped). A test that fails leaves a screenshot of each open page
 * in test-results/screenshots (`withPage` takes it before the page closes).
 */
import fs from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type BrowserContext, type Page } from 'playwright-core';
import { chromiumPath } from './tools';

export const CHROMIUM_PATH = chromiumPath() ?? process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
export const SCREENSHOT_DIR = path.resolve(__dirname, '../../test-results/screenshots');

/** Without the background-networking flags Chromium keeps dialling Google's hosts, which this network refuses. */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export function chromiumAvailable(): boolean {
  return fs.existsSync(CHROMIUM_PATH);
}

export async function launchBrowser(): Promise<Browser> {
  if (!chromiumAvailable()) {
    throw new Error(`Chromium not found (CHROMIUM_PATH or chromium on PATH): install Debian's chromium (apt-get install chromium) or set CHROMIUM_PATH`);
  }
  return chromium.launch({ executablePath: CHROMIUM_PATH, headless: true, args: FLAGS });
}

function safeName(name: string): string {
  return name.replace(/[^a-z0-9._-]+/gi, '_').slice(0, 120);
}

/**
 * Runs `fn` with a fresh page (its own context: cookies and storage of its own). When `fn`
 * throws, a full-page screenshot named after the test goes to SCREENSHOT_DIR first.
 */
export async function withPage<T>(
  browser: Browser,
  fn: (page: Page, context: BrowserContext) => Promise<T>,
  opts: { viewport?: { width: number; height: number }; name?: string } = {},
): Promise<T> {
  const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1280, height: 900 } });
  const page = await context.newPage();
  try {
    return await fn(page, context);
  } catch (err) {
    const name = opts.name ?? expect.getState().currentTestName ?? 'page';
    fs.mkdirSync(SCREENSHOT_DIR, { recursive: true });
    await page.screenshot({ path: path.join(SCREENSHOT_DIR, `${safeName(name)}.png`), fullPage: true }).catch(() => undefined);
    throw err;
  } finally {
    await context.close();
  }
}
