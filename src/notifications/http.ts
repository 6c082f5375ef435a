/**
 * Providers' requests go out through the server's one SSRF-safe client (src/security/outbound.ts).
 * A refusal no retry can change (an address that is not public, a URL that is no http(s) URL, a
 * request that cannot be sent) fails the delivery at once: it is thrown marked `final`.
 */
import { Outbound, OutboundRefused, type OutboundRefusalReason } from '../security/outbound';
import type { HttpSend } from './events';

const FINAL: OutboundRefusalReason[] = ['unsafe_address', 'invalid_url', 'unsupported_scheme', 'invalid_request'];

export function outboundSend(outbound: Outbound): HttpSend {
  return async (req) => {
    try {
      const res = await outbound.request(req);
      return { status: res.status, headers: res.headers, body: res.body };
    } catch (err) {
      if (err instanceof OutboundRefused && FINAL.includes(err.reason)) Object.assign(err, { final: true });
      throw err;
    }
  };
}
