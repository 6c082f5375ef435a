/**
 * The process entry for `windsock serve`: config, database and migrations, listen, first-start
 * bootstrap (after the port is bound, so the token it creates is never lost to a busy port) and
 * its banner (to the terminal, never the log stream), the sweeper (lost agents, job timeouts and expiry), the scheduler (the
 * builds of due pipeline schedules), the notification worker (the outbox: webhooks, Slack,
 * OpenTelemetry, commit statuses), and graceful shutdown
 * (readiness 503 and `Connection: close` on every response, in flight or new; after the delay
 * the listener and idle keep-alive sockets close and nothing more reaches the app; in-flight
 * requests finish; the pool closes; exit 0 before the deadline).
 */
import cluster from 'node:cluster';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { createApp } from './app';
import { bootstrapIfEmpty, type Bootstrapped } from './bootstrap';
import { ConfigError, type Config } from './config';
import { clock } from './core/clock';
import { migrateLatest } from './db/knex';
import { clientErrorHandler } from './http/middleware/error-handler';
import { createLogger, type Logger } from './http/middleware/logger';
import { servicesFromConfig, type Services } from './services';
import { loadFixtureFile } from './fixtures/load';
import { TestControls } from './test-controls/service';
import { errorMessage, stringField } from './core/guards';

export interface RunningServer {
  server: http.Server;
  services: Services;
  url: string;
  logger: Logger;
  close(): Promise<void>;
}

/**
 * Where the first-start banner goes: the terminal. stdout when it is one; otherwise stdout is the
 * JSON log stream (pino) that a log shipper reads, so stderr.
 */
export function terminal(): NodeJS.WritableStream {
  return process.stdout.isTTY ? process.stdout : process.stderr;
}

/** The file a first start keeps its token in (on-disk SQLite only), so that a restart can point to it. */
export const FIRST_START_TOKEN_FILE = 'first-start-token.txt';

/**
 * What a start does to the database before listening: migrations, the fixture file (a bad one
 * stops the start before anything listens, or on port 0 before the port it bound is named
 * anywhere: one transaction, nothing loaded), and sealing webhook
 * URLs stored before their credentials were secrets (idempotent). Once per start: in the process
 * itself, or in the primary of `--workers N` before it forks (src/cluster.ts).
 */
export async function prepareDatabase(services: Services, config: Config, logger: Logger): Promise<void> {
  await migrateLatest(services.db);
  if (config.fixturesFile) await loadFixtureFile(services, config.fixturesFile);
  const legacy = await services.notificationServices.sealLegacyWebhookUrls();
  if (legacy.sealed > 0) logger.info({ sealed: legacy.sealed }, 'sealed the credentials of webhook URLs stored in plain text');
  if (legacy.unreadable > 0)
    logger.warn({ unreadable: legacy.unreadable }, 'webhook services whose secrets do not open with these keys keep their URL as stored');
}

