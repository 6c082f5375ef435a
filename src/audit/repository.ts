/** The audit log's rows: written on the caller's transaction, read newest first. */
import { keysetQuery, keysetRows, type KeysetPage } from '../db/keyset';
import type { Knex } from 'knex';
import { toDate } from '../db/values';
import type { AuditEventsRow } from '../db/tables';
import { jsonColumn } from '../db/row-types';
import { isRecord } from '../core/guards';

export interface AuditParty {
  type: string;
  id: string;
  name: string | null;
}

export interface AuditEvent {
  id: string;
  organizationId: string;
  /** Class-style, as the real API names them: `OrganizationUpdatedEvent`, `TeamCreatedEvent`... */
  type: string;
  occurredAt: Date;
  /** Who did it; null for what the installation's operator did at the command line. */
  actor: AuditParty | null;
  subject: AuditParty;
  context: Record<string, unknown> | null;
  data: Record<string, unknown>;
}

function fromRow(r: AuditEventsRow): AuditEvent {
  return {
    id: r.id,
    organizationId: r.organization_id,
    type: r.type,
    occurredAt: toDate(r.occurred_at),
    // insert() writes the actor's type and id together (both null for the command line).
    actor: r.actor_type && r.actor_id !== null ? { type: r.actor_type, id: r.actor_id, name: r.actor_name ?? null } : null,
    subject: { type: r.subject_type, id: r.subject_id, name: r.subject_name ?? null },
    context: jsonColumn<Record<string, unknown> | null>(r.context, null, isRecord, 'audit_events.context'),
    data: jsonColumn(r.data, {}, isRecord, 'audit_events.data'),
  };
}

export class AuditRepository {
  constructor(private readonly db: Knex) {}

  async insert(e: AuditEvent, trx: Knex): Promise<void> {
    await trx('audit_events').insert({
      id: e.id,
      organization_id: e.organizationId,
      type: e.type,
      occurred_at: e.occurredAt,
      actor_type: e.actor?.type ?? null,
      actor_id: e.actor?.id ?? null,
      actor_name: e.actor?.name?.slice(0, 255) ?? null,
      subject_type: e.subject.type,
      subject_id: e.subject.id,
      subject_name: e.subject.name?.slice(0, 255) ?? null,
      context: e.context ? JSON.stringify(e.context) : null,
      data: JSON.stringify(e.data),
    });
  }

  /** Newest first, from a cursor (src/db/keyset.ts). */
  async page(organizationId: string, opts: KeysetPage): Promise<{ items: AuditEvent[]; more: boolean }> {
    const rows = await keysetQuery(this.db('audit_events').where({ organization_id: organizationId }), { at: 'occurred_at', id: 'id' }, opts);
    return keysetRows(rows, opts, fromRow);
  }

  async find(organizationId: string, id: string): Promise<AuditEvent | null> {
    const row = await this.db('audit_events').where({ organization_id: organizationId, id: id.toLowerCase() }).first();
    return row ? fromRow(row) : null;
  }
}
