/**
 * The one transport for every request Windsock sends out: notification webhooks, Slack posts,
 * OTLP exports, commit statuses (octokit is given a `fetch` over it) and the provider webhooks a
 * pipeline registers. Nothing else under src/ may open an outgoing HTTP connection: a lint rule
 * (eslint.config.mjs, "one transport") fails on `fetch`, `http(s).request`, `undici` or an SDK's
 * own client elsewhere. The URL often comes from a user, so a request must not become a way into
 * the server's own network (SSRF):
 *
 * - only http: and https: URLs;
 * - the host is normalised before it is judged: the URL parser turns decimal, hex, octal and
 *   shortened IPv4 forms (`2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`) into dotted quads,
 *   and IPv6 forms that carry an IPv4 address (IPv4-mapped `::ffff:a.b.c.d`, IPv4-compatible
 *   `::a.b.c.d`, NAT64 `64:ff9b::a.b.c.d`, 6to4, SIIT) are judged by that address;
 * - a name is resolved (every address), and if any address is not public unicast (loopback,
 *   private, link-local with the cloud metadata address 169.254.169.254, unspecified, broadcast,
 *   multicast, carrier-grade NAT, reserved...) the request is refused, unless `allowPrivate`;
 * - the connection goes to an address that was checked (the socket's `lookup` answers with the
 *   checked addresses, so a second DNS answer cannot swap in another one), and once connected the
 *   address the socket actually reached is checked again before one byte is written; TLS runs
 *   over that socket, with SNI and the Host header naming the host;
 * - redirects are never followed: a 3xx is answered as it came;
 * - one deadline bounds the whole exchange (lookup, connect, TLS, sending, the response's headers
 *   and body): a receiver that is silent, slow or trickles bytes is cut off at it, and at most
 *   `maxResponseBytes` of the response body are read before the socket is closed.
 *
 * Every failure is an `OutboundRefused` with a `reason` callers can record. Its message names the
 * host, never the whole URL: webhook URLs often carry a secret in their path or query.
 */
import dns from 'node:dns';
import http from 'node:http';
import net from 'node:net';
import tls from 'node:tls';
import { Readable, type Duplex } from 'node:stream';
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import { errorMessage, stringField } from '../core/guards';

export interface OutboundSettings {
  /** Allow loopback, private, link-local... destinations (tests, and installations whose receivers are inside). */
  allowPrivate: boolean;
  /** The whole request: lookup, connect, send and the response. */
  timeoutMs: number;
  /** How much of a response body is read; the rest is dropped and `truncated` is set. */
  maxResponseBytes: number;
}

/** The settings' defaults (OUTBOUND_ALLOW_PRIVATE, OUTBOUND_TIMEOUT_MS, OUTBOUND_MAX_RESPONSE_BYTES unset). */
export const DEFAULT_OUTBOUND_SETTINGS: OutboundSettings = { allowPrivate: false, timeoutMs: 10_000, maxResponseBytes: 65_536 };

export interface OutboundRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  body?: string | Buffer;
  /** `false`: do not check the server's certificate, for this request only. Default true. */
  tlsVerify?: boolean;
}

export interface OutboundStreamRequest {
  method: string;
  url: string;
  headers?: Record<string, string>;
  /** A stream is piped (give `content-length` with it); a buffer or string is sent whole. */
  body?: string | Buffer | Readable;
  tlsVerify?: boolean;
  signal?: AbortSignal;
}

export interface OutboundStreamResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** The response body, unread: the caller reads or destroys it. */
  body: Readable;
}

export interface OutboundResponse {
  status: number;
  /** Lower-case names; repeated headers joined with ", ". */
  headers: Record<string, string>;
  /** At most `maxResponseBytes`. */
  body: Buffer;
  /** The body was longer than `maxResponseBytes` and was cut there. */
  truncated: boolean;
}

