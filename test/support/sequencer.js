/**
 * The order jest starts test files in. With two workers, a long file started last leaves one
 * worker idle while it runs (the generated clients' file alone runs minutes), so the longest
 * go first. Jest does that by itself when its cache holds each file's last duration; on a fresh
 * clone (CI) it has none and falls back to file size, which says little (the generated clients'
 * file is small and among the longest). This sequencer fills the gap from
 * test/support/durations.json (seconds per file from a whole run, `scripts/test-durations.mjs`):
 * a file jest has no timing for takes that figure; a file neither knows is ordered by size, after
 * the known long ones. Only the order changes: every file still runs.
 */
const fs = require('node:fs');
const path = require('node:path');
const Sequencer = require('@jest/test-sequencer').default;

const ROOT = path.resolve(__dirname, '..', '..');
const KNOWN = JSON.parse(fs.readFileSync(path.join(__dirname, 'durations.json'), 'utf8'));
/** Seconds a file nobody has timed is taken for, per KiB of its source (in durations.json the median file runs ~8 s and is ~7 KiB). */
const SECONDS_PER_KIB = 1;

class LongestFirst extends Sequencer {
  sort(tests) {
    const seconds = (test) => {
      const cached = this.time(test);
      if (cached != null) return cached / 1000;
      const known = KNOWN[path.relative(ROOT, test.path).split(path.sep).join('/')];
      if (known != null) return known;
      return ((test.context.hasteFS.getSize(test.path) ?? 0) / 1024) * SECONDS_PER_KIB;
    };
    const failed = (test) => (this.hasFailed(test) ? 1 : 0);
    const weight = new Map(tests.map((t) => [t, seconds(t)]));
    return [...tests].sort((a, b) => failed(b) - failed(a) || weight.get(b) - weight.get(a) || (a.path < b.path ? -1 : 1));
  }
}

module.exports = LongestFirst;
