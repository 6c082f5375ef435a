/**
 * The scheduler: a loop in the server process that, every `intervalMs`, has the pipeline
 * schedules service create the builds of the schedules due by now (PipelineScheduleService.runDue:
 * each due minute claimed in the transaction that writes its build, so several processes on one
 * database create each build once). Started and stopped with the server, like the sweeper; the
 * clock is injected, so tests move it instead of waiting. No HTTP, no SQL.
 */
import { isUnavailableError } from '../db/knex';
import type { Logger } from '../http/logger';
import type { DueRun, PipelineScheduleService } from './service';
import { clock as sharedClock } from '../core/clock';

export interface SchedulerSettings {
  /** How often due schedules are looked for (well under a minute, so a build comes in its minute). */
  intervalMs: number;
}

export const DEFAULT_SCHEDULER_SETTINGS: SchedulerSettings = { intervalMs: 10_000 };

export class Scheduler {
  private timer: NodeJS.Timeout | null = null;
  private running: Promise<unknown> | null = null;
  private stopped = true;

  constructor(
    private readonly schedules: PipelineScheduleService,
    private readonly settings: SchedulerSettings,
    private readonly clock: () => Date = () => sharedClock.now(),
    private readonly logger?: Logger,
  ) {}

  /** One pass: the builds of every schedule due at the clock's now. */
  tick(): Promise<DueRun> {
    return this.schedules.runDue(this.clock());
  }

  /** Ticks every `intervalMs` until stop(); a failed tick is logged and the next one runs. */
  start(): void {
    if (!this.stopped) return;
    this.stopped = false;
    const tick = () => {
      this.running = this.tick()
        .then((run) => {
          if (run.created || run.failed || run.skipped) this.logger?.info(run, 'pipeline schedules run');
        })
        .catch((err: unknown) =>
          isUnavailableError(err)
            ? this.logger?.warn({ code: (err as { code?: string }).code }, 'pipeline schedules skipped: database unavailable')
            : this.logger?.error({ err }, 'pipeline schedules failed'),
        )
        .finally(() => {
          this.running = null;
          if (!this.stopped) this.timer = setTimeout(tick, this.settings.intervalMs).unref();
        });
    };
    this.timer = setTimeout(tick, this.settings.intervalMs).unref();
  }

  /** No more ticks; waits for one in progress to end (before the pool closes). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    await this.running;
  }
}
