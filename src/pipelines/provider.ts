/**
 * The repository provider of a pipeline: which hosting service its repository lives on (from the
 * repository URL), and the provider `settings` the API shows and accepts as `provider_settings`.
 */

import type { FieldError } from '../core/errors';
import { validateBranchFilter } from './branch-filter';
import { conditionError } from './filter-condition';
import { isOneOf } from '../db/row-types';

export type ProviderId = 'github' | 'github_enterprise' | 'gitlab' | 'gitlab_ee' | 'bitbucket' | 'bitbucket_server' | 'git';

export const PROVIDER_IDS: readonly ProviderId[] = ['github', 'github_enterprise', 'gitlab', 'gitlab_ee', 'bitbucket', 'bitbucket_server', 'git'];

export type ProviderSettings = Record<string, boolean | string | null>;

export interface ProviderHosts {
  githubEnterpriseHosts?: string[];
  gitlabEeHosts?: string[];
  bitbucketServerHosts?: string[];
}

export const TRIGGER_MODES = ['code', 'deployment', 'fork', 'none'] as const;

const FILTER_CONDITION_MAX = 1000;
// Same ceiling as every other branch filter in the contract (`branch_configuration` etc.).
const BRANCH_FILTER_MAX = 4096;

// ---------------------------------------------------------------------------------------------
// Repository URLs

interface Remote {
  host: string;
  path: string;
}

/**
 * Host and path of a git remote, or null for local paths and anything unparseable. Hand-rolled
 * rather than `new URL()` because scp-like remotes are not URLs, and because people paste
 * almost-URLs (`ssh://git@host:owner/repo.git`) that git itself accepts.
 */
function parseRemote(repository: unknown): Remote | null {
  if (typeof repository !== 'string') return null;
  const s = repository.trim();
  if (s === '' || /\s/.test(s)) return null;

  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(s);
  if (scheme) {
    if ((scheme[1] ?? '').toLowerCase() === 'file') return null;
    const rest = s.slice(scheme[0].length);
    const cut = rest.search(/[/?#]/);
    const authority = cut === -1 ? rest : rest.slice(0, cut);
    let path = cut === -1 ? '' : rest.slice(cut);
    const hostPort = authority.slice(authority.lastIndexOf('@') + 1);
    const bracketed = /^\[([^\]]*)\](?::(.*))?$/.exec(hostPort);
    let host: string;
    let port: string;
    if (bracketed) {
      host = bracketed[1] ?? '';
      port = bracketed[2] ?? '';
    } else {
      const colon = hostPort.indexOf(':');
      host = colon === -1 ? hostPort : hostPort.slice(0, colon);
      port = colon === -1 ? '' : hostPort.slice(colon + 1);
    }
    // `ssh://git@github.com:owner/repo.git` mixes the two syntaxes; the "port" is really the owner.
    if (port !== '' && !/^\d+$/.test(port)) path = `/${port}${path}`;
    return validHost(host) ? { host: host.toLowerCase(), path } : null;
  }

  // scp-like `[user@]host:path` or `[user@][v6addr]:path`: git's rule is a colon before any slash.
  const v6 = /^(?:[^@/[\]]*@)?\[([^\]/]*)\]:/.exec(s);
  if (v6) return validHost(v6[1] ?? '') ? { host: (v6[1] ?? '').toLowerCase(), path: s.slice(v6[0].length) } : null;
  const colon = s.indexOf(':');
  const slash = s.indexOf('/');
  if (colon <= 0 || (slash !== -1 && slash < colon)) return null;
  const host = s.slice(s.lastIndexOf('@', colon) + 1, colon);
  // `C:\repo` or `C:/repo` is a Windows path, not a host called "C".
  if (/^[a-z]$/i.test(host)) return null;
  return validHost(host) ? { host: host.toLowerCase(), path: s.slice(colon + 1) } : null;
}

function validHost(host: string): boolean {
  return host !== '' && /^[a-z0-9._:-]+$/i.test(host) && /[a-z0-9]/i.test(host);
}

