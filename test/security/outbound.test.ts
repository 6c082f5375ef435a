/**
 * The outbound client against real servers on 127.0.0.1 (port 0): what it refuses (addresses
 * that are not public, schemes), what it never does (follow a redirect, wait past its deadline,
 * read past its cap), and that it connects to the address it checked while TLS and Host still
 * name the host. No database.
 */
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { LookupAddress } from 'node:dns';
import { Readable } from 'node:stream';
import { generate } from 'selfsigned';
import { Outbound, OutboundRefused, unsafeAddressRange, type OutboundSettings } from '../../src/security/outbound';

const SETTINGS: OutboundSettings = { allowPrivate: false, timeoutMs: 2_000, maxResponseBytes: 1024 };
const PRIVATE: OutboundSettings = { ...SETTINGS, allowPrivate: true };

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  /** Over TLS: the name the client sent as SNI. */
  servername: string | false | null | undefined;
}

/** A server that answers each request with `handler`, and remembers what it was sent. */
async function listen(
  handler: (req: http.IncomingMessage, res: http.ServerResponse) => void,
  tls?: { key: string; cert: string },
): Promise<{ port: number; seen: Seen[]; close: () => Promise<void> }> {
  const seen: Seen[] = [];
  const onRequest = (req: http.IncomingMessage, res: http.ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      seen.push({
        method: req.method!,
        url: req.url!,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        servername: (req.socket as TLSSocket).servername,
      });
      handler(req, res);
    });
  };
  const server = tls ? https.createServer(tls, onRequest) : http.createServer(onRequest);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** A resolver that knows only the given names (what a DNS answer would be), counting the questions. */
