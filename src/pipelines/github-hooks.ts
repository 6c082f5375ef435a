/**
 * Registers repository webhooks through the GitHub REST API (`POST /repos/{owner}/{repo}/hooks`),
 * for github.com and for a GitHub Enterprise server, each with its own base URL and token. The
 * request goes out through the server's one transport (`send`: address checks, one deadline, no
 * redirects), as every outgoing request does.
 */
import type { Logger } from '../http/middleware/logger';
import type { OutboundSend } from '../security/outbound';

export interface GitHubApi {
  apiUrl: string | undefined;
  token: string | undefined;
}

export interface GitHubHooks {
  /** true when the hook was created; false when it cannot be (not configured, refused, exists). */
  createHook(provider: 'github' | 'github_enterprise', repo: string, hook: { url: string; secret: string; events: string[] }): Promise<boolean>;
}

export function gitHubHooks(apis: { github: GitHubApi; github_enterprise: GitHubApi }, logger: Logger, send: OutboundSend): GitHubHooks {
  return {
    async createHook(provider, repo, hook) {
      const api = apis[provider];
      if (!api.apiUrl || !api.token) return false;
      const [owner, name] = repo.split('/');
      if (!owner || !name) return false;
      try {
        const res = await send({
          url: `${api.apiUrl.replace(/\/+$/, '')}/repos/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/hooks`,
          method: 'POST',
          headers: {
            accept: 'application/vnd.github+json',
            authorization: `Bearer ${api.token}`,
            'content-type': 'application/json',
            'x-github-api-version': '2022-11-28',
            'user-agent': 'windsock',
          },
          body: JSON.stringify({
            name: 'web',
            active: true,
            events: hook.events,
            config: { url: hook.url, content_type: 'json', secret: hook.secret, insecure_ssl: '0' },
          }),
        });
        if (res.status === 201) return true;
        // 422 "Hook already exists on this repository", 404 no access, 401/403 bad credentials.
        logger.warn({ provider, repo, status: res.status }, 'GitHub refused to create the webhook');
        return false;
      } catch (err) {
        // The transport's message names the host and the reason (an address that is not public, the deadline), never the URL's secrets.
        logger.warn({ provider, repo, err: err instanceof Error ? err.message : String(err) }, 'GitHub API unreachable');
        return false;
      }
    },
  };
}
