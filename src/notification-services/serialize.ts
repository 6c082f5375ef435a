import type { components } from '../../generated/api';
import type { Organization } from '../core/identity';
import { graphqlId, isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import { isBoolean, isNumber, isString, PROVIDERS, setting, settingOr } from './provider-settings';
import type { NotificationService } from './service';
import { BUILD_STATE_KEYS } from './service';
import { isStringArray, isStringRecord } from '../core/guards';

type Settings = components['schemas']['NotificationService']['settings'];

const isTokenMode = (v: unknown): v is components['schemas']['WebhookTokenMode'] => v === 'token' || v === 'signature';
const isTheme = (v: unknown): v is components['schemas']['SlackTheme'] => v === 'text' || v === 'emoji';

/** The settings as the docs answer them, in their order: secrets other than a webhook's token left out. */
function serializeSettings(s: NotificationService): Settings {
  const v = s.settings;
  switch (s.provider) {
    case 'webhook':
      return {
        url: setting(v, 'url', isString),
        version: setting(v, 'version', isNumber),
        token: settingOr(v, 'token', isString, null),
        token_mode: setting(v, 'token_mode', isTokenMode),
        events: setting(v, 'events', isStringArray),
        tls_verify: setting(v, 'tls_verify', isBoolean),
      };
    case 'slack':
      return { theme: setting(v, 'theme', isTheme) };
    case 'open_telemetry_tracing':
      return {
        endpoint: setting(v, 'endpoint', isString),
        service_name: settingOr(v, 'service_name', isString, null),
        resource_attributes: settingOr(v, 'resource_attributes', isStringRecord, {}),
        tracestate: settingOr(v, 'tracestate', isStringRecord, {}),
      };
  }
}

export function serializeNotificationService(s: NotificationService, org: Organization, publicUrl: string): components['schemas']['NotificationService'] {
  const provider = PROVIDERS[s.provider];
  // cast: the generated answer type is `NotificationServiceBuildStates & Record<string, never>` (additionalProperties: false), which no object literal can satisfy; the keys are BUILD_STATE_KEYS, the spec's.
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
