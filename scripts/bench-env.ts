/** Settings of the benchmark scripts, from the environment. */
import fs from 'node:fs';
import path from 'node:path';

/** A positive whole number from `name` (underscores allowed: 1_000_000), or `fallback` when unset. */
export function intEnv(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw.replace(/_/g, ''));
  if (!Number.isInteger(n) || n <= 0) throw new Error(`${name} must be a positive whole number, got "${raw}"`);
  return n;
}

/**
 * The node options a benchmark runs the service with: BENCH_NODE_OPTIONS, else
 * `config.serverNodeOptions` of package.json (what `npm start` uses), so it is measured as it runs.
 */
export function serverNodeOptions(): string[] {
  const root = path.resolve(__dirname, '..', '..');
  const configured = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { config: { serverNodeOptions: string } }).config
    .serverNodeOptions;
  return (process.env.BENCH_NODE_OPTIONS ?? configured).split(/\s+/).filter(Boolean);
}
