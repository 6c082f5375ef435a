/**
 * The shapes of commit statuses: what the rules decide to publish (`StatusUpdate`), how each
 * hosting service is reached (`CommitStatusConfig`) and the one HTTP function every sender's
 * traffic goes through (`HttpSend`, the SSRF-safe outbound client in production).
 */

/** The repository providers Windsock publishes commit statuses to. */
export const STATUS_PROVIDERS = ['github', 'github_enterprise', 'gitlab', 'bitbucket'] as const;
export type StatusProvider = (typeof STATUS_PROVIDERS)[number];

/**
 * The state of a status before a provider's words for it: `pending` (waiting to run, or blocked
 * shown as pending), `running`, `success`, `failure`, `canceled`, `error` (skipped, not run).
 * Each sender maps it onto its service's states (see the README's table).
 */
export type StatusState = 'pending' | 'running' | 'success' | 'failure' | 'canceled' | 'error';

/** One commit status to publish. */
export interface StatusUpdate {
  provider: StatusProvider;
  /** `owner/repo` (GitHub), `group/subgroup/project` (GitLab), `workspace/repo_slug` (Bitbucket). */
  repository: string;
  /** The full commit SHA (lowercase hex). */
  sha: string;
  state: StatusState;
  /** GitHub's `context`, GitLab's `name`, Bitbucket's `name` (and, at most 40 characters, its `key`). */
  context: string;
  /** At most 140 characters (GitHub's limit, the smallest). */
  description: string;
  /** The build's (or the job's) `web_url`; empty when the representation had none. */
  targetUrl: string;
  /** What the status is about: the whole build, or one job of it. */
  subject: { kind: 'build'; buildId: string } | { kind: 'job'; buildId: string; jobId: string };
}

/** A REST API of a hosting service: its base URL and credentials. */
export interface ApiAccess {
  apiUrl: string;
  token: string;
}

/** Bitbucket Cloud: an access token (Bearer), or a username with an app password (Basic). */
export interface BitbucketAccess {
  apiUrl: string;
  token?: string;
  username?: string;
  appPassword?: string;
}

/** Where each provider's API is and how to authenticate; a provider left out publishes nothing. */
export interface CommitStatusConfig {
  github?: ApiAccess;
  github_enterprise?: ApiAccess;
  gitlab?: ApiAccess;
  bitbucket?: BitbucketAccess;
}

export interface HttpRequest {
  method: string;
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface HttpResponse {
  status: number;
  /** Lowercase names. */
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * The outbound HTTP function every sender uses (src/security/outbound.ts in production: address
 * checks, time limits, no redirects). It rejects when no answer came; an error carrying
 * `final: true` (a refused address) is not retried.
 */
export type HttpSend = (req: HttpRequest) => Promise<HttpResponse>;
