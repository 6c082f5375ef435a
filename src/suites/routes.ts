/** Test suites and what uploads stored in them: thin handlers from the validated request to the service and back through serialize. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { countedPage, pageRequest, setLinkHeader, uncountedPage } from '../http/responses/pagination';
import {
  serializeBuildTest,
  serializeFailedExecution,
  serializeFlakyTest,
  serializeRun,
  serializeSuite,
  serializeTest,
  serializeTestSummary,
  serializeTestWithMetrics,
  suiteUrls,
} from './serialize';
import type { Suite } from './repository';
import type { SuiteService } from './service';
import { clock } from '../core/clock';

export function suiteRoutes(service: SuiteService, publicUrl: string) {
  const api = operationRouter();
  const urlsOf = (orgSlug: string, s: Pick<Suite, 'slug'> | string) => suiteUrls(publicUrl, orgSlug, typeof s === 'string' ? s : s.slug);

  api.on('listSuites', async (req, res) => {
    const actor = actorOf(res);
    const items = await countedPage(req, res, publicUrl, (offset, limit) => service.list(actor, offset, limit));
    // show_api_token: the tokens of the suites the caller may change (the others' are left out).
    const tokens = req.query.show_api_token ? await service.apiTokens(actor, items) : new Map<string, string>();
    res.json(items.map((s) => serializeSuite(s, urlsOf(actor.organization.slug, s), tokens.get(s.id))));
  });

  api.on('createSuite', async (req, res) => {
    const actor = actorOf(res);
    const body = req.body;
    const { suite, apiToken } = await service.create(actor, body);
    res.status(201).json(serializeSuite(suite, urlsOf(actor.organization.slug, suite), body.show_api_token ? apiToken : undefined));
  });

  api.on('getSuite', async (req, res) => {
    const actor = actorOf(res);
    const suite = await service.get(actor, req.params.suite_slug);
    res.json(serializeSuite(suite, urlsOf(actor.organization.slug, suite), req.query.show_api_token ? await service.apiToken(actor, suite) : undefined));
  });

  api.on('updateSuite', async (req, res) => {
    const actor = actorOf(res);
    const suite = await service.update(actor, req.params.suite_slug, req.body);
    res.json(serializeSuite(suite, urlsOf(actor.organization.slug, suite), req.body.show_api_token ? await service.apiToken(actor, suite) : undefined));
  });

  api.on('deleteSuite', async (req, res) => {
    await service.delete(actorOf(res), req.params.suite_slug);
    res.status(204).end();
  });

  api.on('listFlakyTests', async (req, res) => {
    const actor = actorOf(res);
    const q = req.query;
    const page = pageRequest(req);
    const { items, hasNext } = await service.flakyTests(
      actor,
      req.params.suite_slug,
      { search: q.search, branch: q.branch, period: q.period },
      page.offset,
      page.perPage,
    );
    setLinkHeader(req, res, publicUrl, page, { hasNext });
    const urls = urlsOf(actor.organization.slug, req.params.suite_slug);
    res.json(items.map((f) => serializeFlakyTest(f, urls)));
  });

  api.on('listRuns', async (req, res) => {
    const actor = actorOf(res);
    const page = pageRequest(req);
    const { items, hasNext } = await service.runs(actor, req.params.suite_slug, { buildId: req.query.build_id }, page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { hasNext });
    const urls = urlsOf(actor.organization.slug, req.params.suite_slug);
    const now = clock.now();
    res.json(items.map((r) => serializeRun(r, urls, now)));
  });

  api.on('getRun', async (req, res) => {
    const actor = actorOf(res);
    const run = await service.run(actor, req.params.suite_slug, req.params.run_id);
    res.json(serializeRun(run, urlsOf(actor.organization.slug, req.params.suite_slug), clock.now()));
  });

  api.on('listFailedExecutions', async (req, res) => {
    const actor = actorOf(res);
    const q = req.query;
    const executions = await uncountedPage(req, res, publicUrl, (offset, limit) =>
      service.failedExecutions(actor, req.params.suite_slug, req.params.run_id, offset, limit),
    );
    const urls = urlsOf(actor.organization.slug, req.params.suite_slug);
    res.json(executions.map((e) => serializeFailedExecution(e, urls, q.include_failure_expanded === true)));
  });

  api.on('listTests', async (req, res) => {
    const actor = actorOf(res);
    const page = pageRequest(req);
    const list = await service.listTests(actor, req.params.suite_slug, req.get('Buildkite-Version'), req.query, page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { total: list.total });
    const urls = urlsOf(actor.organization.slug, req.params.suite_slug);
    res.json(
      list.versioned
        ? list.items.map((t) => serializeTestWithMetrics(t.test, t.labels, t.metrics, urls))
        : list.items.map((t) => serializeTest(t.test, t.labels, urls)),
    );
  });

  // Before getTest: `tests/muted` and `tests/skipped` are not test ids.
  for (const [operation, state] of [
    ['listMutedTests', 'muted'],
    ['listSkippedTests', 'skipped'],
    // The docs show the skipped list with -X PUT: the same read on either method.
    ['listSkippedTestsByPut', 'skipped'],
  ] as const) {
    api.on(operation, async (req, res) => {
      const actor = actorOf(res);
      const page = pageRequest(req);
      const { items, hasNext } = await service.testsInState(actor, req.params.suite_slug, state, page.offset, page.perPage);
      setLinkHeader(req, res, publicUrl, page, { hasNext });
      const urls = urlsOf(actor.organization.slug, req.params.suite_slug);
      res.json(items.map((t) => serializeTestSummary(t, urls)));
    });
  }

  api.on('findTest', async (req, res) => {
    const actor = actorOf(res);
    const test = await service.findTest(actor, req.params.suite_slug, req.body);
    res.json(serializeTestSummary(test, urlsOf(actor.organization.slug, req.params.suite_slug)));
  });

  for (const [operation, state] of [
    ['skipTest', 'skipped'],
    ['muteTest', 'muted'],
    ['enableTest', 'enabled'],
  ] as const) {
    api.on(operation, async (req, res) => {
      const actor = actorOf(res);
      const test = await service.setTestState(actor, req.params.suite_slug, req.params.test_id, state);
      res.json(serializeTestSummary(test, urlsOf(actor.organization.slug, req.params.suite_slug)));
    });
  }

  api.on('updateTestLabels', async (req, res) => {
    const actor = actorOf(res);
    const { test, labels } = await service.updateTestLabels(actor, req.params.suite_slug, req.params.test_id, req.body);
    res.json(serializeTest(test, labels, urlsOf(actor.organization.slug, req.params.suite_slug)));
  });

  api.on('updateExecutionTags', async (req, res) => {
    const count = await service.updateExecutionTags(actorOf(res), req.params.suite_slug, req.body);
    res.json({ executions_count: count });
  });

  api.on('getTest', async (req, res) => {
    const actor = actorOf(res);
    const found = await service.testOf(actor, req.params.suite_slug, req.params.test_id, req.get('Buildkite-Version'), req.query);
    const urls = urlsOf(actor.organization.slug, req.params.suite_slug);
    res.json(found.versioned ? serializeTestWithMetrics(found.test, found.labels, found.metrics, urls) : serializeTest(found.test, found.labels, urls));
  });

  api.on('listBuildTests', async (req, res) => {
    const actor = actorOf(res);
    const items = await countedPage(req, res, publicUrl, (offset, limit) => service.buildTests(actor, req.params.build_id, req.query, offset, limit));
    res.json(items.map((t) => serializeBuildTest(t.test, t.labels, t.metrics, t, urlsOf(actor.organization.slug, t.suiteSlug))));
  });

  return api.router;
}
