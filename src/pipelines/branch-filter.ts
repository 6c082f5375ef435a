/**
 * Branch filter patterns, as used by `branch_configuration`, step `branches` and the
 * `pull_request_branch_filter_configuration` provider setting: space-separated globs where `*`
 * matches any run of characters (including `/`) and a leading `!` excludes.
 */

/**
 * Whether `branch` passes `filter`. No filter (null, empty, blank) lets every branch through; a
 * filter of exclusions only lets through everything it does not exclude.
 */
export function matchesBranchFilter(filter: string | null | undefined, branch: string): boolean {
  if (typeof filter !== 'string') return true;
  let hasPositive = false;
  let positiveMatched = false;
  for (const token of tokens(filter)) {
    if (token.startsWith('!')) {
      const pattern = token.slice(1);
      // A lone `!` is rejected by validateBranchFilter; if one was stored anyway, ignoring it is
      // kinder than letting it exclude only the empty branch name or everything.
      if (pattern !== '' && globMatch(pattern, branch)) return false;
    } else {
      hasPositive = true;
      if (!positiveMatched && globMatch(token, branch)) positiveMatched = true;
    }
  }
  return positiveMatched || !hasPositive;
}

/** A reason the filter cannot be used as written, or null when it is fine. */
export function validateBranchFilter(filter: string): string | null {
  if (typeof filter !== 'string') return 'must be a string';
  for (const token of tokens(filter)) {
    if (token === '!') return '`!` must be followed by a pattern';
  }
  return null;
}

function tokens(filter: string): string[] {
  return filter.split(/\s+/).filter((t) => t !== '');
}

/**
 * Glob match where only `*` is special. Built without RegExp so that branch names and patterns
 * need no escaping and a pattern like `*a*a*a*b` cannot backtrack exponentially: the literal
 * pieces between stars are found left to right with indexOf, and taking the leftmost occurrence
 * of each piece is always safe because `*` can absorb whatever lies between them.
 */
export function globMatch(pattern: string, text: string): boolean {
  const pieces = pattern.split('*');
  if (pieces.length === 1) return pattern === text;
  const head = pieces[0] ?? '';
  const tail = pieces[pieces.length - 1] ?? '';
  // Head and tail are anchored and must not overlap each other.
  if (text.length < head.length + tail.length) return false;
  if (!text.startsWith(head) || !text.endsWith(tail)) return false;
  const end = text.length - tail.length;
  let pos = head.length;
  for (let i = 1; i < pieces.length - 1; i++) {
    const piece = pieces[i] ?? '';
    if (piece === '') continue;
    const at = text.indexOf(piece, pos);
    if (at === -1 || at + piece.length > end) return false;
    pos = at + piece.length;
  }
  return true;
}
