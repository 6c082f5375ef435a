/**
 * Slack notifications, the legacy `slack` notification service and the pipeline YAML's
 * `notify: - slack: ...` both posted to a Slack (or Slack-compatible) incoming webhook.
 *
 * The service's settings are the notification services API's: `url` (the incoming webhook) and
 * `theme` (`text` or `emoji`). Which events post a message follows the service's `build_states`
 * (build_passed, build_fixed, build_failed, build_blocked, build_canceled, build_failing,
 * job_activated). A YAML notification names channels and maybe a message; the webhook URL is
 * the organization's Slack service's, the channel goes as the payload's `channel` override (which
 * Slack-compatible receivers honour; Slack's own app webhooks post to the channel they were made
 * for). Build-level YAML notifications happen at `build.finished` and `build.failing`, as the
 * notify documentation lists; their `if` is evaluated by the caller.
 *
 * Text taken from a build (message, branch, names) is escaped as Slack requires (`&`, `<`, `>`);
 * a YAML notification's own `message` is the pipeline author's Slack markup (user mentions such
 * as `<@U024BE7LH>` are documented) and is sent as written.
 */
import type { AttemptResult, NotificationEvent, Representation } from '../events';
import { isOneOf } from '../../db/row-types';
import { isRecord } from '../../core/guards';

/** The HTTP client the caller hands in (the SSRF-safe one of the delivery side). */
export type HttpSend = (req: { method: string; url: string; headers: Record<string, string>; body?: string }) => Promise<{
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Buffer;
}>;

export const BUILD_STATE_KEYS = ['build_passed', 'build_fixed', 'build_failed', 'build_blocked', 'build_canceled', 'build_failing', 'job_activated'] as const;
export type BuildStateKey = (typeof BUILD_STATE_KEYS)[number];
/** A service's `build_states`: which of these post a message. */
export type BuildStates = Partial<Record<BuildStateKey, boolean>>;

export type SlackTheme = 'text' | 'emoji';

export interface SlackSettings {
  /** The incoming webhook URL. Secret: never returned by the API, never logged. */
  url: string;
  /** `emoji` (the default) puts an emoji before the headline; `text` words only. */
  theme?: SlackTheme | null;
}

export interface SlackField {
  title: string;
  value: string;
  short: boolean;
}

export interface SlackAttachment {
  color: string;
  fallback: string;
  title: string;
  title_link?: string;
  text: string;
  fields: SlackField[];
  mrkdwn_in: string[];
}

/** An incoming webhook's payload. */
export interface SlackMessage {
  text: string;
  channel?: string;
  attachments: SlackAttachment[];
}

/** One `notify: - slack: ...` of a pipeline's YAML. */
export interface SlackNotification {
  /** None: the service's own channel (an entry with a `message` and no `channels`). */
  channels: string[];
  message?: string;
}

/** `&`, `<` and `>` as Slack's message formatting requires them escaped. */
export function escapeSlack(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** A link in Slack's markup; the label escaped, and a URL that would break the markup left out. */
function link(url: string | undefined, label: string): string {
  if (!url || /[<>|\s]/.test(url)) return escapeSlack(label);
  return `<${url.replace(/&/g, '&amp;')}|${escapeSlack(label)}>`;
}

const rec = (v: unknown): Representation | null => (isRecord(v) ? v : null);
const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined);

const LOOK: Record<BuildStateKey, { color: string; emoji: string; verb: string }> = {
  build_passed: { color: '#36a64f', emoji: ':white_check_mark:', verb: 'passed' },
  build_fixed: { color: '#36a64f', emoji: ':white_check_mark:', verb: 'passed (fixed)' },
  build_failed: { color: '#d0021b', emoji: ':x:', verb: 'failed' },
  build_blocked: { color: '#e8a317', emoji: ':double_vertical_bar:', verb: 'is blocked' },
  build_canceled: { color: '#9b9b9b', emoji: ':no_entry_sign:', verb: 'was canceled' },
  build_failing: { color: '#f5821f', emoji: ':warning:', verb: 'is failing' },
  job_activated: { color: '#e8a317', emoji: ':raised_hand:', verb: 'is waiting' },
};

/** The colour of a build's state, for messages that are not about one of the service's states. */
function colorOfState(state: string | undefined): string {
  switch (state) {
    case 'passed':
      return LOOK.build_passed.color;
    case 'failed':
      return LOOK.build_failed.color;
    case 'failing':
      return LOOK.build_failing.color;
    case 'canceled':
    case 'canceling':
      return LOOK.build_canceled.color;
    case 'blocked':
      return LOOK.build_blocked.color;
    default:
      return '#439fe0';
  }
}

