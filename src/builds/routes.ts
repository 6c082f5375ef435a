/** Builds: thin handlers for the three list scopes, create, get, cancel and rebuild. */
import express, { Request, Response } from 'express';
import type { operations } from '../../generated/api';
import { actorOf, principalOf } from '../http/auth';
import { NotFoundError } from '../http/errors';
import { pageRequest, setLinkHeader } from '../http/pagination';
import type { PipelineService } from '../pipelines/service';
import type { Agent } from '../agents/repository';
import { serializeAgentBase } from '../agents/serialize';
import { serializeBuild, serializeBuildPipeline } from './serialize';
import type { BuildService, BuildWithJobs, ListQuery } from './service';

type CreateBody = operations['createBuild']['requestBody']['content']['application/json'];

/** `agentsByIds` finds the agents that took jobs, which the jobs embed. */
export function buildRoutes(builds: BuildService, pipelines: PipelineService, publicUrl: string, agentsByIds: (ids: string[]) => Promise<Agent[]> = async () => []) {
  const router = express.Router();
  const base = '/v2/organizations/:org_slug/pipelines/:pipeline_slug/builds';
  const numberOf = (req: Request) => {
    // The validator lets a number too large for a double through as Infinity: no build has it.
    const n = Number(req.params.build_number);
    if (!Number.isSafeInteger(n) || n < 1 || n > 2 ** 31 - 1) throw new NotFoundError('build');
    return n;
  };

  const render = async (items: BuildWithJobs[]) => {
    const agentIds = items.flatMap((i) => i.jobs.flatMap((j) => (j.agentId ? [j.agentId] : [])));
    // Reads bring the pipelines' counts along; after a write they are read afresh. Only builds
    // whose jobs agents took cost the agents' read.
    const stale = [...new Set(items.flatMap((i) => (i.pipeline.counts ? [] : [i.pipeline.id])))];
    const [counts, agents] = await Promise.all([pipelines.counts(stale), agentIds.length ? agentsByIds(agentIds) : []]);
    // Each pipeline is serialized once for the whole page (its builds share the object); the
    // key includes what the caller may see of it, which differs between organizations.
    const pipelineJson = new Map<string, ReturnType<typeof serializeBuildPipeline>>();
    const pipelineOf = (item: BuildWithJobs) => {
      const showsWebhook = pipelines.showsWebhookUrl(item.actor, item.perms);
      const key = `${item.pipeline.id} ${showsWebhook}`;
      let json = pipelineJson.get(key);
      if (!json) {
        json = serializeBuildPipeline(item.pipeline, {
          publicUrl,
          orgSlug: item.actor.organization.slug,
          webhookUrl: showsWebhook ? pipelines.webhookUrl(item.pipeline.id) : undefined,
          badgeUrl: pipelines.badgeUrl(item.pipeline.id),
          counts: item.pipeline.counts ?? counts.get(item.pipeline.id)!,
        });
        pipelineJson.set(key, json);
      }
      return json;
    };
    return items.map((item) =>
      serializeBuild(item, {
        agents: agents.length ? new Map(agents.map((a) => [a.id, serializeAgentBase(a, publicUrl, item.actor.organization.slug)])) : undefined,
        publicUrl,
        orgSlug: item.actor.organization.slug,
        pipeline: pipelineOf(item),
      }),
    );
  };
  const renderOne = async (item: BuildWithJobs) => (await render([item]))[0];

  const list = async (req: Request, res: Response, scope: Parameters<BuildService['list']>[0]) => {
    const page = pageRequest(req);
    // One more than a page tells whether a next page exists without counting every match.
    const items = await builds.list(scope, req.query as ListQuery, page.offset, page.perPage + 1);
    setLinkHeader(req, res, publicUrl, page, { hasNext: items.length > page.perPage });
    res.json(await render(items.slice(0, page.perPage)));
  };

  router.get('/v2/builds', async (req, res) => {
    await list(req, res, { principal: principalOf(res) });
  });

  router.get('/v2/organizations/:org_slug/builds', async (req, res) => {
    await list(req, res, { actor: actorOf(res) });
  });

  router.get(base, async (req, res) => {
    await list(req, res, { actor: actorOf(res), pipelineSlug: String(req.params.pipeline_slug) });
  });

  router.post(base, async (req, res) => {
    const actor = actorOf(res);
    const item = await builds.create(actor, String(req.params.pipeline_slug), req.body as CreateBody);
    res.status(201).json(await renderOne(item));
  });

  router.get(`${base}/:build_number`, async (req, res) => {
    const actor = actorOf(res);
    const includeRetried = (req.query as { include_retried_jobs?: boolean }).include_retried_jobs === true;
    res.json(await renderOne(await builds.get(actor, String(req.params.pipeline_slug), numberOf(req), includeRetried)));
  });

  router.put(`${base}/:build_number/cancel`, async (req, res) => {
    const actor = actorOf(res);
    res.json(await renderOne(await builds.cancel(actor, String(req.params.pipeline_slug), numberOf(req))));
  });

  router.put(`${base}/:build_number/rebuild`, async (req, res) => {
    const actor = actorOf(res);
    res.json(await renderOne(await builds.rebuild(actor, String(req.params.pipeline_slug), numberOf(req))));
  });

  return router;
}