export type OutboundRefusalReason =
  /** Not an absolute URL. */
  | 'invalid_url'
  /** Not http: or https:. */
  | 'unsupported_scheme'
  /** The host is, or resolves to, an address that is not public (and `allowPrivate` is off). */
  | 'unsafe_address'
  /** The host name does not resolve. */
  | 'dns_error'
  /** The deadline (`timeoutMs`) passed before the response was read. */
  | 'timeout'
  /** Could not connect, or the connection failed before a response (refused, reset...). */
  | 'connection_error'
  /** The TLS handshake failed (certificate not trusted, expired, wrong name...). */
  | 'tls_error'
  /** The request itself cannot be sent (a method or header value HTTP does not allow). */
  | 'invalid_request';

export class OutboundRefused extends Error {
  constructor(
    readonly reason: OutboundRefusalReason,
    message: string,
  ) {
    super(message);
    this.name = 'OutboundRefused';
  }
}

/**
 * The canonical form of an address as a URL's host or a socket gives it: brackets and a zone
 * removed, any IPv4 form ipaddr.js reads (decimal `2130706433`, hex `0x7f000001`, octal
 * `0177.0.0.1`, shortened `127.1`) as a dotted quad; null when it is no IP address (a name).
 */
export function normaliseAddress(host: string): string | null {
  let h = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const zone = h.indexOf('%');
  if (zone >= 0 && h.includes(':')) h = h.slice(0, zone);
  if (h.includes(':')) return ipaddr.IPv6.isValid(h) ? ipaddr.IPv6.parse(h).toNormalizedString() : null;
  return ipaddr.IPv4.isValid(h) ? ipaddr.IPv4.parse(h).toString() : null;
}

/** Why an address may not be a destination, or null when it is public unicast. */
export function unsafeAddressRange(address: string): string | null {
  const normal = normaliseAddress(address);
  if (normal === null) return 'unparseable';
  const parsed = ipaddr.parse(normal);
  if (parsed instanceof ipaddr.IPv6) {
    const v6 = parsed;
    const range = v6.range();
    if (range === 'unicast' && v6.parts.slice(0, 6).every((p) => p === 0)) {
      // ::a.b.c.d, IPv4-compatible (deprecated by RFC 4291): some stacks still reach a.b.c.d
      // through it, and nothing legitimate is addressed so; refused whatever it carries.
      return `ipv4Compatible of ${embeddedIPv4(v6, 'ipv4Mapped')!.toString()}`;
    }
    const embedded = embeddedIPv4(v6, range);
    if (embedded) {
      const inner = embedded.range();
      return inner === 'unicast' ? null : `${range} of ${inner}`;
    }
    return range === 'unicast' ? null : range;
  }
  const range = parsed.range();
  return range === 'unicast' ? null : range;
}

/** The IPv4 address an IPv6 form carries (mapped, translated, NAT64, 6to4), for which the IPv4 rules apply. */
function embeddedIPv4(v6: ipaddr.IPv6, range: string): ipaddr.IPv4 | null {
  const p = v6.parts;
  const fromParts = (hi: number, lo: number) => new ipaddr.IPv4([hi >> 8, hi & 0xff, lo >> 8, lo & 0xff]);
  switch (range) {
    case 'ipv4Mapped': // ::ffff:a.b.c.d
    case 'rfc6145': // ::ffff:0:a.b.c.d
      return fromParts(p[6]!, p[7]!);
    case 'rfc6052': // 64:ff9b::a.b.c.d (NAT64); the local-use 64:ff9b:1::/48 is refused as a whole
      return p[1] === 0xff9b && p[2] === 0 && p[3] === 0 && p[4] === 0 && p[5] === 0 ? fromParts(p[6]!, p[7]!) : null;
    case '6to4': // 2002:aabb:ccdd::/48
      return fromParts(p[1]!, p[2]!);
    default:
      return null;
  }
}

interface Target {
  url: URL;
  /** The name as TLS and Host see it (brackets of an IPv6 literal removed). */
  hostname: string;
  addresses: LookupAddress[];
}

const DEFAULT_PORTS: Record<string, number> = { 'http:': 80, 'https:': 443 };

/** What the transport is to its callers: one request out, its answer or an `OutboundRefused`. */
export type OutboundSend = (req: OutboundRequest) => Promise<OutboundResponse>;

