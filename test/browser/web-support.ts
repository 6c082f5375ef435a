/** For the web interface's browser tests: signing in through the form, and axe-core's check of a page. */
import fs from 'node:fs';
import type { Page } from 'playwright-core';

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
  await page.evaluate(AXE);
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