export async function startServer(given: Config, out: NodeJS.WritableStream = terminal()): Promise<RunningServer> {
  let config = given;
  clock.set(config.clock);
  // A worker of `--workers N`: its lines name it, and the primary has prepared the database.
  const logger = cluster.isWorker ? createLogger(config.logLevel).child({ worker: cluster.worker?.id, pid: process.pid }) : createLogger(config.logLevel);

  let markBootstrapped!: () => void;
  /** Resolved once the first-start bootstrap is done: a request that comes before waits for it. */
  const bootstrapped = new Promise<void>((resolve) => (markBootstrapped = resolve));
  let isBootstrapped = false;
  let accepting = true;
  /** Set when the listener closes: from then on no request reaches the app. */
  let listenerClosed = false;
  /** Built once the database is ready; no request reaches it before the bootstrap (above). */
  // eslint-disable-next-line prefer-const -- assigned below, once; the request handler reads it first
  let app: ReturnType<typeof createApp> | undefined;
  /** Responses not finished yet, in the order their requests came, with their connection. */
  const inFlight = new Map<http.ServerResponse, Duplex>();
  const busy = (socket: Duplex) => [...inFlight.values()].includes(socket);
  // Slow or stalled clients cannot hold sockets forever: Node answers 408 and closes the socket
  // once the headers (or the whole request) take longer than these. It looks for such sockets
  // every `connectionsCheckingInterval` (30 s by default), so that follows the shorter timeout.
  const server = http.createServer(
    {
      headersTimeout: config.headersTimeoutMs,
      requestTimeout: config.requestTimeoutMs,
      connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(config.headersTimeoutMs / 4))),
    },
    (req, res) => {
      // Shutting down, a request pipelined behind one still in flight is not processed: that
      // one closes the connection, so this one's answer could never be sent.
      if (listenerClosed || (!accepting && busy(req.socket))) return refuseAfterClose(res);
      inFlight.set(res, req.socket);
      const done = () => inFlight.delete(res);
      res.once('finish', done).once('close', done);
      if (!accepting) closeConnectionAfter(res);
      if (isBootstrapped) app!(req, res);
      else void bootstrapped.then(() => app!(req, res));
    },
  );
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  server.on(
    'clientError',
    clientErrorHandler(logger, (socket) => [...inFlight.keys()].some((res) => res.socket === socket && res.headersSent)),
  );
  const listen = async () => {
    try {
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(config.port, config.host, resolve);
      });
    } catch (err) {
      throw new ListenError(config, err);
    }
  };

  // Port 0: the port is known only once bound, and PUBLIC_URL's default names it. Every link the
  // service writes (`url` fields, `Link` headers, artifact and webhook URLs) is made from that
  // URL, so the port is bound first and the URL names it; requests wait for the start as above.
  const early = config.port === 0 && new URL(config.publicUrl).port === '0';
  if (early) {
    try {
      await listen();
    } catch (err) {
      removeEphemeralDir(config);
      throw err;
    }
    const bound = new URL(config.publicUrl);
    bound.port = String(boundAddress(server).port);
    config = { ...config, publicUrl: bound.origin };
  }
  const stopListening = () => (early ? new Promise<void>((resolve) => server.close(() => resolve())) : Promise.resolve());

  let services: Services;
  try {
    services = servicesFromConfig(config, logger, { live: true });
  } catch (err) {
    await stopListening();
    removeEphemeralDir(config);
    throw err;
  }
  const testControls = config.testControls ? new TestControls(services.db, services.tokens) : undefined;
  try {
    if (!cluster.isWorker) await prepareDatabase(services, config, logger);
  } catch (err) {
    await stopListening();
    await closeConnections(services);
    removeEphemeralDir(config);
    throw err;
  }

  app = createApp({
    ...services,
    logger,
    publicUrl: config.publicUrl,
    bodyLimitBytes: config.bodyLimitBytes,
    uploadBodyLimitBytes: config.uploadBodyLimitBytes,
    trustProxy: config.trustProxy,
    webhookIps: config.webhookIps,
    validateResponses: config.validateResponses,
    isAccepting: () => accepting,
    corsOrigins: config.corsOrigins,
    metrics: config.metrics,
    testControls,
  });
  if (!early) {
    try {
      await listen();
    } catch (err) {
      await closeConnections(services);
      removeEphemeralDir(config);
      throw err;
    }
  }
  const address = boundAddress(server);
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  // Only now that the port is ours: a first start that could not listen has created nothing.
  // Requests that arrive meanwhile wait for it (see `bootstrapped` above).
  let created: Bootstrapped | null;
  try {
    created = await bootstrapIfEmpty(services, { adminToken: config.adminToken });
    // After the admin token exists: a reset keeps it. Requests still wait, so none is in the snapshot.
    await testControls?.takeSnapshot(config.fixturesFile !== undefined);
  } catch (err) {
    // A refused admin token: stop listening and exit non-zero (serve), nothing left behind.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    server.closeAllConnections();
    await testControls?.dispose();
    await closeConnections(services);
    removeEphemeralDir(config);
    throw err;
  }
  isBootstrapped = true;
  markBootstrapped();
  // Printed to the terminal (and kept in a 0600 file), never through the logger: it is a secret.
  // Before the "listening" line, which those who wait for the token watch for.
  out.write(banner(config, url, created));
  logger.info({ url, database: config.databaseKind, ephemeral: config.ephemeral || undefined }, 'windsock listening');
  services.sweeper.start();
  services.scheduler.start();
  services.notificationWorker.start();

  let closing: Promise<void> | undefined;
  const close = () =>
    (closing ??= (async () => {
      const started = Date.now();
      // From now on readiness answers 503 and every response closes its connection, so load
      // balancers and keep-alive clients go elsewhere while the listener stays open for the delay.
      accepting = false;
      // Requests already in flight (their headers read before the signal) close their
      // connection too, or each would hold its socket until keepAliveTimeout: the last one of
      // each connection, so that requests pipelined on it before the signal are answered.
      const lastOf = new Map<Duplex, http.ServerResponse>();
      for (const [res, socket] of inFlight) lastOf.set(socket, res);
      for (const res of lastOf.values()) closeConnectionAfter(res);
      if (config.shutdownDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      listenerClosed = true;
      // Live pages' streams never finish by themselves: ended now, their browsers reconnect to another instance.
      services.liveStreams.endAll();
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // The deadline counts from the signal: requests still running then are cut off.
      const deadline = setTimeout(() => server.closeAllConnections(), Math.max(0, config.shutdownTimeoutMs - (Date.now() - started)));
      await done;
      clearTimeout(deadline);
      await services.sweeper.stop();
      await services.scheduler.stop();
      await services.notificationWorker.stop();
      await testControls?.dispose();
      await closeConnections(services);
      removeEphemeralDir(config);
    })());

  return { server, services, url, logger, close };
}

