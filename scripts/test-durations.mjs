#!/usr/bin/env node
// Writes test/support/durations.json (each test file's seconds in a whole run) from the report of
// `npx jest --json --outputFile=<report>`: the order test/support/sequencer.js starts files in on a
// machine whose jest cache has no timings (a fresh clone, CI). Refresh it when files are added or a
// file's weight changes much: `node scripts/test-durations.mjs <report>`. Only the order matters.
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const report = process.argv[2];
if (!report) {
  process.stderr.write('usage: node scripts/test-durations.mjs <jest --json report>\n');
  process.exit(2);
}
const { testResults } = JSON.parse(readFileSync(report, 'utf8'));
const durations = Object.fromEntries(
  testResults
    .map((r) => [relative(ROOT, r.name).split('\\').join('/'), Math.round((r.endTime - r.startTime) / 100) / 10])
    .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)),
);
writeFileSync(join(ROOT, 'test', 'support', 'durations.json'), `${JSON.stringify(durations, null, 2)}\n`);
process.stdout.write(`test/support/durations.json: ${Object.keys(durations).length} files\n`);
