/**
 * The repository a status is about, from the pipeline's repository URL: `owner/repo` on GitHub,
 * the project's full path (subgroups included) on GitLab, `workspace/repo_slug` on Bitbucket.
 * Accepts the forms git accepts: scp-like `git@host:owner/repo.git`, `ssh://git@host[:port]/...`,
 * `https://[user@]host[:port]/...`, with or without `.git` and a trailing slash.
 */
import type { StatusProvider } from './types';

/** The path segments of a remote URL, or null for a local path or anything unparseable. */
function segmentsOf(repository: string): string[] | null {
  const s = repository.trim();
  if (s === '' || /\s/.test(s)) return null;
  let path: string;
  const scheme = /^([a-z][a-z0-9+.-]*):\/\//i.exec(s);
  if (scheme) {
    if ((scheme[1] ?? '').toLowerCase() === 'file') return null;
    const rest = s.slice(scheme[0].length);
    const cut = rest.search(/[/?#]/);
    if (cut === -1) return null;
    const authority = rest.slice(0, cut);
    path = rest.slice(cut);
    // `ssh://git@github.com:owner/repo.git` mixes the two syntaxes; the "port" is the owner.
    const port = /:([^:\]]*)$/.exec(authority.slice(authority.lastIndexOf('@') + 1))?.[1];
    if (port !== undefined && port !== '' && !/^\d+$/.test(port)) path = `/${port}${path}`;
  } else {
    // scp-like `[user@]host:path`: a colon before any slash.
    const colon = s.indexOf(':');
    const slash = s.indexOf('/');
    if (colon <= 1 || (slash !== -1 && slash < colon)) return null;
    path = s.slice(colon + 1);
  }
  const segments = path
    .replace(/[?#].*$/, '')
    .split('/')
    .filter((seg) => seg !== '');
  const last = segments.length - 1;
  const name = segments[last];
  if (name !== undefined && /\.git$/i.test(name)) {
    segments[last] = name.slice(0, -4);
    if (segments[last] === '') segments.pop();
  }
  return segments;
}

/** The repository path the provider's status API names, or null when the URL names none. */
export function statusRepositoryPath(provider: StatusProvider, repository: unknown): string | null {
  if (typeof repository !== 'string') return null;
  let segments = segmentsOf(repository);
  if (segments === null) return null;
  if (provider === 'gitlab') {
    // A pasted web page: `/group/project/-/tree/main`.
    const dash = segments.indexOf('-');
    if (dash !== -1) segments = segments.slice(0, dash);
  } else {
    // Two levels deep; anything after is a pasted page path (`/tree/main`, `/src/main/`).
    segments = segments.slice(0, 2);
  }
  if (segments.length < 2 || segments.some((seg) => seg === '.' || seg === '..')) return null;
  return segments.join('/');
}
