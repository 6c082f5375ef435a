/**
 * Section headers of a job log: lines starting with `---`, `+++` or `~~~` (then a blank or the
 * end of the line), the ones the real agent reports `header_times` for. The server records,
 * as each chunk arrives, one time per header line that starts in it. Pure.
 */

const HEADER = /^(?:---|\+\+\+|~~~)(?:[ \t]|\r?$)/;

/**
 * How many header lines start in `content`. `startsLine` says whether its first character
 * begins a line (the log's start, or the chunk before ended with a newline).
 */
export function countHeaderLines(content: string, startsLine: boolean): number {
  const lines = content.split('\n');
  let n = 0;
  lines.forEach((line, i) => {
    if ((i > 0 || startsLine) && HEADER.test(line)) n++;
  });
  return n;
}

/** A time as the API's `header_times` give it: integer nanoseconds since the Unix epoch. */
export function unixNanos(at: Date): number {
  return at.getTime() * 1_000_000;
}
