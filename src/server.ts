/**
 * The process entry for `windsock serve`: config, database and migrations, first-start
 * bootstrap, listen, the sweeper (lost agents, job timeouts and expiry), and graceful shutdown (stop accepting, finish in-flight requests, close
 * idle keep-alive sockets, close the pool, exit 0 before the deadline).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createApp } from './app';
import { bootstrapIfEmpty } from './bootstrap';
import type { Config } from './config';
import { migrateLatest } from './db/knex';
import { createLogger, type Logger } from './http/logger';
import { servicesFromConfig, type Services } from './services';

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
  const created = await bootstrapIfEmpty(services);

  let accepting = true;
  const app = createApp({
    ...services,
    logger,
    publicUrl: config.publicUrl,
    bodyLimitBytes: config.bodyLimitBytes,
    uploadBodyLimitBytes: config.uploadBodyLimitBytes,
    trustProxy: config.trustProxy,
    validateResponses: config.validateResponses,
    isAccepting: () => accepting,
  });
  // Slow or stalled clients cannot hold sockets forever: Node answers 408 and closes the socket
  // once the headers (or the whole request) take longer than these. It looks for such sockets
  // every `connectionsCheckingInterval` (30 s by default), so that follows the shorter timeout.
  const server = http.createServer({
    headersTimeout: config.headersTimeoutMs,
    requestTimeout: config.requestTimeoutMs,
    connectionsCheckingInterval: Math.max(50, Math.min(30_000, Math.floor(config.headersTimeoutMs / 4))),
  }, app);
  server.keepAliveTimeout = 5_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(config.port, config.host, resolve);
  });
  const address = server.address() as AddressInfo;
  const url = `http://${address.family === 'IPv6' ? `[${address.address}]` : address.address}:${address.port}`;
  logger.info({ url, database: config.databaseKind }, 'windsock listening');
  services.sweeper.start();

  if (created) {
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
      if (config.shutdownDelayMs > 0) await new Promise((resolve) => setTimeout(resolve, config.shutdownDelayMs));
      const done = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      // The deadline counts from the signal: requests still running then are cut off.
      const deadline = setTimeout(() => server.closeAllConnections(), Math.max(0, config.shutdownTimeoutMs - (Date.now() - started)));
      await done;
      clearTimeout(deadline);
      await services.sweeper.stop();
      await services.db.destroy();
    })());

  return { server, services, url, logger, close };
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
