import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/format';
import type { Organization } from '../core/identity';
import type { ApiSettings } from './repository';

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

export function serializeApiSettings(s: ApiSettings, org: Pick<Organization, 'slug'>, publicUrl: string): components['schemas']['ApiSettings'] {
  return {
    url: `${publicUrl}/v2/organizations/${org.slug}/api-settings`,
    allowed_ip_addresses: s.allowedIpAddresses,
    revoke_inactive_tokens_after_days: s.revokeInactiveTokensAfterDays,
    restrict_user_api_token_creation: s.restrictUserApiTokenCreation,
    // A self-hosted installation has every feature.
    features: { api_ip_allow_list: true, inactive_api_token_revocation: true },
  };
}
