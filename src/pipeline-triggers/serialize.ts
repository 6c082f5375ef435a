/** A pipeline trigger and its deliveries as the API answers them, keys in the docs' order. */
import type { components } from '../../generated/api';
import { isoTime } from '../http/responses/format';
import { serializeCreator } from '../user/serialize';
import type { PipelineTrigger, TriggerDelivery } from './repository';
import { hint, TOKEN_PREFIX } from './service';

/** `token`: the plaintext token, given in the create answer only (`endpoint_url`). */
export function serializePipelineTrigger(t: PipelineTrigger, publicUrl: string, orgSlug: string, token?: string): components['schemas']['PipelineTrigger'] {
  const pipelineUrl = `${publicUrl}/v2/organizations/${orgSlug}/pipelines/${t.pipelineSlug}`;
  return {
    id: t.id,
    url: `${pipelineUrl}/triggers/${t.id}`,
    type: t.type,
    label: t.label,
    enabled: t.enabled,
    build: { message: t.message, commit: t.commit, branch: t.branch, environment_variables: Object.keys(t.environment) },
    filter: null,
    verification: t.verificationStrategy ? { strategy: t.verificationStrategy, secret_hint: hint(t.verificationSecretHint ?? '') } : null,
    endpoint_url_hint: `${publicUrl}/deliver/${TOKEN_PREFIX}${hint(t.tokenHint)}`,
    ...(token ? { endpoint_url: `${publicUrl}/deliver/${token}` } : {}),
    created_at: isoTime(t.createdAt),
    created_by: serializeCreator(t.createdBy),
    updated_at: isoTime(t.updatedAt),
    updated_by: serializeCreator(t.updatedBy),
    pipeline: { id: t.pipelineId, slug: t.pipelineSlug, url: pipelineUrl },
  };
}

export function serializeTriggerDelivery(
  d: TriggerDelivery,
  trigger: PipelineTrigger,
  publicUrl: string,
  orgSlug: string,
): components['schemas']['PipelineTriggerDelivery'] {
  const pipelineUrl = `${publicUrl}/v2/organizations/${orgSlug}/pipelines/${trigger.pipelineSlug}`;
  const url = `${pipelineUrl}/triggers/${trigger.id}/deliveries/${d.id}`;
  return {
    id: d.id,
    url,
    request_url: `${url}/request`,
    received_at: isoTime(d.receivedAt),
    content_type: d.contentType,
    external_id: d.externalId,
    status: d.status,
    reason: d.reason,
    builds: d.builds.map((b) => ({ id: b.id, number: b.number, url: `${pipelineUrl}/builds/${b.number}` })),
  };
}
