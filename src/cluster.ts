/**
 * `windsock serve --workers N` (WINDSOCK_WORKERS, N > 1, Postgres only): the primary process of a
 * node:cluster. It prepares the database once (migrations, the fixture file, sealing legacy
 * webhook URLs: src/server.ts's prepareDatabase) and serves nothing itself; the workers each run
 * the full instance (src/server.ts's serve) on the one port, the primary handing them connections.
 *
 * - Start: worker 1 first, alone, so that a first start's bootstrap and banner happen once and a
 *   start that cannot listen (the port taken, a refused admin token) fails once; then the others.
 *   A worker that exits before it listened in this first start ends the start: the others are
 *   stopped and the primary exits with that worker's code (2 a setting at fault, 1 otherwise).
 * - A worker that exits later, whatever its code, is replaced, at most N times in 10 s: past that
 *   the workers are crashing in a loop, so the primary logs why, stops the rest and exits 1.
 * - SIGTERM or SIGINT to the primary: SIGTERM to every worker, each draining as a single process
 *   does (SHUTDOWN_DELAY_MS, SHUTDOWN_TIMEOUT_MS); the primary exits 0 once all have exited, 1 if
 *   one failed to, or if some are still running 5 s after SHUTDOWN_TIMEOUT_MS (they are killed).
 *
 * The background loops (sweeper, scheduler, notification worker) run in every worker: each is safe
 * with several processes on one database (docs/operations.md, "Several worker processes").
 */
import cluster, { type Worker } from 'node:cluster';
import { ConfigError, type Config } from './config';
import { clock } from './core/clock';
import { createLogger, type Logger } from './http/middleware/logger';
import { prepareDatabase } from './server';
import { servicesFromConfig } from './services';

/** How far back replacements are counted: more than N in this window is a crash loop. */
export const RESTART_WINDOW_MS = 10_000;
/** How long past SHUTDOWN_TIMEOUT_MS the primary waits for its workers before killing them. */
const EXIT_GRACE_MS = 5_000;

/** Runs the primary of `--workers N` until it is stopped; the process exits from here. */
export async function servePrimary(config: Config): Promise<void> {
  clock.set(config.clock);
  const logger = createLogger(config.logLevel).child({ primary: true, pid: process.pid });
  try {
    const services = servicesFromConfig(config, logger);
    try {
      await prepareDatabase(services, config, logger);
    } finally {
      await services.db.destroy();
    }
  } catch (err) {
    // As a single process's start does: a setting or the fixture file at fault is 2, the database 1.
    process.stderr.write(`windsock: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(err instanceof ConfigError ? 2 : 1);
  }
  new Primary(config, logger).start();
}

interface Slot {
  /** 1 to N: the place a worker holds; its replacement takes the same place. */
  index: number;
  worker: Worker;
  /** Part of the first start (not a replacement). */
  initial: boolean;
  listening: boolean;
}

class Primary {
  private readonly slots = new Map<number, Slot>();
  private readonly restarts: number[] = [];
  private stopping = false;
  private exitCode = 0;

  constructor(
    private readonly config: Config,
    private readonly logger: Logger,
  ) {}

  start(): void {
    this.logger.info({ workers: this.config.workers }, 'starting workers');
    process.once('SIGTERM', () => this.stop('SIGTERM', 0));
    process.once('SIGINT', () => this.stop('SIGINT', 0));
    this.fork(1, true);
  }

  private fork(index: number, initial: boolean): void {
    const worker = cluster.fork();
    const slot: Slot = { index, worker, initial, listening: false };
    this.slots.set(index, slot);
    worker.on('message', (message: unknown) => {
      if (!isListening(message) || slot.listening) return;
      slot.listening = true;
      this.logger.info({ worker: worker.id, slot: index, workerPid: worker.process.pid, url: message.url }, 'worker listening');
      // Worker 1 has bootstrapped a first start and bound the port: now the others.
      if (index === 1 && initial && !this.stopping) for (let i = 2; i <= this.config.workers; i++) this.fork(i, true);
      if ([...this.slots.values()].every((s) => s.listening) && this.slots.size === this.config.workers && initial)
        this.logger.info({ workers: this.config.workers }, 'all workers listening');
    });
    worker.once('exit', (code, signal) => this.exited(slot, code, signal));
  }

  private exited(slot: Slot, code: number | null, signal: string | null): void {
    if (this.slots.get(slot.index) === slot) this.slots.delete(slot.index);
    const fields = { worker: slot.worker.id, slot: slot.index, workerPid: slot.worker.process.pid, code, signal };
    if (this.stopping) {
      // Drained (0), or stopped by the signal before it had installed its own handler.
      const clean = code === 0 || signal === 'SIGTERM' || signal === 'SIGINT';
      if (!clean) this.exitCode = 1;
      this.logger.info(fields, 'worker exited');
      this.finishIfDone();
      return;
    }
    if (slot.initial && !slot.listening) {
      // The first start failed (the worker said why on stderr): the whole start fails.
      this.logger.error(fields, 'worker exited before listening: stopping');
      this.stop('start failed', code && code > 0 ? code : 1);
      return;
    }
    const now = Date.now();
    this.restarts.push(now);
    while (this.restarts.length && this.restarts[0]! <= now - RESTART_WINDOW_MS) this.restarts.shift();
    if (this.restarts.length > this.config.workers) {
      this.logger.error(
        { ...fields, restarts: this.restarts.length, windowMs: RESTART_WINDOW_MS },
        `workers keep exiting: ${this.restarts.length} replacements in ${RESTART_WINDOW_MS / 1000} s, more than the ${this.config.workers} allowed; stopping`,
      );
      this.stop('crash loop', 1);
      return;
    }
    this.logger.warn(fields, 'worker exited unexpectedly: starting another');
    this.fork(slot.index, false);
  }

  private stop(reason: string, exitCode: number): void {
    if (this.stopping) return;
    this.stopping = true;
    this.exitCode = exitCode;
    this.logger.info({ reason, workers: this.slots.size }, 'shutting down');
    for (const { worker } of this.slots.values()) worker.process.kill('SIGTERM');
    setTimeout(() => {
      this.logger.error({ workers: [...this.slots.values()].map((s) => s.worker.process.pid) }, 'workers still running after the shutdown timeout: killed');
      for (const { worker } of this.slots.values()) worker.process.kill('SIGKILL');
      process.exit(1);
    }, this.config.shutdownTimeoutMs + EXIT_GRACE_MS).unref();
    this.finishIfDone();
  }

  private finishIfDone(): void {
    if (!this.stopping || this.slots.size > 0) return;
    this.logger.info({ exitCode: this.exitCode }, 'all workers exited');
    process.exit(this.exitCode);
  }
}

function isListening(message: unknown): message is { windsock: 'listening'; url: string } {
  return (
    typeof message === 'object' &&
    message !== null &&
    'windsock' in message &&
    message.windsock === 'listening' &&
    'url' in message &&
    typeof message.url === 'string'
  );
}