// Alternative hostnames of the hosted services (SSH over 443, `www.`), so they are not mistaken
// for self-hosted installs just because their names contain the product name.
const SAAS_HOSTS: ReadonlyMap<string, ProviderId> = new Map<string, ProviderId>([
  ['github.com', 'github'],
  ['www.github.com', 'github'],
  ['ssh.github.com', 'github'],
  ['gitlab.com', 'gitlab'],
  ['www.gitlab.com', 'gitlab'],
  ['altssh.gitlab.com', 'gitlab'],
  ['bitbucket.org', 'bitbucket'],
  ['www.bitbucket.org', 'bitbucket'],
  ['altssh.bitbucket.org', 'bitbucket'],
]);

export function detectProvider(repository: string, opts: ProviderHosts = {}): ProviderId {
  const remote = parseRemote(repository);
  if (!remote) return 'git';
  const { host } = remote;
  // The hosted services come first: configuring github.com as an "enterprise" host is a mistake
  // that should not change how every github.com pipeline behaves.
  const saas = SAAS_HOSTS.get(host);
  if (saas) return saas;
  if (listed(opts.githubEnterpriseHosts, host)) return 'github_enterprise';
  if (listed(opts.gitlabEeHosts, host)) return 'gitlab_ee';
  if (listed(opts.bitbucketServerHosts, host)) return 'bitbucket_server';
  // GitHub Enterprise Cloud with data residency lives on <tenant>.ghe.com.
  if (host.includes('github') || host.endsWith('.ghe.com')) return 'github_enterprise';
  if (host.includes('gitlab')) return 'gitlab_ee';
  if (host.includes('bitbucket')) return 'bitbucket_server';
  return 'git';
}

function listed(hosts: unknown, host: string): boolean {
  // Configuration comes from the environment; tolerate case, blanks and a `host:port` entry.
  if (!Array.isArray(hosts)) return false;
  return hosts.some((h) => typeof h === 'string' && h.trim().toLowerCase().replace(/:\d+$/, '') === host);
}

/** The lower-case host of a repository URL, or null for local paths and anything unparseable. */
export function repositoryHost(repository: string): string | null {
  return parseRemote(repository)?.host ?? null;
}

/**
 * `owner/name` of a repository URL (`group/sub/name` on GitLab, `PROJ/repo` on Bitbucket Server),
 * or null when the URL names no such path (local paths, a bare host, a single path segment).
 */
