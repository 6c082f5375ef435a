/**
 * The notification worker: a loop in the server process that fans out new outbox events and
 * keeps up to `concurrency` deliveries in flight, each sent without holding the loop (a receiver
 * that takes 5 s holds one slot for 5 s, never the API nor the other receivers; no attempt
 * outlives OUTBOUND_TIMEOUT_MS, the transport's deadline for the whole exchange). One target holds
 * at most half the slots and one organization three quarters (NotificationService.leaseDue), so
 * slow receivers never stall the others. Started and
 * stopped with the server like the sweeper and the scheduler. No HTTP of its own, no SQL.
 */
import { BackgroundLoop } from '../db/background-loop';
import type { Logger } from '../http/middleware/logger';
import type { NotificationService } from './service';

/** How often finished deliveries and events are pruned: hourly. */
const PRUNE_EVERY_MS = 3_600_000;

export class NotificationWorker {
  private readonly loop: BackgroundLoop;
  private readonly inFlight = new Map<string, Promise<void>>();
  /** The target and organization of each delivery in flight: one target, or one organization, may hold only part of the slots. */
  private readonly targetOf = new Map<string, { target: string; organization: string }>();
  private lastPrune = 0;
  /** The last pass fanned out a full batch: more may be waiting. */
  private behind = false;

  constructor(
    private readonly notifications: NotificationService,
    private readonly logger?: Logger,
  ) {
    this.loop = new BackgroundLoop({
      name: 'notifications pass',
      intervalMs: notifications.settings.intervalMs,
      logger,
      // A full batch fanned out: more may be waiting, the next pass comes at once.
      pass: () => this.tick().then(() => ({ again: this.behind })),
    });
  }

  /** One pass: fan out what is new, start what is due; answers what it did (tests drive it). */
  async tick(): Promise<{ fannedOut: number; started: number }> {
    // One batch per pass, then the deliveries: under a sustained stream of events, fanning out
    // until nothing is left never ended and no delivery was started (seen on Postgres by
    // bench:notifications). A full batch brings the next pass forward.
    const fannedOut = await this.notifications.fanOut();
    this.behind = fannedOut >= this.notifications.settings.batchSize;
    const free = this.notifications.settings.concurrency - this.inFlight.size;
    const held = [...this.targetOf.values()];
    const leased = await this.notifications.leaseDue(
      free,
      [...this.inFlight.keys()],
      held.map((h) => h.target),
      held.map((h) => h.organization),
    );
    for (const d of leased) {
      this.targetOf.set(d.id, { target: d.targetKey, organization: d.organizationId });
      const p = this.notifications
        .attempt(d)
        .then(() => undefined)
        .catch((err: unknown) => this.logger?.error({ err, delivery: d.id }, 'notification attempt failed to record'))
        .finally(() => {
          this.inFlight.delete(d.id);
          this.targetOf.delete(d.id);
          // A freed slot may serve the next in line at once.
          this.loop.soon();
        });
      this.inFlight.set(d.id, p);
    }
    if (Date.now() - this.lastPrune > PRUNE_EVERY_MS) {
      this.lastPrune = Date.now();
      await this.notifications.prune();
    }
    return { fannedOut, started: leased.length };
  }

  /** Until every delivery in flight has ended (tests). */
  async drain(): Promise<void> {
    while (this.inFlight.size) await Promise.all([...this.inFlight.values()]);
  }

  /**
   * Runs passes until nothing is left to fan out or in flight, and no pending delivery is due
   * within `horizonMs` (tests: deliver what the last change caused, retries included, then look).
   */
  async settle(horizonMs = 1_000, maxPasses = 1_000): Promise<void> {
    for (let i = 0; i < maxPasses; i++) {
      const { fannedOut, started } = await this.tick();
      await this.drain();
      if (fannedOut || started) continue;
      if (!(await this.notifications.pendingDueWithin(horizonMs))) return;
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  }

  start(): void {
    this.loop.start();
  }

  /**
   * No more passes; waits for the one running and, up to `graceMs`, for the deliveries in flight
   * (their attempts are then recorded). One still in flight after that keeps its lease, which
   * expires: it is attempted again, by this server after a restart or by another one.
   */
  async stop(graceMs = 2_000): Promise<void> {
    await this.loop.stop();
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.drain(), new Promise<void>((resolve) => (timer = setTimeout(resolve, graceMs).unref()))]);
    clearTimeout(timer);
  }
}
