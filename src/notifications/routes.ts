/** A notification service's deliveries (REST): list, get, redeliver. */
import type { Actor } from '../core/identity';
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { uncountedPage } from '../http/responses/pagination';
import { serializeDelivery } from './serialize';
import type { NotificationService } from './service';

/** Throws as the notification services API does when the caller may not see the service (404) or manage it (403). */
export type ServiceAccess = (actor: Actor, serviceId: string) => Promise<unknown>;

export function notificationDeliveryRoutes(notifications: NotificationService, access: ServiceAccess, publicUrl: string) {
  const api = operationRouter();

  api.on('listNotificationDeliveries', async (req, res) => {
    const actor = actorOf(res);
    await access(actor, req.params.service_id);
    const items = await uncountedPage(req, res, publicUrl, (offset, limit) => notifications.history(req.params.service_id, offset, limit));
    res.json(items.map((d) => serializeDelivery(d, publicUrl, actor.organization.slug)));
  });
  api.on('getNotificationDelivery', async (req, res) => {
    const actor = actorOf(res);
    await access(actor, req.params.service_id);
    const d = await notifications.delivery(actor.organization.id, req.params.service_id, req.params.delivery_id);
    res.json(serializeDelivery(d, publicUrl, actor.organization.slug));
  });
  api.on('redeliverNotificationDelivery', async (req, res) => {
    const actor = actorOf(res);
    await access(actor, req.params.service_id);
    const d = await notifications.redeliver(actor.organization.id, req.params.service_id, req.params.delivery_id);
    res.status(201).json(serializeDelivery(d, publicUrl, actor.organization.slug));
  });

  return api.router;
}