function resolver(names: Record<string, string[]>) {
  const asked: string[] = [];
  const resolve = async (hostname: string): Promise<LookupAddress[]> => {
    asked.push(hostname);
    const addresses = names[hostname];
    if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${hostname}`), { code: 'ENOTFOUND' });
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { asked, resolve };
}

async function refusal(promise: Promise<unknown>): Promise<OutboundRefused> {
  try {
    await promise;
  } catch (err) {
    expect(err).toBeInstanceOf(OutboundRefused);
    return err as OutboundRefused;
  }
  throw new Error('expected the request to be refused');
}

/** A stream's whole text. */
async function text(body: Readable): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of body) chunks.push(Buffer.from(chunk as Buffer)); // cast: a response body yields buffers
  return Buffer.concat(chunks).toString('utf8');
}

describe('Outbound', () => {
  let server: Awaited<ReturnType<typeof listen>>;
  beforeAll(async () => {
    server = await listen((req, res) => {
      if (req.url === '/redirect') {
        res.writeHead(302, { location: `http://127.0.0.1:${server.port}/target` }).end('moved');
      } else if (req.url === '/large') {
        res.writeHead(200, { 'content-type': 'text/plain' });
        res.end('x'.repeat(100_000));
      } else if (req.url === '/silent') {
        // never answers
      } else if (req.url === '/slow-body') {
        res.writeHead(200);
        res.write('partial');
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'x-two': ['a', 'b'] }).end(JSON.stringify({ ok: true }));
      }
    });
  });
  afterAll(() => server.close());

  it('refuses a loopback receiver by default, naming the reason', async () => {
    const err = await refusal(new Outbound(SETTINGS).request({ method: 'POST', url: `http://127.0.0.1:${server.port}/hook`, body: '{}' }));
    expect(err.reason).toBe('unsafe_address');
    expect(err.message).toMatch(/127\.0\.0\.1 not a public address \(loopback\)/);
    expect(server.seen).toHaveLength(0);
  });

  it('sends to a loopback receiver when allowPrivate is on: method, headers, body, and the answer as it came', async () => {
    const res = await new Outbound(PRIVATE).request({
      method: 'POST',
      url: `http://127.0.0.1:${server.port}/hook?a=1`,
      headers: { 'content-type': 'application/json', 'x-token': 't' },
      body: '{"hello":"world"}',
    });
    expect(res).toMatchObject({ status: 200, truncated: false });
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['x-two']).toBe('a, b');
    expect(JSON.parse(res.body.toString())).toEqual({ ok: true });
    const seen = server.seen.at(-1)!;
    expect(seen).toMatchObject({ method: 'POST', url: '/hook?a=1', body: '{"hello":"world"}' });
    expect(seen.headers).toMatchObject({ 'content-type': 'application/json', 'x-token': 't', 'content-length': '17' });
  });

  it.each([
    ['http://10.1.2.3/', 'private'],
    ['http://192.168.0.1/', 'private'],
    ['http://172.16.5.4/', 'private'],
    ['http://169.254.169.254/latest/meta-data/', 'linkLocal'],
    ['http://100.64.0.1/', 'carrierGradeNat'],
    ['http://0.0.0.0/', 'unspecified'],
    ['http://255.255.255.255/', 'broadcast'],
    ['http://224.0.0.1/', 'multicast'],
    ['http://240.0.0.1/', 'reserved'],
    ['http://2130706433/', 'loopback'], // 127.0.0.1 as one number: URL parsing makes it the dotted form
    ['http://0x7f.1/', 'loopback'],
    ['http://[::1]/', 'loopback'],
    ['http://[::]/', 'unspecified'],
    ['http://[::ffff:127.0.0.1]/', 'ipv4Mapped of loopback'],
    ['http://[::ffff:169.254.169.254]/', 'ipv4Mapped of linkLocal'],
    ['http://[64:ff9b::10.0.0.1]/', 'rfc6052 of private'],
    ['http://[2002:7f00:1::]/', '6to4 of loopback'],
    ['http://[fd00::1]/', 'uniqueLocal'],
    ['http://[fe80::1]/', 'linkLocal'],
    ['http://[ff02::1]/', 'multicast'],
  ])('refuses the literal address of %s (%s)', async (url, range) => {
    const err = await refusal(new Outbound(SETTINGS).request({ method: 'GET', url }));
    expect(err.reason).toBe('unsafe_address');
    expect(err.message).toContain(`(${range})`);
  });

  it('judges public addresses, plain or embedded in IPv6 forms, safe', () => {
    for (const address of ['93.184.215.14', '1.1.1.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8', '2002:0808:0808::1']) {
      expect([address, unsafeAddressRange(address)]).toEqual([address, null]);
    }
  });

  it('refuses a name that resolves to loopback (localhost, through the real resolver)', async () => {
    const err = await refusal(new Outbound(SETTINGS).request({ method: 'GET', url: `http://localhost:${server.port}/` }));
    expect(err.reason).toBe('unsafe_address');
    expect(err.message).toMatch(/^localhost resolves to (127\.0\.0\.1|::1), which is not a public address \(loopback\)/);
    expect(server.seen.filter((s) => s.headers.host?.startsWith('localhost'))).toHaveLength(0);
  });

  it('refuses a name when any one of its addresses is not public', async () => {
    const { resolve } = resolver({ 'mixed.test': ['93.184.215.14', '10.0.0.7'] });
    const err = await refusal(new Outbound(SETTINGS, resolve).request({ method: 'GET', url: 'http://mixed.test/' }));
    expect(err.reason).toBe('unsafe_address');
    expect(err.message).toContain('mixed.test resolves to 10.0.0.7');
  });

  it('connects to the address it checked, asking DNS once, and keeps the name in Host (no rebinding window)', async () => {
    // The real resolver does not know receiver.test: the request succeeds only if the connection uses the checked address.
    const { asked, resolve } = resolver({ 'receiver.test': ['127.0.0.1'] });
    const res = await new Outbound(PRIVATE, resolve).request({ method: 'GET', url: `http://receiver.test:${server.port}/named` });
    expect(res.status).toBe(200);
    expect(asked).toEqual(['receiver.test']);
    expect(server.seen.at(-1)).toMatchObject({ url: '/named', headers: { host: `receiver.test:${server.port}` } });
  });

  it('answers a name that does not resolve with dns_error', async () => {
    const { resolve } = resolver({});
    const err = await refusal(new Outbound(SETTINGS, resolve).request({ method: 'GET', url: 'http://nowhere.test/' }));
    expect(err.reason).toBe('dns_error');
  });

  it('never follows a redirect: the 3xx is the answer', async () => {
    const res = await new Outbound(PRIVATE).request({ method: 'GET', url: `http://127.0.0.1:${server.port}/redirect` });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe(`http://127.0.0.1:${server.port}/target`);
    expect(res.body.toString()).toBe('moved');
    expect(server.seen.some((s) => s.url === '/target')).toBe(false);
  });

  it('gives up at the deadline on a server that never answers, and on a body that never ends', async () => {
    const outbound = new Outbound({ ...PRIVATE, timeoutMs: 300 });
    const err = await refusal(outbound.request({ method: 'GET', url: `http://127.0.0.1:${server.port}/silent` }));
    expect(err.reason).toBe('timeout');
    expect(err.message).toBe('127.0.0.1 did not answer within 300 ms');
    expect((await refusal(outbound.request({ method: 'GET', url: `http://127.0.0.1:${server.port}/slow-body` }))).reason).toBe('timeout');
  });

  it('counts a slow resolver against the same deadline', async () => {
    const never = () => new Promise<LookupAddress[]>(() => {});
    const err = await refusal(new Outbound({ ...SETTINGS, timeoutMs: 100 }, never).request({ method: 'GET', url: 'http://slow-dns.test/' }));
    expect(err.reason).toBe('timeout');
  });

  it('reads at most maxResponseBytes of a body and says it was cut', async () => {
    const res = await new Outbound(PRIVATE).request({ method: 'GET', url: `http://127.0.0.1:${server.port}/large` });
    expect(res).toMatchObject({ status: 200, truncated: true });
    expect(res.body.length).toBe(1024);
    expect(res.body.toString()).toBe('x'.repeat(1024));
  });

  it.each([
    ['ftp://example.com/file', 'unsupported_scheme'],
    ['file:///etc/passwd', 'unsupported_scheme'],
    ['gopher://127.0.0.1:70/', 'unsupported_scheme'],
    ['javascript:alert(1)', 'unsupported_scheme'],
    ['not a url', 'invalid_url'],
    ['/relative/path', 'invalid_url'],
  ])('refuses %s (%s)', async (url, reason) => {
    expect((await refusal(new Outbound(PRIVATE).request({ method: 'GET', url }))).reason).toBe(reason);
  });

  it('names the host in its messages, never the path or query (webhook URLs carry secrets)', async () => {
    const err = await refusal(new Outbound(SETTINGS).request({ method: 'POST', url: 'http://10.0.0.1/services/T000/B000/s3cr3t?token=s3cr3t' }));
    expect(err.message).not.toContain('s3cr3t');
    const closed = await listen(() => {});
    await closed.close();
    const failed = await refusal(new Outbound(PRIVATE).request({ method: 'POST', url: `http://127.0.0.1:${closed.port}/hook/s3cr3t` }));
    expect(failed.reason).toBe('connection_error');
    expect(failed.message).not.toContain('s3cr3t');
  });

  it('refuses a header value HTTP does not allow, without sending', async () => {
    const err = await refusal(new Outbound(PRIVATE).request({ method: 'GET', url: `http://127.0.0.1:${server.port}/`, headers: { 'x-bad': 'a\r\nb' } }));
    expect(err.reason).toBe('invalid_request');
  });

  describe('streaming (the artifact store: bodies of any size)', () => {
    it('checks the destination as request does: a loopback receiver is refused by default, nothing sent', async () => {
      const before = server.seen.length;
      const err = await refusal(new Outbound(SETTINGS).stream({ method: 'PUT', url: `http://127.0.0.1:${server.port}/object`, body: 'x' }));
      expect(err.reason).toBe('unsafe_address');
      expect(server.seen).toHaveLength(before);
    });

    it('sends a stream body and hands the answer on as a stream, unread and not capped', async () => {
      const res = await new Outbound(PRIVATE).stream({
        method: 'PUT',
        url: `http://127.0.0.1:${server.port}/object`,
        headers: { 'content-length': '10' },
        body: Readable.from([Buffer.from('hello'), Buffer.from('world')]),
      });
      expect(res.status).toBe(200);
      expect(await text(res.body)).toBe(JSON.stringify({ ok: true }));
      expect(server.seen.at(-1)).toMatchObject({ method: 'PUT', url: '/object', body: 'helloworld' });
      const large = await new Outbound(PRIVATE).stream({ method: 'GET', url: `http://127.0.0.1:${server.port}/large` });
      expect((await text(large.body)).length).toBe(100_000); // maxResponseBytes is 1024: a stream is the caller's to bound
    });

    it('cuts a connection silent for timeoutMs: before the answer, and in the middle of its body', async () => {
      const outbound = new Outbound({ ...PRIVATE, timeoutMs: 300 });
      const err = await refusal(outbound.stream({ method: 'GET', url: `http://127.0.0.1:${server.port}/silent` }));
      expect([err.reason, err.message]).toEqual(['timeout', '127.0.0.1 was silent for 300 ms']);
      const res = await outbound.stream({ method: 'GET', url: `http://127.0.0.1:${server.port}/slow-body` });
      expect(res.status).toBe(200);
      await expect(text(res.body)).rejects.toThrow('127.0.0.1 was silent for 300 ms');
    });
  });

  describe('over TLS', () => {
    let secure: Awaited<ReturnType<typeof listen>>;
    beforeAll(async () => {
      const pems = await generate([{ name: 'commonName', value: 'receiver.test' }], {
        keySize: 2048,
        algorithm: 'sha256',
        extensions: [{ name: 'subjectAltName', altNames: [{ type: 2, value: 'receiver.test' }] }],
      });
      secure = await listen((_req, res) => res.writeHead(204).end(), { key: pems.private, cert: pems.cert });
    });
    afterAll(() => secure.close());

    it('refuses a certificate it cannot trust, and accepts it when tlsVerify is false for that request only', async () => {
      const { resolve } = resolver({ 'receiver.test': ['127.0.0.1'] });
      const outbound = new Outbound(PRIVATE, resolve);
      const url = `https://receiver.test:${secure.port}/hook`;
      expect((await refusal(outbound.request({ method: 'POST', url, body: 'x' }))).reason).toBe('tls_error');
      const res = await outbound.request({ method: 'POST', url, body: 'x', tlsVerify: false });
      expect(res.status).toBe(204);
      expect(secure.seen.at(-1)).toMatchObject({ body: 'x', headers: { host: `receiver.test:${secure.port}` } });
      expect((await refusal(outbound.request({ method: 'POST', url, body: 'x' }))).reason).toBe('tls_error');
    });

    it('sends the name as SNI while connecting to the checked address', async () => {
      const { resolve } = resolver({ 'receiver.test': ['127.0.0.1'] });
      const res = await new Outbound(PRIVATE, resolve).request({ method: 'GET', url: `https://receiver.test:${secure.port}/sni`, tlsVerify: false });
      expect(res.status).toBe(204);
      expect(secure.seen.at(-1)).toMatchObject({ url: '/sni', servername: 'receiver.test' });
    });
  });
});
