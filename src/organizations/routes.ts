/** The organizations a token reaches: list and get. */
import express from 'express';
import { orgOf, principalOf } from '../http/auth';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { serializeOrganization } from './serialize';
import type { OrganizationService } from './service';

export function organizationRoutes(organizations: OrganizationService, publicUrl: string) {
  const router = express.Router();

  router.get('/v2/organizations', async (req, res) => {
    const page = pageRequest(req);
    const { items, total } = await organizations.list(principalOf(res), page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { total });
    res.json(items.map((o) => serializeOrganization(o, publicUrl)));
  });

  router.get('/v2/organizations/:org_slug', (_req, res) => {
    res.json(serializeOrganization(orgOf(res).organization, publicUrl));
  });

  return router;
}