/**
 * Which of the service's build states an event is, or null when it is none: a finished build by
 * its state (a pass after the branch's previous finished build failed is `build_fixed`), a
 * failing build, a block step that became active.
 */
export function slackStateOf(event: NotificationEvent, previousOnBranch?: string | null): BuildStateKey | null {
  const build = rec(event.payload.build);
  switch (event.name) {
    case 'build.finished': {
      const state = str(build?.state);
      if (state === 'blocked' || (state === 'passed' && build?.blocked === true)) return 'build_blocked';
      if (state === 'passed') return previousOnBranch === 'failed' ? 'build_fixed' : 'build_passed';
      if (state === 'failed') return 'build_failed';
      if (state === 'canceled') return 'build_canceled';
      return null;
    }
    case 'build.failing':
      return 'build_failing';
    case 'job.activated':
      return rec(event.payload.job)?.type === 'manual' ? 'job_activated' : null;
    default:
      return null;
  }
}

/** Whether a service's `build_states` take a state: `build_fixed` is also sent by `build_passed` (every pass). */
function wanted(state: BuildStateKey, buildStates: BuildStates): boolean {
  if (state === 'build_fixed') return buildStates.build_fixed === true || buildStates.build_passed === true;
  return buildStates[state] === true;
}

interface Described {
  headline: string;
  fallback: string;
  title: string;
  url: string | undefined;
  attachmentText: string;
  fields: SlackField[];
}

/** The parts of a message about an event's build (and job), escaped. */
function describe(event: NotificationEvent, verb: string): Described | null {
  const build = rec(event.payload.build);
  if (!build) return null;
  const pipeline = rec(event.payload.pipeline) ?? rec(build.pipeline);
  const pipelineName = str(pipeline?.name) ?? str(pipeline?.slug) ?? 'Pipeline';
  const number = typeof build.number === 'number' ? build.number : undefined;
  const title = number !== undefined ? `${pipelineName} #${number}` : pipelineName;
  const branch = str(build.branch);
  const url = str(build.web_url);
  const job = event.name.startsWith('job.') ? rec(event.payload.job) : null;
  const jobLabel = job ? (str(job.label) ?? str(job.name) ?? 'a block step') : undefined;
  const fullVerb = jobLabel ? `${verb} on ${jobLabel}` : verb;
  const where = branch ? ` (${branch})` : '';
  const creator = rec(build.creator);
  const author = rec(build.author);
  const who = str(creator?.name) ?? str(author?.name) ?? event.payload.sender?.name;
  const commit = str(build.commit);
  const fields: SlackField[] = [];
  if (branch) fields.push({ title: 'Branch', value: escapeSlack(branch), short: true });
  if (commit) fields.push({ title: 'Commit', value: escapeSlack(commit.slice(0, 7)), short: true });
  if (who) fields.push({ title: 'Created by', value: escapeSlack(who), short: true });
  return {
    headline: `${link(url, title)}${escapeSlack(where)} ${escapeSlack(fullVerb)}`,
    fallback: escapeSlack(`${title}${where} ${fullVerb}`),
    title,
    url,
    attachmentText: escapeSlack(str(build.message) ?? ''),
    fields,
  };
}

function message(d: Described, color: string, emoji: string | null, text: string, channel?: string): SlackMessage {
  return {
    text: emoji ? `${emoji} ${text}` : text,
    ...(channel ? { channel } : {}),
    attachments: [
      {
        color,
        fallback: d.fallback,
        title: escapeSlack(d.title),
        ...(d.url ? { title_link: d.url } : {}),
        text: d.attachmentText,
        fields: d.fields,
        mrkdwn_in: ['text'],
      },
    ],
  };
}

/**
 * The message a `slack` service posts for an event, or null when its `build_states` take none
 * of it. `previousOnBranch` is the state of the branch's previous finished build (the caller
 * reads it), which tells a fix from a pass.
 */
export function slackMessageFor(
  event: NotificationEvent,
  settings: Pick<SlackSettings, 'theme'>,
  buildStates: BuildStates,
  previousOnBranch?: string | null,
): SlackMessage | null {
  const state = slackStateOf(event, previousOnBranch);
  if (!state || !wanted(state, buildStates)) return null;
  const look = LOOK[state];
  const d = describe(event, look.verb);
  if (!d) return null;
  return message(d, look.color, settings.theme === 'text' ? null : look.emoji, d.headline);
}

