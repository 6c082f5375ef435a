/** A delivery and its attempts -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import { isoTime } from '../http/responses/format';
import type { DeliveryView } from './service';
import { isRecord } from '../core/guards';

type DeliveryJson = components['schemas']['NotificationDelivery'];

export function deliveryUrl(publicUrl: string, orgSlug: string, serviceId: string, id: string): string {
  return `${publicUrl}/v2/organizations/${orgSlug}/services/${serviceId}/deliveries/${id}`;
}

export function serializeDelivery({ delivery: d, attempts }: DeliveryView, publicUrl: string, orgSlug: string): DeliveryJson {
  return {
    id: d.id,
    url: deliveryUrl(publicUrl, orgSlug, d.serviceId ?? '', d.id),
    event: d.event,
    state: d.state,
    attempts_count: d.attempts,
    next_attempt_at: d.state === 'pending' ? isoTime(d.nextAttemptAt) : null,
    created_at: isoTime(d.createdAt),
    finished_at: d.finishedAt ? isoTime(d.finishedAt) : null,
    redelivery_of: d.redeliveryOf,
    payload: isRecord(d.payload) ? d.payload : {},
    attempts: attempts.map((a) => ({
      number: a.number,
      started_at: isoTime(a.startedAt),
      duration_ms: a.durationMs,
      status: a.status,
      ok: a.ok,
      response_excerpt: a.excerpt,
    })),
  };
}
