/**
 * A pipeline's `notify` entries (pipeline YAML, build level and step level) as deliveries, at
 * the events the documentation names for each (Triggering notifications):
 * - `webhook` (build level): build created, started, blocked and finished (`build.scheduled`,
 *   `build.running`, `build.finished`), the documented webhook body, no token;
 * - `slack`: build level at `build.finished` and `build.failing`, step level at the step's
 *   `step.failing` and `step.finished` (../step-moments.ts: once per step, not per job); posted
 *   through each enabled `slack` notification service of the organization (the documentation
 *   requires one), the channel as the message's override;
 * - `basecamp_campfire`: build level at build created, started, blocked, finished and skipped,
 *   step level at the step's `step.failing` and `step.finished`; a POST of `{content}` to the
 *   chatbot URL;
 * - `email` (build level): `build.failing` and `build.finished`, recorded as a delivery that
 *   fails at once: Windsock has no mail transport (README, "Notifications");
 * - `github_commit_status` and `github_check`: commit statuses (./commit-status.ts).
 * An entry's `if` is evaluated against the build when the event is fanned out, a step's also
 * against the step's moment (`step.state`, `step.outcome`...).
 */
import crypto from 'node:crypto';
import type { Job } from '../../builds/jobs/model';
import type { Pipeline } from '../../pipelines/repository';
import type { AttemptResult, EventName, HttpSend } from '../events';
import type { Delivery } from '../repository';
import type { ActiveService, FanOutContext, PlannedDelivery, Provider } from '../service';
import type { StepMoment } from '../step-moments';
import { postSlack, parseSlackNotify, slackChannelsOf, slackNotifyMessages, slackThemeOf, escapeSlack, type SlackMessage } from './slack';
import { DELIVERY_HEADER, postJson } from './webhook';
import { isRecord } from '../../core/guards';

/** The registry key of notify deliveries (their target's `provider`). */
export const NOTIFY = 'notify';

type Entry = Record<string, unknown>;

const WEBHOOK_EVENTS: EventName[] = ['build.scheduled', 'build.running', 'build.finished'];
const BASECAMP_EVENTS: EventName[] = ['build.scheduled', 'build.running', 'build.finished', 'build.skipped'];
const EMAIL_EVENTS: EventName[] = ['build.failing', 'build.finished'];
const SLACK_BUILD_EVENTS: EventName[] = ['build.failing', 'build.finished'];

/** The `notify` entries of a build or a step (what is not a list of maps has none). */
const entriesOf = (x: unknown): Entry[] => {
  const notify = isRecord(x) ? x.notify : undefined;
  return Array.isArray(notify) ? notify.filter(isRecord) : [];
};

const hash = (s: string) => crypto.createHash('sha256').update(s).digest('hex').slice(0, 32);

function target(kind: string, key: string, extra: Record<string, unknown>, payload: unknown, serviceId: string | null = null): PlannedDelivery {
  return { targetKind: 'notify', serviceId, target: { provider: NOTIFY, kind, ...extra }, targetKey: `notify:${kind}:${hash(key)}`, payload };
}

/** How a step's message says its moment. */
const SAYS: Record<StepMoment['outcome'], string> = {
  passed: 'passed',
  hard_failed: 'failed',
  soft_failed: 'soft failed',
  errored: 'errored',
  neutral: 'finished',
};

/** "<step> failed in <pipeline> #<number>", with the build's link (Slack's markup, or the URL after it). */
function stepHeadline(ctx: FanOutContext, step: StepMoment, slack: boolean): string {
  const build = ctx.event.payload.build ?? {};
  const pipeline = ctx.event.payload.pipeline ?? {};
  const says = step.state === 'failing' ? 'is failing' : SAYS[step.outcome];
  const [label, name, url] = [step.label ?? step.key ?? 'A step', String(pipeline.name ?? ''), String(build.web_url ?? '')];
  const number = String(build.number ?? '');
  return slack ? `${escapeSlack(label)} ${says} in <${url}|${escapeSlack(name)} #${number}>` : `${label} ${says} in ${name} #${number}: ${url}`;
}

/** A step's Slack message: the step, its moment and the build it belongs to; to `channel`, else the service's own. */
function stepSlackMessage(ctx: FanOutContext, step: StepMoment, channel: string | undefined, message: string | undefined): SlackMessage {
  const headline = stepHeadline(ctx, step, true);
  return { text: message ? `${message}\n${headline}` : headline, ...(channel ? { channel } : {}), attachments: [] };
}