/** The events at which a build-level YAML Slack notification is sent. */
export const SLACK_NOTIFY_EVENTS = ['build.finished', 'build.failing'] as const;

/**
 * The value of a `slack:` key of `notify` as a notification, or null when it is none of the
 * documented forms: `"#channel"`, `"@user"`, `"workspace#channel"`, a Slack id, or
 * `{channels: [...], message: "..."}`.
 */
export function parseSlackNotify(value: unknown): SlackNotification | null {
  if (typeof value === 'string') return value.trim() ? { channels: [value.trim()] } : null;
  const o = rec(value);
  if (!o) return null;
  const channels = Array.isArray(o.channels) ? o.channels.filter((c): c is string => typeof c === 'string' && c.trim() !== '').map((c) => c.trim()) : [];
  const msg = str(o.message);
  if (msg) return { channels, message: msg };
  return channels.length ? { channels } : null;
}

/** Where a notification posts: each channel it names (as the override an incoming webhook takes), or the service's own channel (undefined) when it names none. */
export function slackChannelsOf(n: SlackNotification): (string | undefined)[] {
  return n.channels.length ? n.channels.map(webhookChannel) : [undefined];
}

/**
 * The channel an incoming webhook's `channel` override names for a YAML channel: the
 * workspace prefix (`workspace#channel`, `workspace@U123`) dropped, the rest as written
 * (`#general`, `@someuser`, `C0B1SRLV43S`).
 */
export function webhookChannel(channel: string): string {
  const hash = channel.indexOf('#');
  if (hash > 0) return channel.slice(hash);
  const at = channel.indexOf('@');
  if (at > 0) return channel.slice(at + 1);
  return channel;
}

/** The messages a YAML `slack` notification posts for an event: one per channel; none at other events. */
export function slackNotifyMessages(event: NotificationEvent, settings: Pick<SlackSettings, 'theme'>, notification: SlackNotification): SlackMessage[] {
  if (!isOneOf(SLACK_NOTIFY_EVENTS, event.name)) return [];
  const build = rec(event.payload.build);
  const state = str(build?.state);
  const key = slackStateOf(event);
  const look = key ? LOOK[key] : null;
  const verb = look?.verb ?? (state ? `finished (${state})` : 'finished');
  const d = describe(event, verb);
  if (!d) return [];
  const emoji = settings.theme === 'text' ? null : (look?.emoji ?? ':information_source:');
  const color = look?.color ?? colorOfState(state);
  // The author's message is their own Slack markup, sent as written; the headline follows it.
  const text = notification.message ? `${notification.message}\n${d.headline}` : d.headline;
  return slackChannelsOf(notification).map((channel) => message(d, color, notification.message ? null : emoji, text, channel));
}

/** The theme of a Slack service's stored settings (text or emoji; anything else is the default). */
export const slackThemeOf = (settings: Record<string, unknown>): Pick<SlackSettings, 'theme'> => ({
  theme: settings.theme === 'text' || settings.theme === 'emoji' ? settings.theme : null,
});

/**
 * Posts a message to an incoming webhook. ok on 2xx; `final` on a 4xx other than 408/429 (a
 * removed webhook answers 404 `no_service`, a bad payload 400); no status when no answer came.
 * The URL is a secret and never appears in the result.
 */
export async function postSlack(url: string, msg: SlackMessage, http: HttpSend): Promise<AttemptResult> {
  let answer: Awaited<ReturnType<HttpSend>>;
  try {
    answer = await http({
      method: 'POST',
      url,
      headers: { 'Content-Type': 'application/json; charset=utf-8', 'User-Agent': 'Windsock-Slack-Notifications' },
      body: JSON.stringify(msg),
    });
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    // A refusal no retry changes (an address that is not public) is final, as for every provider.
    const final = typeof error === 'object' && error !== null && 'final' in error && error.final === true;
    return { ok: false, status: null, excerpt: reason.split(url).join('[webhook URL]').slice(0, 512), ...(final ? { final } : {}) };
  }
  const { status } = answer;
  const excerpt = answer.body.subarray(0, 512).toString('utf8');
  if (status >= 200 && status < 300) return { ok: true, status, excerpt };
  const final = status >= 400 && status < 500 && status !== 408 && status !== 429;
  return { ok: false, status, excerpt, ...(final ? { final } : {}) };
}
