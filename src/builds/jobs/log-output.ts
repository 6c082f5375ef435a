/**
 * Writes a job's log to the response as its pages come from the store, in the JSON form
 * (`{url, content, size, header_times}`) or as text, waiting for the socket to drain before
 * reading on: a reader holds a page of chunks at a time, never the whole log, and the event
 * loop serves other requests between pages. Stops reading when the client goes away.
 */
import type { Response } from 'express';
import type { LogChunk } from './model';
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