export function notifyProvider(conditionOf: (ctx: FanOutContext) => (condition: string) => boolean): Provider {
  return {
    mayPlanOwn(name: EventName, pipeline: Pipeline | null, job: Job | null): boolean {
      if (name.startsWith('build.')) return true; // the build's own entries are only known once it is read
      return (name === 'job.finished' || name === 'job.promised_exit_status') && entriesOf(job?.step).some((e) => 'slack' in e || 'basecamp_campfire' in e);
    },
    planOwn(ctx: FanOutContext): PlannedDelivery[] {
      const name = ctx.event.name;
      const holds = conditionOf(ctx);
      const passes = (e: Entry) => typeof e.if !== 'string' || holds(e.if);
      const slackServices = ctx.services.filter((s) => s.provider === 'slack');
      const out: PlannedDelivery[] = [];
      const buildEntries = name.startsWith('build.') ? entriesOf(ctx.rendered.build) : [];
      for (const e of buildEntries.filter(passes)) {
        if (typeof e.webhook === 'string' && WEBHOOK_EVENTS.includes(name)) {
          out.push(target('webhook', e.webhook, { url: e.webhook }, ctx.event.payload));
        } else if (typeof e.basecamp_campfire === 'string' && BASECAMP_EVENTS.includes(name)) {
          const b = ctx.event.payload.build ?? {};
          const p = ctx.event.payload.pipeline ?? {};
          const content = `${String(p.name ?? '')} build #${String(b.number ?? '')} ${String(b.state ?? '')}: ${String(b.web_url ?? '')}`;
          out.push(target('basecamp_campfire', e.basecamp_campfire, { url: e.basecamp_campfire }, { content }));
        } else if (typeof e.email === 'string' && EMAIL_EVENTS.includes(name)) {
          out.push(target('email', e.email, { to: e.email }, ctx.event.payload));
        } else if ('slack' in e && SLACK_BUILD_EVENTS.includes(name)) {
          const notification = parseSlackNotify(e.slack);
          if (!notification) continue;
          for (const s of slackServices) {
            for (const msg of slackNotifyMessages(ctx.event, slackThemeOf(s.settings), notification)) {
              out.push(target('slack', `${s.id}:${msg.channel ?? ''}`, { service_id: s.id, channel: msg.channel ?? null }, msg, s.id));
            }
          }
        }
      }
      const step = ctx.stepMoment;
      if (step) {
        for (const e of entriesOf(ctx.rendered.job?.step).filter(passes)) {
          if (typeof e.basecamp_campfire === 'string') {
            out.push(target('basecamp_campfire', e.basecamp_campfire, { url: e.basecamp_campfire }, { content: stepHeadline(ctx, step, false) }));
            continue;
          }
          const notification = 'slack' in e ? parseSlackNotify(e.slack) : null;
          if (!notification) continue;
          for (const s of slackServices) {
            for (const channel of slackChannelsOf(notification)) {
              const msg = stepSlackMessage(ctx, step, channel, notification.message);
              out.push(target('slack', `${s.id}:${msg.channel ?? ''}`, { service_id: s.id, channel: msg.channel ?? null }, msg, s.id));
            }
          }
        }
      }
      return out;
    },
    async send(d: Delivery, service: ActiveService | null, http: HttpSend): Promise<AttemptResult> {
      const t = d.target ?? {};
      switch (t.kind) {
        case 'webhook':
          return postJson(http, String(t.url), JSON.stringify(d.payload), { 'X-Buildkite-Event': d.event, [DELIVERY_HEADER]: d.id });
        case 'basecamp_campfire':
          return postJson(http, String(t.url), JSON.stringify(d.payload), {});
        case 'slack':
          if (!service) return { ok: false, status: null, excerpt: 'the Slack notification service was deleted', final: true };
          // cast: the payload is the SlackMessage planOwn stored at fan-out.
          return postSlack(String(service.settings.url ?? ''), d.payload as SlackMessage, http);
        case 'email':
          return { ok: false, status: null, excerpt: 'not sent: Windsock has no mail transport (the notification is recorded only)', final: true };
        default:
          return { ok: false, status: null, excerpt: `no sender for notify ${String(t.kind)}`, final: true };
      }
    },
  };
}
