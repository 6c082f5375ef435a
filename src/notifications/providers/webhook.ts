/**
 * The `webhook` notification service: the event's documented JSON body POSTed to the service's
 * `url`, with `X-Buildkite-Event`, `X-Buildkite-Request` (the delivery's id: the same on every
 * attempt of one delivery, so a receiver can drop the repeats an at-least-once outbox sends after
 * a crash or a lost answer; the real service sends a UUID under this name), and either the service's token (`X-Buildkite-Token`, token
 * mode) or a signature (`X-Buildkite-Signature: timestamp=<unix>,signature=<hex HMAC-SHA256 of
 * "<timestamp>.<body>">`, signature mode), as the public documentation (Webhooks for Pipelines)
 * describes. The same sender serves a pipeline's `notify: - webhook: <url>`, which has no token.
 */
import crypto from 'node:crypto';
import { DEFAULT_WEBHOOK_EVENTS, type AttemptResult, type HttpSend } from '../events';
import type { Delivery } from '../repository';
import type { ActiveService, FanOutContext, PlannedDelivery, Provider } from '../service';
import { clock } from '../../core/clock';
import { isStringArray } from '../../core/guards';

export function signature(secret: string, timestamp: number, body: string): string {
  const hmac = crypto.createHmac('sha256', secret).update(`${timestamp}.${body}`).digest('hex');
  return `timestamp=${timestamp},signature=${hmac}`;
}

/** What an answer came to: 2xx taken; 408, 429 and 5xx retried; any other answer final. */
export function resultOf(status: number, body: Buffer): AttemptResult {
  const ok = status >= 200 && status < 300;
  return {
    ok,
    status,
    excerpt: body.subarray(0, 500).toString('utf8'),
    final: !ok && status !== 408 && status !== 429 && status < 500,
  };
}

export async function postJson(http: HttpSend, url: string, body: string, headers: Record<string, string>, tlsVerify = true): Promise<AttemptResult> {
  const res = await http({
    method: 'POST',
    url,
    headers: { 'Content-Type': 'application/json', 'User-Agent': 'Buildkite-Request', ...headers },
    body,
    tlsVerify,
  });
  return resultOf(res.status, res.body);
}

/** The header naming the delivery, stable across its retries. */
export const DELIVERY_HEADER = 'X-Buildkite-Request';

export function webhookHeaders(event: string, deliveryId: string, settings: Record<string, unknown>, body: string, now: Date): Record<string, string> {
  const headers: Record<string, string> = { 'X-Buildkite-Event': event, [DELIVERY_HEADER]: deliveryId };
  const token = typeof settings.token === 'string' && settings.token ? settings.token : null;
  if (token && settings.token_mode === 'signature') headers['X-Buildkite-Signature'] = signature(token, Math.floor(now.getTime() / 1000), body);
  else if (token) headers['X-Buildkite-Token'] = token;
  return headers;
}

export function webhookProvider(): Provider {
  return {
    planForService(ctx: FanOutContext, s: ActiveService): PlannedDelivery[] {
      const events: readonly string[] = isStringArray(s.settings.events) ? s.settings.events : DEFAULT_WEBHOOK_EVENTS;
      if (!events.includes(ctx.event.name)) return [];
      // The docs' `sender`: the user who created the webhook.
      return [{ targetKind: 'service', serviceId: s.id, target: null, targetKey: `service:${s.id}`, payload: { ...ctx.event.payload, sender: s.creator } }];
    },
    async send(d: Delivery, service: ActiveService | null, http: HttpSend): Promise<AttemptResult> {
      const settings = service?.settings ?? {};
      const url = service ? String(settings.url ?? '') : String(d.target?.url ?? '');
      const body = JSON.stringify(d.payload);
      return postJson(http, url, body, webhookHeaders(d.event, d.id, settings, body, clock.now()), settings.tls_verify !== false);
    },
  };
}
