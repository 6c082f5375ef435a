/**
 * `notify`: the notifications of a build (the configuration's top level) or of a command step,
 * read and checked in both dialects and kept exactly as written (the delivery side reads them
 * from the pipeline, the build and the job's step). Nothing is sent here.
 *
 * Each entry is one of the documented kinds with an optional `if`; a step may only have the
 * step-level kinds the documentation lists (Basecamp, GitHub commit status, GitHub check and Slack).
 */
import { NOTIFY_CONDITION_VARIABLES, STEP_NOTIFY_CONDITION_VARIABLES, conditionProblem, parseCondition } from '../filter-condition';
import { MAX_LIST, MAX_NAME, MAX_PROMPT, MAX_REF } from './limits';
import { isOneOf } from '../../db/row-types';
import { NOTIFY_KINDS_REPORTED } from './step-attributes';
import { mapping, quote, tooLong, tooMany, type ProblemReporter } from './problems';
import { text, type FoundProperty } from './property-readers';
import { everyValue } from '../../core/enum-values';
import type {
  GitHubCheckAnnotationLevel,
  NotifyEntry,
  NotifyGitHubCheck,
  NotifyGitHubCheckAnnotation,
  NotifyGitHubCheckOutput,
  NotifyGitHubCommitStatus,
  NotifyKind,
  NotifySlack,
} from './step-types';
import type { ConfigMap, ConfigValue } from './value-tree';

export const NOTIFY_KINDS: readonly NotifyKind[] = [
  'email',
  'webhook',
  'slack',
  'basecamp_campfire',
  'pagerduty_change_event',
  'github_commit_status',
  'github_check',
];
/** The kinds a command step may have (the documentation's "Step" column). */
export const STEP_NOTIFY_KINDS: readonly NotifyKind[] = ['slack', 'basecamp_campfire', 'github_commit_status', 'github_check'];
const MAX_URL = 2048;
const MAX_CONDITION = 1000;
/** What the API takes for an email address (also the command line's rule for `--email`). */
export const EMAIL = /^[^\s@]+@[^\s@]+$/;

export type NotifyLevel = 'build' | 'step';

/** The entries of a `notify` list; [] when absent. Problems are reported, bad entries left out. */
export function notify(reporter: ProblemReporter, found: FoundProperty | undefined, level: NotifyLevel): NotifyEntry[] {
  if (!found) return [];
  const [path, v] = found;
  if (v.kind !== 'list') return (reporter.fail(path, `must be a list of notifications, each ${mapping(reporter)} such as {slack: "#channel"}`, v), []);
  if (v.items.length > MAX_LIST) return (reporter.fail(path, tooMany(MAX_LIST), v), []);
  const out: NotifyEntry[] = [];
  v.items.forEach((item, i) => {
    const entry = notifyEntry(reporter, `${path}[${i}]`, item, level);
    if (entry) out.push(entry);
  });
  return out;
}

function notifyEntry(reporter: ProblemReporter, at: string, item: ConfigValue, level: NotifyLevel): NotifyEntry | undefined {
  const allowed = level === 'build' ? NOTIFY_KINDS : STEP_NOTIFY_KINDS;
  // `- github_check` alone: the kind with its defaults, as the pipeline schema allows.
  if (item.kind === 'str' && (item.value === 'github_check' || item.value === 'github_commit_status')) return { [item.value]: {} } as NotifyEntry;
  if (item.kind !== 'map') return void reporter.fail(at, `must be ${mapping(reporter)} with one of ${allowed.join(', ')}`, item);
  const kinds = item.keys.filter((k) => isOneOf(NOTIFY_KINDS, k));
  const unknown = item.keys.filter((k) => k !== 'if' && !isOneOf(NOTIFY_KINDS, k));
  let ok = true;
  for (const key of unknown) {
    reporter.fail(`${at}.${key}`, `is not a notification type: use one of ${allowed.join(', ')}`, item.get(key));
    ok = false;
  }
  if (kinds.length === 0) {
    if (unknown.length === 0) reporter.fail(at, `must have one of ${allowed.join(', ')}`, item);
    return undefined;
  }
  if (kinds.length > 1) return void reporter.fail(at, `must have exactly one notification type, not ${kinds.map(quote).join(' and ')}`, item);
  const kind = kinds[0]!;
  const value = item.get(kind)!;
  if (level === 'step' && !STEP_NOTIFY_KINDS.includes(kind)) {
    return void reporter.fail(`${at}.${kind}`, `is a build-level notification only: put it in the pipeline's top-level notify`, value);
  }
  const target = notifyTarget(reporter, `${at}.${kind}`, kind, value, level);
  const why = Object.hasOwn(NOTIFY_KINDS_REPORTED, kind) ? NOTIFY_KINDS_REPORTED[kind] : undefined;
  if (why !== undefined) reporter.notice(`${at}.${kind}`, why);
  const condition = notifyCondition(reporter, `${at}.if`, item.get('if'), level);
  if (!ok || target === undefined || condition === undefined) return undefined;
  // Built key by key so the stored JSON keeps the documented order: the kind, then `if`.
  // cast: a computed key loses the pairing of `kind` and its target that notifyTarget checked for that kind.
  const entry = { [kind]: target } as NotifyEntry;
  if (condition !== null) entry.if = condition;
  return entry;
}

