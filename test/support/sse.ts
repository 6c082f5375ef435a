/**
 * A server-sent events client for tests: a real HTTP request to a listening server, the stream
 * read as it arrives and parsed into events, and waits for the next event that matches (no
 * timers: the test's own timeout bounds a wait).
 */
import http from 'node:http';

export interface SseEvent {
  /** The event's name (`message` when it has none), `comment` for a `:` line, `retry` for a retry field. */
  event: string;
  data: string;
}

export interface SseStream {
  status: number;
  headers: http.IncomingHttpHeaders;
  /** A refused stream's body (JSON). */
  body: string;
  events: SseEvent[];
  /** The first event from the current position on that matches; moves the position past it. */
  next(match: (e: SseEvent) => boolean, what?: string): Promise<SseEvent>;
  /** The first event since the stream opened that matches, whenever it came (the position does not move). */
  find(match: (e: SseEvent) => boolean, what?: string): Promise<SseEvent>;
  /** Resolves when the server ended the stream. */
  ended: Promise<void>;
  close(): void;
}

export const json = (e: SseEvent): Record<string, unknown> => JSON.parse(e.data) as Record<string, unknown>;

/** Opens `url` with these headers and resolves once the answer's headers (and, unless 200, its body) are in. */
export function openStream(url: string, headers: Record<string, string>): Promise<SseStream> {
  return new Promise((resolve, reject) => {
    const req = http.get(url, { headers: { Accept: 'text/event-stream', ...headers } }, (res) => {
      res.setEncoding('utf8');
      const events: SseEvent[] = [];
      let position = 0;
      let buffer = '';
      let waiting: (() => void)[] = [];
      let endedResolve!: () => void;
      const ended = new Promise<void>((r) => (endedResolve = r));
      const wake = () => {
        const w = waiting;
        waiting = [];
        for (const f of w) f();
      };
      const stream: SseStream = {
        status: res.statusCode ?? 0,
        headers: res.headers,
        body: '',
        events,
        ended,
        close: () => req.destroy(),
        async next(match, what = 'an event') {
          for (;;) {
            while (position < events.length) {
              const e = events[position++]!;
              if (match(e)) return e;
            }
            if (res.readableEnded || res.destroyed) throw new Error(`the stream ended before ${what}: ${JSON.stringify(events.slice(-5))}`);
            await new Promise<void>((r) => waiting.push(r));
          }
        },
        async find(match, what = 'an event') {
          for (let seen = 0; ;) {
            while (seen < events.length) {
              const e = events[seen++]!;
              if (match(e)) return e;
            }
            if (res.readableEnded || res.destroyed) throw new Error(`the stream ended before ${what}: ${JSON.stringify(events.slice(-5))}`);
            await new Promise<void>((r) => waiting.push(r));
          }
        },
      };
      const finish = () => {
        endedResolve();
        wake();
      };
      res.on('end', finish);
      res.on('close', finish);
      res.on('error', finish);
      if (stream.status !== 200) {
        res.on('data', (d: string) => (stream.body += d));
        res.on('end', () => resolve(stream));
        return;
      }
      res.on('data', (d: string) => {
        buffer += d;
        let at: number;
        while ((at = buffer.indexOf('\n\n')) >= 0) {
          const block = buffer.slice(0, at);
          buffer = buffer.slice(at + 2);
          let event = 'message';
          const data: string[] = [];
          for (const line of block.split('\n')) {
            if (line.startsWith(':')) events.push({ event: 'comment', data: line.slice(1).trim() });
            else if (line.startsWith('retry:')) events.push({ event: 'retry', data: line.slice(6).trim() });
            else if (line.startsWith('event:')) event = line.slice(6).trim();
            else if (line.startsWith('data:')) data.push(line.slice(5).replace(/^ /, ''));
          }
          if (data.length) events.push({ event, data: data.join('\n') });
        }
        wake();
      });
      resolve(stream);
    });
    req.on('error', reject);
  });
}
