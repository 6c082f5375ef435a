/**
 * The build page's live stream: `GET /:org/:pipeline/builds/:number/events`, server-sent events
 * that carry the build's, its jobs' and their logs' changes to the page (the client is
 * src/web/assets; the page never reloads for them).
 *
 * Signed in and guarded exactly as the page's data routes are (`getBuild`). On connect the stream
 * sends the build, the number of its jobs and every job once, so a reconnect is never stale;
 * then, when the change feed (src/live/changes.ts) says the build changed in this or another
 * instance, it reads the build from the database (state through the database, not the event)
 * and sends what differs from what it sent before:
 *
 * - `build` `{"id","state","blocked","started_at","finished_at","badge"}` (src/web/build-state.ts,
 *   as the page's fallback poll, `/state`, answers them)
 * - `job` `{"id","state","started_at","finished_at","exit_status","agent_name","badge"}`
 * - `jobs` `{"count"}`: the set of jobs changed (an upload, a retry): the page reads its list again
 * - `log` `{"job_id","size"}`: the job's log grew to `size` bytes: the page fetches the new bytes
 *
 * Bursts are coalesced: at most one read of the build per `coalesceMs` per stream, and log
 * changes only read the sizes of the jobs whose logs grew. A comment every `heartbeatMs` keeps
 * proxies from closing the connection; with it the stream checks that its session still stands
 * (a sign-out or a revoked token ends the stream) and reads the build again (a change lost while
 * the feed reconnected is seen then). Streams are bounded per process and per session (429
 * beyond), and the server's shutdown ends them all (`LiveStreams.endAll`), so its drain never
 * waits on a page that stays open.
 */
import { DomainError, RateLimitedError } from '../core/errors';
import type { Principal } from '../core/identity';
import type { Build } from '../builds/model';
import type { Job } from '../builds/jobs/model';
import type { Change } from '../live/changes';
import { agentsOfJobs, buildStateEvent, jobStateEvent } from './build-state';
import { actorFor } from './context';
import type { WebRouter } from './routes';

export interface LiveSettings {
  heartbeatMs: number;
  /** The least time between two reads of the build by one stream. */
  coalesceMs: number;
  /** Open streams per process, and per signed-in session. */
  maxStreams: number;
  maxPerSession: number;
  /** What the browser waits before reconnecting (the `retry:` field). */
  retryMs: number;
  /** A client that reads nothing while this much waits to be sent is cut off (it reconnects and starts afresh). */
  maxBufferedBytes: number;
}

export const DEFAULT_LIVE_SETTINGS: LiveSettings = {
  heartbeatMs: 15_000,
  coalesceMs: 250,
  maxStreams: 1_000,
  maxPerSession: 6,
  retryMs: 3_000,
  maxBufferedBytes: 1024 * 1024,
};

/** The open streams of this process. */
export class LiveStreams {
  private readonly open = new Set<{ session: string; end: () => void }>();
  private ending = false;

  constructor(readonly settings: LiveSettings = DEFAULT_LIVE_SETTINGS) {}

  get size(): number {
    return this.open.size;
  }

  /** Takes a place for a stream of `session`, or answers why not. */
  admit(session: string, end: () => void): { release: () => void } | { refused: RateLimitedError } {
    const s = this.settings;
    const ofSession = [...this.open].filter((o) => o.session === session).length;
    if (this.ending) return { refused: new RateLimitedError('live_streams', 0, 1, 1, 'The server is shutting down: reconnect in a moment.') };
    if (ofSession >= s.maxPerSession)
      return {
        refused: new RateLimitedError(
          'live_streams',
          s.maxPerSession,
          ofSession + 1,
          Math.ceil(s.retryMs / 1000),
          `Too many live pages open in this session: at most ${s.maxPerSession}. Close one or reload later.`,
        ),
      };
    if (this.open.size >= s.maxStreams)
      return {
        refused: new RateLimitedError(
          'live_streams',
          s.maxStreams,
          this.open.size + 1,
          Math.ceil(s.retryMs / 1000),
          'Too many live pages open on this server: try again shortly.',
        ),
      };
    const entry = { session, end };
    this.open.add(entry);
    return { release: () => this.open.delete(entry) };
  }

  /** Ends every open stream (the server is shutting down); new ones are refused from now on. */
  endAll(): void {
    this.ending = true;
    for (const o of [...this.open]) o.end();
  }
}

