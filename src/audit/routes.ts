/** An organization's audit log (REST, read only): thin handlers. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { countedPage } from '../http/responses/pagination';
import { serializeAuditEvent } from './serialize';
import type { AuditLog } from './service';

export function auditRoutes(audit: AuditLog, publicUrl: string) {
  const api = operationRouter();

  api.on('listAuditEvents', async (req, res) => {
    const actor = actorOf(res);
    const items = await countedPage(req, res, publicUrl, (offset, limit) => audit.list(actor, offset, limit));
    res.json(items.map((e) => serializeAuditEvent(e, actor.organization.slug, publicUrl)));
  });
  api.on('getAuditEvent', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeAuditEvent(await audit.get(actor, req.params.event_uuid), actor.organization.slug, publicUrl));
  });

  return api.router;
}
