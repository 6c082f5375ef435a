/**
 * An artifact's path as the agent reports it, and the agent search's query. A path is only ever
 * a label (content is stored by its hash), but one that is not the clean relative path the agent
 * makes is refused: absolute, a `..` after a name, backslashes, NUL and other control characters,
 * empty or `.` segments. Leading `..` segments are what the agent sends for a file outside its
 * working directory (`artifact upload "../out/*"`: Go's `filepath.Rel`), so they are taken, as
 * Buildkite takes them; the agent's download drops them, so the file never lands above its
 * destination.
 */

/** Why the path is refused, or null when it is fine. */
export function pathProblem(p: string): string | null {
  if (p.length === 0) return "can't be blank";
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(p)) return 'must not contain NUL or control characters';
  if (p.includes('\\')) return 'must use / as the separator, not \\';
  if (p.startsWith('/') || /^[A-Za-z]:/.test(p)) return 'must be relative, not absolute';
  const segments = p.split('/');
  if (segments.every((s) => s === '..')) return 'must name a file, not only .. segments';
  const named = segments.slice(segments.findIndex((s) => s !== '..'));
  if (named.includes('..')) return 'must not contain a .. segment after a name';
  if (named.some((s) => s === '' || s === '.')) return 'must not contain empty or . segments';
  return null;
}

/** The path without its last segment (`.` for a file at the top, as Ruby's File.dirname says). */
export function dirname(p: string): string {
  const i = p.lastIndexOf('/');
  return i < 0 ? '.' : p.slice(0, i);
}

export function filename(p: string): string {
  return p.slice(p.lastIndexOf('/') + 1);
}

/**
 * The agent search's query as a matcher. As documented for `buildkite-agent artifact download`:
 * `*` matches any run of characters, `/` included (`log/*` is everything under `log/`), and every
 * other character (`?`, `[`, `]` too) is itself. A glob library's `*` stops at `/`, so this is
 * not one.
 */
export function queryMatcher(query: string): (path: string) => boolean {
  const re = new RegExp(
    `^${query
      .split('*')
      .map((part) => part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
      .join('.*')}$`,
    's',
  );
  return (p) => re.test(p);
}

export const isGlob = (query: string) => query.includes('*');