export function repositoryPath(repository: string): string | null {
  const remote = parseRemote(repository);
  if (!remote) return null;
  const { host } = remote;
  let segments = remote.path
    .replace(/[?#].*$/, '')
    .split('/')
    .filter((seg) => seg !== '');
  const last = segments.length - 1;
  const name = segments[last];
  if (name !== undefined && /\.git$/i.test(name)) {
    segments[last] = name.slice(0, -4);
    if (segments[last] === '') segments.pop();
  }

  const saas = SAAS_HOSTS.get(host);
  if (saas === 'github' || saas === 'bitbucket') {
    // Repositories there are always two levels deep; anything after is a pasted web page path
    // (`/tree/main`, `/src/main/`).
    segments = segments.slice(0, 2);
  } else {
    // GitLab web URLs put the page after a `-` segment: `/group/repo/-/tree/main`.
    const dash = segments.indexOf('-');
    if (dash !== -1) segments = segments.slice(0, dash);
    // Bitbucket Server clone and browse URLs, possibly below a context path. Not applied to
    // GitHub/GitLab hosts, where `scm` or `projects` can be an ordinary owner or group name.
    if (saas === undefined && !host.includes('github') && !host.includes('gitlab')) {
      const scm = segments.lastIndexOf('scm');
      const projects = segments.indexOf('projects');
      const project = segments[projects + 1];
      const repo = segments[projects + 3];
      if (scm !== -1 && scm === segments.length - 3) {
        segments = segments.slice(scm + 1);
      } else if (projects !== -1 && project !== undefined && segments[projects + 2] === 'repos' && repo !== undefined) {
        segments = [project, repo];
      }
    }
  }
  return segments.length >= 2 ? segments.join('/') : null;
}

// ---------------------------------------------------------------------------------------------
// Settings

type SettingKind = 'boolean' | 'trigger_mode' | 'filter_condition' | 'branch_filter' | 'command_word' | 'match_mode';

const COMMAND_WORD_MAX = 100;
const MATCH_MODES = ['exact', 'contains'] as const;

/** The create sample's settings, in its order, and their kinds. */
const SAMPLE_SETTINGS: readonly (readonly [string, SettingKind])[] = [
  ['trigger_mode', 'trigger_mode'],
  ['build_pull_requests', 'boolean'],
  ['pull_request_branch_filter_enabled', 'boolean'],
  ['pull_request_branch_filter_configuration', 'branch_filter'],
  ['skip_builds_for_existing_commits', 'boolean'],
  ['skip_pull_request_builds_for_existing_commits', 'boolean'],
  ['build_pull_request_ready_for_review', 'boolean'],
  ['build_pull_request_labels_changed', 'boolean'],
  ['build_pull_request_forks', 'boolean'],
  ['prefix_pull_request_fork_branch_names', 'boolean'],
  ['build_branches', 'boolean'],
  ['build_tags', 'boolean'],
  ['cancel_deleted_branch_builds', 'boolean'],
  ['publish_commit_status', 'boolean'],
  ['publish_commit_status_per_step', 'boolean'],
  ['separate_pull_request_statuses', 'boolean'],
  ['publish_blocked_as_pending', 'boolean'],
  ['use_step_key_as_commit_status', 'boolean'],
  ['filter_enabled', 'boolean'],
  ['filter_condition', 'filter_condition'],
];

const GITHUB: readonly ProviderId[] = ['github', 'github_enterprise'];
const GITLAB: readonly ProviderId[] = ['gitlab', 'gitlab_ee'];
const BITBUCKET: readonly ProviderId[] = ['bitbucket', 'bitbucket_server'];

/**
 * The other settings pipelines.md documents, each with the providers it lists them for. They are
 * shown only once set (no default here). Windsock acts on the pull request ones marked *; the
 * others are kept, as clients (Terraform) set them, for events Windsock does not build from
 * (reviews, comments, releases, check runs, merge queues...).
 */
const DOCUMENTED_SETTINGS: readonly (readonly [string, SettingKind, readonly ProviderId[]])[] = [
  ['ignore_default_branch_pull_requests', 'boolean', [...GITHUB, ...BITBUCKET]], // *
  ['build_pull_request_reopened', 'boolean', GITHUB], // *
  ['build_pull_request_edited', 'boolean', GITHUB], // *
  ['build_pull_request_converted_to_draft', 'boolean', GITHUB], // *
  ['build_pull_request_review_requested', 'boolean', GITHUB], // *
  ['build_pull_request_base_branch_changed', 'boolean', [...GITHUB, ...GITLAB]],
  ['build_pull_request_merge', 'boolean', GITLAB],
  ['build_pull_request_stacks', 'boolean', GITHUB],
  ['build_pull_request_review_submitted', 'boolean', GITHUB],
  ['build_pull_request_review_dismissed', 'boolean', GITHUB],
  ['build_pull_request_review_comment_created', 'boolean', GITHUB],
  ['review_comment_command_word', 'command_word', GITHUB],
  ['review_comment_match_mode', 'match_mode', GITHUB],
  ['build_issue_comment_created', 'boolean', GITHUB],
  ['issue_comment_command_word', 'command_word', GITHUB],
  ['issue_comment_match_mode', 'match_mode', GITHUB],
  ['build_pull_request_dequeued', 'boolean', GITHUB],
  ['build_pull_request_merge_commits', 'boolean', GITHUB],
  ['build_check_run_completed', 'boolean', GITHUB],
  ['build_release_published', 'boolean', GITHUB],
  ['build_release_created', 'boolean', GITHUB],
  ['build_release_released', 'boolean', GITHUB],
  ['build_deployment_status_created', 'boolean', GITHUB],
  ['build_create_event', 'boolean', GITHUB],
  ['build_merge_group_checks_requested', 'boolean', GITHUB],
  ['cancel_when_merge_group_destroyed', 'boolean', GITHUB],
  ['use_merge_group_base_commit_for_git_diff_base', 'boolean', GITHUB],
  ['skip_builds_for_closed_pull_requests', 'boolean', GITHUB],
  ['prevent_custom_statuses_from_using_buildkite_prefix', 'boolean', GITHUB],
  // "not supported for GitHub Enterprise Server pipelines"
  ['github_workflow_access_tokens_enabled', 'boolean', ['github']],
];

const SETTING_KINDS: ReadonlyMap<string, SettingKind> = new Map([...SAMPLE_SETTINGS, ...DOCUMENTED_SETTINGS.map(([key, kind]) => [key, kind] as const)]);

// The official Go client spells it this way; accepting it costs nothing.
const ALIASES: ReadonlyMap<string, string> = new Map([['separate_pull_requests_statuses', 'separate_pull_request_statuses']]);

// Default values, the same for every provider that has the setting. The two free-text settings
// have none on purpose: the real API omits them until they are set (see the create sample), and
// showing `""` would be a difference clients could trip over for no gain.
const DEFAULTS: ReadonlyMap<string, boolean | string> = new Map<string, boolean | string>([
  ['trigger_mode', 'code'],
  ['build_pull_requests', true],
  ['pull_request_branch_filter_enabled', false],
  ['skip_builds_for_existing_commits', false],
  ['skip_pull_request_builds_for_existing_commits', true],
  ['build_pull_request_ready_for_review', false],
  ['build_pull_request_labels_changed', false],
  ['build_pull_request_forks', false],
  ['prefix_pull_request_fork_branch_names', true],
  ['build_branches', true],
  ['build_tags', false],
  ['cancel_deleted_branch_builds', false],
  ['publish_commit_status', true],
  ['publish_commit_status_per_step', false],
  ['separate_pull_request_statuses', false],
  ['publish_blocked_as_pending', false],
  ['use_step_key_as_commit_status', false],
  ['filter_enabled', false],
]);

// Keys per provider, in the order the API shows them (GitHub's order is the create sample's):
// the sample's keys less the ones the provider lacks, then the documented ones it has, so the
// order cannot drift between providers.
function keysFor(id: ProviderId, lackingOfSample: readonly string[] = []): readonly string[] {
  return [
    ...SAMPLE_SETTINGS.map(([key]) => key).filter((key) => !lackingOfSample.includes(key)),
    ...DOCUMENTED_SETTINGS.filter(([, , on]) => on.includes(id)).map(([key]) => key),
  ];
}

// Merge requests have no forks-with-prefix, labels or draft handling to configure here, and
// GitLab reports one status per pipeline.
const GITLAB_LACKS = [
  'build_pull_request_ready_for_review',
  'build_pull_request_labels_changed',
  'build_pull_request_forks',
  'prefix_pull_request_fork_branch_names',
  'publish_commit_status_per_step',
  'separate_pull_request_statuses',
  'publish_blocked_as_pending',
  'use_step_key_as_commit_status',
];

const BITBUCKET_LACKS = [
  'build_pull_request_ready_for_review',
  'build_pull_request_labels_changed',
  'separate_pull_request_statuses',
  'publish_blocked_as_pending',
  'use_step_key_as_commit_status',
];

const PROVIDER_KEYS: Readonly<Record<ProviderId, readonly string[]>> = {
  github: keysFor('github'),
  github_enterprise: keysFor('github_enterprise'),
  gitlab: keysFor('gitlab', GITLAB_LACKS),
  gitlab_ee: keysFor('gitlab_ee', GITLAB_LACKS),
  bitbucket: keysFor('bitbucket', BITBUCKET_LACKS),
  bitbucket_server: keysFor('bitbucket_server', BITBUCKET_LACKS),
  git: [],
};

function keysOf(id: ProviderId): readonly string[] {
  // A stored provider id from an older version must not crash rendering.
  return PROVIDER_KEYS[id] ?? [];
}

export function defaultProviderSettings(id: ProviderId): ProviderSettings {
  const settings: ProviderSettings = {};
  for (const key of keysOf(id)) {
    const value = DEFAULTS.get(key);
    if (value !== undefined) settings[key] = value;
  }
  return settings;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Validate user-supplied `provider_settings` for a provider kind: field errors, [] when fine.
 * `repository` is read-only but silently ignored, because clients echo back what they read.
 * `null` for a setting is accepted and means "back to the default".
 */
export function validateProviderSettings(id: ProviderId, input: unknown): FieldError[] {
  if (input === undefined || input === null) return [];
  if (!isPlainObject(input)) return [{ field: 'provider_settings', code: 'must be an object' }];
  const allowed = keysOf(id);
  const errors: FieldError[] = [];
  for (const [key, value] of Object.entries(input)) {
    if (key === 'repository') continue;
    const field = `provider_settings.${key}`;
    const canonical = ALIASES.get(key) ?? key;
    const kind = SETTING_KINDS.get(canonical);
    if (kind === undefined) {
      errors.push({ field, code: 'is not a known provider setting' });
    } else if (!allowed.includes(canonical)) {
      errors.push({ field, code: `is not a setting of a ${id} repository` });
    } else if (value !== null) {
      const code = valueError(kind, value);
      if (code) errors.push({ field, code });
    }
  }
  return errors;
}

function valueError(kind: SettingKind, value: unknown): string | null {
  switch (kind) {
    case 'boolean':
      return typeof value === 'boolean' ? null : 'must be a boolean';
    case 'trigger_mode':
      return isOneOf(TRIGGER_MODES, value) ? null : 'is not included in the list';
    case 'filter_condition':
      if (typeof value !== 'string') return 'must be a string';
      if (value.length > FILTER_CONDITION_MAX) return `is too long (maximum is ${FILTER_CONDITION_MAX} characters)`;
      // Blank means no condition, the same as never setting one.
      return value.trim() === '' ? null : conditionError(value);
    case 'command_word':
      if (typeof value !== 'string' || value.trim() === '') return 'must be a word, such as /bk';
      return value.length > COMMAND_WORD_MAX ? `is too long (maximum is ${COMMAND_WORD_MAX} characters)` : null;
    case 'match_mode':
      return isOneOf(MATCH_MODES, value) ? null : 'is not included in the list';
    case 'branch_filter': {
      if (typeof value !== 'string') return 'must be a string';
      if (value.length > BRANCH_FILTER_MAX) return `is too long (maximum is ${BRANCH_FILTER_MAX} characters)`;
      const reason = validateBranchFilter(value);
      return reason ? `is not a valid branch filter: ${reason}` : null;
    }
  }
}

/**
 * The overrides to store from validated `provider_settings`: aliases resolved (the canonical
 * spelling wins when both are sent), `repository` dropped, keys in display order. A `null` value
 * is kept so that merging it over earlier overrides resets that setting to its default.
 */
export function normaliseProviderSettings(id: ProviderId, input: unknown): ProviderSettings {
  const out: ProviderSettings = {};
  if (!isPlainObject(input)) return out;
  const given = new Map<string, unknown>();
  for (const [key, value] of Object.entries(input)) {
    const canonical = ALIASES.get(key);
    if (canonical !== undefined) {
      if (!given.has(canonical)) given.set(canonical, value);
    } else {
      given.set(key, value);
    }
  }
  for (const key of keysOf(id)) {
    if (!given.has(key)) continue;
    const value = given.get(key);
    // Validation has run, so this only guards against a caller that skipped it storing junk.
    if (value === null || typeof value === 'boolean' || typeof value === 'string') out[key] = value;
  }
  return out;
}

/**
 * The `provider.settings` object the API returns: defaults, overlaid with stored overrides, plus
 * the read-only `repository`. Overrides for settings the provider does not have (left over from
 * a repository that moved to another provider) are not shown. `git` has no settings: `{}`.
 */
export function providerSettings(id: ProviderId, repository: string, overrides: ProviderSettings): ProviderSettings {
  const keys = keysOf(id);
  if (keys.length === 0) return {};
  const settings: ProviderSettings = {};
  for (const key of keys) {
    const override = overrides && Object.prototype.hasOwnProperty.call(overrides, key) ? overrides[key] : undefined;
    const value = override ?? DEFAULTS.get(key);
    if (value !== undefined) settings[key] = value;
  }
  // Omitted rather than null when the URL has no owner/name: the contract types it as a string.
  const path = repositoryPath(repository);
  if (path !== null) settings.repository = path;
  return settings;
}
