/** The words of a status: its description ("Build #12 passed (3 minutes, 2 seconds)") and its duration. */

/** GitHub's limit on a description, the smallest of the three services'. */
export const DESCRIPTION_MAX = 140;

function plural(n: number, unit: string): string {
  return `${n} ${unit}${n === 1 ? '' : 's'}`;
}

/** "1 hour, 2 minutes, 3 seconds", "3 minutes, 2 seconds", "0 seconds". */
export function humanDuration(ms: number): string {
  const total = Math.max(0, Math.floor(ms / 1000));
  const hours = Math.floor(total / 3600);
  const minutes = Math.floor((total % 3600) / 60);
  const seconds = total % 60;
  const parts: string[] = [];
  if (hours) parts.push(plural(hours, 'hour'));
  if (minutes) parts.push(plural(minutes, 'minute'));
  if (seconds || parts.length === 0) parts.push(plural(seconds, 'second'));
  return parts.join(', ');
}

/** " (3 minutes, 2 seconds)" between two ISO timestamps, or "" when either is missing or unreadable. */
export function durationSuffix(startedAt: unknown, finishedAt: unknown): string {
  if (typeof startedAt !== 'string' || typeof finishedAt !== 'string') return '';
  const start = Date.parse(startedAt);
  const end = Date.parse(finishedAt);
  if (Number.isNaN(start) || Number.isNaN(end) || end < start) return '';
  return ` (${humanDuration(end - start)})`;
}

/** Cut to the limit on a character (code point) boundary, with an ellipsis when cut. */
export function truncate(text: string, max = DESCRIPTION_MAX): string {
  const chars = Array.from(text);
  if (chars.length <= max) return text;
  return `${chars.slice(0, max - 1).join('')}…`;
}
