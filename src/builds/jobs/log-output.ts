/**
 * Writes a job's log to the response as its pages come from the store, in the JSON form
 * (`{url, content, size, header_times}`) or as text, waiting for the socket to drain before
 * reading on: a reader holds a page of chunks at a time, never the whole log, and the event
 * loop serves other requests between pages. Stops reading when the client goes away. Also the
 * REST forms that need the log whole: HTML and a suffix range.
 */
import type { Response } from 'express';
import type { LogChunk } from './model';
import { renderLog } from './log-html';
import { MAX_HEADER_TIMES } from './serialize';

/**
 * Writes `data`; resolves when the socket can take more (false: the client went away), and
 * never before the event loop has had a turn: a write the socket takes at once would otherwise
 * let one reader run on in microtasks while other requests wait.
 */
function write(res: Response, data: string): Promise<boolean> {
  if (res.destroyed) return Promise.resolve(false);
  if (res.write(data)) return new Promise((resolve) => setImmediate(() => resolve(!res.destroyed)));
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve(!res.destroyed);
    };
    res.on('drain', done);
    res.on('close', done);
  });
}

/**
 * Runs `body` over a response whose status and headers are already sent: a failure there can
 * only cut the response short (the client sees a truncated body, never a 200 that looks whole).
 * The error goes on to the error handler, which logs it (and, the response being destroyed,
 * sends nothing more).
 */
async function streaming(res: Response, body: () => Promise<void>): Promise<void> {
  res.status(200);
  try {
    await body();
    res.end();
  } catch (e) {
    if (res.headersSent) res.destroy();
    throw e;
  }
}

/**
 * How much of a chunk is escaped and written at once: a 1 MiB chunk of coloured output takes
 * tens of milliseconds to escape as JSON, time in which nothing else is served.
 */
const SLICE_CHARS = 64 * 1024;

/** `text` in slices of at most SLICE_CHARS, a surrogate pair never split between two. */
function* slices(text: string): Generator<string> {
  for (let i = 0; i < text.length;) {
    let end = Math.min(text.length, i + SLICE_CHARS);
    const last = text.charCodeAt(end - 1);
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
    yield text.slice(i, end);
    i = end;
  }
}

/** A high surrogate ending a chunk belongs with the next one: encoded alone it would be U+FFFD. */
function splitTrailingSurrogate(text: string): [string, string] {
  const last = text.charCodeAt(text.length - 1);
  return last >= 0xd800 && last <= 0xdbff ? [text.slice(0, -1), text.slice(-1)] : [text, ''];
}

export function sendLogText(res: Response, pages: AsyncIterable<LogChunk[]>): Promise<void> {
  res.type('text/plain; charset=utf-8');
  return streaming(res, async () => {
    let carry = '';
    for await (const page of pages) {
      for (const c of page) {
        const [text, rest] = splitTrailingSurrogate(carry + c.content);
        carry = rest;
        for (const slice of slices(text)) if (!(await write(res, slice))) return;
      }
    }
    if (carry) await write(res, carry);
  });
}

export function sendLogJson(res: Response, url: string, pages: AsyncIterable<LogChunk[]>): Promise<void> {
  res.type('application/json; charset=utf-8');
  return streaming(res, async () => {
    let size = 0;
    const headerTimes: number[] = [];
    if (!(await write(res, `{"url":${JSON.stringify(url)},"content":"`))) return;
    for await (const page of pages) {
      for (const c of page) {
        size += c.size;
        for (const t of c.headerTimes) if (headerTimes.length < MAX_HEADER_TIMES) headerTimes.push(t);
        // Escaped a slice at a time (the concatenation parses back to the same text).
        for (const slice of slices(c.content)) if (!(await write(res, JSON.stringify(slice).slice(1, -1)))) return;
      }
    }
    await write(res, `","size":${size},"header_times":${JSON.stringify(headerTimes)}}`);
  });
}

/** The whole log as its stored bytes (the HTML rendering and a range need it at once). */
async function logBytes(pages: AsyncIterable<LogChunk[]>): Promise<Buffer> {
  const parts: Buffer[] = [];
  for await (const page of pages) for (const c of page) parts.push(Buffer.from(c.content, 'utf8'));
  return Buffer.concat(parts);
}

/**
 * The log rendered as HTML (./log-html.ts, the renderer of the web pages): the log is untrusted,
 * and the renderer escapes every character of it. Rendered whole, so not streamed.
 */
export async function sendLogHtml(res: Response, pages: AsyncIterable<LogChunk[]>): Promise<void> {
  const html = renderLog((await logBytes(pages)).toString('utf8'));
  res.status(200).type('text/html; charset=utf-8').send(html);
}

/**
 * The suffix length of `Range: bytes=-N`, or the reason the range is refused (400): as the docs
 * say, only a suffix range of at least one byte, and only with `Accept: text/plain`.
 */
export function suffixRange(range: string, acceptsText: boolean): { bytes: number } | { refused: string } {
  if (!acceptsText) return { refused: 'Range requests are only supported with Accept: text/plain' };
  const m = /^bytes=-(\d{1,15})$/.exec(range.trim());
  if (!m) return { refused: 'Only suffix byte ranges (bytes=-N) are supported' };
  const bytes = Number(m[1]);
  if (bytes === 0) return { refused: 'A suffix byte range must ask for at least one byte (bytes=-0)' };
  return { bytes };
}

/** The last `bytes` bytes of the log, raw (206 with `Content-Range`); an empty log is a 416. */
export async function sendLogTail(res: Response, pages: AsyncIterable<LogChunk[]>, bytes: number): Promise<void> {
  const log = await logBytes(pages);
  res.setHeader('Accept-Ranges', 'bytes');
  if (log.length === 0) {
    res.setHeader('Content-Range', 'bytes */0');
    res.status(416).json({ message: 'The job log is empty: no range of it can be returned' });
    return;
  }
  const start = Math.max(0, log.length - bytes);
  res.setHeader('Content-Range', `bytes ${start}-${log.length - 1}/${log.length}`);
  res.status(206).type('text/plain; charset=utf-8').send(log.subarray(start));
}

/**
 * HEAD on a log: its size without its content, as the docs have it: `Content-Length` is the
 * total of the raw stored bytes (whatever the format asked for), with `Accept-Ranges: bytes`.
 */
export function sendLogHead(res: Response, format: string, size: number): void {
  res.setHeader('Accept-Ranges', 'bytes');
  res.type(`${format}; charset=utf-8`);
  res.setHeader('Content-Length', String(size));
  res.status(200).end();
}