/**
 * Shutting down: this response closes its connection, so the client sends nothing more on it.
 * `Connection: close` when its headers are still to be written; a response already streaming
 * has its socket ended once it is complete.
 */
function closeConnectionAfter(res: http.ServerResponse): void {
  if (!res.headersSent) {
    res.setHeader('Connection', 'close');
    return;
  }
  const socket = res.socket;
  res.once('finish', () => socket?.destroySoon());
}

/**
 * A request that arrives on an open connection after the listener closed (its headers were
 * still arriving at the close), or pipelined behind one in flight once shutdown began, is not
 * processed: 503, retry elsewhere. When a response is still in flight ahead of it, that one
 * closes the connection and this answer is never sent: the client sees the connection closed.
 */
function refuseAfterClose(res: http.ServerResponse): void {
  const body = JSON.stringify({ message: 'Shutting down: the request was not processed, retry it' });
  res.writeHead(503, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(body), 'Retry-After': '5', Connection: 'close' });
  res.end(body);
}

/** The port could not be bound: what to do about it, in words. */
export class ListenError extends Error {
  constructor(config: Config, cause: unknown) {
    const where = `${config.host}:${config.port}`;
    const code = stringField(cause, 'code');
    const why =
      code === 'EADDRINUSE'
        ? `port ${config.port} is in use by another process (choose another with PORT or --port)`
        : code === 'EACCES'
          ? `permission denied (ports below 1024 need privileges; choose another with PORT or --port)`
          : code === 'EADDRNOTAVAIL'
            ? `no interface of this machine has the address ${config.host} (set HOST or --host)`
            : errorMessage(cause);
    super(`cannot listen on ${where}: ${why}`, { cause });
  }
}

/**
 * What a start prints on the terminal. A first start: the token, once, and the file it is kept
 * in (embedded SQLite on disk: the file sits beside the database, mode 0600). A restart: where
 * that file is, if it is still there, never the token itself.
 */
