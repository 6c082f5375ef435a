/**
 * The service's one clock. Everything that dates or times something (a build's created_at, a
 * job's timeout, a schedule's next run, a token's expiry) reads `clock.now()`, never `new Date()`
 * or `Date.now()`, so a consumer's test run can freeze or shift time (WINDSOCK_CLOCK, and the
 * test-control endpoint) and see timeouts and schedules behave deterministically.
 *
 * It is the one clock: services read this module, none takes a clock of its own; the server sets
 * it once from WINDSOCK_CLOCK (server.ts) and the test-control endpoint moves it later.
 *
 * Real time is the default. A frozen clock stands still until moved; an offset clock runs at real
 * speed, shifted. Intervals the process waits on or measures stay on real time: timers and
 * sleeps, deadlines of outbound requests and database retries, how long a cached token answer is
 * reused, and the rate limiter's windows (a frozen clock must not stop a budget from refilling).
 * The clock decides what time it is, not how long the process waits.
 */
export type ClockMode = { kind: 'real' } | { kind: 'frozen'; at: Date } | { kind: 'offset'; ms: number };

export interface Clock {
  now(): Date;
  nowMs(): number;
}

let mode: ClockMode = { kind: 'real' };

export const clock: Clock & {
  /** Switch mode (the setting at start, the test-control endpoint later). */
  set(next: ClockMode): void;
  mode(): ClockMode;
  /** Frozen: move the frozen instant; offset: add to the offset; real: becomes an offset. */
  advance(ms: number): void;
} = {
  nowMs() {
    if (mode.kind === 'frozen') return mode.at.getTime();
    if (mode.kind === 'offset') return Date.now() + mode.ms;
    return Date.now();
  },
  now() {
    return new Date(this.nowMs());
  },
  set(next) {
    mode = next.kind === 'frozen' ? { kind: 'frozen', at: new Date(next.at.getTime()) } : next;
  },
  mode() {
    return mode.kind === 'frozen' ? { kind: 'frozen', at: new Date(mode.at.getTime()) } : mode;
  },
  advance(ms) {
    if (mode.kind === 'frozen') mode = { kind: 'frozen', at: new Date(mode.at.getTime() + ms) };
    else mode = { kind: 'offset', ms: (mode.kind === 'offset' ? mode.ms : 0) + ms };
  },
};