function notifyTarget(
  reporter: ProblemReporter,
  at: string,
  kind: NotifyKind,
  v: ConfigValue,
  level: NotifyLevel,
): NotifySlack | NotifyGitHubCommitStatus | NotifyGitHubCheck | undefined {
  switch (kind) {
    case 'email': {
      const s = requiredText(reporter, at, v, MAX_REF);
      if (s !== undefined && !EMAIL.test(s.trim())) return void reporter.fail(at, 'must be an email address', v);
      return s;
    }
    case 'webhook':
    case 'basecamp_campfire': {
      const s = requiredText(reporter, at, v, MAX_URL);
      if (s !== undefined && !isHttpUrl(s)) return void reporter.fail(at, 'must be an http or https URL', v);
      return s;
    }
    case 'pagerduty_change_event':
      return requiredText(reporter, at, v, MAX_REF);
    case 'slack':
      return slack(reporter, at, v);
    case 'github_commit_status':
      return gitHubCommitStatus(reporter, at, v, level);
    case 'github_check':
      return gitHubCheck(reporter, at, v);
  }
}

function requiredText(reporter: ProblemReporter, at: string, v: ConfigValue, max: number): string | undefined {
  const s = text(v);
  if (s === undefined) return void reporter.fail(at, 'must be a string', v);
  if (s.trim() === '') return void reporter.fail(at, "can't be blank", v);
  if (s.length > max) return void reporter.fail(at, tooLong(max), v);
  return s;
}

function isHttpUrl(s: string): boolean {
  try {
    const url = new URL(s.trim());
    return (url.protocol === 'http:' || url.protocol === 'https:') && url.hostname !== '';
  } catch {
    return false;
  }
}

function slack(reporter: ProblemReporter, at: string, v: ConfigValue): NotifySlack | undefined {
  if (v.kind !== 'map') return requiredText(reporter, at, v, MAX_NAME);
  let ok = onlyKeys(reporter, at, v, ['channels', 'message']);
  const out: Exclude<NotifySlack, string> = {};
  const channels = v.get('channels');
  if (channels !== undefined && channels.kind !== 'null') {
    if (channels.kind !== 'list' || channels.items.length === 0) {
      reporter.fail(`${at}.channels`, 'must be a non-empty list of channels such as "#general"', channels);
      ok = false;
    } else if (channels.items.length > MAX_LIST) {
      reporter.fail(`${at}.channels`, tooMany(MAX_LIST), channels);
      ok = false;
    } else {
      const list = channels.items.map((c, j) => requiredText(reporter, `${at}.channels[${j}]`, c, MAX_NAME));
      if (list.every((c): c is string => c !== undefined)) out.channels = list;
      else ok = false;
    }
  }
  const message = v.get('message');
  if (message !== undefined && message.kind !== 'null') {
    const s = text(message);
    if (s === undefined) ok = (reporter.fail(`${at}.message`, 'must be a string', message), false);
    else if (s.length > MAX_PROMPT) ok = (reporter.fail(`${at}.message`, tooLong(MAX_PROMPT), message), false);
    else out.message = s;
  }
  if (ok && out.channels === undefined && out.message === undefined) {
    reporter.fail(at, `must be a channel or ${mapping(reporter)} with "channels" and an optional "message"`, v);
    ok = false;
  }
  return ok ? out : undefined;
}

/**
 * `{context, blocked_builds_as_pending}`; an empty `github_commit_status:` (null) means the
 * default context. The docs: `blocked_builds_as_pending` "is only available for build-level
 * notifications".
 */
