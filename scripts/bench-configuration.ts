/**
 * Configuration parser benchmark (`npm run bench:configuration`): how long `parseConfiguration`
 * takes on the hostile documents test/pipelines/configuration.test.ts checks the answers to
 * (alias bombs, a document full of aliases, one full of keys), and on the largest ordinary
 * configurations it accepts. Prints, per document, its outcome and the median and slowest of
 * BENCH_RUNS parses (default 20) in milliseconds. No database, no HTTP. Not part of CI or
 * `npm test`: timings depend on the machine, so the tests assert only outcomes.
 */
import { performance } from 'node:perf_hooks';
import { ValidationError } from '../src/core/errors';
import { parseConfiguration } from '../src/pipelines/configuration';
import { intEnv } from './bench-env';

const RUNS = intEnv('BENCH_RUNS', 20);

const laughs = [
  'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
  ...'bcdefghi'.split('').map((c, i) => `${c}: &${c} [${Array(9).fill(`*${'abcdefgh'[i]}`).join(',')}]`),
];
const step = (i: number) => [`  - label: "Step ${i}"`, `    command: make test-${i}`, '    <<: *defaults', `    key: step-${i}`].join('\n');

const documents: [name: string, text: string][] = [
  ['billion laughs as the steps', `${laughs.join('\n')}\nsteps: *i\n`],
  ['billion laughs in env and agents', `${laughs.join('\n')}\nsteps: [{command: x, env: *i, agents: *i}]\n`],
  [
    '12,000 aliases in a command',
    [
      `a: [${Array.from({ length: 12000 }, (_, i) => `&a${i} x`).join(',')}]`,
      `b: &b [${Array.from({ length: 12000 }, (_, i) => `*a${i}`).join(',')}]`,
      'steps: [{command: *b}]',
    ].join('\n'),
  ],
  ['20,000 top-level keys', `${Array.from({ length: 20000 }, (_, i) => `k${i}: 1`).join('\n')}\nsteps: [wait]`],
  [
    '500 command steps sharing defaults',
    [
      'defaults: &defaults',
      '  agents: {queue: default}',
      '  env: {CI: "true"}',
      '  retry: {automatic: [{exit_status: -1, limit: 2}]}',
      'steps:',
      ...Array.from({ length: 500 }, (_, i) => step(i)),
    ].join('\n'),
  ],
  ['500 wait steps', `steps:\n${'  - wait\n'.repeat(500)}`],
];

function outcome(text: string): string {
  try {
    return `${parseConfiguration(text).steps.length} steps`;
  } catch (error) {
    if (error instanceof ValidationError) return `422: ${error.errors[0]?.code ?? error.message}`.slice(0, 90);
    throw error;
  }
}

console.log(`parseConfiguration, ${RUNS} runs each (ms)`);
console.log(['document'.padEnd(36), 'KiB'.padStart(6), 'median'.padStart(8), 'max'.padStart(8), '  outcome'].join(''));
for (const [name, text] of documents) {
  const result = outcome(text); // also warms up
  const times: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const started = performance.now();
    outcome(text);
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)] ?? 0;
  const max = times[times.length - 1] ?? 0;
  const kib = (Buffer.byteLength(text) / 1024).toFixed(0);
  console.log([name.padEnd(36), kib.padStart(6), median.toFixed(1).padStart(8), max.toFixed(1).padStart(8), `  ${result}`].join(''));
}
