/**
 * The repositories a GitHub (or GitHub Enterprise) token reaches, from the provider's REST API,
 * every page of it, through the server's one outbound transport: `GET /installation/repositories`
 * for a GitHub App installation token (`ghs_...`), `GET /user/repos` for any other token. The
 * token goes in the Authorization header only; nothing here logs it.
 */
import { UnavailableError } from '../core/errors';
import { clock } from '../core/clock';
import type { OutboundResponse, OutboundSend } from '../security/outbound';
import { fieldOf, isRecord } from '../core/guards';

export interface ProviderRepository {
  fullName: string;
  htmlUrl: string;
  cloneUrl: string;
  defaultBranch: string;
}

export interface ProviderRateLimit {
  limit: number;
  used: number;
  remaining: number;
  resetAt: Date;
}

const PER_PAGE = 100;
/** 100 pages of 100: far more than any installation's list; a provider that keeps saying "next" is cut off here. */
const MAX_PAGES = 100;

function header(res: OutboundResponse, name: string): number | null {
  const v = res.headers[name];
  return v !== undefined && /^\d+$/.test(v.trim()) ? Number(v.trim()) : null;
}

/** The `x-ratelimit-*` headers, when the answer has them all. */
export function rateLimitOf(res: OutboundResponse): ProviderRateLimit | null {
  const limit = header(res, 'x-ratelimit-limit');
  const remaining = header(res, 'x-ratelimit-remaining');
  const reset = header(res, 'x-ratelimit-reset');
  if (limit === null || remaining === null || reset === null) return null;
  const used = header(res, 'x-ratelimit-used') ?? Math.max(0, limit - remaining);
  return { limit, used, remaining, resetAt: new Date(reset * 1000) };
}

function unavailable(res: OutboundResponse, now: Date): UnavailableError {
  const retryAfter = header(res, 'retry-after');
  const rate = rateLimitOf(res);
  const untilReset = rate && rate.remaining === 0 ? Math.max(1, Math.ceil((rate.resetAt.getTime() - now.getTime()) / 1000)) : null;
  return new UnavailableError(
    `The source control provider is temporarily unavailable (it answered ${res.status}), please retry`,
    retryAfter ?? untilReset ?? 30,
  );
}

function repositoryOf(item: unknown): ProviderRepository | null {
  if (!isRecord(item)) return null;
  const { full_name, html_url, clone_url, default_branch } = item;
  if (typeof full_name !== 'string' || typeof html_url !== 'string' || typeof clone_url !== 'string' || typeof default_branch !== 'string') return null;
  return { fullName: full_name, htmlUrl: html_url, cloneUrl: clone_url, defaultBranch: default_branch };
}

export async function listGitHubRepositories(
  send: OutboundSend,
  api: { url: string; token: string },
): Promise<{ repositories: ProviderRepository[]; rateLimit: ProviderRateLimit | null }> {
  const installation = api.token.startsWith('ghs_');
  const base = `${api.url.replace(/\/+$/, '')}${installation ? '/installation/repositories' : '/user/repos'}`;
  const repositories: ProviderRepository[] = [];
  let rateLimit: ProviderRateLimit | null = null;
  for (let page = 1; page <= MAX_PAGES; page++) {
    let res: OutboundResponse;
    try {
      res = await send({
        method: 'GET',
        url: `${base}?per_page=${PER_PAGE}&page=${page}`,
        headers: {
          accept: 'application/vnd.github+json',
          authorization: `Bearer ${api.token}`,
          'x-github-api-version': '2022-11-28',
          'user-agent': 'windsock',
        },
      });
    } catch {
      // The transport's refusal (unreachable, a deadline, an address not allowed): the provider is not there for us now.
      throw new UnavailableError('The source control provider is temporarily unavailable, please retry', 30);
    }
    rateLimit = rateLimitOf(res) ?? rateLimit;
    if (res.status !== 200 || res.truncated) throw unavailable(res, clock.now());
    let body: unknown;
    try {
      body = JSON.parse(res.body.toString('utf8'));
    } catch {
      throw unavailable(res, clock.now());
    }
    const items = installation ? fieldOf(body, 'repositories') : body;
    if (!Array.isArray(items)) throw unavailable(res, clock.now());
    for (const item of items) {
      const repo = repositoryOf(item);
      if (repo) repositories.push(repo);
    }
    const next = /<[^>]*>;\s*rel="next"/.test(res.headers.link ?? '');
    if (!next || items.length === 0) break;
  }
  return { repositories, rateLimit };
}
