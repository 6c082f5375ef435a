/**
 * Test suites: the list, a suite's runs (each linked to the build it ran in, when the collector's
 * `run_env` named a Buildkite build), a run's failures with their expanded failure and backtrace,
 * a test's history (its latest executions with result and duration, and its reliability), and
 * the flaky tests with the API's search, branch and period and when each was first and last seen.
 */
import { PERIOD_MS } from '../../suites/test-metrics';
import type { FlakyPeriod } from '../../suites/service';
import type { FailureExpanded, Run } from '../../suites/results-repository';
import type { Actor } from '../../core/identity';
import { isUuid } from '../../core/uuid';
import { actorFor, mayCall, type WebDeps } from '../context';
import { html, type Part } from '../html';
import type { WebRouter } from '../routes';
import { layout, pagination, table, time } from '../ui';
import { pageNumber } from './forms';
import { keysOf } from '../../db/row-types';

const PER_PAGE = 30;
/** How many of a test's latest executions its page shows. */
export const HISTORY_LENGTH = 50;
/** How many of a run's failed executions its page shows (the API pages them; the page shows the first ones). */
const RUN_PAGE_FAILURES = 1000;

/** A run's build on its page: `/{org}/{pipeline}/builds/{n}` and how to call it. */
interface BuildLink {
  href: string;
  label: string;
}

/**
 * The builds these runs ran in, by run id: a run uploaded from a Buildkite job carries the
 * build's UUID as its key (`run_env.key`, with `ci` buildkite). Only builds of the organization
 * whose pipeline the caller may read, and only for a token that may read builds.
 */
async function buildLinks(deps: Pick<WebDeps, 'builds' | 'pipelines'>, actor: Actor, runs: readonly Run[]): Promise<Map<string, BuildLink>> {
  const out = new Map<string, BuildLink>();
  if (!mayCall(actor.principal, 'getBuild')) return out;
  const keyed = runs.filter((r) => r.ci === 'buildkite' && isUuid(r.key));
  const ids = [...new Set(keyed.map((r) => r.key.toLowerCase()))];
  const found = (await Promise.all(ids.map((id) => deps.builds.findById(id)))).flatMap((b) => (b && b.organizationId === actor.organization.id ? [b] : []));
  if (!found.length) return out;
  const readable = await deps.pipelines.readableByIds(new Map([[actor.organization.id, actor]]), [...new Set(found.map((b) => b.pipelineId))]);
  const byId = new Map(
    found.flatMap((b) => {
      const p = readable.get(b.pipelineId);
      return p
        ? [[b.id, { href: `/${actor.organization.slug}/${p.pipeline.slug}/builds/${b.number}`, label: `${p.pipeline.name} #${b.number}` }] as const]
        : [];
    }),
  );
  for (const r of keyed) {
    const link = byId.get(r.key.toLowerCase());
    if (link) out.set(r.id, link);
  }
  return out;
}

/** What a run is called: its branch and commit, else its key. */
function runName(r: Run): string {
  const commit = r.commitSha?.slice(0, 10);
  if (r.branch && commit) return `${r.branch} @ ${commit}`;
  return r.branch ?? commit ?? r.key;
}

function buildCell(link: BuildLink | undefined): Part {
  return link ? html`<a href="${link.href}">${link.label}</a>` : html`<span class="muted">–</span>`;
}

/** Seconds as the page shows a test's duration: `250 ms`, `1.52 s`. */
export function testDuration(seconds: number | null): string {
  if (seconds === null) return '–';
  return seconds < 1 ? `${Math.round(seconds * 1000)} ms` : `${seconds.toFixed(2)} s`;
}

function percent(ratio: number | null): string {
  return ratio === null ? '–' : `${(ratio * 100).toFixed(1)}%`;
}

/**
 * A test's executions, oldest first, as a bar chart: one bar each, its height the duration (the
 * longest the full height), its colour the result. Inline SVG drawn with attributes only (the
 * CSP allows no inline style); for screen readers, its summary, and the table below has the rest.
 */
function historyChart(executions: readonly { result: string; duration: number | null }[]): Part {
  const BAR = 10;
  const GAP = 3;
  const HEIGHT = 40;
  const longest = Math.max(0, ...executions.map((e) => e.duration ?? 0));
  const width = executions.length * (BAR + GAP);
  const passed = executions.filter((e) => e.result === 'passed').length;
  const label = `The last ${executions.length} executions, oldest first: ${passed} passed, ${executions.length - passed} not; bar heights are durations, the longest ${testDuration(longest || null)}.`;
  return html`<svg class="history" role="img" aria-label="${label}" viewBox="0 0 ${width} ${HEIGHT}" width="${width}" height="${HEIGHT}">
    ${executions.map((e, i) => {
      // A bar is at least a sliver high, so an execution without a duration still shows its result.
      const h = Math.max(3, longest > 0 && e.duration !== null ? Math.round((e.duration / longest) * HEIGHT) : 3);
      return html`<rect class="result-${e.result.replace(/[^a-z]/g, '')}" x="${i * (BAR + GAP)}" y="${HEIGHT - h}" width="${BAR}" height="${h}">
        <title>${e.result}, ${testDuration(e.duration)}</title>
      </rect>`;
    })}
  </svg>`;
}

