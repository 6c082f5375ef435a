/**
 * What every sender shares: turning an answer (or its absence) into the `AttemptResult` the
 * delivery side records, and a `fetch` over `HttpSend` for libraries that want one (octokit).
 */
import type { AttemptResult } from '../events';
import type { HttpResponse, HttpSend } from './types';

const EXCERPT_BYTES = 500;

/** Never let a credential reach a recorded excerpt, even if a service echoes it back. */
function redact(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const secret of secrets) if (secret && secret.length >= 4) out = out.split(secret).join('[redacted]');
  return out;
}

/** ok on 2xx; a 4xx other than 408 (timeout) and 429 (rate limit) is final: retrying cannot fix it. */
export function resultOf(res: HttpResponse, secrets: readonly (string | undefined)[] = []): AttemptResult {
  const ok = res.status >= 200 && res.status < 300;
  const final = res.status >= 400 && res.status < 500 && res.status !== 408 && res.status !== 429;
  const excerpt = redact(res.body.subarray(0, EXCERPT_BYTES).toString('utf8'), secrets);
  return final ? { ok, status: res.status, excerpt, final } : { ok, status: res.status, excerpt };
}

/** No answer came: the HTTP function threw. An error flagged `final` (a refused address) is not retried. */
export function failureOf(err: unknown, secrets: readonly (string | undefined)[] = []): AttemptResult {
  const message = err instanceof Error ? err.message : String(err);
  const excerpt = redact(message || 'no answer', secrets).slice(0, EXCERPT_BYTES);
  const final = typeof err === 'object' && err !== null && 'final' in err && err.final === true;
  return final ? { ok: false, status: null, excerpt, final: true } : { ok: false, status: null, excerpt };
}

/** Whether `h` is a `Headers` (of this realm or another: what it can do, not its class). */
const isHeaders = (h: object): h is Headers => 'forEach' in h && typeof h.forEach === 'function' && 'entries' in h && typeof h.entries === 'function';

/** A plain header record from whatever a `fetch` caller passed. */
function headerRecord(headers: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!headers || typeof headers !== 'object') return out;
  const entries: Iterable<[string, string]> = isHeaders(headers)
    ? headers.entries()
    : Array.isArray(headers)
      ? headers
      : Object.entries(headers).flatMap(([k, v]): [string, string][] => (v === undefined ? [] : [[k, String(v)]]));
  for (const [name, value] of entries) out[name.toLowerCase()] = value;
  return out;
}

const NULL_BODY_STATUSES = [101, 204, 205, 304];

/** What went over the wire through `fetchOver`: the last answer, or why none came. */
export interface Exchange {
  response?: HttpResponse;
  error?: unknown;
}

/**
 * A `fetch` whose traffic goes through `http`, for octokit's `request.fetch`. The exchange is
 * recorded as it was, because octokit reports a missing answer as a 500 and rewrites errors,
 * and the delivery side records the service's own status and words.
 */
export function fetchOver(http: HttpSend, seen: Exchange): typeof fetch {
  return async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
    const body = init?.body;
    if (body !== undefined && body !== null && typeof body !== 'string') throw new TypeError('only string bodies are sent');
    let res: HttpResponse;
    try {
      res = await http({ method: (init?.method ?? 'GET').toUpperCase(), url, headers: headerRecord(init?.headers), ...(body ? { body } : {}) });
    } catch (err) {
      seen.error = err;
      seen.response = undefined;
      throw err;
    }
    seen.response = res;
    seen.error = undefined;
    const headers = new Headers();
    for (const [name, value] of Object.entries(res.headers)) {
      try {
        headers.append(name, value);
      } catch {
        // A header fetch would refuse is not one octokit needs.
      }
    }
    const status = res.status >= 200 && res.status <= 599 ? res.status : 502;
    return new Response(NULL_BODY_STATUSES.includes(status) ? null : new Uint8Array(res.body), { status, headers });
  };
}