function gitHubCommitStatus(reporter: ProblemReporter, at: string, v: ConfigValue, level: NotifyLevel): NotifyGitHubCommitStatus | undefined {
  if (v.kind === 'null') return {};
  if (v.kind !== 'map') return void reporter.fail(at, `must be ${mapping(reporter)} with an optional "context"`, v);
  if (!onlyKeys(reporter, at, v, ['context', 'blocked_builds_as_pending'])) return undefined;
  const out: NotifyGitHubCommitStatus = {};
  let ok = optionalString(reporter, `${at}.context`, v.get('context'), MAX_REF, (s) => (out.context = s));
  const pending = v.get('blocked_builds_as_pending');
  if (pending !== undefined && pending.kind !== 'null') {
    if (level === 'step')
      ok = (reporter.fail(`${at}.blocked_builds_as_pending`, "is a build-level option only: a step's status is not the build's", pending), false);
    else if (pending.kind !== 'bool') ok = (reporter.fail(`${at}.blocked_builds_as_pending`, 'must be true or false', pending), false);
    else out.blocked_builds_as_pending = pending.value;
  }
  return ok ? out : undefined;
}

const ANNOTATION_LEVELS = everyValue<GitHubCheckAnnotationLevel>()(['notice', 'warning', 'failure'] as const satisfies readonly GitHubCheckAnnotationLevel[]);
/** GitHub's limits: a check run's output takes at most 50 annotations per request, and 65,535 characters per text. */
const MAX_CHECK_ANNOTATIONS = 50;
const MAX_CHECK_TEXT = 65535;

/** `{name, output}` (`context`: the name, as Windsock read it before), kept as written; null means the default name. */
function gitHubCheck(reporter: ProblemReporter, at: string, v: ConfigValue): NotifyGitHubCheck | undefined {
  if (v.kind === 'null') return {};
  if (v.kind !== 'map') return void reporter.fail(at, `must be ${mapping(reporter)} with an optional "name" and "output"`, v);
  if (!onlyKeys(reporter, at, v, ['name', 'output', 'context'])) return undefined;
  const out: NotifyGitHubCheck = {};
  let ok = optionalString(reporter, `${at}.name`, v.get('name'), MAX_REF, (s) => (out.name = s));
  ok = optionalString(reporter, `${at}.context`, v.get('context'), MAX_REF, (s) => (out.context = s)) && ok;
  const output = v.get('output');
  if (output !== undefined && output.kind !== 'null') {
    const o = checkOutput(reporter, `${at}.output`, output);
    if (o) out.output = o;
    else ok = false;
  }
  return ok ? out : undefined;
}

function checkOutput(reporter: ProblemReporter, at: string, v: ConfigValue): NotifyGitHubCheckOutput | undefined {
  if (v.kind !== 'map') return void reporter.fail(at, `must be ${mapping(reporter)} with "title", "summary", "text" or "annotations"`, v);
  if (!onlyKeys(reporter, at, v, ['title', 'summary', 'text', 'annotations'])) return undefined;
  const out: NotifyGitHubCheckOutput = {};
  let ok = optionalString(reporter, `${at}.title`, v.get('title'), MAX_REF, (s) => (out.title = s));
  ok = optionalString(reporter, `${at}.summary`, v.get('summary'), MAX_CHECK_TEXT, (s) => (out.summary = s)) && ok;
  ok = optionalString(reporter, `${at}.text`, v.get('text'), MAX_CHECK_TEXT, (s) => (out.text = s)) && ok;
  const list = v.get('annotations');
  if (list !== undefined && list.kind !== 'null') {
    if (list.kind !== 'list') return void reporter.fail(`${at}.annotations`, 'must be a list of annotations', list);
    if (list.items.length > MAX_CHECK_ANNOTATIONS) return void reporter.fail(`${at}.annotations`, tooMany(MAX_CHECK_ANNOTATIONS), list);
    const annotations = list.items.map((a, i) => checkAnnotation(reporter, `${at}.annotations[${i}]`, a));
    if (annotations.every((a): a is NotifyGitHubCheckAnnotation => a !== undefined)) out.annotations = annotations;
    else ok = false;
  }
  return ok ? out : undefined;
}

