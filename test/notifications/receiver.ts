/**
 * A notification receiver on loopback for tests: records every request (headers, parsed body)
 * and answers what the test says (`answer`, by default 200), optionally after a delay or once
 * the test lets it (`until`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Received {
  method: string;
  path: string;
  headers: http.IncomingHttpHeaders;
  raw: string;
  body: Record<string, unknown>;
}

export interface Receiver {
  url: string;
  received: Received[];
  /** The status (and delay, or what to wait for) of the next answers: called per request with its index. */
  answer: (i: number, r: Received) => { status: number; delayMs?: number; until?: Promise<unknown>; body?: string };
  events(): string[];
  close(): Promise<void>;
}

export async function startReceiver(path = '/hook'): Promise<Receiver> {
  const received: Received[] = [];
  const r: Receiver = {
    url: '',
    received,
    answer: () => ({ status: 200 }),
    events: () => received.map((x) => String(x.headers['x-buildkite-event'] ?? x.body.event ?? '')),
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let body: Record<string, unknown> = {};
      try {
        body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
      } catch {
        body = { unparsed: raw };
      }
      const entry = { method: req.method ?? '', path: req.url ?? '', headers: req.headers, raw, body };
      const i = received.length;
      received.push(entry);
      const a = r.answer(i, entry);
      const send = () => {
        if (!res.destroyed) res.writeHead(a.status, { 'Content-Type': 'text/plain' }).end(a.body ?? `answer ${a.status}`);
      };
      if (a.until) void a.until.then(send, send);
      else if (a.delayMs) setTimeout(send, a.delayMs);
      else send();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  r.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return r;
}

/** For a suite whose tests each want a receiver of their own: started before each test, closed after it. */
export function receiverForEachTest(): () => Receiver {
  let receiver: Receiver | undefined;
  beforeEach(async () => {
    receiver = await startReceiver();
  });
  afterEach(async () => {
    await receiver?.close();
    receiver = undefined;
  });
  return () => {
    if (!receiver) throw new Error('the receiver is there during a test only');
    return receiver;
  };
}
