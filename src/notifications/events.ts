/**
 * What Windsock tells the world: the names of the events it sends out and the shape of one
 * event as the delivery side hands it to a provider. An event is written to the outbox in the
 * transaction of the state change that caused it; its payload is the documented webhook body
 * (`{event, build, pipeline, sender}`, job events add `job`, agent events carry `agent`), built
 * from the REST representations. Providers (webhook, slack, OpenTelemetry, commit statuses)
 * read events of this shape and nothing else.
 */

/** The webhook events of the public documentation (Webhooks for Pipelines), in the order they name them. */
export const BUILD_EVENTS = ['build.scheduled', 'build.running', 'build.failing', 'build.finished', 'build.skipped'] as const;
export const JOB_EVENTS = ['job.scheduled', 'job.started', 'job.finished', 'job.activated', 'job.promised_exit_status'] as const;
export const AGENT_EVENTS = ['agent.connected', 'agent.lost', 'agent.disconnected', 'agent.stopping', 'agent.stopped', 'agent.blocked'] as const;
/** The agent token events page's: a registration refused because its address is not in the token's allowed ranges. */
export const TOKEN_EVENTS = ['cluster_token.registration_blocked'] as const;
export const EVENT_NAMES = ['ping', ...BUILD_EVENTS, ...JOB_EVENTS, ...AGENT_EVENTS, ...TOKEN_EVENTS] as const;
export type EventName = (typeof EVENT_NAMES)[number];
/** Events a webhook service is sent when its `events` is not given: every documented one (ping is sent on create regardless). */
/** The events an `open_telemetry_tracing` service exports a trace for; it ignores the others. */
export const OPEN_TELEMETRY_EVENTS: readonly EventName[] = ['build.finished', 'build.skipped'];
export const DEFAULT_WEBHOOK_EVENTS: EventName[] = [...BUILD_EVENTS, ...JOB_EVENTS, ...AGENT_EVENTS, ...TOKEN_EVENTS];

/** A REST representation (a build, job, pipeline, agent or user as the v2 API answers it). */
export type Representation = Record<string, unknown>;

/** The documented body of a notification: what a webhook receiver gets as JSON. */
export interface EventPayload {
  event: EventName;
  build?: Representation;
  job?: Representation;
  pipeline?: Representation;
  agent?: Representation;
  /** The user whose action caused the event (`{id, name}`), or null for the system's own moves. */
  sender: { id: string; name: string } | null;
  /** ping only: the service pinged. */
  service?: Representation;
  organization?: Representation;
  /** job.promised_exit_status only: why the job said it will fail (`--reason`), or null. */
  promised_exit_status_reason?: string | null;
  /** cluster_token.registration_blocked and agent.blocked only: the refused request's address, and the token it named (the agent's). */
  blocked_ip?: string;
  cluster_token?: Representation | null;
}

/** One event as a provider receives it. */
export interface NotificationEvent {
  /** The outbox row's id: stable across redeliveries, sent as the delivery's id. */
  id: string;
  name: EventName;
  occurredAt: Date;
  organizationId: string;
  pipelineId: string | null;
  buildId: string | null;
  payload: EventPayload;
}

/** What one delivery attempt came to, recorded with the attempt. */
export interface AttemptResult {
  /** true when the receiver took it (2xx); false retries with back-off, unless `final`. */
  ok: boolean;
  /** The HTTP status, or null when no answer came (refused, timed out, unsafe address). */
  status: number | null;
  /** The first bytes of the answer, or the reason there was none. Never a secret. */
  excerpt: string;
  /** A failure no retry can fix (a refused address, a 4xx other than 408/429): give up at once. */
  final?: boolean;
}

/** An outgoing HTTP request as providers make it; the server's one implementation is SSRF-safe (src/security/outbound.ts). */
export type HttpSend = (req: { method: string; url: string; headers: Record<string, string>; body?: string | Buffer; tlsVerify?: boolean }) => Promise<{
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}>;
