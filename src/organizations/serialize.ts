import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/format';
import type { Organization } from '../core/identity';

export function serializeOrganization(org: Organization, publicUrl: string): components['schemas']['Organization'] {
  const url = `${publicUrl}/v2/organizations/${org.slug}`;
  return {
    id: org.id,
    graphql_id: graphqlId('Organization', org.id),
    url,
    web_url: `${publicUrl}/${org.slug}`,
    name: org.name,
    slug: org.slug,
    pipelines_url: `${url}/pipelines`,
    agents_url: `${url}/agents`,
    emojis_url: `${url}/emojis`,
    created_at: isoTime(org.createdAt),
  };
}
