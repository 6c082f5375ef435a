import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import type { Organization } from '../core/identity';
import type { ApiSettings, PipelineSettings, PipelineSettingSwitch } from './repository';

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

function switchOf(s: PipelineSettingSwitch) {
  return {
    enabled: s.enabledAt !== null,
    enabled_at: s.enabledAt ? isoTime(s.enabledAt) : null,
    enabled_by: s.enabledBy ? { id: s.enabledBy.id, name: s.enabledBy.name } : null,
  };
}

export function serializePipelineSettings(s: PipelineSettings, org: Pick<Organization, 'slug'>, publicUrl: string): components['schemas']['PipelineSettings'] {
  return {
    url: `${publicUrl}/v2/organizations/${org.slug}/pipeline-settings`,
    default_branch: s.defaultBranch,
    default_cluster_id: s.defaultClusterId,
    default_timeout_in_minutes: s.defaultTimeoutInMinutes,
    maximum_timeout_in_minutes: s.maximumTimeoutInMinutes,
    scheduled_job_expiry_in_minutes: s.scheduledJobExpiryInMinutes,
    hosted_agents_terminal_access: switchOf(s.switches.hosted_agents_ssh),
    public_pipeline_creation: switchOf(s.switches.public_pipelines),
    advanced_queue_metrics: { ...switchOf(s.switches.advanced_queue_metrics), disable_supported: false },
    // Windsock exports no build data.
    build_exports: { available: false, enabled: false, location: null, strategy_id: null, supported_strategies: [] },
  };
}
