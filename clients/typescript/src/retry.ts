/**
 * Back-off on 429 as an openapi-fetch middleware: the request is sent again after the wait the
 * service names (`Retry-After`, else `RateLimit-Reset`, both in seconds; else an exponential
 * wait), at most `maxRetries` times, and never when the wait would exceed `maxDelayMs` (then the
 * 429 is the answer, and the client throws it as a `WindsockApiError`).
 */
import type { Middleware } from 'openapi-fetch';

export interface RetryOptions {
  /** How many times one request is sent again after a 429 (default 3; 0 turns back-off off). */
  maxRetries?: number;
  /** The longest single wait (ms, default 60,000): a longer one is not waited for. */
  maxDelayMs?: number;
  /** Called before each wait (to log it, say). */
  onRetry?: (retry: { attempt: number; delayMs: number; response: Response; request: Request }) => void | Promise<void>;
}

/** The wait a 429 asks for (ms). */
export function retryDelayMs(response: Response, attempt: number, now = Date.now()): number {
  const retryAfter = response.headers.get('Retry-After')?.trim();
  if (retryAfter) {
    // Seconds, or an HTTP date.
    if (/^\d+$/.test(retryAfter)) return Number(retryAfter) * 1000;
    const at = Date.parse(retryAfter);
    if (!Number.isNaN(at)) return Math.max(0, at - now);
  }
  const reset = response.headers.get('RateLimit-Reset')?.trim();
  if (reset && /^\d+$/.test(reset)) return Number(reset) * 1000;
  return 1000 * 2 ** (attempt - 1);
}

const sleep = (ms: number, signal: AbortSignal | null) =>
  new Promise<void>((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => (clearTimeout(timer), reject(signal!.reason));
    const timer = setTimeout(() => (signal?.removeEventListener('abort', onAbort), resolve()), ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });

export function retryMiddleware(options: RetryOptions = {}): Middleware {
  const maxRetries = options.maxRetries ?? 3;
  const maxDelayMs = options.maxDelayMs ?? 60_000;
  // A request's body can be read once: each request keeps an unread copy until its answer is in.
  const copies = new Map<string, Request>();
  return {
    onRequest({ request, id }) {
      if (maxRetries > 0) copies.set(id, request.clone());
    },
    onError({ id }) {
      copies.delete(id);
    },
    async onResponse({ response, id, options: client }) {
      const copy = copies.get(id);
      copies.delete(id);
      if (!copy) return undefined;
      let answer = response;
      for (let attempt = 1; answer.status === 429 && attempt <= maxRetries; attempt++) {
        const delayMs = retryDelayMs(answer, attempt);
        if (delayMs > maxDelayMs) break;
        await options.onRetry?.({ attempt, delayMs, response: answer, request: copy });
        await answer.body?.cancel();
        await sleep(delayMs, copy.signal);
        answer = await client.fetch(copy.clone());
      }
      return answer === response ? undefined : answer;
    },
  };
}
