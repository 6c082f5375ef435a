import type { components } from '../../generated/api';
import type { Organization } from '../core/identity';
import { graphqlId, isoTime } from '../http/format';
import { serializeCreator } from '../user/serialize';
import { PROVIDERS } from './providers';
import type { NotificationService } from './service';
import { BUILD_STATE_KEYS } from './service';

type Settings = components['schemas']['NotificationService']['settings'];
type StringMap = components['schemas']['StringMap'];

/** The settings as the docs answer them, in their order: secrets other than a webhook's token left out. */
function serializeSettings(s: NotificationService): Settings {
  const v = s.settings;
  switch (s.provider) {
    case 'webhook':
      return {
        url: v.url as string,
        version: v.version as number,
        token: (v.token as string | null | undefined) ?? null,
        token_mode: v.token_mode as 'token' | 'signature',
        events: v.events as string[],
        tls_verify: v.tls_verify as boolean,
      };
    case 'slack':
      return { theme: v.theme as 'text' | 'emoji' };
    case 'open_telemetry_tracing':
      return {
        endpoint: v.endpoint as string,
        service_name: (v.service_name as string | null | undefined) ?? null,
        resource_attributes: (v.resource_attributes as StringMap | undefined) ?? {},
        tracestate: (v.tracestate as StringMap | undefined) ?? {},
      };
  }
}

export function serializeNotificationService(s: NotificationService, org: Organization, publicUrl: string): components['schemas']['NotificationService'] {
  const provider = PROVIDERS[s.provider];
  const buildStates = Object.fromEntries(
    BUILD_STATE_KEYS.map((k) => [k, s.buildStates[k] ?? false]),
  ) as components['schemas']['NotificationServiceBuildStatesAnswer'];
  return {
    id: s.id,
    graphql_id: graphqlId(provider.graphqlType, s.id),
    url: `${publicUrl}/v2/organizations/${org.slug}/services/${s.id}`,
    provider: { id: s.provider, name: provider.name },
    description: s.description,
    enabled: s.enabled,
    scope: s.scope,
    scope_uuids: [...s.scopeUuids],
    branch_configuration: s.branchConfiguration,
    build_states: buildStates,
    settings: serializeSettings(s),
    created_at: isoTime(s.createdAt),
    created_by: serializeCreator(s.createdBy),
  };
}
