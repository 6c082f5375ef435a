/**
 * What ends jobs when nobody calls: a periodic sweep in the server process finds agents whose
 * heartbeat stopped (lost: the job they ran fails, the job they had not started is offered
 * again), running jobs past their step's `timeout_in_minutes` (`timing_out`, for the agent to
 * stop), scheduled jobs no agent took in time (`expired`), and builds whose state machine did not
 * run after their last job ended (the process that ended the job died before it could: another
 * server process, or this one after a restart, moves the build on). Every change is a guarded UPDATE,
 * so two server processes sweeping one database never apply a rule twice, and no lock is held
 * across round trips. Time is the service's clock (core/clock.ts): tests move it instead of waiting. No HTTP, no SQL.
 */
import type { AgentService } from '../../agents/service';
import { effectiveExitStatus, softFails } from './retry';
import type { BuildProgress } from '../progress/service';
import { BackgroundLoop } from '../../db/background-loop';
import type { Logger } from '../../http/middleware/logger';
import type { JobEnd } from './model';
import type { JobRepository } from './repository';
import { finishEvent, jobTransition } from '../states';
import { clock } from '../../core/clock';

export interface SweepSettings {
  /** How often the sweep runs. */
  intervalMs: number;
  /** An agent silent (no ping, heartbeat or job poll) for longer than this is lost. */
  agentLostAfterMs: number;
  /** A job scheduled for longer than this with no agent taking it expires (0: never). */
  jobExpiryMs: number;
}

export const DEFAULT_SWEEP_SETTINGS: SweepSettings = { intervalMs: 5_000, agentLostAfterMs: 180_000, jobExpiryMs: 30 * 24 * 3600_000 };

/**
 * How old an agent's stored heartbeat may be before a poll writes it again: a twelfth of the
 * silence after which it is lost, at most 15 s (180 s: 15 s). A live agent's stored heartbeat
 * lags its last poll by at most this; the sweeper reads the stored one.
 */
export function heartbeatWriteEveryMs(settings: Pick<SweepSettings, 'agentLostAfterMs'>): number {
  return Math.min(15_000, Math.floor(settings.agentLostAfterMs / 12));
}

/**
 * How long after its last job ended an unfinished build with nothing left to move it counts as
 * stalled: its own state machine runs right after each job's end (milliseconds; seconds on a
 * loaded machine), and the sweep must not race it for every build.
 */
export const STALLED_AFTER_MS = 10_000;

/** How many rows of each kind one sweep handles; the next sweep takes the rest. */
const BATCH = 500;

export interface SweepResult {
  lostAgents: number;
  timingOut: number;
  expired: number;
  /** Builds whose state machine ran again after a process died before running it. */
  stalledBuilds: number;
  /** Limited jobs admitted that a process died before admitting (concurrency groups with room). */
  admitted: number;
}

export class Sweeper {
  private readonly loop: BackgroundLoop;

  constructor(
    private readonly agents: AgentService,
    private readonly jobs: JobRepository,
    /** What ends jobs and moves their builds along, in its own transactions. */
    private readonly progress: BuildProgress,
    private readonly settings: SweepSettings,
    logger?: Logger,
  ) {
    this.loop = new BackgroundLoop({
      name: 'sweep',
      intervalMs: settings.intervalMs,
      logger,
      pass: async () => {
        const { stalledBuilds } = await this.sweep();
        // Rare (a process died between a job's end and its build's advance): worth a line.
        if (stalledBuilds) logger?.info({ builds: stalledBuilds }, 'sweep ran the state machine of builds it had not run after their last job');
      },
    });
  }

  /** One pass of every rule. */
  async sweep(): Promise<SweepResult> {
    return {
      lostAgents: await this.loseSilentAgents(),
      timingOut: await this.timeOutJobs(),
      expired: await this.expireJobs(),
      stalledBuilds: await this.progress.advanceStalled(new Date(clock.nowMs() - STALLED_AFTER_MS), BATCH),
      admitted: await this.progress.admitLimited(BATCH),
    };
  }

  /** Sweeps every `intervalMs` until stop(); a failed sweep is logged and the next one runs. */
  start(): void {
    this.loop.start();
  }

  /** No more sweeps; waits for one in progress to end (before the pool closes). */
  stop(): Promise<void> {
    return this.loop.stop();
  }

  /**
   * Connected agents silent for too long become lost; then the jobs held by silent agents that
   * are not connected (just lost, lost in an earlier sweep that stopped half-way, or
   * disconnected without finishing their job) end. Each step is guarded, so a sweep cut short
   * is completed by the next.
   */
  private async loseSilentAgents(): Promise<number> {
    const now = clock.now();
    const cutoff = new Date(now.getTime() - this.settings.agentLostAfterMs);
    const lost = await this.agents.markSilentAgentsLost(cutoff, now, BATCH);
    for (const job of await this.jobs.heldBySilentAgents(cutoff, BATCH)) {
      const silence = `stopped reporting (no heartbeat for more than ${Math.round(this.settings.agentLostAfterMs / 1000)} s)`;
      const abandon = jobTransition('abandon', job.state);
      if (abandon.from.length) {
        // Taken but never started: it expires, as a job no agent runs does.
        await this.progress.endSilentAgentJob(
          job,
          job.agentId!,
          abandon,
          { state: 'expired', expired_at: now, finished_at: now },
          `windsock: the agent that took this job ${silence} before starting it; the job expired.`,
        );
        continue;
      }
      // A job being canceled or timing out ends as it was going to; a running one fails (exit
      // status -1, or the failure it promised).
      const exitStatus = effectiveExitStatus(job, -1, null);
      const event = finishEvent(job.state, exitStatus, null);
      if (!event) continue;
      const transition = jobTransition(event, job.state);
      const state = transition.to;
      const soft = state !== 'canceled' && softFails(job.step, exitStatus);
      const end: JobEnd = { state, exit_status: exitStatus, signal_reason: null, soft_failed: soft, finished_at: now };
      const line = `windsock: the agent running this job ${silence}; the job ended ${state} with exit status ${exitStatus}.`;
      // A lost agent's failure is exit status -1, which `retry.automatic` rules often name: its
      // retry is made with the end (only for a failed job).
      await this.progress.endSilentAgentJob(job, job.agentId!, transition, end, line);
    }
    return lost;
  }

  private async timeOutJobs(): Promise<number> {
    const now = clock.now().getTime();
    let n = 0;
    for (const j of await this.jobs.runningWithTimeout(BATCH)) {
      if (j.startedAt && now - j.startedAt.getTime() > j.timeoutInMinutes * 60_000 && (await this.jobs.timeOut(j.id))) n++;
    }
    return n;
  }

  private async expireJobs(): Promise<number> {
    if (!this.settings.jobExpiryMs) return 0;
    const now = clock.now();
    const due = await this.jobs.scheduledCreatedBefore(new Date(now.getTime() - this.settings.jobExpiryMs), BATCH);
    const byBuild = new Map<string, string[]>();
    for (const j of due) byBuild.set(j.buildId, [...(byBuild.get(j.buildId) ?? []), j.id]);
    let n = 0;
    for (const [buildId, ids] of byBuild) n += await this.progress.expire(buildId, ids, now);
    return n;
  }
}
