/**
 * Issue 7, item 9: graceful shutdown. SIGTERM reaches the service while clients are still
 * sending request bodies and other clients hold idle keep-alive sockets: readiness turns 503 at
 * once, the in-flight requests complete (and their builds are stored), idle sockets are closed,
 * new connections are refused once the listener closes, and the process exits 0 before
 * SHUTDOWN_TIMEOUT_MS. A client that never finishes its request is cut off at the deadline.
 */
import http from 'node:http';
import net from 'node:net';
import { describeEachDatabase } from '../support/context';
import { api, freshStore, PIPELINE, sleep, startService, stopService, type Service, type Store } from './support';

interface RawResponse {
  status: number;
  head: string;
  body: string;
}

/** A socket of our own, so we know exactly which connection a request travels on. */
class RawClient {
  readonly socket: net.Socket;
  closedAt: number | undefined;
  private buffer = '';
  private waiting: (() => void) | undefined;

  constructor(url: string) {
    const u = new URL(url);
    this.socket = net.connect(Number(u.port), u.hostname);
    this.socket.setEncoding('utf8');
    this.socket.on('data', (c: string) => {
      this.buffer += c;
      this.waiting?.();
    });
    this.socket.on('close', () => {
      this.closedAt = Date.now();
      this.waiting?.();
    });
    this.socket.on('error', () => undefined);
  }

  async get(path: string): Promise<RawResponse> {
    this.socket.write(`GET ${path} HTTP/1.1\r\nHost: windsock\r\nConnection: keep-alive\r\n\r\n`);
    return this.read(path);
  }

  send(text: string): void {
    this.socket.write(text);
  }

  /** The next response on this socket. */
  async read(what: string): Promise<RawResponse> {
    for (;;) {
      const end = this.buffer.indexOf('\r\n\r\n');
      if (end >= 0) {
        const head = this.buffer.slice(0, end);
        const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
        if (this.buffer.length >= end + 4 + length) {
          const body = this.buffer.slice(end + 4, end + 4 + length);
          this.buffer = this.buffer.slice(end + 4 + length);
          return { status: Number(head.split(' ')[1]), head, body };
        }
      }
      if (this.closedAt !== undefined) throw new Error(`socket closed before a response to ${what}`);
      await new Promise<void>((resolve) => (this.waiting = resolve));
    }
  }

  async closed(): Promise<number> {
    while (this.closedAt === undefined) await new Promise<void>((resolve) => (this.waiting = resolve));
    return this.closedAt;
  }
}

/** A POST whose body is sent in two parts: the request is in flight until `finish()`. */
function slowPost(url: string, path: string, token: string, body: unknown) {
  const data = Buffer.from(JSON.stringify(body));
  const u = new URL(url);
  const req = http.request({
    host: u.hostname,
    port: u.port,
    method: 'POST',
    path,
    agent: false,
    headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json', 'Content-Length': data.length },
  });
  const response = new Promise<{ status: number; body: Record<string, unknown> | string }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => {
        let parsed: Record<string, unknown> | string = text;
        try {
          parsed = JSON.parse(text) as Record<string, unknown>;
        } catch {
          // keep the text
        }
        resolve({ status: res.statusCode!, body: parsed });
      });
    });
    req.on('error', reject);
  });
  req.write(data.subarray(0, 10));
  return { response, finish: () => req.end(data.subarray(10)) };
}

