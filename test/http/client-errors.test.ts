/**
 * Issue 13, item 7: what Node's HTTP parser refuses before any route sees it gets the service's
 * error shape (`{"message": ...}`, JSON, the right 4xx) and the connection closes. HTTP-level,
 * so the real server on loopback and raw sockets, once (the store plays no part).
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { loopbackConfig } from '../support/loopback-config';
import { startServer, type RunningServer } from '../../src/server';

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: string;
  closed: boolean;
}

describe('requests the HTTP parser refuses (real server on loopback)', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-client-errors-'));
  let running: RunningServer;
  let port: number;

  beforeAll(async () => {
    const config = loopbackConfig(dir, { HEADERS_TIMEOUT_MS: '500', REQUEST_TIMEOUT_MS: '500' });
    running = await startServer(config, new Writable({ write: (_c, _e, cb) => cb() }));
    port = Number(new URL(running.url).port);
  });

  afterAll(async () => {
    await running?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Sends `text` (after `before`, answered first, on the same connection) and reads until the server closes. */
  function exchange(text: string, before?: string): Promise<{ first?: string; answer: Answer }> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      let raw = '';
      let first: string | undefined;
      socket.setEncoding('latin1');
      socket.on('connect', () => socket.write(before ?? text));
      socket.on('data', (c: string) => {
        raw += c;
        if (before !== undefined && first === undefined && raw.includes('"status":"ok"}')) {
          first = raw;
          raw = '';
          socket.write(text);
        }
      });
      socket.on('error', () => undefined);
      socket.on('close', () => {
        const end = raw.indexOf('\r\n\r\n');
        if (end < 0) return reject(new Error(`no answer: ${JSON.stringify(raw)}`));
        const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
        const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
        resolve({ first, answer: { status: Number(statusLine!.split(' ')[1]), headers, body: raw.slice(end + 4), closed: true } });
      });
    });
  }

  function expectErrorShape(a: Answer, status: number, message: RegExp) {
    expect(a.status).toBe(status);
    expect(a.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(a.headers.connection).toBe('close');
    expect(Number(a.headers['content-length'])).toBe(Buffer.byteLength(a.body));
    const body = JSON.parse(a.body) as Record<string, unknown>;
    expect(Object.keys(body)).toEqual(['message']);
    expect(body.message).toMatch(message);
  }

  const json = '{"name":"x"}';

  it.each([
    ['a garbage request line', 'HELLO THERE\r\n\r\n', /^Malformed HTTP request: /],
    [
      'Content-Length and Transfer-Encoding together',
      `POST /v2/organizations HTTP/1.1\r\nHost: x\r\nContent-Length: ${json.length}\r\nTransfer-Encoding: chunked\r\n\r\n${json}`,
      /^Malformed HTTP request: Transfer-Encoding can't be present with Content-Length/,
    ],
    [
      'a duplicate Content-Length',
      `POST /v2/organizations HTTP/1.1\r\nHost: x\r\nContent-Length: ${json.length}\r\nContent-Length: 3\r\n\r\n${json}`,
      /^Malformed HTTP request: Duplicate Content-Length/,
    ],
    ['a header line with no colon', 'GET /healthz HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', /^Malformed HTTP request: /],
  ])('%s: 400 with a JSON message, connection closed', async (_name, text, message) => {
    const { answer } = await exchange(text);
    expectErrorShape(answer, 400, message);
  });

  it('headers over 16 KB: 431 with a JSON message, connection closed', async () => {
    const { answer } = await exchange(`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(17 * 1024)}\r\n\r\n`);
    expectErrorShape(answer, 431, /^Request header fields too large/);
  });

  it('a request line over 16 KB: 431 with a JSON message', async () => {
    const { answer } = await exchange(`GET /v2/organizations/${'s'.repeat(20_000)}/pipelines HTTP/1.1\r\nHost: x\r\n\r\n`);
    expectErrorShape(answer, 431, /^Request header fields too large/);
  });

  it('a malformed request after a good one on a keep-alive connection is answered too', async () => {
    const { first, answer } = await exchange('BREW /pot HTCPCP/1.0\r\n\r\n', 'GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(first).toMatch(/^HTTP\/1\.1 200 /);
    expectErrorShape(answer, 400, /^Malformed HTTP request: /);
  });

  it('headers never finished: 408 with a JSON message (HEADERS_TIMEOUT_MS)', async () => {
    const { answer } = await exchange('GET /healthz HTTP/1.1\r\nHost: x\r\n');
    expectErrorShape(answer, 408, /^Request timeout/);
  });

  it('the server serves normally afterwards', async () => {
    const res = await fetch(`${running.url}/healthz`);
    expect(res.status).toBe(200);
  });
});
