/**
 * Bitbucket Cloud: `POST /repositories/{workspace}/{repo_slug}/commit/{sha}/statuses/build`,
 * with an access token (Bearer) or a username and app password (Basic).
 */
import { createHash } from 'node:crypto';
import type { AttemptResult } from '../events';
import { failureOf, resultOf } from './http';
import type { BitbucketAccess, HttpSend, StatusState, StatusUpdate } from './types';

export const BITBUCKET_API_URL = 'https://api.bitbucket.org/2.0';

/** Bitbucket's limit on a status key, which identifies the status on its commit. */
export const BITBUCKET_KEY_MAX = 40;

type BitbucketState = 'INPROGRESS' | 'SUCCESSFUL' | 'FAILED' | 'STOPPED';

export function bitbucketState(state: StatusState): BitbucketState {
  switch (state) {
    case 'pending':
    case 'running':
      return 'INPROGRESS';
    case 'success':
      return 'SUCCESSFUL';
    case 'failure':
      return 'FAILED';
    case 'canceled':
    case 'error':
      return 'STOPPED';
  }
}

/**
 * The status key: the context itself when it fits, else its first 31 characters, `-` and 8 hex
 * characters of its SHA-256, so a long context still names one stable status.
 */
export function bitbucketKey(context: string): string {
  const chars = Array.from(context);
  if (chars.length <= BITBUCKET_KEY_MAX) return context;
  const digest = createHash('sha256').update(context).digest('hex').slice(0, 8);
  return `${chars.slice(0, BITBUCKET_KEY_MAX - 9).join('')}-${digest}`;
}

export function bitbucketAuthorization(access: BitbucketAccess): string | null {
  if (access.token) return `Bearer ${access.token}`;
  if (access.username && access.appPassword) return `Basic ${Buffer.from(`${access.username}:${access.appPassword}`).toString('base64')}`;
  return null;
}

export async function sendBitbucketStatus(update: StatusUpdate, access: BitbucketAccess, http: HttpSend): Promise<AttemptResult> {
  const [workspace, repoSlug, ...rest] = update.repository.split('/');
  if (!workspace || !repoSlug || rest.length) return { ok: false, status: null, excerpt: `not a Bitbucket repository: ${update.repository}`, final: true };
  const authorization = bitbucketAuthorization(access);
  if (!authorization) return { ok: false, status: null, excerpt: 'no Bitbucket credentials configured', final: true };
  const secrets = [access.token, access.appPassword, authorization.split(' ')[1]];
  const url = `${access.apiUrl.replace(/\/+$/, '')}/repositories/${encodeURIComponent(workspace)}/${encodeURIComponent(repoSlug)}/commit/${encodeURIComponent(update.sha)}/statuses/build`;
  const body = {
    key: bitbucketKey(update.context),
    state: bitbucketState(update.state),
    name: update.context,
    url: update.targetUrl,
    description: update.description,
  };
  try {
    const res = await http({
      method: 'POST',
      url,
      headers: { authorization, 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'windsock' },
      body: JSON.stringify(body),
    });
    return resultOf(res, secrets);
  } catch (err) {
    return failureOf(err, secrets);
  }
}
