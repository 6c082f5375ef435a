/** Notification services of an organization: thin handlers for list (by cursor), get, create, update, delete, enable and disable. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { cursorLinks } from '../http/responses/pagination';
import { serializeNotificationService } from './serialize';
import type { NotificationServiceService } from './service';

export function notificationServiceRoutes(services: NotificationServiceService, publicUrl: string) {
  const api = operationRouter();

  api.on('listNotificationServices', async (req, res) => {
    const actor = actorOf(res);
    const perPage = req.query.per_page ?? 30;
    const page = await services.list(actor, { after: req.query.after, before: req.query.before, limit: perPage });
    res.json({
      items: page.items.map((s) => serializeNotificationService(s, actor.organization, publicUrl)),
      links: cursorLinks(req, publicUrl, page.next, perPage),
    });
  });

  api.on('getNotificationService', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeNotificationService(await services.get(actor, req.params.service_id), actor.organization, publicUrl));
  });

  api.on('createNotificationService', async (req, res) => {
    const actor = actorOf(res);
    const s = await services.create(actor, req.body);
    res.status(201).json(serializeNotificationService(s, actor.organization, publicUrl));
  });

  api.on('updateNotificationService', async (req, res) => {
    const actor = actorOf(res);
    const s = await services.update(actor, req.params.service_id, req.body);
    res.json(serializeNotificationService(s, actor.organization, publicUrl));
  });

  api.on('deleteNotificationService', async (req, res) => {
    await services.delete(actorOf(res), req.params.service_id);
    res.status(204).end();
  });

  api.on('enableNotificationService', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeNotificationService(await services.setEnabled(actor, req.params.service_id, true), actor.organization, publicUrl));
  });

  api.on('disableNotificationService', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeNotificationService(await services.setEnabled(actor, req.params.service_id, false), actor.organization, publicUrl));
  });

  return api.router;
}
