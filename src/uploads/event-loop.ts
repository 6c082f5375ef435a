/**
 * Giving the event loop a turn inside long work on one upload. better-sqlite3 runs each
 * statement synchronously and settles its promise at once, and the result checks are plain
 * loops: a chain of awaits over them never let another request (or `/healthz`) run, so one
 * 5,000-result upload held the event loop for its whole ingestion (BENCHMARKS.md, "Uploads and
 * the event loop").
 */
export const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Results checked between two turns: a few milliseconds of work. */
export const RESULT_BATCH = 250;
