/** An organization's audit log (REST, read only): thin handlers. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { cursorLinks, setCursorLinkHeader } from '../http/responses/pagination';
import { serializeAuditEvent } from './serialize';
import type { AuditLog } from './service';

export function auditRoutes(audit: AuditLog, publicUrl: string) {
  const api = operationRouter();

  api.on('listAuditEvents', async (req, res) => {
    const actor = actorOf(res);
    const perPage = req.query.per_page ?? 30;
    const page = await audit.list(actor, { after: req.query.after, before: req.query.before, limit: perPage });
    // The docs: `first`, `prev` and `next` where they exist, in the `Link` header too.
    const links = cursorLinks(req, publicUrl, page.next, perPage, page.prev);
    setCursorLinkHeader(res, links);
    res.json({ items: page.items.map((e) => serializeAuditEvent(e, actor.organization.slug, publicUrl)), links });
  });
  api.on('getAuditEvent', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeAuditEvent(await audit.get(actor, req.params.event_uuid), actor.organization.slug, publicUrl));
  });

  return api.router;
}
