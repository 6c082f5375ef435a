/**
 * Commit statuses as deliveries: at fan-out, the statuses a build or job event publishes under
 * its pipeline's provider settings and `notify` entries (./../commit-status/rules.ts), each a
 * delivery of its own, in line per build and context; when sent, the provider's API
 * (./../commit-status/send.ts). A pipeline whose provider has no credentials configured costs
 * nothing: `mayPlanOwn` says so before anything is rendered.
 */
import type { Job } from '../../builds/jobs/model';
import type { Pipeline } from '../../pipelines/repository';
import { enabledProviders, sendStatus, statusUpdatesFor } from '../commit-status';
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

/**
 * Entries a commit status serves: `github_commit_status`, and `github_check` where it maps (a
 * check run has no equivalent here: its context is published as a commit status).
 */
function statusEntries(x: unknown): unknown[] {
  return notifyOf(x).map((e) => {
    if (!isRecord(e) || !('github_check' in e)) return e;
    const { github_check: check, ...rest } = e;
    return { ...rest, github_commit_status: check ?? {} };
  });
}

export function commitStatusProvider(config: CommitStatusConfig, conditionOf: (ctx: FanOutContext) => (condition: string) => boolean): Provider {
  const enabled = enabledProviders(config);
  return {
    mayPlanOwn(name: EventName, pipeline: Pipeline | null, job: Job | null): boolean {
      if (!pipeline || !isOneOf(enabled, pipeline.providerId)) return false;
      if (name.startsWith('build.')) return true;
      if (!name.startsWith('job.')) return false;
      // A promise leaves the job running: its status is posted when it finishes.
      if (name === 'job.promised_exit_status') return false;
      return pipeline.providerSettings.publish_commit_status_per_step === true || notifyOf(job?.step).length > 0;
    },
    planOwn(ctx: FanOutContext): PlannedDelivery[] {
      const updates = statusUpdatesFor(ctx.event, {
        buildNotify: statusEntries(ctx.rendered.build),
        stepNotify: statusEntries(ctx.rendered.job?.step),
        enabledProviders: enabled,
        // A step entry's step.* variables hold at its step's moments (ctx.stepMoment), null otherwise.
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
