/** An audit event -> the exact JSON of the contract. */
import type { components } from '../../generated/api';
import { graphqlId, isoTime } from '../http/responses/format';
import type { AuditEvent, AuditParty } from './repository';

const party = (p: AuditParty): components['schemas']['AuditParty'] => ({ type: p.type, uuid: p.id, name: p.name });

export function serializeAuditEvent(e: AuditEvent, orgSlug: string, publicUrl: string): components['schemas']['AuditEvent'] {
  return {
    uuid: e.id,
    graphql_id: graphqlId('AuditEvent', e.id),
    type: e.type,
    occurred_at: isoTime(e.occurredAt),
    actor: e.actor ? party(e.actor) : null,
    subject: party(e.subject),
    context: e.context ? { ...e.context, type: String(e.context.type) } : null,
    data: e.data,
    url: `${publicUrl}/v2/organizations/${orgSlug}/audit_events/${e.id}`,
  };
}