export class Outbound {
  constructor(
    private readonly settings: OutboundSettings,
    /** The resolver: dns.lookup with `all`; replaced in tests. */
    private readonly resolve: (hostname: string) => Promise<LookupAddress[]> = (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true }),
  ) {}

  /** The whole-exchange deadline every request gets (OUTBOUND_TIMEOUT_MS). */
  get timeoutMs(): number {
    return this.settings.timeoutMs;
  }

  /** Send one request; never follows redirects. Throws `OutboundRefused`. */
  async request(opts: OutboundRequest): Promise<OutboundResponse> {
    const deadline = Date.now() + this.settings.timeoutMs;
    const url = parseUrl(opts.url);
    const target = await withDeadline(this.check(url), deadline, url.hostname);
    return this.send(target, opts, deadline);
  }

  /** Resolve the URL's host and check every address. */
  private async check(url: URL): Promise<Target> {
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const literal = normaliseAddress(hostname);
    let addresses: LookupAddress[];
    if (literal !== null) {
      addresses = [{ address: literal, family: literal.includes(':') ? 6 : 4 }];
    } else {
      try {
        addresses = await this.resolve(hostname);
      } catch (err) {
        throw new OutboundRefused('dns_error', `${hostname} does not resolve (${errnoCode(err) ?? 'lookup failed'})`);
      }
      if (addresses.length === 0) throw new OutboundRefused('dns_error', `${hostname} does not resolve (no addresses)`);
    }
    for (const { address } of addresses) {
      const refusal = this.refusalOf(address, hostname);
      if (refusal) throw refusal;
    }
    return { url, hostname, addresses };
  }

  /** The refusal of a destination address (null when it may be contacted). */
  private refusalOf(address: string, hostname: string): OutboundRefused | null {
    if (this.settings.allowPrivate) return null;
    const range = unsafeAddressRange(address);
    if (range === null) return null;
    const named = normaliseAddress(hostname) === normaliseAddress(address) ? address : `${hostname} resolves to ${address}, which is`;
    return new OutboundRefused('unsafe_address', `${named} not a public address (${range}): refused`);
  }

  /**
   * The connection of one request: to a checked address (pinned lookup), then the address the
   * socket reached is checked again before it is handed to http (nothing is written before), then
   * TLS over it for https. `track` learns each socket so the deadline can destroy it.
   */
  private connector(target: Target, secure: boolean, tlsVerify: boolean, track: (s: net.Socket) => void) {
    const { url, hostname, addresses } = target;
    const port = url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol]!;
    return (_options: unknown, oncreate: (err: Error | null, socket: Duplex) => void): undefined => {
      const raw = net.connect({ host: hostname, port, lookup: pinned(addresses) });
      // With an error, Node's callback ignores the socket (its type asks for one).
      const fail = (err: Error) => oncreate(err, raw);
      track(raw);
      raw.once('error', fail);
      raw.once('connect', () => {
        const refusal = this.refusalOf(raw.remoteAddress ?? '', hostname);
        if (refusal) {
          raw.destroy();
          fail(refusal);
          return;
        }
        raw.off('error', fail);
        if (!secure) {
          oncreate(null, raw);
          return;
        }
        const secured = tls.connect({
          socket: raw,
          rejectUnauthorized: tlsVerify,
          ALPNProtocols: ['http/1.1'],
          ...(normaliseAddress(hostname) === null ? { servername: hostname } : {}),
        });
        track(secured);
        secured.once('error', fail);
        secured.once('secureConnect', () => {
          secured.off('error', fail);
          oncreate(null, secured);
        });
      });
      return undefined;
    };
  }

  private send(target: Target, opts: OutboundRequest, deadline: number): Promise<OutboundResponse> {
    const { url, hostname } = target;
    const max = this.settings.maxResponseBytes;
    const body = opts.body === undefined ? undefined : Buffer.isBuffer(opts.body) ? opts.body : Buffer.from(opts.body, 'utf8');
    const headers: Record<string, string> = { ...opts.headers };
    if (body !== undefined && !Object.keys(headers).some((h) => h.toLowerCase() === 'content-length')) headers['content-length'] = String(body.length);
    const secure = url.protocol === 'https:';
    const sockets: net.Socket[] = [];

    return new Promise<OutboundResponse>((resolve, reject) => {
      let settled = false;
      let req: http.ClientRequest | undefined;
      const timer = setTimeout(
        () => {
          finish(new OutboundRefused('timeout', `${hostname} did not answer within ${this.settings.timeoutMs} ms`));
          req?.destroy();
        },
        Math.max(0, deadline - Date.now()),
      );
      function finish(err: OutboundRefused | null, response?: OutboundResponse) {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        // Whatever the outcome, the exchange is over: no socket of it outlives the answer.
        for (const s of sockets) if (!s.destroyed) s.destroy();
        if (err) reject(err);
        else resolve(response!);
      }
      function onResponse(res: http.IncomingMessage) {
        const chunks: Buffer[] = [];
        let size = 0;
        const respond = (truncated: boolean) =>
          finish(null, { status: res.statusCode ?? 0, headers: flatHeaders(res.headers), body: Buffer.concat(chunks, size), truncated });
        res.on('data', (chunk: Buffer) => {
          if (settled) return;
          if (size + chunk.length > max) {
            // The cap is reached: keep what fits, answer, and close the socket rather than read on.
            chunks.push(chunk.subarray(0, max - size));
            size = max;
            respond(true);
            req?.destroy();
            return;
          }
          chunks.push(chunk);
          size += chunk.length;
        });
        res.on('end', () => respond(false));
        res.on('error', (err) => finish(failure(err, hostname)));
        res.on('close', () => {
          if (!res.complete) finish(new OutboundRefused('connection_error', `${hostname} closed the connection before the response ended`));
        });
      }
      try {
        // No agent: each request has its own connection, made by `connector` (http and https
        // alike: TLS is set up there, over the checked socket).
        req = http.request(
          {
            method: opts.method,
            hostname,
            port: url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol],
            defaultPort: DEFAULT_PORTS[url.protocol],
            path: `${url.pathname}${url.search}`,
            headers,
            agent: undefined,
            createConnection: this.connector(target, secure, opts.tlsVerify !== false, (s) => sockets.push(s)),
            ...(url.username || url.password ? { auth: `${decodeURIComponent(url.username)}:${decodeURIComponent(url.password)}` } : {}),
          },
          onResponse,
        );
      } catch (err) {
        finish(new OutboundRefused('invalid_request', `the request to ${hostname} cannot be sent: ${errorMessage(err)}`));
        return;
      }
      req.on('error', (err) => finish(failure(err, hostname)));
      req.end(body);
    });
  }
  /**
   * One request whose bodies stream (an object store's uploads and reads, gigabytes long): the
   * same checks and pinned, re-checked connection as `request`, but the body may be a stream and
   * the response's body is handed on as one, unread and uncapped. A whole-exchange deadline
   * cannot bound a transfer of any size, so `timeoutMs` bounds the lookup and then every silence:
   * a socket with no bytes either way for that long is destroyed (the response stream errors).
   * `signal` aborts it. Redirects are not followed. Throws `OutboundRefused` before the response.
   */
  async stream(opts: OutboundStreamRequest): Promise<OutboundStreamResponse> {
    const url = parseUrl(opts.url);
    const target = await withDeadline(this.check(url), Date.now() + this.settings.timeoutMs, url.hostname);
    const { hostname } = target;
    const idleMs = this.settings.timeoutMs;
    const secure = url.protocol === 'https:';
    return new Promise<OutboundStreamResponse>((resolve, reject) => {
      let answered = false;
      let req: http.ClientRequest | undefined;
      let response: http.IncomingMessage | undefined;
      const fail = (err: OutboundRefused) => {
        // Once answered, the reader of the body learns why it ended, as a caller of `request` would.
        response?.destroy(err);
        req?.destroy(err);
        // A body being piped (a staged file's stream) would otherwise keep its descriptor open.
        if (opts.body instanceof Readable) opts.body.destroy();
        if (!answered) {
          answered = true;
          reject(err);
        }
      };
      const track = (s: net.Socket) =>
        s.setTimeout(idleMs, () => {
          const err = new OutboundRefused('timeout', `${hostname} was silent for ${idleMs} ms`);
          fail(err);
          s.destroy(err);
        });
      if (opts.signal?.aborted) return reject(new OutboundRefused('connection_error', `the request to ${hostname} was aborted`));
      opts.signal?.addEventListener('abort', () => fail(new OutboundRefused('connection_error', `the request to ${hostname} was aborted`)), { once: true });
      try {
        req = http.request(
          {
            method: opts.method,
            hostname,
            port: url.port ? Number(url.port) : DEFAULT_PORTS[url.protocol],
            defaultPort: DEFAULT_PORTS[url.protocol],
            path: `${url.pathname}${url.search}`,
            headers: opts.headers,
            agent: undefined,
            createConnection: this.connector(target, secure, opts.tlsVerify !== false, track),
          },
          (res) => {
            answered = true;
            response = res;
            resolve({ status: res.statusCode ?? 0, headers: flatHeaders(res.headers), body: res });
          },
        );
      } catch (err) {
        return reject(new OutboundRefused('invalid_request', `the request to ${hostname} cannot be sent: ${errorMessage(err)}`));
      }
      req.on('error', (err) => fail(failure(err, hostname)));
      const body = opts.body;
      if (body instanceof Readable) {
        body.on('error', (err) => fail(failure(err, hostname)));
        body.pipe(req);
      } else req.end(body);
    });
  }
}