/** One event: its name and one line of JSON (JSON escapes every newline, so the data is one line). */
function frame(event: string, data: unknown): string {
  return `event: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
}

export function registerLivePages(web: WebRouter, streams: LiveStreams): void {
  const { builds, jobs, agents, changes, webSessions } = web.deps;
  const s = streams.settings;

  web.data('/:org/:pipeline/builds/:number/events', 'getBuild', async ({ principal, params, res, req, sid }) => {
    const actor = actorFor(principal, params.org!);
    const number = Number(params.number);
    // The page's own checks: the organization, the pipeline the caller may read, the build.
    const item = await builds.get(actor, params.pipeline!, Number.isSafeInteger(number) && number > 0 ? number : -1, true, { pipeline: true });
    const buildId = item.build.id;
    // The browser left while the build was read ('close' has fired already): nothing to keep open.
    if (req.destroyed || res.destroyed) return;

    let closed = false;
    const admitted = streams.admit(sid, () => end());
    if ('refused' in admitted) throw admitted.refused;
    const place = admitted;

    res.status(200);
    res.setHeader('Content-Type', 'text/event-stream; charset=utf-8');
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Accel-Buffering', 'no');
    res.setHeader('Connection', 'keep-alive');
    res.flushHeaders();
    req.socket.setNoDelay(true);
    // A stream outlives any request timeout: Node's own (requestTimeout) counts only until the request is read.
    req.socket.setTimeout(0);

    let sentBuild = '';
    const sentJobs = new Map<string, string>();
    const sentLogs = new Map<string, number>();
    let jobCount = -1;
    let full = false;
    const logsToRead = new Set<string>();
    let timer: NodeJS.Timeout | undefined;
    let reading = false;
    let lastRead = 0;

    const write = (text: string) => {
      if (closed) return;
      if (res.destroyed) return end();
      res.write(text);
      if (res.writableLength > s.maxBufferedBytes) end();
    };

    const sendState = async (b: Build, list: Job[]) => {
      const built = JSON.stringify(buildStateEvent(b));
      if (built !== sentBuild) {
        sentBuild = built;
        write(`event: build\ndata: ${built}\n\n`);
      }
      if (list.length !== jobCount) {
        jobCount = list.length;
        write(frame('jobs', { count: list.length }));
      }
      const agentsById = await agentsOfJobs(agents, list);
      for (const j of list) {
        const data = JSON.stringify(jobStateEvent(j, agentsById));
        if (sentJobs.get(j.id) === data) continue;
        sentJobs.set(j.id, data);
        write(`event: job\ndata: ${data}\n\n`);
      }
    };

    const read = async () => {
      timer = undefined;
      if (closed || reading) return;
      reading = true;
      lastRead = Date.now();
      try {
        if (full) {
          full = false;
          const current = await builds.findWithJobsById(buildId);
          if (!current) return end();
          await sendState(current.build, current.jobs);
        }
        if (logsToRead.size) {
          const ids = [...logsToRead];
          logsToRead.clear();
          const sizes = await jobs.logSizesForSystem(ids);
          for (const id of ids) {
            const size = sizes.get(id) ?? 0;
            if (sentLogs.get(id) === size) continue;
            sentLogs.set(id, size);
            write(frame('log', { job_id: id, size }));
          }
        }
      } catch (err) {
        // The database is unreachable for a moment: the next change or heartbeat reads again.
        full = true;
        web.deps.logger?.warn({ err }, 'live stream read failed');
      } finally {
        reading = false;
        if (!closed && (full || logsToRead.size)) schedule();
      }
    };

    const schedule = () => {
      if (closed || timer) return;
      timer = setTimeout(() => void read(), Math.max(0, lastRead + s.coalesceMs - Date.now()));
    };

    const onChange = (c: Change) => {
      if (c.kind === 'log') logsToRead.add(c.jobId);
      else full = true;
      if (!reading) schedule();
    };

    const unsubscribe = changes.subscribe(buildId, onChange);
    const heartbeat = setInterval(() => {
      write(': heartbeat\n\n');
      // Still signed in, and still let see this build (a member removed from the organization or
      // from the pipeline's teams since): otherwise the stream ends, as a new one would be refused.
      void webSessions
        .principal(sid)
        .then(async (still: Principal | null) => {
          if (!still) return end();
          await builds.get(actorFor(still, params.org!), params.pipeline!, number, true, { pipeline: true });
          full = true;
          schedule();
        })
        .catch((err: unknown) => {
          if (err instanceof DomainError) end(); // refused; a database error: the next heartbeat asks again
        });
    }, s.heartbeatMs);

    function end() {
      if (closed) return;
      closed = true;
      clearTimeout(timer);
      clearInterval(heartbeat);
      unsubscribe();
      place.release();
      res.end();
    }
    res.on('close', end);

    write(`retry: ${s.retryMs}\n\n`);
    try {
      await sendState(item.build, item.jobs);
    } catch (err) {
      // The headers are out: the browser reconnects and starts afresh.
      web.deps.logger?.warn({ err }, 'live stream start failed');
      return end();
    }
    lastRead = Date.now();
    // Changes that came while the snapshot was read: read again.
    if (full || logsToRead.size) schedule();
  });
}