/** A failure's expanded lines and backtrace, as the collector sent them. */
function expandedFailure(expanded: FailureExpanded): Part {
  if (!expanded?.length) return '';
  return html`<details class="failure-expanded">
    <summary>Expanded failure</summary>
    ${expanded.map(
      (item) =>
        html`${item.expanded?.length ? html`<pre class="failure">${item.expanded.join('\n')}</pre>` : ''}${
          item.backtrace?.length
            ? html`<p class="muted">Backtrace</p>
                <pre class="failure">${item.backtrace.join('\n')}</pre>`
            : ''
        }`,
    )}
  </details>`;
}

export function registerSuitePages(web: WebRouter): void {
  const { suites } = web.deps;
  const deps = web.deps;
  const suiteBase = (org: string, slug: string) => `/organizations/${org}/analytics/suites/${slug}`;

  web.page('/organizations/:org/analytics', 'listSuites', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const { items } = await suites.list(actor, 0, 100);
    return layout(
      ctx,
      'Test suites',
      html`<h1>Test suites</h1>
        ${
          items.length
            ? html`<ul>
                ${items.map((s) => html`<li><a href="${suiteBase(actor.organization.slug, s.slug)}">${s.name}</a></li>`)}
              </ul>`
            : html`<p>No test suites yet.</p>`
        }`,
    );
  });

  web.page('/organizations/:org/analytics/suites/:suite', 'getSuite', async ({ principal, params, query, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const suite = await suites.get(actor, params.suite!);
    const page = pageNumber(query.page);
    const runs = await suites.runs(actor, suite.slug, {}, (page - 1) * PER_PAGE, PER_PAGE);
    const links = await buildLinks(deps, actor, runs.items);
    const base = suiteBase(actor.organization.slug, suite.slug);
    return layout(
      ctx,
      suite.name,
      html`<p class="muted"><a href="/organizations/${actor.organization.slug}/analytics">Test suites</a></p>
        <h1>${suite.name}</h1>
        <p class="actions"><a class="button secondary" href="${base}/flaky-tests">Flaky tests</a></p>
        <h2>Runs</h2>
        ${table(
          ['Run', 'Build', 'Passed', 'Failed', { label: 'Commit', optional: true }, { label: 'Created', optional: true }],
          runs.items.map(
            (r) =>
              html`<tr>
                <td><a href="${base}/runs/${r.id}">${runName(r)}</a></td>
                <td>${buildCell(links.get(r.id))}</td>
                <td>${r.passedCount}</td>
                <td>${r.failedCount}</td>
                <td class="cols-optional"><code>${r.commitSha?.slice(0, 10) ?? '–'}</code></td>
                <td class="cols-optional">${time(r.createdAt)}</td>
              </tr>`,
          ),
          html`<p>No runs yet.</p>`,
        )}
        ${pagination(base, {}, page, runs.hasNext)}`,
    );
  });

  web.page('/organizations/:org/analytics/suites/:suite/runs/:run', 'getRun', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const suite = await suites.get(actor, params.suite!);
    const run = await suites.run(actor, suite.slug, params.run!);
    const failures = await suites.failedExecutions(actor, suite.slug, run.id, 0, RUN_PAGE_FAILURES);
    const build = (await buildLinks(deps, actor, [run])).get(run.id);
    const base = suiteBase(actor.organization.slug, suite.slug);
    return layout(
      ctx,
      `Run · ${suite.name}`,
      html`<p class="muted"><a href="${base}">${suite.name}</a></p>
        <h1>Run ${runName(run)}</h1>
        <dl class="facts">
          <dt>Build</dt>
          <dd>${buildCell(build)}</dd>
          <dt>Branch</dt>
          <dd>${run.branch ?? '–'}</dd>
          <dt>Commit</dt>
          <dd>${run.commitSha ?? '–'}</dd>
          <dt>Passed</dt>
          <dd>${run.passedCount}</dd>
          <dt>Failed</dt>
          <dd>${run.failedCount}</dd>
          <dt>Created</dt>
          <dd>${time(run.createdAt)}</dd>
        </dl>
        <h2>Failures</h2>
        ${
          failures.length
            ? html`<ul>
                ${failures.map(
                  (f) =>
                    html`<li>
                      <a href="${base}/tests/${f.testId}">${f.testName}</a> ${f.location ? html`<span class="muted">${f.location}</span>` : ''}
                      <span class="muted">${testDuration(f.duration)}</span>
                      ${f.failureReason ? html`<pre class="failure">${f.failureReason}</pre>` : ''} ${expandedFailure(f.failureExpanded)}
                    </li>`,
                )}
              </ul>`
            : html`<p>No failures in this run.</p>`
        }`,
    );
  });

  web.page('/organizations/:org/analytics/suites/:suite/tests/:test', 'getTest', async ({ principal, params, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const suite = await suites.get(actor, params.suite!);
    const { test, labels, executions, reliability, week } = await suites.testHistory(actor, suite.slug, params.test!, HISTORY_LENGTH);
    const links = await buildLinks(
      deps,
      actor,
      executions.map((e) => e.run),
    );
    const base = suiteBase(actor.organization.slug, suite.slug);
    const oldestFirst = [...executions].reverse();
    return layout(
      ctx,
      test.name,
      html`<p class="muted"><a href="${base}">${suite.name}</a></p>
        <h1>${test.name}</h1>
        <dl class="facts">
          <dt>Scope</dt>
          <dd>${test.scope ?? '–'}</dd>
          <dt>Location</dt>
          <dd>${test.location ?? '–'}</dd>
          <dt>File</dt>
          <dd>${test.fileName ?? '–'}</dd>
          <dt>State</dt>
          <dd>${test.state}</dd>
          <dt>Labels</dt>
          <dd>${labels.join(', ') || '–'}</dd>
          <dt>Reliability</dt>
          <dd>
            ${percent(reliability)}
            <span class="muted">over the last ${executions.length} ${executions.length === 1 ? 'execution' : 'executions'}</span>; ${percent(week.reliability)}
            <span class="muted">over 7 days (${week.executionsCount} executions)</span>
          </dd>
          <dt>Duration (7 days)</dt>
          <dd>average ${testDuration(week.durationAvg)}, longest ${testDuration(week.durationMax)}</dd>
        </dl>
        <h2>History</h2>
        ${executions.length ? historyChart(oldestFirst) : ''}
        ${table(
          ['Result', 'Duration', 'Run', 'Build', { label: 'When', optional: true }],
          executions.map(
            (e) =>
              html`<tr>
                <td class="result-${e.result.replace(/[^a-z]/g, '')}">${e.result}</td>
                <td>${testDuration(e.duration)}</td>
                <td><a href="${base}/runs/${e.run.id}">${runName(e.run)}</a></td>
                <td>${buildCell(links.get(e.run.id))}</td>
                <td class="cols-optional">${time(e.createdAt)}</td>
              </tr>`,
          ),
          html`<p>This test has no executions yet.</p>`,
        )}`,
    );
  });

  web.page('/organizations/:org/analytics/suites/:suite/flaky-tests', 'listFlakyTests', async ({ principal, params, query, ctx }) => {
    const actor = actorFor(principal, params.org!);
    const suite = await suites.get(actor, params.suite!);
    const period: FlakyPeriod = keysOf(PERIOD_MS).find((p) => p === query.period) ?? '7days';
    const filter = { search: query.search?.slice(0, 255) || undefined, branch: query.branch?.slice(0, 255) || undefined, period };
    const page = pageNumber(query.page);
    const flaky = await suites.flakyTests(actor, suite.slug, filter, (page - 1) * PER_PAGE, PER_PAGE);
    const base = suiteBase(actor.organization.slug, suite.slug);
    return layout(
      ctx,
      `Flaky tests · ${suite.name}`,
      html`<p class="muted"><a href="${base}">${suite.name}</a></p>
        <h1>Flaky tests</h1>
        <form class="filters" method="get" action="${base}/flaky-tests" role="search" aria-label="Filter flaky tests">
          <div><label for="f-search">Search</label><input type="search" id="f-search" name="search" value="${filter.search ?? ''}" /></div>
          <div><label for="f-branch">Branch</label><input type="search" id="f-branch" name="branch" value="${filter.branch ?? ''}" /></div>
          <div>
            <label for="f-period">Period</label
            ><select id="f-period" name="period">
              ${Object.keys(PERIOD_MS).map((p) => html`<option value="${p}" ${p === period ? html` selected` : ''}>${p}</option>`)}
            </select>
          </div>
          <div><button type="submit" class="secondary">Filter</button></div>
        </form>
        ${table(
          ['Test', 'State', 'Flaky instances', { label: 'First seen', optional: true }, { label: 'Last seen', optional: true }],
          flaky.items.map(
            (f) =>
              html`<tr>
                <td><a href="${base}/tests/${f.test.id}">${f.test.name}</a>${f.test.location ? html`<div class="muted">${f.test.location}</div>` : ''}</td>
                <td>${f.test.state}</td>
                <td>${f.instances}</td>
                <td class="cols-optional">${time(f.firstInstanceAt)}</td>
                <td class="cols-optional">${time(f.mostRecentInstanceAt)}</td>
              </tr>`,
          ),
          html`<p>No flaky tests in this period.</p>`,
        )}
        ${pagination(`${base}/flaky-tests`, { search: filter.search, branch: filter.branch, period }, page, flaky.hasNext)}`,
    );
  });
}
