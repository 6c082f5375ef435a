/**
 * An independent validator in front of a live Windsock: Stoplight's Prism (`@stoplight/prism-cli`,
 * from npm) in proxy mode, with one of the documents the server serves. Every request goes on to
 * Windsock unchanged; Prism checks each answer against the document with its own validator (not
 * the project's express-openapi-validator) and logs what does not match as
 * `Violation: response...`. `responseViolations()` is what it has logged so far: complete once
 * `close()` has resolved (a line can still be on its way while the client reads the answer).
 *
 * Requests that are meant to be refused (a 422 scenario) are checked too, so request violations
 * are kept apart (`requestViolations()`): a test asserts on the ones it did not mean.
 *
 * Prism reads every request body that is not JSON as UTF-8 text and forwards that text, which
 * breaks a binary body (the agent's gzip-compressed log chunks). Paths matching `direct` are
 * therefore sent straight to Windsock by a small front on loopback; everything else goes
 * through Prism.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';

const PRISM = path.resolve(__dirname, '..', '..', 'node_modules', '.bin', 'prism');

export interface ValidatingProxy {
  /** The proxy's base URL: send requests here instead of to Windsock. */
  url: string;
  responseViolations(): string[];
  requestViolations(): string[];
  close(): Promise<void>;
}

/** A free port on 127.0.0.1 (Prism takes a port number, not 0). */
async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Prism's proxy for `document` (a file) in front of `upstream`; resolves once it listens. */
export async function validatingProxy(document: string, upstream: string, options: { direct?: RegExp } = {}): Promise<ValidatingProxy> {
  const port = await freePort();
  const child: ChildProcess = spawn(PRISM, ['proxy', document, upstream, '-h', '127.0.0.1', '-p', String(port)], {
    env: { PATH: process.env.PATH ?? '', HOME: process.env.HOME ?? '/tmp', NO_COLOR: '1', FORCE_COLOR: '0' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const response: string[] = [];
  const request: string[] = [];
  let output = '';
  let pending = '';
  const listening = new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`prism did not start in 120 s:\n${output.slice(-2000)}`)), 120_000);
    const read = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      output = (output + text).slice(-20_000);
      pending += text;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        const violation = /Violation: (.*)$/.exec(line);
        if (violation) (violation[1]!.startsWith('response') ? response : request).push(violation[1]!.trim());
        if (line.includes('Prism is listening')) {
          clearTimeout(timer);
          resolve();
        }
      }
    };
    child.stdout!.on('data', read);
    child.stderr!.on('data', read);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`prism exited (${code}) before listening:\n${output.slice(-2000)}`));
    });
  });
  try {
    await listening;
  } catch (err) {
    child.kill('SIGKILL');
    throw err;
  }
  const prism = `http://127.0.0.1:${port}`;
  const front = options.direct ? await frontOf(prism, upstream, options.direct) : undefined;
  return {
    url: front?.url ?? prism,
    responseViolations: () => [...response],
    requestViolations: () => [...request],
    /** Stops Prism and waits for its output to end, so that every violation it logged is read. */
    close: async () => {
      await front?.close();
      if (child.exitCode !== null || child.signalCode !== null) return;
      const closed = new Promise((resolve) => child.once('close', resolve));
      child.kill('SIGTERM');
      await closed;
    },
  };
}

/** A loopback front: requests whose path matches `direct` go to `upstream`, the rest to `prism`. */
async function frontOf(prism: string, upstream: string, direct: RegExp): Promise<{ url: string; close(): Promise<void> }> {
  const server = http.createServer((req, res) => {
    const target = new URL(req.url ?? '/', direct.test(new URL(req.url ?? '/', 'http://x').pathname) ? upstream : prism);
    const forward = http.request(target, { method: req.method, headers: { ...req.headers, host: target.host } }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      answer.pipe(res);
    });
    forward.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(String(err));
    });
    req.pipe(forward);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: async () => {
      const closed = new Promise((resolve) => server.close(resolve));
      server.closeAllConnections();
      await closed;
    },
  };
}
