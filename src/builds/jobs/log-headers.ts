/**
 * Section headers of a job log: lines starting with `---`, `+++` or `~~~` (then a blank or the
 * end of the line), the ones the real agent reports `header_times` for. The server records,
 * as each chunk arrives, one time per header line that starts in it. A header may follow ANSI
 * escape sequences at the start of its line (agents colour headers, and the real agent writes
 * `\x1b[0m~~~ ...`): they are skipped, as the agent skips them when it times its headers. Pure.
 */

/** The ANSI escape sequences (CSI, e.g. colours `\x1b[32m`, erase `\x1b[K`) that may open a header line. */
// eslint-disable-next-line no-control-regex -- matching terminal escapes is the point
const LEADING_ANSI = /^(?:\x1b\[[0-9;?]*[A-Za-z])*/;
const HEADER = /^(?:---|\+\+\+|~~~)(?:[ \t]|\r?$)/;

/** Whether `line` (without its newline) is a section header. */
export function isHeaderLine(line: string): boolean {
  return HEADER.test(line.replace(LEADING_ANSI, ''));
}

/**
 * How many header lines start in `content`. `startsLine` says whether its first character
 * begins a line (the log's start, or the chunk before ended with a newline).
 */
export function countHeaderLines(content: string, startsLine: boolean): number {
  const lines = content.split('\n');
  let n = 0;
  lines.forEach((line, i) => {
    if ((i > 0 || startsLine) && isHeaderLine(line)) n++;
  });
  return n;
}

/** A time as the API's `header_times` give it: integer nanoseconds since the Unix epoch. */
export function unixNanos(at: Date): number {
  return at.getTime() * 1_000_000;
}
