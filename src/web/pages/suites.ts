/** Test suites: the list, a suite's runs, a run's failures, a test (with its quarantine state), and the flaky tests with the API's search, branch and period. */
import { PERIOD_MS } from '../../suites/test-metrics';
import type { FlakyPeriod } from '../../suites/service';
import { actorFor } from '../context';
import { html } from '../html';
import type { WebRouter } from '../routes';
import { layout, pagination, table, time } from '../ui';
import { pageNumber } from './forms';
import { keysOf } from '../../db/row-types';

const PER_PAGE = 30;

export function registerSuitePages(web: WebRouter): void {
  const { suites } = web.deps;
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
    const runs = await suites.runs(actor, suite.slug, (page - 1) * PER_PAGE, PER_PAGE);
    const base = suiteBase(actor.organization.slug, suite.slug);
    return layout(
      ctx,
      suite.name,
      html`<p class="muted"><a href="/organizations/${actor.organization.slug}/analytics">Test suites</a></p>
        <h1>${suite.name}</h1>
        <p class="actions"><a class="button secondary" href="${base}/flaky-tests">Flaky tests</a></p>
        <h2>Runs</h2>
        ${table(
          ['Run', 'Branch', 'Passed', 'Failed', { label: 'Created', optional: true }],
          runs.items.map(
            (r) =>
              html`<tr>
                <td><a href="${base}/runs/${r.id}">${r.commitSha?.slice(0, 10) ?? r.key}</a></td>
                <td>${r.branch ?? '–'}</td>
                <td>${r.passedCount}</td>
                <td>${r.failedCount}</td>
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
    const failures = await suites.failedExecutions(actor, suite.slug, run.id);
    const base = suiteBase(actor.organization.slug, suite.slug);
    return layout(
      ctx,
      `Run · ${suite.name}`,
      html`<p class="muted"><a href="${base}">${suite.name}</a></p>
        <h1>Run ${run.commitSha?.slice(0, 10) ?? run.key}</h1>
        <dl class="facts">
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
                      <a href="${base}/tests/${f.testId}">${f.testName}</a> ${f.location ? html`<span class="muted">${f.location}</span>` : ''}${
                        f.failureReason ? html`<pre class="failure">${f.failureReason}</pre>` : ''
                      }
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
    const { test, labels } = await suites.testOf(actor, suite.slug, params.test!, undefined, {});
    return layout(
      ctx,
      test.name,
      html`<p class="muted"><a href="${suiteBase(actor.organization.slug, suite.slug)}">${suite.name}</a></p>
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
        </dl>`,
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
          ['Test', 'State', 'Flaky instances', { label: 'Most recent', optional: true }],
          flaky.items.map(
            (f) =>
              html`<tr>
                <td><a href="${base}/tests/${f.test.id}">${f.test.name}</a>${f.test.location ? html`<div class="muted">${f.test.location}</div>` : ''}</td>
                <td>${f.test.state}</td>
                <td>${f.instances}</td>
                <td class="cols-optional">${time(f.mostRecentInstanceAt)}</td>
              </tr>`,
          ),
          html`<p>No flaky tests in this period.</p>`,
        )}
        ${pagination(`${base}/flaky-tests`, { search: filter.search, branch: filter.branch, period }, page, flaky.hasNext)}`,
    );
  });
}