describeEachDatabase('graceful shutdown', null, (_get, kind) => {
  let store: Store;
  let service: Service | undefined;

  beforeEach(async () => {
    store = await freshStore(kind);
  });
  afterEach(async () => {
    await stopService(service);
    await store.drop();
  });

  it('finishes in-flight requests, turns readiness 503, closes idle keep-alive sockets and exits 0 before the deadline', async () => {
    // The deadline far away: exiting at all shows it was not needed. The delay long enough for
    // the checks made during it.
    const DELAY = 2000;
    const TIMEOUT = 600_000;
    service = await startService({ ...store.env, SHUTDOWN_DELAY_MS: String(DELAY), SHUTDOWN_TIMEOUT_MS: String(TIMEOUT) }, { expectToken: true });
    const { url, token } = service as Required<Service>;
    const pipeline = await api(url, token, 'POST', '/v2/organizations/default/pipelines', PIPELINE);
    expect(pipeline.status).toBe(201);
    const builds = `/v2/organizations/default/pipelines/${(pipeline.body as { slug: string }).slug}/builds`;

    const idle = [new RawClient(url), new RawClient(url)];
    for (const c of idle) expect((await c.get('/healthz')).status).toBe(200);
    const slow = [0, 1, 2].map((i) => slowPost(url, builds, token, { commit: 'HEAD', branch: 'main', message: `in flight ${i}` }));
    // One more in flight on a raw socket, to pipeline a second request behind it during the delay.
    const pipelining = new RawClient(url);
    const rawPost = (message: string) => {
      const body = JSON.stringify({ commit: 'HEAD', branch: 'main', message });
      return `POST ${builds} HTTP/1.1\r\nHost: windsock\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    };
    const inFlightRaw = rawPost('in flight raw');
    pipelining.send(inFlightRaw.slice(0, -5));
    await sleep(100); // the slow requests' headers have arrived

    service.proc.kill('SIGTERM');
    await sleep(100);

    // During the delay: still serving, readiness 503, and every response closes its connection.
    const ready = await fetch(`${url}/readyz`);
    expect(ready.status).toBe(503);
    expect(ready.headers.get('retry-after')).toBe('5');
    expect(ready.headers.get('connection')).toBe('close');
    const onIdle = await idle[0]!.get('/readyz');
    expect(onIdle.status).toBe(503);
    expect(onIdle.head).toMatch(/^connection: close$/im);
    expect((await api(url, token, 'GET', builds)).status).toBe(200);
    // A request pipelined behind one in flight is not processed: the one ahead is answered with
    // Connection: close and the connection closes before this one could be answered.
    pipelining.send(inFlightRaw.slice(-5) + rawPost('pipelined during the delay'));
    const ahead = await pipelining.read('the request in flight');
    expect(ahead.status).toBe(201);
    expect(ahead.head).toMatch(/^connection: close$/im);
    await expect(pipelining.read('the pipelined request')).rejects.toThrow(/socket closed before a response/);
    await idle[0]!.closed();
    expect(idle[1]!.closedAt).toBeUndefined();

    // After the delay the listener is closed and the idle keep-alive socket with it.
    await idle[1]!.closed();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();
    expect(service.proc.exitCode).toBeNull();

    // The in-flight requests finish their bodies after the listener closed, and complete.
    for (const s of slow) s.finish();
    const answers = await Promise.all(slow.map((s) => s.response));
    for (const a of answers) expect(a.status).toBe(201);

    expect(await service.exited).toEqual({ code: 0, signal: null });

    // Restarted on the same database: the builds answered 201 are there, as answered (their
    // links name the new port), and nothing of the request that was never answered.
    const before = service.url;
    service = await startService(store.env);
    const all = await api(service.url, token, 'GET', builds);
    expect((all.body as { message: string }[]).map((b) => b.message).sort()).toEqual(['in flight 0', 'in flight 1', 'in flight 2', 'in flight raw']);
    for (const a of answers) {
      const b = a.body as { number: number };
      const got = await api(service.url, token, 'GET', `${builds}/${b.number}`);
      expect(got.status).toBe(200);
      const answered = JSON.parse(JSON.stringify(b).replaceAll(before, service.url)) as object;
      expect({ ...(got.body as object), pipeline: undefined }).toEqual({ ...answered, pipeline: undefined });
    }
    await stopService(service);
  });

  it('answers a request in flight at SIGTERM with Connection: close, serves nothing more on its socket, closes idle sockets at once and exits without waiting for keep-alive', async () => {
    // Keep-alive and the shutdown deadline far away: exiting at all shows no socket waited for either.
    const FAR = '600000';
    service = await startService({ ...store.env, KEEP_ALIVE_TIMEOUT_MS: FAR, SHUTDOWN_TIMEOUT_MS: FAR }, { expectToken: true });
    const { url, token } = service as Required<Service>;
    const pipeline = await api(url, token, 'POST', '/v2/organizations/default/pipelines', PIPELINE);
    expect(pipeline.status).toBe(201);
    const builds = `/v2/organizations/default/pipelines/${(pipeline.body as { slug: string }).slug}/builds`;
    const post = (message: string) => {
      const body = JSON.stringify({ commit: 'HEAD', branch: 'main', message });
      const head = `POST ${builds} HTTP/1.1\r\nHost: windsock\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n`;
      return { head, body };
    };

    // Three kept-alive sockets, each already answered once: one with a create-build request in
    // flight (headers read, body still arriving), one idle, one with the next request's headers
    // half sent.
    const inFlight = new RawClient(url);
    const idle = new RawClient(url);
    const halfSent = new RawClient(url);
    for (const c of [inFlight, idle, halfSent]) expect((await c.get('/healthz')).head).not.toMatch(/^connection: close$/im);
    const first = post('in flight at SIGTERM');
    inFlight.send(first.head + first.body.slice(0, 10));
    const late = post('headers half sent at SIGTERM');
    halfSent.send(late.head.slice(0, 30));
    await sleep(200); // the server has read what was sent

    service.proc.kill('SIGTERM');
    // The idle socket is closed at once (the in-flight request is still waiting for its body).
    await idle.closed();
    expect(inFlight.closedAt).toBeUndefined();
    expect(service.proc.exitCode).toBeNull();
    await expect(fetch(`${url}/healthz`)).rejects.toThrow();

    // The half-sent request completes after the listener closed: refused, not processed.
    halfSent.send(late.head.slice(30) + late.body);
    const refused = await halfSent.read('the request completed after the close');
    expect(refused.status).toBe(503);
    expect(refused.head).toMatch(/^connection: close$/im);
    expect(refused.head).toMatch(/^retry-after: 5$/im);
    expect(JSON.parse(refused.body)).toEqual({ message: expect.stringMatching(/^Shutting down/) });
    await halfSent.closed();

    // The in-flight request completes with Connection: close; a second request sent right behind
    // it on the same socket is never answered: the connection closes after the first.
    const second = post('sent on the same socket after SIGTERM');
    inFlight.send(first.body.slice(10) + second.head + second.body);
    const answered = await inFlight.read('the request in flight');
    expect(answered.status).toBe(201);
    expect(answered.head).toMatch(/^connection: close$/im);
    await expect(inFlight.read('the second request')).rejects.toThrow(/socket closed before a response/);

    expect(await service.exited).toEqual({ code: 0, signal: null });
    expect(service.output()).not.toMatch(/"level":50/);

    // Only the build answered 201 was written.
    service = await startService(store.env);
    const list = await api(service.url, token, 'GET', builds);
    expect(list.status).toBe(200);
    expect((list.body as { number: number; message: string }[]).map((b) => [b.number, b.message])).toEqual([
      [(JSON.parse(answered.body) as { number: number }).number, 'in flight at SIGTERM'],
    ]);
    await stopService(service);
  });

  it('cuts off a request still unfinished at SHUTDOWN_TIMEOUT_MS and still exits 0', async () => {
    // Nothing but the deadline can end the stalled request (the request timeout is an hour away).
    service = await startService({ ...store.env, SHUTDOWN_TIMEOUT_MS: '3000', REQUEST_TIMEOUT_MS: '3600000' }, { expectToken: true });
    const { url, token } = service as Required<Service>;
    const pipeline = await api(url, token, 'POST', '/v2/organizations/default/pipelines', PIPELINE);
    const builds = `/v2/organizations/default/pipelines/${(pipeline.body as { slug: string }).slug}/builds`;
    const finishing = slowPost(url, builds, token, { commit: 'HEAD', branch: 'main', message: 'finishes' });
    const stalled = slowPost(url, builds, token, { commit: 'HEAD', branch: 'main', message: 'never finishes' });
    await sleep(100);

    let stalledSettled = false;
    stalled.response.then(
      () => (stalledSettled = true),
      () => (stalledSettled = true),
    );
    service.proc.kill('SIGTERM');
    await sleep(300);
    finishing.finish();
    expect((await finishing.response).status).toBe(201);
    // Before the deadline the stalled request is waited for.
    expect(stalledSettled).toBe(false);
    expect(service.proc.exitCode).toBeNull();
    await expect(stalled.response).rejects.toThrow(/socket hang up|ECONNRESET/);
    expect(await service.exited).toEqual({ code: 0, signal: null });
  });
});
