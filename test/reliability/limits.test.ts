/**
 * Issue 7, item 12: resource limits. Oversized bodies, deeply nested JSON, out-of-range paging,
 * over-long strings and slugs are clear 4xx answers, never a 500 or a crash (on both stores);
 * slow clients are timed out and their sockets closed, huge declared bodies are refused before
 * they are read, and memory stays bounded (the real server over loopback: HTTP-level, so once).
 */
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import fs from 'node:fs';
import { Writable } from 'node:stream';
import request from 'supertest';
import { loopbackConfig } from '../support/loopback-config';
import { startServer, type RunningServer } from '../../src/server';
import { auth, describeEachDatabase, type TestContext } from '../support/context';

const SHA = 'abcd0b72a1e580e90712cdd9eb26d3fb41cd09c8';
const json = { 'Content-Type': 'application/json' };

/** `depth` levels of `{"a": ...}` (objects) or `[...]` (arrays) around `inner`, as text. */
function nested(depth: number, kind: 'object' | 'array', inner = '1'): string {
  return kind === 'object' ? '{"a":'.repeat(depth) + inner + '}'.repeat(depth) : '['.repeat(depth) + inner + ']'.repeat(depth);
}

describeEachDatabase(
  'resource limits',
  (ctx) => {
    let c: TestContext;
    let org: { slug: string };
    let token: string;
    let base: string;
    let pipelineSlug: string;
    let suiteToken: string;

    beforeAll(async () => {
      c = ctx();
      ({ org, token } = await c.givenAdmin());
      base = `/v2/organizations/${org.slug}`;
      const p = await c
        .http()
        .post(`${base}/pipelines`)
        .set(auth(token))
        .send({ name: 'Limits', repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make\n' })
        .expect(201);
      pipelineSlug = p.body.slug;
      const s = await c
        .http()
        .post(`/v2/analytics/organizations/${org.slug}/suites`)
        .set(auth(token))
        .send({ name: 'Limits', show_api_token: true })
        .expect(201);
      suiteToken = s.body.api_token;
    });

    const pipelineCount = async () => Number((await c.services.db('pipelines').count({ n: '*' }))[0]!.n);

    describe('oversized bodies: 413 with a JSON message, nothing stored', () => {
      it('a JSON body over BODY_LIMIT_BYTES (1 MiB here)', async () => {
        const before = await pipelineCount();
        const res = await c
          .http()
          .post(`${base}/pipelines`)
          .set(auth(token))
          .send({ name: 'Big', repository: 'git@github.com:acme/app.git', configuration: 'steps:\n  - command: make\n', description: 'x'.repeat(1024 * 1024) });
        expect(res.status).toBe(413);
        expect(res.body).toEqual({ message: 'Request body is too large' });
        expect(await pipelineCount()).toBe(before);
      });

      it('an upload over UPLOAD_BODY_LIMIT_BYTES (256 KiB here), JSON or multipart', async () => {
        const data = Array.from({ length: 3000 }, (_, i) => ({ name: `t${i}`, result: 'passed', failure_reason: 'x'.repeat(100) }));
        const res = await c
          .http()
          .post('/v1/uploads')
          .set({ Authorization: `Token token="${suiteToken}"` })
          .send({ format: 'json', run_env: { key: 'big' }, data });
        expect(res.status).toBe(413);
        expect(res.body.message).toEqual(expect.any(String));
        const multipart = await c
          .http()
          .post('/v1/uploads')
          .set({ Authorization: `Token token="${suiteToken}"` })
          .field('format', 'json')
          .field('run_env[key]', 'big')
          .attach('data', Buffer.from(JSON.stringify(data)), { filename: 'results.json', contentType: 'application/json' });
        expect(multipart.status).toBe(413);
        expect(multipart.body.message).toEqual(expect.any(String));
      });

      it('a webhook delivery over the body limit', async () => {
        const res = await c
          .http()
          .post('/deliver/whatever')
          .set({ ...json, 'X-GitHub-Event': 'push' })
          .send(JSON.stringify({ ref: 'refs/heads/main', pad: 'x'.repeat(1024 * 1024) }));
        expect(res.status).toBe(413);
        expect(res.body).toEqual({ message: 'Request body is too large' });
      });
    });

    describe('deeply nested JSON: a 4xx, not a stack overflow', () => {
      const depths = [1000, 100_000];
      const places: [string, (deep: string) => { url: string; headers: Record<string, string>; body: string }][] = [
        ['the whole body (arrays)', () => ({ url: `${base}/pipelines`, headers: auth(token), body: nested(100_000, 'array') })],
        [
          'an unknown property of a pipeline',
          (deep) => ({
            url: `${base}/pipelines`,
            headers: auth(token),
            body: `{"name":"Deep","repository":"git@github.com:acme/app.git","configuration":"steps: []","zzz":${deep}}`,
          }),
        ],
        [
          'a visual step',
          (deep) => ({ url: `${base}/pipelines`, headers: auth(token), body: `{"name":"Deep","repository":"git@github.com:acme/app.git","steps":[${deep}]}` }),
        ],
        ['provider_settings', (deep) => ({ url: `${base}/pipelines/${pipelineSlug}`, headers: auth(token), body: `{"provider_settings":{"x":${deep}}}` })],
        [
          'a build body',
          (deep) => ({ url: `${base}/pipelines/${pipelineSlug}/builds`, headers: auth(token), body: `{"commit":"${SHA}","branch":"main","author":${deep}}` }),
        ],
        [
          'a test result history (kept as sent)',
          (deep) => ({
            url: '/v1/uploads',
            headers: { Authorization: `Token token="${suiteToken}"` },
            body: `{"run_env":{"key":"deep"},"data":[{"name":"t","result":"passed","history":{"children":[${deep}]}}]}`,
          }),
        ],
        [
          'a webhook delivery',
          (deep) => ({ url: '/deliver/whatever', headers: { 'X-GitHub-Event': 'push' }, body: `{"ref":"refs/heads/main","head_commit":${deep}}` }),
        ],
      ];
      for (const depth of depths) {
        it.each(places)(`%s, ${depth} levels`, async (_name, make) => {
          const { url, headers, body } = make(nested(depth, 'object'));
          const method = url.endsWith(pipelineSlug) ? 'patch' : 'post';
          const res = await c
            .http()
            [method](url)
            .set({ ...json, ...headers })
            .send(body);
          expect(res.status).toBeGreaterThanOrEqual(400);
          expect(res.status).toBeLessThan(500);
          expect(res.body.message).toEqual(expect.any(String));
        });
      }

      it('a multipart upload whose JSON file is nested 30,000 levels deep: 422 on data', async () => {
        const res = await c
          .http()
          .post('/v1/uploads')
          .set({ Authorization: `Token token="${suiteToken}"` })
          .field('format', 'json')
          .field('run_env[key]', 'deep-file')
          .attach('data', Buffer.from(`[{"name":"t","history":${nested(30_000, 'object')}}]`), { filename: 'r.json', contentType: 'application/json' });
        expect(res.status).toBe(422);
        expect(res.body.errors).toEqual([{ field: 'data', code: expect.stringMatching(/nested deeper/) }]);
        for (const text of ['null', '"x"', '42']) {
          const odd = await c
            .http()
            .post('/v1/uploads')
            .set({ Authorization: `Token token="${suiteToken}"` })
            .field('format', 'json')
            .field('run_env[key]', 'odd-file')
            .attach('data', Buffer.from(text), { filename: 'r.json', contentType: 'application/json' });
          expect(odd.status).toBe(422);
        }
      });

      it('NUL in an uploaded file (JSON, or a JUnit character reference) is a 422 on both stores, not a Postgres error', async () => {
        const json = await c
          .http()
          .post('/v1/uploads')
          .set({ Authorization: `Token token="${suiteToken}"` })
          .field('format', 'json')
          .field('run_env[key]', 'nul-file')
          .attach('data', Buffer.from('[{"name":"a\\u0000b","result":"passed"}]'), { filename: 'r.json', contentType: 'application/json' });
        expect(json.status).toBe(422);
        expect(json.body.errors).toEqual([{ field: 'data[0].name', code: expect.stringMatching(/NUL/) }]);
        const junit = await c
          .http()
          .post('/v1/uploads')
          .set({ Authorization: `Token token="${suiteToken}"` })
          .field('format', 'junit')
          .field('run_env[key]', 'nul-junit')
          .attach('data', Buffer.from('<testsuite><testcase classname="a" name="x&#0;y"/></testsuite>'), { filename: 'r.xml', contentType: 'application/xml' });
        expect(junit.status).toBeGreaterThanOrEqual(400);
        expect(junit.status).toBeLessThan(500);
      });

      it('nesting a real client sends (a few levels) still works', async () => {
        await c
          .http()
          .post(`${base}/pipelines/${pipelineSlug}/builds`)
          .set(auth(token))
          .send({ commit: SHA, branch: 'main', meta_data: { a: 'b' }, author: { name: 'A' } })
          .expect(201);
      });
    });

    describe('per_page and page out of range: 400 naming the parameter', () => {
      const lists = () => [
        `${base}/pipelines`,
        `${base}/builds`,
        '/v2/builds',
        `${base}/pipelines/${pipelineSlug}/builds`,
        '/v2/organizations',
        `/v2/analytics/organizations/${org.slug}/suites`,
      ];
      const bad = [
        'per_page=0',
        'per_page=101',
        'per_page=-1',
        'per_page=1000000000',
        'per_page=abc',
        'per_page=1.5',
        'page=-3',
        'page=1000001',
        'page=99999999999999999999',
        'page=x',
      ];
      it.each(bad)('%s', async (q) => {
        for (const url of lists()) {
          const res = await c.http().get(`${url}?${q}`).set(auth(token));
          expect({ url, status: res.status }).toEqual({ url, status: 400 });
          expect(res.body.message).toMatch(new RegExp(q.split('=')[0]!));
        }
      });
      // page=0 is page 1: pybuildkite sends it by default (docs/client-compatibility.md).
      it('the edges are accepted (per_page 1 and 100, page 0 and 1000000)', async () => {
        for (const url of lists()) {
          for (const q of ['per_page=1', 'per_page=100', 'page=0', 'page=1000000']) await c.http().get(`${url}?${q}`).set(auth(token)).expect(200);
        }
      });
    });

    describe('very long strings and slugs: 422, 400 or 404, never 500', () => {
      it('fields over their maxLength are a 422 naming the field', async () => {
        const cases: [string, Record<string, unknown>, string][] = [
          [`${base}/pipelines`, { name: 'x'.repeat(256), repository: 'git@github.com:acme/app.git', configuration: 'steps: []' }, 'name'],
          [`${base}/pipelines`, { name: 'ok', slug: 'x'.repeat(101), repository: 'git@github.com:acme/app.git', configuration: 'steps: []' }, 'slug'],
          [`${base}/pipelines`, { name: 'ok', repository: 'g'.repeat(1025), configuration: 'steps: []' }, 'repository'],
          [`${base}/pipelines/${pipelineSlug}/builds`, { commit: 'c'.repeat(256), branch: 'main' }, 'commit'],
          [`${base}/pipelines/${pipelineSlug}/builds`, { commit: SHA, branch: 'b'.repeat(300_000) }, 'branch'],
          [`/v2/analytics/organizations/${org.slug}/suites`, { name: 'n'.repeat(256) }, 'name'],
        ];
        for (const [url, body, field] of cases) {
          const res = await c.http().post(url).set(auth(token)).send(body);
          expect({ url, field, status: res.status }).toEqual({ url, field, status: 422 });
          expect(res.body.errors).toEqual(expect.arrayContaining([expect.objectContaining({ field })]));
        }
      });

      it('a slug over its maxLength in the path names nothing: 404', async () => {
        for (const n of [101, 1000, 8000]) {
          const long = 's'.repeat(n);
          const urls = [
            `${base}/pipelines/${long}`,
            `/v2/organizations/${long}/pipelines`,
            `/v2/analytics/organizations/${org.slug}/suites/${long}`,
            `${base}/pipelines/${pipelineSlug}/builds/${'9'.repeat(Math.min(n, 4000))}`,
          ];
          for (const url of urls) {
            const res = await c.http().get(url).set(auth(token));
            expect({ url: url.slice(0, 120), status: res.status, body: res.body }).toEqual({
              url: url.slice(0, 120),
              status: 404,
              body: { message: expect.stringMatching(/^No \w+ found$/) },
            });
          }
          const cancel = await c
            .http()
            .put(`${base}/pipelines/${pipelineSlug}/builds/${'9'.repeat(Math.min(n, 4000))}/cancel`)
            .set(auth(token));
          expect(cancel.status).toBe(404);
        }
      });

      it('a query filter over its maxLength is a 400', async () => {
        const res = await c
          .http()
          .get(`${base}/pipelines?name=${'n'.repeat(5000)}`)
          .set(auth(token));
        expect(res.status).toBe(400);
        expect(res.body.message).toMatch(/name/);
      });
    });

    it('a body sent to an operation that takes none is ignored, even when malformed or large', async () => {
      const archived = await c
        .http()
        .post(`${base}/pipelines/${pipelineSlug}/archive`)
        .set({ ...auth(token), ...json })
        .send('{not json');
      expect(archived.status).toBe(200);
      const unarchived = await c
        .http()
        .post(`${base}/pipelines/${pipelineSlug}/unarchive`)
        .set({ ...auth(token), ...json })
        .send(JSON.stringify({ pad: 'x'.repeat(2 * 1024 * 1024) }));
      expect(unarchived.status).toBe(200);
      const listed = await c
        .http()
        .get(`${base}/pipelines`)
        .set({ ...auth(token), ...json })
        .send(nested(100_000, 'array'));
      expect(listed.status).toBe(200);
    });
  },
  { uploadBodyLimitBytes: 256 * 1024 },
);

describe('the server process: slow clients, huge declared bodies, bounded memory (HTTP level, SQLite)', () => {
  let running: RunningServer;
  let port: number;
  let token: string;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-limits-'));

  beforeAll(async () => {
    const config = loopbackConfig(dir, { DATABASE_URL: path.join(dir, 'db.sqlite3'), HEADERS_TIMEOUT_MS: '1000', REQUEST_TIMEOUT_MS: '1500' });
    let printed = '';
    const out = new Writable({
      write(chunk, _enc, cb) {
        printed += String(chunk);
        cb();
      },
    });
    running = await startServer(config, out);
    port = Number(new URL(running.url).port);
    token = /^\s+(ey\S+)$/m.exec(printed)![1]!;
  });

  afterAll(async () => {
    await running?.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Opens a socket and feeds it `text` one byte every `everyMs`; resolves with what the server said and how long until it closed. */
  function trickle(text: string, everyMs: number, maxMs: number): Promise<{ closedAfterMs: number | null; answer: string }> {
    return new Promise((resolve) => {
      const started = Date.now();
      const socket = net.connect(port, '127.0.0.1');
      let answer = '';
      let i = 0;
      const timer = setInterval(() => {
        if (i < text.length && !socket.destroyed) socket.write(text[i++]!);
      }, everyMs);
      const giveUp = setTimeout(() => {
        clearInterval(timer);
        socket.destroy();
        resolve({ closedAfterMs: null, answer });
      }, maxMs);
      socket.on('data', (d) => (answer += String(d)));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(timer);
        clearTimeout(giveUp);
        resolve({ closedAfterMs: Date.now() - started, answer });
      });
    });
  }

  it('request headers sent byte by byte, never finished: the server answers 408 and closes the socket (HEADERS_TIMEOUT_MS)', async () => {
    const slow = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(500)}`;
    // Closed by the server (not by the 8 s give-up) with a 408; how soon: `npm run bench:timeouts`.
    const { closedAfterMs, answer } = await trickle(slow, 50, 8000);
    expect(closedAfterMs).not.toBeNull();
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
    // Meanwhile and afterwards, others are served.
    await request(running.url).get('/healthz').expect(200);
  });

  it('50 such clients at once are all cut off, and others are served meanwhile', async () => {
    const slow = `GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ${'a'.repeat(500)}`;
    const sockets = Array.from({ length: 50 }, () => trickle(slow, 50, 8000));
    for (let i = 0; i < 5; i++) await request(running.url).get('/healthz').expect(200);
    const results = await Promise.all(sockets);
    expect(results.filter((r) => r.closedAfterMs === null)).toEqual([]);
    expect(results.every((r) => r.answer.startsWith('HTTP/1.1 408'))).toBe(true);
  });

  it('a body sent byte by byte past REQUEST_TIMEOUT_MS: answered 408 and closed', async () => {
    const head = `POST /v2/organizations/default/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    socket.write(head);
    // The server closes the socket (the test would time out otherwise); how soon: `npm run bench:timeouts`.
    const answer = await new Promise<string>((resolve) => {
      let answer = '';
      const timer = setInterval(() => !socket.destroyed && socket.write('{'), 100);
      socket.on('data', (d) => (answer += String(d)));
      socket.on('error', () => undefined);
      socket.on('close', () => {
        clearInterval(timer);
        resolve(answer);
      });
    });
    expect(answer).toMatch(/^HTTP\/1\.1 408/);
  });

  it('a declared Content-Length of 1 GiB is refused with 413 before the body is read', async () => {
    const socket = net.connect(port, '127.0.0.1');
    await new Promise((r) => socket.once('connect', r));
    // Only 8 bytes of the declared 1 GiB are ever sent: the answer can only come before the body.
    socket.write(
      `POST /v2/organizations/default/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nContent-Length: ${2 ** 30}\r\n\r\n{"name":`,
    );
    const answer = await new Promise<string>((resolve) => {
      let text = '';
      socket.on('data', (d) => {
        text += String(d);
        if (text.includes('\r\n\r\n') && text.includes('}')) resolve(text);
      });
      socket.on('close', () => resolve(text));
    });
    socket.destroy();
    expect(answer).toMatch(/^HTTP\/1\.1 413/);
    expect(answer).toContain('{"message":"Request body is too large"}');
  });

  it('a request line or headers over 16 KiB: 431 and closed, the server lives on', async () => {
    const res = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => socket.write(`GET /v2/organizations/${'s'.repeat(20_000)}/pipelines HTTP/1.1\r\nHost: x\r\n\r\n`));
      let text = '';
      socket.on('data', (d) => (text += String(d)));
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(text));
    });
    expect(res).toMatch(/^HTTP\/1\.1 431/);
    await request(running.url).get('/healthz').expect(200);
  });

  it('memory stays bounded under a stream of oversized, deeply nested and chunked bodies', async () => {
    const big = JSON.stringify({ name: 'x'.repeat(3 * 1024 * 1024) });
    const deep = nested(100_000, 'object');
    const before = process.memoryUsage().rss;
    for (let i = 0; i < 20; i++) {
      const r1 = await request(running.url)
        .post('/v2/organizations/default/pipelines')
        .set({ ...auth(token), ...json })
        .send(big);
      expect(r1.status).toBe(413);
      const r2 = await request(running.url)
        .post('/v2/organizations/default/pipelines')
        .set({ ...auth(token), ...json })
        .send(deep);
      expect(r2.status).toBe(400);
    }
    // Chunked (no Content-Length): counted as it arrives, cut at the limit.
    const chunked = await new Promise<string>((resolve) => {
      const socket = net.connect(port, '127.0.0.1', () => {
        socket.write(
          `POST /v2/organizations/default/pipelines HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${token}\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n`,
        );
        const chunk = 'a'.repeat(64 * 1024);
        for (let i = 0; i < 40 && !socket.destroyed; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        // The parser answers once the request is over (an endless one meets REQUEST_TIMEOUT_MS).
        if (!socket.destroyed) socket.write('0\r\n\r\n');
      });
      let text = '';
      socket.on('data', (d) => {
        text += String(d);
        if (text.includes('Request body is too large')) {
          socket.destroy();
          resolve(text);
        }
      });
      socket.on('error', () => undefined);
      socket.on('close', () => resolve(text));
    });
    expect(chunked).toMatch(/^HTTP\/1\.1 413/);
    const grownMiB = (process.memoryUsage().rss - before) / 2 ** 20;
    // 20 x 3 MiB refused bodies and 20 x 1.2 MB of nesting went through; none of it is kept.
    expect(grownMiB).toBeLessThan(150);
    await request(running.url).get('/healthz').expect(200);
  });
});
