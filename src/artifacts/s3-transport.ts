/**
 * The AWS SDK's HTTP, sent through the one transport (src/security/outbound.ts): the S3 client is
 * given this `requestHandler`, so every request it makes goes out over `Outbound.stream` (the
 * destination's addresses checked, the connection pinned to them and re-checked, silences bounded)
 * and only to the store's own host. The endpoint is the operator's choice (ARTIFACTS_S3_ENDPOINT),
 * not a user's, so the Outbound handed in may allow private addresses; that permission is bounded
 * here to the configured host (and its subdomains, where a virtual-hosted bucket lives): a request
 * anywhere else is refused before it is sent. Bodies stream both ways (uploads from a staged
 * file, reads of an upload being verified), which `Outbound.request` (buffered, capped) is not for.
 */
import type { Readable } from 'node:stream';
import type { HttpHandlerOptions, HttpRequest, HttpResponse, QueryParameterBag } from '@smithy/types';
import { OutboundRefused, type Outbound } from '../security/outbound';

/** RFC 3986 encoding, as S3's canonical requests (and so the SDK's signatures) expect. */
const escape = (v: string) => encodeURIComponent(v).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);

function queryString(query: QueryParameterBag | undefined): string {
  const parts: string[] = [];
  for (const key of Object.keys(query ?? {}).sort()) {
    const value = query![key];
    if (value === null || value === undefined) parts.push(escape(key));
    else for (const v of Array.isArray(value) ? value : [value]) parts.push(`${escape(key)}=${escape(v)}`);
  }
  return parts.length ? `?${parts.join('&')}` : '';
}

function bodyOf(body: unknown): string | Buffer | Readable | undefined {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || Buffer.isBuffer(body)) return body;
  if (body instanceof Uint8Array) return Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (typeof body === 'object' && 'pipe' in body && typeof body.pipe === 'function') {
    return body as Readable; // cast: the SDK hands a Node stream (a staged file's read stream) as `any`
  }
  throw new Error('The S3 transport sends strings, buffers and Node streams only');
}

/** Is `hostname` the endpoint's host, or a name under it (a virtual-hosted bucket)? */
export function isStoreHost(hostname: string, storeHost: string): boolean {
  const h = hostname.toLowerCase();
  const s = storeHost.toLowerCase();
  return h === s || h.endsWith(`.${s}`);
}

export class OutboundS3Handler {
  readonly metadata = { handlerProtocol: 'http/1.1' };

  constructor(
    private readonly outbound: Outbound,
    /** The only host (and its subdomains) this handler sends to. */
    private readonly storeHost: string,
  ) {}

  async handle(request: HttpRequest, options: HttpHandlerOptions = {}): Promise<{ response: HttpResponse }> {
    if (!isStoreHost(request.hostname, this.storeHost)) {
      throw new OutboundRefused('unsafe_address', `${request.hostname} is not the artifact store's host (${this.storeHost}): refused`);
    }
    const port = request.port ? `:${request.port}` : '';
    const url = `${request.protocol}//${request.hostname}${port}${request.path}${queryString(request.query)}`;
    const headers: Record<string, string> = {};
    // `Expect: 100-continue` would make the body wait for an interim answer; the body is sent at once.
    for (const [name, value] of Object.entries(request.headers)) if (name.toLowerCase() !== 'expect') headers[name] = value;
    const signal = options.abortSignal && 'addEventListener' in options.abortSignal ? options.abortSignal : undefined;
    const res = await this.outbound.stream({ method: request.method, url, headers, body: bodyOf(request.body), ...(signal ? { signal } : {}) });
    return { response: { statusCode: res.status, headers: res.headers, body: res.body } };
  }

  updateHttpClientConfig(): void {}

  httpHandlerConfigs(): Record<string, never> {
    return {};
  }

  destroy(): void {}
}
