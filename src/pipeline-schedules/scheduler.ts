/**
 * The scheduler: a loop in the server process that, every `intervalMs`, has the pipeline
 * schedules service create the builds of the schedules due by now (PipelineScheduleService.runDue:
 * each due minute claimed in the transaction that writes its build, so several processes on one
 * database create each build once). Started and stopped with the server, like the sweeper; due is
 * judged by the service's clock (core/clock.ts), so tests move it instead of waiting. No HTTP, no SQL.
 */
import { BackgroundLoop } from '../db/background-loop';
import type { Logger } from '../http/middleware/logger';
import type { DueRun, PipelineScheduleService } from './service';
import { clock } from '../core/clock';

export interface SchedulerSettings {
  /** How often due schedules are looked for (well under a minute, so a build comes in its minute). */
  intervalMs: number;
}

export const DEFAULT_SCHEDULER_SETTINGS: SchedulerSettings = { intervalMs: 10_000 };

export class Scheduler {
  private readonly loop: BackgroundLoop;

  constructor(
    private readonly schedules: PipelineScheduleService,
    settings: SchedulerSettings,
    logger?: Logger,
  ) {
    this.loop = new BackgroundLoop({
      name: 'pipeline schedules',
      intervalMs: settings.intervalMs,
      logger,
      pass: async () => {
        const run = await this.tick();
        if (run.created || run.failed || run.skipped) logger?.info(run, 'pipeline schedules run');
      },
    });
  }

  /** One pass: the builds of every schedule due at the clock's now. */
  tick(): Promise<DueRun> {
    return this.schedules.runDue(clock.now());
  }

  /** Ticks every `intervalMs` until stop(); a failed tick is logged and the next one runs. */
  start(): void {
    this.loop.start();
  }

  /** No more ticks; waits for one in progress to end (before the pool closes). */
  stop(): Promise<void> {
    return this.loop.stop();
  }
}
