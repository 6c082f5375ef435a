/** An organization's audit log (REST, read only): thin handlers. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { cursorLinks } from '../http/responses/pagination';
import { serializeAuditEvent } from './serialize';
import type { AuditLog } from './service';

export function auditRoutes(audit: AuditLog, publicUrl: string) {
  const api = operationRouter();

  api.on('listAuditEvents', async (req, res) => {
    const actor = actorOf(res);
    const perPage = req.query.per_page ?? 30;
    const page = await audit.list(actor, { after: req.query.after, before: req.query.before, limit: perPage });
    const links = cursorLinks(req, publicUrl, page.next, perPage);
    // The docs: the links are in the `Link` header too.
    if (links.next) res.setHeader('Link', `<${links.next}>; rel="next"`);
    res.json({ items: page.items.map((e) => serializeAuditEvent(e, actor.organization.slug, publicUrl)), links });
  });
  api.on('getAuditEvent', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeAuditEvent(await audit.get(actor, req.params.event_uuid), actor.organization.slug, publicUrl));
  });

  return api.router;
}
