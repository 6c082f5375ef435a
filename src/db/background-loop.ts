/**
 * One loop for the server's background work (the sweeper, the pipeline scheduler, the
 * notification worker): a pass every `intervalMs`, never two at once, until stop(), which waits
 * for the pass in progress (so the database pool is closed after it). A pass that throws is
 * logged and the next one runs; an unreachable database is one warning per pass (it is logged once
 * where it is watched: src/db/knex.ts), not a stack. A pass may ask for the next one at once
 * (`{ again: true }`: it left work behind), and `soon()` brings the next pass forward.
 * Timers are unref'd: a loop never keeps the process alive. Real time only: what the passes do
 * reads the service's clock.
 */
import { isUnavailableError } from './knex';
import { fieldOf } from '../core/guards';

/** The part of the service's logger a loop uses. */
export interface LoopLogger {
  warn(fields: object, message: string): void;
  error(fields: object, message: string): void;
}

export interface LoopOptions {
  /** Names the loop in its log lines: `<name> failed`, `<name> skipped: database unavailable`. */
  name: string;
  intervalMs: number;
  /** One pass; `{ again: true }` runs the next one at once. */
  pass(): Promise<{ again?: boolean } | void>;
  logger?: LoopLogger;
}

export class BackgroundLoop {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<void> | null = null;
  private stopped = true;

  constructor(private readonly options: LoopOptions) {}

  /** The first pass after `intervalMs`, then one every `intervalMs` after each ends. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    this.schedule(this.options.intervalMs);
  }

  /** The next pass now, or as soon as the one in progress ends. */
  soon(): void {
    if (this.stopped || this.running) return;
    this.schedule(0);
  }

  /** No more passes; resolves when the one in progress has ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }

  private schedule(ms: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = setTimeout(() => this.run(), ms).unref();
  }

  private run(): void {
    this.timer = null;
    const { name, logger } = this.options;
    let again = false;
    this.running = this.options
      .pass()
      .then((outcome) => {
        again = outcome?.again === true;
      })
      .catch((err: unknown) =>
        isUnavailableError(err)
          ? logger?.warn({ code: fieldOf(err, 'code') }, `${name} skipped: database unavailable`)
          : logger?.error({ err }, `${name} failed`),
      )
      .finally(() => {
        this.running = null;
        if (!this.stopped && !this.timer) this.schedule(again ? 0 : this.options.intervalMs);
      });
  }
}
