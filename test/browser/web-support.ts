/** For the web interface's browser tests: signing in through the form, axe-core's check of a page, and moving a page's clock. */
import fs from 'node:fs';
import type { Page, Request } from 'playwright-core';

const AXE = fs.readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

export async function signIn(page: Page, endpoint: string, token: string): Promise<void> {
  await page.goto(`${endpoint}/login`);
  await page.fill('#token', token);
  await Promise.all([page.waitForURL((u) => !u.pathname.startsWith('/login')), page.click('button:has-text("Sign in")')]);
}

/**
 * axe-core's serious and critical violations on the page as it is now. Injected through the
 * DevTools protocol (page.evaluate), which the page's CSP does not govern: the page itself
 * still allows no inline script.
 */
export async function accessibilityProblems(page: Page): Promise<string[]> {
  // Injected once per document: the ~550 KB script takes about 230 ms to send and compile, and
  // the checks of one page in both colour schemes ask twice.
  if (!(await page.evaluate(() => 'axe' in globalThis))) await page.evaluate(AXE);
  const violations = await page.evaluate(async () => {
    type Result = { violations: { id: string; impact: string; help: string; nodes: { target: string[] }[] }[] };
    const g = globalThis as unknown as { axe: { run: (context: unknown) => Promise<Result> }; document: unknown };
    return (await g.axe.run(g.document)).violations;
  });
  return violations
    .filter((v) => v.impact === 'serious' || v.impact === 'critical')
    .map((v) => `${v.id} (${v.impact}): ${v.help} at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
}

/** Whether the main content fits the viewport's width (nothing to scroll sideways). */
export async function fitsWidth(page: Page): Promise<boolean> {
  return page.evaluate(() => {
    type Box = { scrollWidth: number };
    const g = globalThis as unknown as { innerWidth: number; document: { documentElement: Box; querySelector(s: string): Box } };
    return g.document.documentElement.scrollWidth <= g.innerWidth && g.document.querySelector('main').scrollWidth <= g.innerWidth;
  });
}

/**
 * Runs the page's timers through `ms` of its own clock (`page.clock.install()` before it loaded)
 * in steps of `stepMs`, each step's requests answered before the next: what the page asks for in
 * `ms` of its time, without waiting `ms` of real time. A timer the page sets once an answer has
 * come counts from the page's clock, so the steps keep the page's own timeline. Requests that stay
 * open (`open`: an event stream) are not waited for.
 */
export async function runPageClock(page: Page, ms: number, { stepMs = 250, open = /\/events$/ } = {}): Promise<void> {
  const pending = new Set<Request>();
  const started = (r: Request) => {
    if (!open.test(new URL(r.url()).pathname)) pending.add(r);
  };
  const ended = (r: Request) => pending.delete(r);
  page.on('request', started);
  page.on('requestfinished', ended);
  page.on('requestfailed', ended);
  try {
    for (let ran = 0; ran < ms; ran += stepMs) {
      await page.clock.runFor(Math.min(stepMs, ms - ran));
      for (let tries = 0; pending.size > 0; tries++) {
        if (tries > 1000) throw new Error(`requests still open after 10 s: ${[...pending].map((r) => r.url()).join(', ')}`);
        await new Promise((r) => setTimeout(r, 10));
      }
      // A round trip to the page: what the answers set off runs before the clock moves on.
      await page.evaluate(() => 0);
    }
  } finally {
    page.off('request', started);
    page.off('requestfinished', ended);
    page.off('requestfailed', ended);
  }
}