function checkAnnotation(reporter: ProblemReporter, at: string, v: ConfigValue): NotifyGitHubCheckAnnotation | undefined {
  const fields = ['path', 'start_line', 'end_line', 'annotation_level', 'message', 'start_column', 'end_column'];
  if (v.kind !== 'map')
    return void reporter.fail(at, `must be ${mapping(reporter)} with "path", "start_line", "end_line", "annotation_level" and "message"`, v);
  if (!onlyKeys(reporter, at, v, fields)) return undefined;
  const path = requiredField(reporter, at, v, 'path', (x) => requiredText(reporter, `${at}.path`, x, 1024));
  const message = requiredField(reporter, at, v, 'message', (x) => requiredText(reporter, `${at}.message`, x, MAX_CHECK_TEXT));
  const level = requiredField(reporter, at, v, 'annotation_level', (x) => {
    const s = text(x);
    if (isOneOf(ANNOTATION_LEVELS, s)) return s;
    return void reporter.fail(`${at}.annotation_level`, `must be one of ${ANNOTATION_LEVELS.join(', ')}`, x);
  });
  const line = (name: string) => (x: ConfigValue) =>
    x.kind === 'num' && Number.isInteger(x.value) && x.value >= 1 ? x.value : void reporter.fail(`${at}.${name}`, 'must be a positive whole number', x);
  const startLine = requiredField(reporter, at, v, 'start_line', line('start_line'));
  const endLine = requiredField(reporter, at, v, 'end_line', line('end_line'));
  const column = (name: 'start_column' | 'end_column') => {
    const x = v.get(name);
    return x === undefined || x.kind === 'null' ? null : line(name)(x);
  };
  const startColumn = column('start_column');
  const endColumn = column('end_column');
  if (path === undefined || message === undefined || level === undefined || startLine === undefined || endLine === undefined) return undefined;
  if (startColumn === undefined || endColumn === undefined) return undefined;
  if (endLine < startLine) return void reporter.fail(`${at}.end_line`, 'must not be before start_line', v.get('end_line'));
  const out: NotifyGitHubCheckAnnotation = { path, start_line: startLine, end_line: endLine, annotation_level: level, message };
  if (startColumn !== null) out.start_column = startColumn;
  if (endColumn !== null) out.end_column = endColumn;
  return out;
}

/** A required field of a mapping, read by `read` (which reports what is wrong); undefined once reported. */
function requiredField<T>(reporter: ProblemReporter, at: string, map: ConfigMap, name: string, read: (v: ConfigValue) => T | undefined): T | undefined {
  const v = map.get(name);
  if (v === undefined || v.kind === 'null') return void reporter.fail(`${at}.${name}`, "can't be blank", map);
  return read(v);
}

/** An optional string field: handed to `set` when present; false once a problem is reported. */
function optionalString(reporter: ProblemReporter, at: string, v: ConfigValue | undefined, max: number, set: (s: string) => void): boolean {
  if (v === undefined || v.kind === 'null') return true;
  const s = requiredText(reporter, at, v, max);
  if (s === undefined) return false;
  set(s);
  return true;
}

function onlyKeys(reporter: ProblemReporter, at: string, map: ConfigMap, keys: string[]): boolean {
  const extra = map.keys.filter((k) => !keys.includes(k));
  for (const k of extra) reporter.fail(`${at}.${k}`, `is not an attribute of this notification: use ${keys.map((x) => `"${x}"`).join(' or ')}`, map.get(k));
  return extra.length === 0;
}

/**
 * The entry's `if`: null when absent, undefined once a problem has been reported. A step's entries
 * may also read the `step.*` variables (`step.outcome == "hard_failed"`, the docs' example). The
 * docs say `build.state` "cannot be used on step-level notifications": a step's entry that names
 * it is kept, told in the Warning header, and reads it as null.
 */
function notifyCondition(reporter: ProblemReporter, at: string, v: ConfigValue | undefined, level: NotifyLevel): string | null | undefined {
  if (v === undefined || v.kind === 'null') return null;
  const s = text(v);
  if (s === undefined) return void reporter.fail(at, 'must be a string', v);
  if (s.length > MAX_CONDITION) return void reporter.fail(at, tooLong(MAX_CONDITION), v);
  const variables = level === 'step' ? [...NOTIFY_CONDITION_VARIABLES, ...STEP_NOTIFY_CONDITION_VARIABLES] : NOTIFY_CONDITION_VARIABLES;
  const parsed = parseCondition(s, variables);
  if (!parsed.ok) return void reporter.fail(at, conditionProblem(parsed.error), v);
  if (level === 'step' && parsed.condition.variables().has('build.state'))
    reporter.notice(at, "`build.state` reads null in a step's notification: a step cannot know the state of the entire build (use `step.outcome`)");
  return s;
}
