#!/usr/bin/env node
// Writes test/support/durations.json (each test file's seconds in a whole run) from the report of
// `npx jest --json --outputFile=<report>`, or from the output of a run (a CI log: jest prints
// `PASS <file> (<n> s)` for files slower than 5 s; a file it prints no time for counts 2 s): the order test/support/sequencer.js starts files in on a
// machine whose jest cache has no timings (a fresh clone, CI). Refresh it when files are added or a
// file's weight changes much: `node scripts/test-durations.mjs <report> [<report>...]` (the suite's
// and the fault tests' reports: `npm run test:faults` orders its files the same way). Only the order matters.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const reports = process.argv.slice(2);
if (reports.length === 0) {
  process.stderr.write('usage: node scripts/test-durations.mjs <jest --json report> [<report>...]\n');
  process.exit(2);
}
/** [file relative to the root, seconds] per file the report `text` names. */
function timings(text) {
  try {
    return JSON.parse(text).testResults.map((r) => [relative(ROOT, r.name).split('\\').join('/'), (r.endTime - r.startTime) / 1000]);
  } catch {
    const seen = new Map();
    for (const m of text.matchAll(/^(?:PASS|FAIL) (\S+\.test\.ts)(?: \((\d+(?:\.\d+)?) s\))?/gm)) {
      seen.set(m[1], Math.max(seen.get(m[1]) ?? 0, m[2] ? Number(m[2]) : 2));
    }
    return [...seen];
  }
}
const durations = Object.fromEntries(
  reports
    .flatMap((report) => timings(readFileSync(report, 'utf8')))
    .map(([file, seconds]) => [file, Math.round(seconds * 10) / 10])
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)),
);
writeFileSync(join(ROOT, 'test', 'support', 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
process.stdout.write(`test/support/durations.json: ${Object.keys(durations).length} files\n`);
