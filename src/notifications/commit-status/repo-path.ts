/**
 * The repository a status is about, from the pipeline's repository URL: `owner/repo` on GitHub
 * and Bitbucket (`workspace/repo_slug`), the project's full path (subgroups included) on
 * GitLab. The URL is read as the pipelines area reads it (`repositoryPath`: every form git
 * accepts, `.git` and pasted web page paths dropped); a status API then takes two levels,
 * except GitLab's.
 */
import { repositoryPath } from '../../pipelines/provider';
import type { StatusProvider } from './types';

/** The repository path the provider's status API names, or null when the URL names none. */
export function statusRepositoryPath(provider: StatusProvider, repository: unknown): string | null {
  if (typeof repository !== 'string') return null;
  const path = repositoryPath(repository);
  if (path === null) return null;
  const segments = provider === 'gitlab' ? path.split('/') : path.split('/').slice(0, 2);
  if (segments.length < 2 || segments.some((seg) => seg === '.' || seg === '..')) return null;
  return segments.join('/');
}
