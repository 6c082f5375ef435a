/** Pipeline triggers (REST): thin handlers for their CRUD and their deliveries, listed by cursor. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { cursorLinks } from '../http/responses/pagination';
import { serializePipelineTrigger, serializeTriggerDelivery } from './serialize';
import type { PipelineTriggerService } from './service';

export function pipelineTriggerRoutes(triggers: PipelineTriggerService, publicUrl: string) {
  const api = operationRouter();

  api.on('listPipelineTriggers', async (req, res) => {
    const actor = actorOf(res);
    const perPage = req.query.per_page ?? 30;
    const page = await triggers.list(actor, req.params.pipeline_slug, { after: req.query.after, before: req.query.before, limit: perPage });
    res.json({
      items: page.items.map((t) => serializePipelineTrigger(t, publicUrl, actor.organization.slug)),
      links: cursorLinks(req, publicUrl, page.next, perPage),
    });
  });
  api.on('createPipelineTrigger', async (req, res) => {
    const actor = actorOf(res);
    const { trigger, token } = await triggers.create(actor, req.params.pipeline_slug, req.body);
    res.status(201).json(serializePipelineTrigger(trigger, publicUrl, actor.organization.slug, token));
  });
  api.on('getPipelineTrigger', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializePipelineTrigger(await triggers.get(actor, req.params.pipeline_slug, req.params.trigger_id), publicUrl, actor.organization.slug));
  });
  api.on('updatePipelineTrigger', async (req, res) => {
    const actor = actorOf(res);
    const updated = await triggers.update(actor, req.params.pipeline_slug, req.params.trigger_id, req.body);
    res.json(serializePipelineTrigger(updated, publicUrl, actor.organization.slug));
  });
  api.on('deletePipelineTrigger', async (req, res) => {
    await triggers.delete(actorOf(res), req.params.pipeline_slug, req.params.trigger_id);
    res.status(204).end();
  });

  api.on('listPipelineTriggerDeliveries', async (req, res) => {
    const actor = actorOf(res);
    const perPage = req.query.per_page ?? 30;
    const trigger = await triggers.get(actor, req.params.pipeline_slug, req.params.trigger_id);
    const page = await triggers.deliveries(actor, req.params.pipeline_slug, trigger.id, { after: req.query.after, before: req.query.before, limit: perPage });
    res.json({
      items: page.items.map((d) => serializeTriggerDelivery(d, trigger, publicUrl, actor.organization.slug)),
      links: cursorLinks(req, publicUrl, page.next, perPage),
    });
  });
  api.on('getPipelineTriggerDelivery', async (req, res) => {
    const actor = actorOf(res);
    const trigger = await triggers.get(actor, req.params.pipeline_slug, req.params.trigger_id);
    const delivery = await triggers.delivery(actor, req.params.pipeline_slug, trigger.id, req.params.trigger_delivery_id);
    res.json(serializeTriggerDelivery(delivery, trigger, publicUrl, actor.organization.slug));
  });
  api.on('getPipelineTriggerDeliveryRequest', async (req, res) => {
    const actor = actorOf(res);
    const delivery = await triggers.delivery(actor, req.params.pipeline_slug, req.params.trigger_id, req.params.trigger_delivery_id);
    res.set('Cache-Control', 'private, no-store');
    res.json({ content_type: delivery.contentType, headers: delivery.headers, payload: delivery.payload });
  });

  return api.router;
}
