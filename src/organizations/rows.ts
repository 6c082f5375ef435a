/** An organization row (also as other areas' queries select it) into an Organization. */
import type { Organization } from '../core/identity';
import type { OrganizationsRow } from '../db/tables';
import { toBool, toDate } from '../db/values';

export function orgFromRow(row: Pick<OrganizationsRow, 'id' | 'slug' | 'name' | 'teams_enabled' | 'created_at'>): Organization {
  return {
    id: row.id,
    slug: row.slug,
    name: row.name,
    teamsEnabled: toBool(row.teams_enabled),
    createdAt: toDate(row.created_at),
  };
}
