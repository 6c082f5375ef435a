/** The organizations a token reaches: list and get. */
import { orgOf, principalOf } from '../http/auth';
import { operationRouter } from '../http/operation';
import { pageRequest, setLinkHeader } from '../http/pagination';
import { serializeOrganization } from './serialize';
import type { OrganizationService } from './service';

export function organizationRoutes(organizations: OrganizationService, publicUrl: string) {
  const api = operationRouter();

  api.on('listOrganizations', async (req, res) => {
    const page = pageRequest(req);
    const { items, total } = await organizations.list(principalOf(res), page.offset, page.perPage);
    setLinkHeader(req, res, publicUrl, page, { total });
    res.json(items.map((o) => serializeOrganization(o, publicUrl)));
  });

  api.on('getOrganization', (_req, res) => {
    res.json(serializeOrganization(orgOf(res).organization, publicUrl));
  });

  return api.router;
}
