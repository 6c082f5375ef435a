/** Pipelines: thin handlers from the validated request to the service and back through serialize. */
import express, { Request } from 'express';
import type { operations } from '../../generated/api';
import { actorOf } from '../http/auth';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { setWarnings } from '../http/warning';
import { serializePipeline } from './serialize';
import type { PipelineService } from './service';
import type { Pipeline } from './repository';
import type { Actor, Permissions } from '../core/identity';

type CreateBody = operations['createPipeline']['requestBody']['content']['application/json'];
type UpdateBody = operations['updatePipeline']['requestBody']['content']['application/json'];
type ListQuery = NonNullable<operations['listPipelines']['parameters']['query']>;

export function pipelineRoutes(service: PipelineService, publicUrl: string) {
  const router = express.Router();
  const base = '/v2/organizations/:org_slug/pipelines';

  const views = async (actor: Actor, items: { pipeline: Pipeline; perms: Permissions }[], timestamps: 'iso' | 'utc' = 'utc') => {
    // Reads bring the counts along; after a write they are read afresh.
    const counts = await service.counts(items.flatMap((i) => (i.pipeline.counts ? [] : [i.pipeline.id])));
    return items.map(({ pipeline: p, perms }) =>
      serializePipeline(p, {
        orgSlug: actor.organization.slug,
        publicUrl,
        webhookUrl: service.showsWebhookUrl(actor, perms) ? service.webhookUrl(p.id) : undefined,
        badgeUrl: service.badgeUrl(p.id),
        counts: p.counts ?? counts.get(p.id)!,
        timestamps,
      }),
    );
  };
  const view = async (actor: Actor, pipeline: Pipeline, perms: Permissions, timestamps: 'iso' | 'utc' = 'utc') =>
    (await views(actor, [{ pipeline, perms }], timestamps))[0];
  const slugOf = (req: Request) => String(req.params.pipeline_slug);

  router.get(base, async (req, res) => {
    const actor = actorOf(res);
    const q = req.query as ListQuery;
    const page = pageRequest(req);
    const { items, total } = await service.list(actor, { name: q.name, repository: q.repository }, page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { total });
    res.json(await views(actor, items));
  });

  router.post(base, async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms, notices } = await service.create(actor, req.body as CreateBody);
    setWarnings(res, notices);
    res.status(201).json(await view(actor, pipeline, perms, 'iso'));
  });

  router.get(`${base}/:pipeline_slug`, async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms } = await service.get(actor, slugOf(req), { counts: true });
    res.json(await view(actor, pipeline, perms));
  });

  router.patch(`${base}/:pipeline_slug`, async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms, notices } = await service.update(actor, slugOf(req), req.body as UpdateBody);
    setWarnings(res, notices);
    res.json(await view(actor, pipeline, perms));
  });

  router.delete(`${base}/:pipeline_slug`, async (req, res) => {
    await service.delete(actorOf(res), slugOf(req));
    res.status(204).end();
  });

  router.post(`${base}/:pipeline_slug/archive`, async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms } = await service.archive(actor, slugOf(req));
    res.json(await view(actor, pipeline, perms));
  });

  router.post(`${base}/:pipeline_slug/unarchive`, async (req, res) => {
    const actor = actorOf(res);
    const { pipeline, perms } = await service.unarchive(actor, slugOf(req));
    res.json(await view(actor, pipeline, perms));
  });

  router.post(`${base}/:pipeline_slug/webhook`, async (req, res) => {
    const webhookUrl = await service.addWebhook(actorOf(res), slugOf(req));
    res.status(201).json({ webhook_url: webhookUrl });
  });

  return router;
}
