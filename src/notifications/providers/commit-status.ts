/**
 * Commit statuses as deliveries: at fan-out, the statuses a build or job event publishes under
 * its pipeline's provider settings and `notify` entries (./../commit-status/rules.ts), each a
 * delivery of its own, in line per build and context; when sent, the provider's API
 * (./../commit-status/send.ts). A pipeline whose provider has no credentials configured costs
 * nothing: `mayPlanOwn` says so before anything is rendered.
 */
import type { Job } from '../../builds/jobs/model';
import type { Pipeline } from '../../pipelines/repository';
import { enabledProviders, sendStatus, statusUpdatesFor, type StepStatusMoment } from '../commit-status';
import type { CommitStatusConfig, StatusUpdate } from '../commit-status/types';
import type { AttemptResult, EventName, HttpSend } from '../events';
import type { Delivery } from '../repository';
import type { FanOutContext, PlannedDelivery, Provider } from '../service';
import { isOneOf } from '../../db/row-types';
import { isRecord } from '../../core/guards';

/** The registry key of commit-status deliveries (their target's `provider`). */
export const COMMIT_STATUS = 'commit_status';

/** The `notify` entries of a build or a step (none unless a list). */
const notifyOf = (x: unknown): unknown[] => (isRecord(x) && Array.isArray(x.notify) ? x.notify : []);

/** The step moment of the event, with its jobs as the status rules read them; null when it is none. */
function statusMomentOf(ctx: FanOutContext): StepStatusMoment | null {
  const m = ctx.stepMoment;
  if (!m) return null;
  const iso = (d: Date | null) => d?.toISOString() ?? null;
  return {
    state: m.state,
    jobs: m.jobs.map((j) => ({ state: j.state, soft_failed: j.softFailed, started_at: iso(j.startedAt), finished_at: iso(j.finishedAt) })),
  };
}

export function commitStatusProvider(config: CommitStatusConfig, conditionOf: (ctx: FanOutContext) => (condition: string) => boolean): Provider {
  const enabled = enabledProviders(config);
  return {
    mayPlanOwn(name: EventName, pipeline: Pipeline | null, job: Job | null): boolean {
      if (!pipeline || !isOneOf(enabled, pipeline.providerId)) return false;
      if (name.startsWith('build.')) return true;
      if (!name.startsWith('job.')) return false;
      // A step's entries publish at its moments, which a promise may be (step.failing); the job's own status waits for its end.
      if (notifyOf(job?.step).length > 0) return true;
      return name !== 'job.promised_exit_status' && pipeline.providerSettings.publish_commit_status_per_step === true;
    },
    planOwn(ctx: FanOutContext): PlannedDelivery[] {
      const updates = statusUpdatesFor(ctx.event, {
        buildNotify: notifyOf(ctx.rendered.build),
        stepNotify: notifyOf(ctx.rendered.job?.step),
        step: statusMomentOf(ctx),
        enabledProviders: enabled,
        evaluateIf: conditionOf(ctx),
      });
      return updates.map((u) => ({
        targetKind: 'commit_status',
        serviceId: null,
        target: { provider: COMMIT_STATUS, status_provider: u.provider, repository: u.repository, context: u.context },
        targetKey: `status:${u.provider}:${u.repository}:${u.context}`.slice(0, 200),
        payload: u,
      }));
    },
    send(d: Delivery, _service: unknown, http: HttpSend): Promise<AttemptResult> {
      // cast: the payload is the StatusUpdate planOwn stored at fan-out (statusUpdatesFor's).
      return sendStatus(d.payload as StatusUpdate, config, http);
    },
  };
}