/** The transport as a function (what providers and the pipelines' webhook registration are given). */
export function outboundSender(outbound: Outbound): OutboundSend {
  return (req) => outbound.request(req);
}

/** A `lookup` answering only with these (checked) addresses. Node may ask with `all` (connection attempts over every family) or for one address. */
function pinned(addresses: LookupAddress[]): LookupFunction {
  return (_name, options, callback) => {
    const family = typeof options === 'object' && options.family ? options.family : 0;
    const fitting = family ? addresses.filter((a) => a.family === family) : addresses;
    const chosen = fitting.length ? fitting : addresses;
    if (typeof options === 'object' && options.all) callback(null, chosen);
    else callback(null, chosen[0]!.address, chosen[0]!.family);
  };
}

function parseUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundRefused('invalid_url', 'not an absolute URL');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') {
    throw new OutboundRefused('unsupported_scheme', `only http: and https: URLs may be called, not ${url.protocol}`);
  }
  return url;
}

/** The check's promise, or a timeout refusal when the deadline passes first (a slow resolver). */
function withDeadline<T>(work: Promise<T>, deadline: number, hostname: string): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const timer = setTimeout(() => reject(new OutboundRefused('timeout', `looking up ${hostname} took too long`)), Math.max(0, deadline - Date.now()));
    work.then(
      (value) => {
        clearTimeout(timer);
        resolve(value);
      },
      (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      },
    );
  });
}

const TLS_CODES = /^(CERT_|ERR_TLS_|ERR_SSL_|UNABLE_TO_|SELF_SIGNED_|DEPTH_ZERO_SELF_SIGNED_CERT|HOSTNAME_MISMATCH|ERR_OSSL_)/;

/** A system error's code (`ECONNREFUSED`, `CERT_HAS_EXPIRED`...), if it has one. */
function errnoCode(err: unknown): string | undefined {
  return stringField(err, 'code');
}

function failure(err: Error, hostname: string): OutboundRefused {
  if (err instanceof OutboundRefused) return err;
  const code = errnoCode(err) ?? '';
  if (TLS_CODES.test(code) || /certificate|SSL|TLS/i.test(err.message)) {
    return new OutboundRefused('tls_error', `TLS with ${hostname} failed (${code || err.message})`);
  }
  return new OutboundRefused('connection_error', `the request to ${hostname} failed (${code || err.message})`);
}

function flatHeaders(headers: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined) continue;
    out[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return out;
}