function banner(config: Config, url: string, created: Bootstrapped | null): string {
  const file = tokenFile(config);
  if (!created) {
    return file && fs.existsSync(file) ? `Windsock is listening on ${url}. The token made on first start is in ${file}\n` : '';
  }
  if (created.jwt === null) {
    // The secret was given (WINDSOCK_ADMIN_TOKEN): its owner has it; nothing secret is printed or kept.
    return `\nWindsock created an organization (${created.orgSlug}), an admin user and the admin token WINDSOCK_ADMIN_TOKEN gives, with every scope.\n`;
  }
  const text = [
    '',
    'Windsock created an organization, an admin user and an API token with every scope.',
    'This token is shown once; keep it somewhere safe:',
    '',
    `  ${created.jwt}`,
    '',
    'Try it:',
    `  curl -H "Authorization: Bearer ${created.jwt}" ${config.publicUrl}/v2/organizations/${created.orgSlug}/pipelines`,
    '',
  ];
  if (file) {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    fs.rmSync(file, { force: true });
    // 'wx' with mode 0600: the file is never readable by others, not even for a moment.
    fs.writeFileSync(file, `${created.jwt}\n`, { mode: 0o600, flag: 'wx' });
    text.push(`The token is also kept in ${file} (readable by you only); delete it once it is stored elsewhere.`, '');
  }
  return text.join('\n') + '\n';
}

/** The first-start token's file: beside an on-disk embedded database only (an ephemeral or Postgres start keeps none). */
function tokenFile(config: Config): string | undefined {
  if (config.ephemeral || config.databaseKind !== 'sqlite' || config.databaseUrl === ':memory:') return undefined;
  return path.join(config.dataDir, FIRST_START_TOKEN_FILE);
}

/** Where the server listens: a host and port (not a pipe). */
function boundAddress(server: http.Server): AddressInfo {
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error(`not listening on a TCP port: ${String(address)}`);
  return address;
}

/** The process's connections: the change feed's (LISTEN or Redis), the rate limiter's Redis, the database pool. */
async function closeConnections(services: Services): Promise<void> {
  await services.changes.close();
  await services.rateLimiter.close();
  await services.db.destroy();
}

/** An ephemeral start's temporary directory (artifacts) goes with the process. */
function removeEphemeralDir(config: Config): void {
  if (config.ephemeral) fs.rmSync(config.dataDir, { recursive: true, force: true });
}

/**
 * Runs until SIGTERM/SIGINT, then shuts down gracefully and exits 0. A start that fails exits
 * at once, with the reason on stderr: 2 when the configuration is at fault (a bad fixture file,
 * an unusable WINDSOCK_ADMIN_TOKEN), 1 when the machine refused (the port is taken, the database
 * cannot be reached or migrated). Nothing is left running half-started.
 */
export async function serve(config: Config): Promise<void> {
  // The signal handlers go in before the start. The "listening" line is written inside the
  // start, and whoever waits for it (an orchestrator, a test, a script) may stop the service at
  // once: a SIGTERM between that line and handlers installed after the start ended the process
  // by the signal, with no drain and no exit code. A signal during the start now stops the
  // service as soon as it has started (a start that fails exits as it does anyway); a second
  // one, with the handlers gone, ends it at once as before.
  let running: RunningServer | undefined;
  let requested: string | undefined;
  const stop = (signal: string) => {
    if (!running) {
      requested = signal;
      return;
    }
    const server = running;
    server.logger.info({ signal }, 'shutting down');
    server.close().then(
      () => process.exit(0),
      (err) => {
        server.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
  try {
    running = await startServer(config);
  } catch (err) {
    process.stderr.write(`windsock: ${errorMessage(err)}\n`);
    // A setting, the fixture file or the admin token at fault is a usage error (2), as for a bad
    // variable read before the start; what the machine refused (the port, the database) is 1.
    process.exit(err instanceof ConfigError ? 2 : 1);
  }
  if (config.ephemeral) process.once('exit', () => removeEphemeralDir(config));
  if (requested) return stop(requested);
  if (cluster.isWorker) {
    // The primary counts its workers in (src/cluster.ts); one left without a primary drains and exits.
    process.send?.({ windsock: 'listening', url: running.url });
    process.once('disconnect', () => stop('disconnect'));
  }
}
