/**
 * JSON of an upload (a JSON body, or a multipart `data` file), parsed without holding the event
 * loop: JSON.parse of a 50 MB upload took the main thread for about half a second, during which
 * no other request (not even `/healthz`) was answered.
 *
 * Up to INLINE_BYTES the text is parsed in place (about 10 ms at 1 MiB). Larger text goes to a
 * worker thread, which parses it, checks its depth and whether it can hold NUL at all, and sends
 * it back in pieces: the head (the body without its `data`), then `data` in batches, each one
 * when the main thread asks for it. Each is deserialized in its own turn of the event loop, so
 * the main thread spends a few milliseconds at a time on it. Parsing incrementally on the main thread was the
 * other way; a worker keeps the parser the engine's own (same errors, same speed) and moves the
 * whole cost off the thread that answers requests, at the price of one copy of the text and a
 * structured clone of the result.
 */
import { Worker } from 'node:worker_threads';
import { errorMessage, isRecord } from '../core/guards';
import { deeperThan, MAX_JSON_DEPTH } from '../http/middleware/body';
import { RESULT_BATCH } from './event-loop';

export const INLINE_BYTES = 1024 * 1024;

export type ParsedJson =
  | { ok: true; value: unknown; /** false: the text has no `\u0000` escape, so no string or key holds NUL. */ mayHoldNul: boolean }
  | { ok: false; reason: string };

const TOO_DEEP = `nested deeper than ${MAX_JSON_DEPTH} levels`;

// Plain JavaScript, evaluated as the worker's source: it runs the same way from dist/ and under
// ts-jest (a worker cannot load a .ts file). `deeperThan` is the same walk as src/http/middleware/body.ts.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { bytes, batch, maxDepth } = workerData;
function deeperThan(value, max) {
  if (!value || typeof value !== 'object') return false;
  const stack = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop();
    if (depth > max) return true;
    for (const child of Object.values(v)) if (child && typeof child === 'object') stack.push([child, depth + 1]);
  }
  return false;
}
const text = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8');
let value;
try {
  value = JSON.parse(text);
} catch (err) {
  parentPort.postMessage({ error: err.message });
  return;
}
if (deeperThan(value, maxDepth)) {
  parentPort.postMessage({ error: 'TOO_DEEP' });
  return;
}
const mayHoldNul = text.includes('\\\\u0000');
const data = Array.isArray(value) ? value : value && typeof value === 'object' && Array.isArray(value.data) ? value.data : null;
if (data === null) {
  parentPort.postMessage({ head: value, mayHoldNul, batches: 0 });
  return;
}
const head = Array.isArray(value) ? null : { ...value, data: [] };
const batches = Math.ceil(data.length / batch);
parentPort.postMessage({ head, mayHoldNul, batches, array: Array.isArray(value) });
// One batch per request from the main thread: messages already queued are all deserialized in
// one turn of its event loop, which would bring the whole stall back.
let next = 0;
parentPort.on('message', () => {
  parentPort.postMessage({ batch: data.slice(next * batch, (next + 1) * batch) });
  next += 1;
});
`;

export async function parseUploadJson(bytes: Buffer): Promise<ParsedJson> {
  if (bytes.length <= INLINE_BYTES) {
    let value: unknown;
    const text = bytes.toString('utf8');
    try {
      value = JSON.parse(text);
    } catch (err) {
      return { ok: false, reason: errorMessage(err) };
    }
    if (deeperThan(value, MAX_JSON_DEPTH)) return { ok: false, reason: TOO_DEEP };
    return { ok: true, value, mayHoldNul: text.includes('\\u0000') };
  }
  return parseInWorker(bytes);
}

interface Head {
  head: unknown;
  mayHoldNul: boolean;
  batches: number;
  array?: boolean;
}

function parseInWorker(bytes: Buffer): Promise<ParsedJson> {
  return new Promise((resolve, reject) => {
    // A buffer that has its memory to itself (a request body of this size always does) is
    // handed over, not copied: copying 50 MB into workerData took about 20 ms of this thread.
    // The caller's Buffer is empty afterwards; it has no further use for it. A view into a
    // larger shared allocation is copied, as workerData always is.
    const owned = bytes.byteOffset === 0 && bytes.byteLength === bytes.buffer.byteLength && bytes.buffer instanceof ArrayBuffer;
    const view = new Uint8Array(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const worker = new Worker(wrap(WORKER_SOURCE), {
      eval: true,
      workerData: { bytes: view, batch: RESULT_BATCH, maxDepth: MAX_JSON_DEPTH },
      transferList: owned && bytes.buffer instanceof ArrayBuffer ? [bytes.buffer] : [],
    });
    let head: Head | undefined;
    const data: unknown[] = [];
    let received = 0;
    let settled = false;
    const finish = (result: ParsedJson | Error) => {
      if (settled) return;
      settled = true;
      void worker.terminate();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const complete = () => {
      const h = head!;
      if (h.array) return finish({ ok: true, value: data, mayHoldNul: h.mayHoldNul });
      if (h.batches === 0) return finish({ ok: true, value: h.head, mayHoldNul: h.mayHoldNul });
      if (!isRecord(h.head)) return finish(new Error('the JSON worker sent a head that is not an object'));
      h.head.data = data;
      finish({ ok: true, value: h.head, mayHoldNul: h.mayHoldNul });
    };
    worker.on('message', (m: { error?: string; batch?: unknown[] } & Partial<Head>) => {
      if (m.error !== undefined) return finish({ ok: false, reason: m.error === 'TOO_DEEP' ? TOO_DEEP : m.error });
      if (m.batch) {
        for (const item of m.batch) data.push(item);
        received += 1;
      } else {
        head = { head: m.head, mayHoldNul: m.mayHoldNul === true, batches: m.batches ?? 0, array: m.array };
      }
      if (received === head!.batches) return complete();
      // The next batch in a later turn, so other requests get theirs in between.
      setImmediate(() => worker.postMessage('next'));
    });
    worker.on('error', (err) => finish(err));
    worker.on('exit', () => finish(new Error('the JSON worker stopped before it answered')));
  });
}

/** The worker's source as one function body, so its early `return`s are legal. */
function wrap(source: string): string {
  return `(function () {${source}})();`;
}
