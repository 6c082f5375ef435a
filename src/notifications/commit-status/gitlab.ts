/** GitLab: `POST /projects/{url-encoded path}/statuses/{sha}`, authenticated by `PRIVATE-TOKEN`. */
import type { AttemptResult } from '../events';
import { failureOf, resultOf } from './http';
import type { ApiAccess, HttpSend, StatusState, StatusUpdate } from './types';

export const GITLAB_API_URL = 'https://gitlab.com/api/v4';

type GitLabState = 'pending' | 'running' | 'success' | 'failed' | 'canceled';

/** Skipped and not-run builds are `canceled`: the one state every GitLab version takes for "did not run". */
export function gitLabState(state: StatusState): GitLabState {
  switch (state) {
    case 'pending':
      return 'pending';
    case 'running':
      return 'running';
    case 'success':
      return 'success';
    case 'failure':
      return 'failed';
    case 'canceled':
    case 'error':
      return 'canceled';
  }
}

export async function sendGitLabStatus(update: StatusUpdate, access: ApiAccess, http: HttpSend): Promise<AttemptResult> {
  const url = `${access.apiUrl.replace(/\/+$/, '')}/projects/${encodeURIComponent(update.repository)}/statuses/${encodeURIComponent(update.sha)}`;
  const body = {
    state: gitLabState(update.state),
    name: update.context,
    description: update.description,
    ...(update.targetUrl ? { target_url: update.targetUrl } : {}),
  };
  try {
    const res = await http({
      method: 'POST',
      url,
      headers: { 'private-token': access.token, 'content-type': 'application/json', accept: 'application/json', 'user-agent': 'windsock' },
      body: JSON.stringify(body),
    });
    const result = resultOf(res, [access.token]);
    // GitLab refuses to move a status to the state it is already in ("Cannot transition status
    // via :run from :running"): a build.running then a build.failing both say running. The
    // commit shows what it should, so that is delivered, not a failure to give up on.
    if (res.status === 400 && /Cannot transition status/i.test(result.excerpt)) return { ok: true, status: res.status, excerpt: result.excerpt };
    return result;
  } catch (err) {
    return failureOf(err, [access.token]);
  }
}
