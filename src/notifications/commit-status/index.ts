/**
 * Commit statuses: the rules deciding which statuses an event publishes (`statusUpdatesFor`)
 * and the senders publishing one (`sendStatus`) to GitHub, GitHub Enterprise, GitLab or
 * Bitbucket over the HTTP function it is given.
 */
export {
  statusUpdatesFor,
  buildStatus,
  jobStatus,
  stepName,
  stepStatus,
  notifyStatuses,
  isStatusProvider,
  type StatusOptions,
  type StepStatusMoment,
} from './rules';
export { sendStatus, enabledProviders, commitStatusConfig, type CommitStatusSettings } from './send';
export { statusRepositoryPath } from './repo-path';
export { gitHubState, GITHUB_API_URL } from './github';
export { gitLabState, GITLAB_API_URL } from './gitlab';
export { bitbucketState, bitbucketKey, BITBUCKET_API_URL, BITBUCKET_KEY_MAX } from './bitbucket';
export { humanDuration, DESCRIPTION_MAX } from './describe';
export {
  STATUS_PROVIDERS,
  type StatusProvider,
  type StatusState,
  type StatusUpdate,
  type CommitStatusConfig,
  type ApiAccess,
  type BitbucketAccess,
  type HttpSend,
  type HttpRequest,
  type HttpResponse,
} from './types';
