/**
 * GitHub and GitHub Enterprise: `POST /repos/{owner}/{repo}/statuses/{sha}` through octokit
 * (`repos.createCommitStatus`), its traffic over the given HTTP function.
 */
import type { AttemptResult } from '../events';
import { failureOf, fetchOver, resultOf, type Exchange } from './http';
import type { ApiAccess, HttpSend, StatusState, StatusUpdate } from './types';

export const GITHUB_API_URL = 'https://api.github.com';

type GitHubState = 'pending' | 'success' | 'failure' | 'error';

/** GitHub has no running or canceled: both of its in-between states are `pending`, and a canceled build is an `error`. */
export function gitHubState(state: StatusState): GitHubState {
  switch (state) {
    case 'pending':
    case 'running':
      return 'pending';
    case 'success':
      return 'success';
    case 'failure':
      return 'failure';
    case 'canceled':
    case 'error':
      return 'error';
  }
}

const quiet = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

export async function sendGitHubStatus(update: StatusUpdate, access: ApiAccess, http: HttpSend): Promise<AttemptResult> {
  const [owner, repo, ...rest] = update.repository.split('/');
  if (!owner || !repo || rest.length) return { ok: false, status: null, excerpt: `not a GitHub repository: ${update.repository}`, final: true };
  const seen: Exchange = {};
  // Octokit (about 25 ms to load) with the first GitHub status, not with every start.
  const { Octokit } = await import('@octokit/rest');
  const octokit = new Octokit({
    auth: access.token,
    baseUrl: access.apiUrl.replace(/\/+$/, ''),
    userAgent: 'windsock',
    log: quiet,
    request: { fetch: fetchOver(http, seen) },
  });
  try {
    await octokit.rest.repos.createCommitStatus({
      owner,
      repo,
      sha: update.sha,
      state: gitHubState(update.state),
      context: update.context,
      description: update.description,
      ...(update.targetUrl ? { target_url: update.targetUrl } : {}),
      headers: { 'x-github-api-version': '2022-11-28' },
    });
  } catch (err) {
    if (!seen.response) return failureOf(seen.error ?? err, [access.token]);
  }
  return seen.response ? resultOf(seen.response, [access.token]) : failureOf(seen.error ?? new Error('no answer'), [access.token]);
}
