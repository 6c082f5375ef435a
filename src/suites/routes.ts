/** Test suites and what uploads stored in them: thin handlers from the validated request to the service and back through serialize. */
import express, { Request } from 'express';
import type { operations } from '../../generated/api';
import { actorOf } from '../http/auth';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { serializeFailedExecution, serializeFlakyTest, serializeRun, serializeSuite, serializeTest, suiteUrls } from './serialize';
import type { Suite } from './repository';
import type { SuiteService } from './service';

type CreateBody = operations['createSuite']['requestBody']['content']['application/json'];
type UpdateBody = operations['updateSuite']['requestBody']['content']['application/json'];
type FlakyQuery = NonNullable<operations['listFlakyTests']['parameters']['query']>;
type FailedQuery = NonNullable<operations['listFailedExecutions']['parameters']['query']>;

export function suiteRoutes(service: SuiteService, publicUrl: string) {
  const router = express.Router();
  const base = '/v2/analytics/organizations/:org_slug/suites';
  const one = `${base}/:suite_slug`;
  const slugOf = (req: Request) => String(req.params.suite_slug);
  const urlsOf = (orgSlug: string, s: Pick<Suite, 'slug'> | string) => suiteUrls(publicUrl, orgSlug, typeof s === 'string' ? s : s.slug);

  router.get(base, async (req, res) => {
    const actor = actorOf(res);
    const page = pageRequest(req);
    const { items, total } = await service.list(actor, page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { total });
    res.json(items.map((s) => serializeSuite(s, urlsOf(actor.organization.slug, s))));
  });

  router.post(base, async (req, res) => {
    const actor = actorOf(res);
    const body = req.body as CreateBody;
    const { suite, apiToken } = await service.create(actor, body);
    res.status(201).json(serializeSuite(suite, urlsOf(actor.organization.slug, suite), body.show_api_token ? apiToken : undefined));
  });

  router.get(one, async (req, res) => {
    const actor = actorOf(res);
    const suite = await service.get(actor, slugOf(req));
    res.json(serializeSuite(suite, urlsOf(actor.organization.slug, suite)));
  });

  router.patch(one, async (req, res) => {
    const actor = actorOf(res);
    const suite = await service.update(actor, slugOf(req), req.body as UpdateBody);
    res.json(serializeSuite(suite, urlsOf(actor.organization.slug, suite)));
  });

  router.delete(one, async (req, res) => {
    await service.delete(actorOf(res), slugOf(req));
    res.status(204).end();
  });

  router.get(`${one}/flaky-tests`, async (req, res) => {
    const actor = actorOf(res);
    const q = req.query as FlakyQuery;
    const page = pageRequest(req);
    const { items, hasNext } = await service.flakyTests(
      actor,
      slugOf(req),
      { search: q.search, branch: q.branch, period: q.period },
      page.offset,
      page.perPage,
    );
    setLinkHeader(req, res, publicUrl, page, { hasNext });
    const urls = urlsOf(actor.organization.slug, slugOf(req));
    res.json(items.map((f) => serializeFlakyTest(f, urls)));
  });

  router.get(`${one}/runs`, async (req, res) => {
    const actor = actorOf(res);
    const page = pageRequest(req);
    const { items, hasNext } = await service.runs(actor, slugOf(req), page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { hasNext });
    const urls = urlsOf(actor.organization.slug, slugOf(req));
    res.json(items.map((r) => serializeRun(r, urls)));
  });

  router.get(`${one}/runs/:run_id`, async (req, res) => {
    const actor = actorOf(res);
    const run = await service.run(actor, slugOf(req), String(req.params.run_id));
    res.json(serializeRun(run, urlsOf(actor.organization.slug, slugOf(req))));
  });

  router.get(`${one}/runs/:run_id/failed_executions`, async (req, res) => {
    const actor = actorOf(res);
    const q = req.query as FailedQuery;
    const executions = await service.failedExecutions(actor, slugOf(req), String(req.params.run_id));
    const urls = urlsOf(actor.organization.slug, slugOf(req));
    res.json(executions.map((e) => serializeFailedExecution(e, urls, q.include_failure_expanded === true)));
  });

  router.get(`${one}/tests/:test_id`, async (req, res) => {
    const actor = actorOf(res);
    const test = await service.test(actor, slugOf(req), String(req.params.test_id));
    res.json(serializeTest(test, urlsOf(actor.organization.slug, slugOf(req))));
  });

  return router;
}
