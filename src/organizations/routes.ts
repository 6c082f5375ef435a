/** Organizations, the token's own user, and the token itself. */
import express from 'express';
import type { AccessTokenService } from '../access-token/service';
import { orgOf, principalOf } from '../http/auth';
import { utcTime } from '../http/format';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { serializeUser } from '../user/serialize';
import type { OrganizationRepository } from './repository';
import { serializeOrganization } from './serialize';

export function organizationRoutes(orgs: OrganizationRepository, tokens: AccessTokenService, publicUrl: string) {
  const router = express.Router();

  router.get('/v2/access-token', (_req, res) => {
    const { token, user } = principalOf(res);
    res.json({
      uuid: token.id,
      scopes: token.scopes,
      description: token.description,
      created_at: utcTime(token.createdAt),
      expires_at: utcTime(token.expiresAt),
      user: { name: user.name, email: user.email },
    });
  });

  router.delete('/v2/access-token', async (_req, res) => {
    await tokens.revoke(principalOf(res).token.id);
    res.status(204).end();
  });

  router.get('/v2/user', (_req, res) => {
    res.json(serializeUser(principalOf(res).user));
  });

  router.get('/v2/organizations', async (req, res) => {
    const page = pageRequest(req);
    const { items, total } = await orgs.pageByIds([...principalOf(res).organizations.keys()], page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { total });
    res.json(items.map((o) => serializeOrganization(o, publicUrl)));
  });

  router.get('/v2/organizations/:org_slug', (_req, res) => {
    res.json(serializeOrganization(orgOf(res).organization, publicUrl));
  });

  return router;
}
