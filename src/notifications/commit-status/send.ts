/** One status to its provider, with that provider's access from the configuration. */
import type { AttemptResult } from '../events';
import { BITBUCKET_API_URL, sendBitbucketStatus } from './bitbucket';
import { GITHUB_API_URL, sendGitHubStatus } from './github';
import { GITLAB_API_URL, sendGitLabStatus } from './gitlab';
import { STATUS_PROVIDERS, type CommitStatusConfig, type HttpSend, type StatusProvider, type StatusUpdate } from './types';

/**
 * Publishes one status. A provider without access configured is a final failure (the rules
 * publish nothing for it when given `enabledProviders`, so this only happens to a caller that
 * skipped that).
 */
export async function sendStatus(update: StatusUpdate, config: CommitStatusConfig, http: HttpSend): Promise<AttemptResult> {
  const notConfigured: AttemptResult = { ok: false, status: null, excerpt: `commit statuses for ${update.provider} are not configured`, final: true };
  switch (update.provider) {
    case 'github':
    case 'github_enterprise': {
      const access = config[update.provider];
      return access ? sendGitHubStatus(update, access, http) : notConfigured;
    }
    case 'gitlab':
      return config.gitlab ? sendGitLabStatus(update, config.gitlab, http) : notConfigured;
    case 'bitbucket':
      return config.bitbucket ? sendBitbucketStatus(update, config.bitbucket, http) : notConfigured;
    default:
      return notConfigured;
  }
}

/** The providers with access configured: what `statusUpdatesFor` takes as `enabledProviders`. */
export function enabledProviders(config: CommitStatusConfig): StatusProvider[] {
  return STATUS_PROVIDERS.filter((provider) => config[provider] !== undefined);
}

/** The settings of src/config.ts this module reads, by shape (the composition root hands them in). */
export interface CommitStatusSettings {
  github: { apiUrl: string | undefined; token: string | undefined };
  githubEnterprise: { apiUrl: string | undefined; token: string | undefined };
  gitlab: { apiUrl: string; token: string | undefined };
  bitbucket: { apiUrl: string; token: string | undefined; username: string | undefined; appPassword: string | undefined };
}

/**
 * Access per provider from the settings: GitHub needs `GITHUB_TOKEN` (its API defaults to
 * api.github.com), GitHub Enterprise both its API URL and token, GitLab `GITLAB_TOKEN`,
 * Bitbucket `BITBUCKET_TOKEN` or `BITBUCKET_USERNAME` with `BITBUCKET_APP_PASSWORD`.
 */
export function commitStatusConfig(settings: CommitStatusSettings): CommitStatusConfig {
  const config: CommitStatusConfig = {};
  if (settings.github.token) config.github = { apiUrl: settings.github.apiUrl ?? GITHUB_API_URL, token: settings.github.token };
  if (settings.githubEnterprise.apiUrl && settings.githubEnterprise.token) {
    config.github_enterprise = { apiUrl: settings.githubEnterprise.apiUrl, token: settings.githubEnterprise.token };
  }
  if (settings.gitlab.token) config.gitlab = { apiUrl: settings.gitlab.apiUrl || GITLAB_API_URL, token: settings.gitlab.token };
  const bb = settings.bitbucket;
  if (bb.token) config.bitbucket = { apiUrl: bb.apiUrl || BITBUCKET_API_URL, token: bb.token };
  else if (bb.username && bb.appPassword) config.bitbucket = { apiUrl: bb.apiUrl || BITBUCKET_API_URL, username: bb.username, appPassword: bb.appPassword };
  return config;
}
