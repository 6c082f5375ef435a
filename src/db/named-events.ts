/**
 * Outbox events that are no state change, recorded by name: the outbox's triggers
 * (migrations/20261126090000_outbox.ts) record each state change of a build, job or agent, and
 * these (a job's promised failure, a registration a cluster token refused, an agent blocked for
 * its address) change none. The subject's state is written as both the from and the to state, so
 * the delivery side reads the event by its name (notifications/rules.ts, `eventOf`). In the
 * caller's transaction, beside what it records.
 */
import type { Knex } from 'knex';

export interface NamedEvent {
  kind: 'job' | 'agent' | 'token';
  subjectId: string;
  /** A job's type. */
  subjectType?: string;
  organizationId: string;
  pipelineId?: string;
  buildId?: string;
  /** The subject's state, unchanged by the event. */
  state: string;
  event: string;
  /** What the event adds to its body, kept with it. */
  detail: Record<string, unknown>;
  at: Date;
}

export async function recordNamedEvent(db: Knex, e: NamedEvent): Promise<void> {
  await db('outbox_events').insert({
    kind: e.kind,
    subject_id: e.subjectId,
    subject_type: e.subjectType ?? null,
    organization_id: e.organizationId,
    pipeline_id: e.pipelineId ?? null,
    build_id: e.buildId ?? null,
    from_state: e.state,
    to_state: e.state,
    occurred_at: e.at,
    event: e.event,
    detail: JSON.stringify(e.detail),
  });
}
