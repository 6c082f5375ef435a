/**
 * Moving the process's Date instead of waiting: the services' cache windows (the token cache,
 * an organization's IP allow-list) are 1 s of real time, read from Date. Only Date is faked;
 * every timer stays real, so servers, pools and streams go on as they would.
 */
import type { Config } from '@jest/types';

/** Just past the services' 1 s cache windows. */
export const PAST_CACHE_WINDOW_MS = 1100;

/** Everything but Date stays real when a test moves the Date. */
const ALL_BUT_DATE: Config.FakeableAPI[] = [
  'hrtime',
  'nextTick',
  'performance',
  'queueMicrotask',
  'setImmediate',
  'clearImmediate',
  'setInterval',
  'clearInterval',
  'setTimeout',
  'clearTimeout',
];

/** Fakes Date alone: from now on it runs on in real time, or, `standingStill`, stays where it is until the test sets it. Undone by `jest.useRealTimers()`. */
export function fakeDateOnly(opts: { standingStill?: boolean } = {}): void {
  jest.useFakeTimers({ advanceTimers: !opts.standingStill, doNotFake: ALL_BUT_DATE });
}

/** Moves the process's Date `ms` on, running on from there; timers stay real. Undone by `jest.useRealTimers()`. */
export function moveDateOn(ms: number): void {
  fakeDateOnly();
  jest.setSystemTime(Date.now() + ms);
}
