/** An organization row (also as other areas' queries select it) into an Organization. */
import type { Organization } from '../core/identity';
import { toBool, toDate } from '../db/values';

export function orgFromRow(row: Record<string, unknown>): Organization {
  return {
    id: row.id as string,
    slug: row.slug as string,
    name: row.name as string,
    teamsEnabled: toBool(row.teams_enabled),
    createdAt: toDate(row.created_at),
  };
}
