/**
 * The providers of notification services that are not the webhook (./webhook.ts): Slack
 * (./slack.ts) and OpenTelemetry tracing (./open-telemetry.ts), as the delivery side plans and
 * sends them. What a Slack service posts is decided at fan-out (its `build_states`, a fix told
 * from a pass by the branch's previous build) and stored as the delivery's payload; the
 * OpenTelemetry export is built from the event's payload when it is sent.
 */
import { EVENT_NAMES, OPEN_TELEMETRY_EVENTS, type AttemptResult, type HttpSend, type NotificationEvent } from '../events';
import type { Delivery } from '../repository';
import type { ActiveService, FanOutContext, PlannedDelivery, Provider } from '../service';
import type { OpenTelemetrySettings } from './open-telemetry';
import { postSlack, slackMessageFor, slackThemeOf, type SlackMessage } from './slack';
import { oneOf } from '../../db/row-types';
import { isStringRecord } from '../../core/guards';

/** An OpenTelemetry service's settings as the exporter reads them: what is not of its documented type is unset (an endpoint that is none fails the export). */
const openTelemetrySettingsOf = (s: Record<string, unknown>): OpenTelemetrySettings => ({
  endpoint: typeof s.endpoint === 'string' ? s.endpoint : '',
  service_name: typeof s.service_name === 'string' ? s.service_name : null,
  headers: isStringRecord(s.headers) ? s.headers : null,
  resource_attributes: isStringRecord(s.resource_attributes) ? s.resource_attributes : null,
  tracestate: typeof s.tracestate === 'string' ? s.tracestate : null,
});

const serviceTarget = (s: ActiveService, payload: unknown): PlannedDelivery => ({
  targetKind: 'service',
  serviceId: s.id,
  target: null,
  targetKey: `service:${s.id}`,
  payload,
});

export function slackProvider(): Provider {
  return {
    planForService(ctx: FanOutContext, s: ActiveService): PlannedDelivery[] {
      const msg = slackMessageFor(ctx.event, slackThemeOf(s.settings), s.buildStates, ctx.previousFinishedState);
      return msg ? [serviceTarget(s, msg)] : [];
    },
    send(d: Delivery, service: ActiveService | null, http: HttpSend): Promise<AttemptResult> {
      // cast: the payload is the SlackMessage planForService stored at fan-out (slackMessageFor's).
      return postSlack(String(service?.settings.url ?? ''), d.payload as SlackMessage, http);
    },
  };
}

/** The event a delivery carries, as the exporter reads it. */
export function eventOfDelivery(d: Delivery): NotificationEvent {
  return {
    id: String(d.eventSeq),
    name: oneOf(EVENT_NAMES, d.event, 'notification_deliveries.event'),
    occurredAt: d.createdAt,
    organizationId: d.organizationId,
    pipelineId: null,
    buildId: null,
    // cast: an OpenTelemetry delivery's payload is the event's payload (with its organization) that planForService stored.
    payload: d.payload as NotificationEvent['payload'],
  };
}

/** The export goes out through the `http` every provider is given (the server's one transport); `timeoutMillis` bounds the SDK's export. */
export function openTelemetryProvider(timeoutMillis: number): Provider {
  return {
    planForService(ctx: FanOutContext, s: ActiveService): PlannedDelivery[] {
      if (!OPEN_TELEMETRY_EVENTS.includes(ctx.event.name)) return [];
      return [serviceTarget(s, { ...ctx.event.payload, organization: ctx.rendered.organization })];
    },
    async send(d: Delivery, service: ActiveService | null, http: HttpSend): Promise<AttemptResult> {
      // The OpenTelemetry SDK is loaded on the first export, not at every start: it was a sixth
      // of the start-up's module loading (BENCHMARKS.md, "Start-up"), and most installations never export.
      const { exportOpenTelemetry } = await import('./open-telemetry');
      return exportOpenTelemetry(eventOfDelivery(d), openTelemetrySettingsOf(service?.settings ?? {}), { send: http, timeoutMillis });
    },
  };
}
