/**
 * The process entry for `windsock serve`: config, database and migrations, first-start
 * bootstrap, listen, the sweeper (lost agents, job timeouts and expiry), the scheduler (the
 * builds of due pipeline schedules), the notification worker (the outbox: webhooks, Slack,
 * OpenTelemetry, commit statuses), and graceful shutdown
 * (readiness 503 and `Connection: close` on every response, in flight or new; after the delay
 * the listener and idle keep-alive sockets close and nothing more reaches the app; in-flight
 * requests finish; the pool closes; exit 0 before the deadline).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { createApp } from './app';
import { bootstrapIfEmpty } from './bootstrap';
import type { Config } from './config';
import { migrateLatest } from './db/knex';
import { clientErrorHandler } from './http/error-handler';
import { createLogger, type Logger } from './http/logger';
import { servicesFromConfig, type Services } from './services';
import { loadFixtureFile } from './fixtures/load';
import { TestControls } from './test-controls/service';

export interface RunningServer {
  server: http.Server;
  services: Services;
  url: string;
  logger: Logger;
  close(): Promise<void>;
}

export async function startServer(config: Config, out: NodeJS.WritableStream = process.stdout): Promise<RunningServer> {
  const logger = createLogger(config.logLevel);
  const services = servicesFromConfig(config, logger);
  await migrateLatest(services.db);
  const testControls = config.testControls ? new TestControls(services.db, services.tokens) : undefined;
  let created;
  try {
    // A bad fixture file or admin token stops the start before anything listens (nothing loaded).
    if (config.fixturesFile) await loadFixtureFile(services, config.fixturesFile);
    created = await bootstrapIfEmpty(services, { adminToken: config.adminToken });
    // After the admin token exists: a reset keeps it.
    await testControls?.takeSnapshot(config.fixturesFile !== undefined);
  } catch (err) {
    await services.db.destroy();
    throw err;
  }

  let accepting = true;
  /** Set when the listener closes: from then on no request reaches the app. */
  let listenerClosed = false;
  const app = createApp({
    ...services,
    logger,
    publicUrl: config.publicUrl,
    bodyLimitBytes: config.bodyLimitBytes,
    uploadBodyLimitBytes: config.uploadBodyLimitBytes,
    trustProxy: config.trustProxy,
    webhookIps: config.webhookIps,
    validateResponses: config.validateResponses,
    isAccepting: () => accepting,
    testControls,
  });
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
      app(req, res);
    },
  );
  server.keepAliveTimeout = config.keepAliveTimeoutMs;
  server.on(
    'clientError',
    clientErrorHandler(logger, (socket) => [...inFlight.keys()].some((res) => res.socket === socket && res.headersSent)),
  );
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  logger.info({ url, database: config.databaseKind }, 'windsock listening');
  services.sweeper.start();
  services.scheduler.start();
  services.notificationWorker.start();

  if (created && created.jwt === null) {
    out.write(`\nWindsock created an organization (${created.orgSlug}), an admin user and the admin token WINDSOCK_ADMIN_TOKEN gives, with every scope.\n`);
  } else if (created) {
    // Printed once, to the terminal, not through the logger: it is a secret.
    out.write(
      [
        '',
        'Windsock created an organization, an admin user and an API token with every scope.',
        'This token is shown once; keep it somewhere safe:',
        '',
        `  ${created.jwt}`,
        '',
        'Try it:',
        `  curl -H "Authorization: Bearer ${created.jwt}" ${config.publicUrl}/v2/organizations/${created.orgSlug}/pipelines`,
        '',
      ].join('\n') + '\n',
    );
  }

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
      await services.db.destroy();
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

/** Runs until SIGTERM/SIGINT, then shuts down gracefully and exits 0. */
export async function serve(config: Config): Promise<void> {
  const running = await startServer(config);
  const stop = (signal: string) => {
    running.logger.info({ signal }, 'shutting down');
    running.close().then(
      () => process.exit(0),
      (err) => {
        running.logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGTERM', () => stop('SIGTERM'));
  process.once('SIGINT', () => stop('SIGINT'));
}
