/** Repository connections and their repositories -> the contract's JSON. */
import type { components } from '../../generated/api';
import type { RepositoryConnection } from './connections';
import type { ProviderRateLimit, ProviderRepository } from './github-repositories';

const url = (c: RepositoryConnection, orgSlug: string, publicUrl: string) => `${publicUrl}/v2/organizations/${orgSlug}/repository_connections/${c.id}`;

export function serializeConnectionSummary(c: RepositoryConnection, orgSlug: string, publicUrl: string): components['schemas']['RepositoryConnectionSummary'] {
  return { id: c.id, type: c.type, display_name: c.displayName, url: url(c, orgSlug, publicUrl) };
}

export function serializeConnection(
  c: RepositoryConnection,
  rateLimit: ProviderRateLimit | null,
  orgSlug: string,
  publicUrl: string,
): components['schemas']['RepositoryConnection'] {
  return {
    ...serializeConnectionSummary(c, orgSlug, publicUrl),
    service_account: null,
    host: { type: c.provider, url: c.hostUrl },
    rate_limit: rateLimit && { limit: rateLimit.limit, used: rateLimit.used, remaining: rateLimit.remaining, reset_at: wholeSecondTime(rateLimit.resetAt) },
  };
}

export function serializeConnectionRepository(r: ProviderRepository): components['schemas']['ConnectionRepository'] {
  return { full_name: r.fullName, html_url: r.htmlUrl, clone_url: r.cloneUrl, default_branch: r.defaultBranch };
}

/** `2026-07-16T06:00:00Z`, as the docs show a rate limit's reset: the provider gives it in whole seconds. */
function wholeSecondTime(d: Date): string {
  return `${d.toISOString().slice(0, 19)}Z`;
}
