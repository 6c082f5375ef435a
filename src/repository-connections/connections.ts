/**
 * The repository connections an organization has: one per source-control provider the server is
 * configured for (GITHUB_*, GITHUB_ENTERPRISE_*, GITLAB_*, BITBUCKET_*), read only. GitHub
 * (github.com) is always one: its deliveries need no setting. GitHub Enterprise needs its API URL
 * (the host comes from it); GitLab and Bitbucket need their credentials (what commit statuses use).
 * An id is a name-based UUID (RFC 9562 version 5) of the organization, the provider and its host:
 * the same for as long as they are, different in every organization.
 */
import crypto from 'node:crypto';

export interface ConnectionSettings {
  github: { apiUrl: string | undefined; token: string | undefined };
  githubEnterprise: { apiUrl: string | undefined; token: string | undefined };
  gitlab: { apiUrl: string; token: string | undefined };
  bitbucket: { apiUrl: string; token: string | undefined; username: string | undefined; appPassword: string | undefined };
}

export type ConnectionProvider = 'github' | 'github_enterprise' | 'gitlab' | 'bitbucket';
export type ConnectionType = 'github_app' | 'github_enterprise_app' | 'gitlab_self_managed' | 'bitbucket_server';

export interface RepositoryConnection {
  id: string;
  provider: ConnectionProvider;
  type: ConnectionType;
  displayName: string;
  /** The host's web address (`https://github.com`) and its name (`github.com`). */
  hostUrl: string;
  hostname: string;
  /** Where the provider's REST API is and the token for it; absent: the API is not read. */
  api?: { url: string; token: string };
}

export const GITHUB_API_URL = 'https://api.github.com';

// A fixed namespace for the name-based ids (itself a random UUID, chosen once).
const NAMESPACE = Buffer.from('6f1c2b0e9d8a4c7bb5e3a2f1d0c9b8a7', 'hex');

export function connectionId(organizationId: string, provider: ConnectionProvider, hostname: string): string {
  const hash = crypto.createHash('sha1').update(NAMESPACE).update(`${organizationId}\n${provider}\n${hostname}`).digest();
  const b = hash.subarray(0, 16);
  b[6] = ((b[6] ?? 0) & 0x0f) | 0x50;
  b[8] = ((b[8] ?? 0) & 0x3f) | 0x80;
  const h = b.toString('hex');
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`;
}

/** The web host behind an API URL: `https://api.bitbucket.org/2.0` → bitbucket.org, `https://ghe.example.com/api/v3` → ghe.example.com. */
function webHost(apiUrl: string): { hostUrl: string; hostname: string } | null {
  let u: URL;
  try {
    u = new URL(apiUrl);
  } catch {
    return null;
  }
  const hostname = u.hostname.toLowerCase().replace(/^api\./, '');
  const port = u.port ? `:${u.port}` : '';
  return { hostUrl: `${u.protocol}//${hostname}${port}`, hostname };
}

/** The organization's connections, in a fixed order: GitHub, GitHub Enterprise, GitLab, Bitbucket. */
export function connectionsOf(organizationId: string, s: ConnectionSettings): RepositoryConnection[] {
  const out: RepositoryConnection[] = [];
  out.push({
    id: connectionId(organizationId, 'github', 'github.com'),
    provider: 'github',
    type: 'github_app',
    displayName: 'GitHub (github.com)',
    hostUrl: 'https://github.com',
    hostname: 'github.com',
    api: s.github.token ? { url: s.github.apiUrl ?? GITHUB_API_URL, token: s.github.token } : undefined,
  });
  const ghe = s.githubEnterprise.apiUrl ? webHost(s.githubEnterprise.apiUrl) : null;
  if (ghe && s.githubEnterprise.apiUrl) {
    out.push({
      id: connectionId(organizationId, 'github_enterprise', ghe.hostname),
      provider: 'github_enterprise',
      type: 'github_enterprise_app',
      displayName: `GitHub Enterprise (${ghe.hostname})`,
      ...ghe,
      api: s.githubEnterprise.token ? { url: s.githubEnterprise.apiUrl, token: s.githubEnterprise.token } : undefined,
    });
  }
  const gitlab = s.gitlab.token ? webHost(s.gitlab.apiUrl) : null;
  if (gitlab) {
    out.push({
      id: connectionId(organizationId, 'gitlab', gitlab.hostname),
      provider: 'gitlab',
      type: 'gitlab_self_managed',
      displayName: `GitLab (${gitlab.hostname})`,
      ...gitlab,
    });
  }
  const bitbucket = s.bitbucket.token || s.bitbucket.username ? webHost(s.bitbucket.apiUrl) : null;
  if (bitbucket) {
    out.push({
      id: connectionId(organizationId, 'bitbucket', bitbucket.hostname),
      provider: 'bitbucket',
      type: 'bitbucket_server',
      displayName: `Bitbucket (${bitbucket.hostname})`,
      ...bitbucket,
    });
  }
  return out;
}
