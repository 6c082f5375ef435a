/** An organization's invitations (REST): thin handlers for list (by cursor), get, create and revoke. */
import { actorOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { cursorLinks, setCursorLinkHeader } from '../http/responses/pagination';
import { serializeInvitation } from './serialize';
import type { InvitationService } from './service';

export function invitationRoutes(invitations: InvitationService, publicUrl: string) {
  const api = operationRouter();

  api.on('listInvitations', async (req, res) => {
    const actor = actorOf(res);
    const perPage = req.query.per_page ?? 30;
    const page = await invitations.list(actor, { after: req.query.after, before: req.query.before, limit: perPage });
    const links = cursorLinks(req, publicUrl, page.next, perPage);
    // The docs: the links are in the `Link` header too.
    setCursorLinkHeader(res, links);
    res.json({ items: page.items.map((i) => serializeInvitation(i, actor.organization.slug, publicUrl)), links });
  });
  api.on('getInvitation', async (req, res) => {
    const actor = actorOf(res);
    res.json(serializeInvitation(await invitations.get(actor, req.params.invitation_id), actor.organization.slug, publicUrl));
  });
  api.on('createInvitations', async (req, res) => {
    const actor = actorOf(res);
    const { emails, role, sso_mode, teams } = req.body;
    const made = await invitations.create(actor, { emails, role, sso_mode, teams });
    res.status(201).json(made.map((i) => serializeInvitation(i, actor.organization.slug, publicUrl)));
  });
  api.on('revokeInvitation', async (req, res) => {
    await invitations.revoke(actorOf(res), req.params.invitation_id);
    res.status(204).end();
  });

  return api.router;
}
