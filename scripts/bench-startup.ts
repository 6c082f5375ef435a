/**
 * How soon `windsock serve --ephemeral` serves (`npm run bench:startup`): the compiled CLI
 * (`node dist/src/cli/main.js serve` with WINDSOCK_EPHEMERAL=true, PORT=0) is spawned BENCH_RUNS
 * times (default 10), one at a time, and each run measures, from the spawn:
 *   listening  the "windsock listening" log line (port bound, first-start bootstrap done)
 *   ready      the first 200 from GET /readyz (polled as fast as it answers)
 *   first_call the first 200 from an authenticated API call (GET .../pipelines with the printed
 *              token): the request validator's first use included
 * and the process's CPU time (user + system, from /proc) when it was ready: unlike the wall
 * times, CPU time hardly moves when other processes share the machine.
 * Printed as one line per figure (min / median / max) and, with BENCH_REPORT=<file>, as JSON.
 * Not part of CI or `npm test`; BENCHMARKS.md has figures.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { intEnv } from './bench-env';

const RUNS = intEnv('BENCH_RUNS', 10);
const MAIN = path.resolve(__dirname, '..', 'src', 'cli', 'main.js');
const TICKS_PER_SECOND = 100;

interface Run {
  listening: number;
  ready: number;
  first_call: number;
  cpu_at_ready: number;
}

/** CPU milliseconds (user + system) the process has used, from /proc (Linux); NaN elsewhere. */
function cpuMs(pid: number): number {
  try {
    // Fields after the command (which may hold spaces) : utime and stime are the 12th and 13th.
    const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / TICKS_PER_SECOND;
  } catch {
    return NaN;
  }
}

async function until200(url: string, headers: Record<string, string> = {}): Promise<void> {
  for (;;) {
    try {
      const res = await fetch(url, { headers });
      await res.arrayBuffer();
      if (res.status === 200) return;
    } catch {
      // Not listening yet.
    }
  }
}

async function once(): Promise<Run> {
  const cwd = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-startup-'));
  const started = performance.now();
  const proc = spawn(process.execPath, [MAIN, 'serve'], {
    cwd,
    env: { PATH: process.env.PATH, PORT: '0', HOST: '127.0.0.1', WINDSOCK_EPHEMERAL: 'true', LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  proc.stdout.setEncoding('utf8').on('data', (c: string) => (out += c));
  proc.stderr.setEncoding('utf8').on('data', (c: string) => (err += c));
  const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
  try {
    const { url, listening } = await new Promise<{ url: string; listening: number }>((resolve, reject) => {
      const check = () => {
        const url = /"url":"(http:[^"]+)"[^\n]*"msg":"windsock listening"/.exec(out)?.[1];
        if (url) resolve({ url, listening: performance.now() - started });
      };
      proc.stdout.on('data', check);
      void exited.then(() => reject(new Error(`the service exited before listening:\n${out}${err}`)));
    });
    await until200(`${url}/readyz`);
    const ready = performance.now() - started;
    const cpu = cpuMs(proc.pid!);
    const token = /^ {2}(eyJ\S+)$/m.exec(err)?.[1];
    if (!token) throw new Error(`no first-start token on stderr:\n${err}`);
    await until200(`${url}/v2/organizations/default/pipelines`, { Authorization: `Bearer ${token}` });
    const firstCall = performance.now() - started;
    // The directory the service ran in is left as it was: an ephemeral start writes nothing.
    const left = fs.readdirSync(cwd);
    if (left.length) throw new Error(`an ephemeral start wrote ${left.join(', ')} into its working directory`);
    return { listening, ready, first_call: firstCall, cpu_at_ready: cpu };
  } finally {
    proc.kill('SIGTERM');
    await exited;
    fs.rmSync(cwd, { recursive: true, force: true });
  }
}

async function main(): Promise<void> {
  const runs: Run[] = [];
  for (let i = 0; i < RUNS; i++) runs.push(await once());
  const report: Record<string, { min: number; median: number; max: number }> = {};
  for (const key of ['listening', 'ready', 'first_call', 'cpu_at_ready'] as const) {
    const values = runs.map((r) => r[key]).sort((a, b) => a - b);
    report[key] = { min: values[0]!, median: values[Math.floor(values.length / 2)]!, max: values.at(-1)! };
    const f = (n: number) => `${Math.round(n)} ms`;
    console.log(`${key.padEnd(13)} min ${f(report[key].min)}  median ${f(report[key].median)}  max ${f(report[key].max)}`);
  }
  console.log(`(${RUNS} runs, Node ${process.version}, ${os.cpus().length} CPUs, load average ${os.loadavg()[0]!.toFixed(1)} at the end)`);
  if (process.env.BENCH_REPORT) fs.writeFileSync(process.env.BENCH_REPORT, JSON.stringify({ runs: RUNS, report }, null, 2));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exitCode = 1;
});
