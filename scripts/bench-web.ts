/**
 * Web interface benchmark (`npm run bench:web`), per store (SQLite, then Postgres): how long the
 * build page of a build with BENCH_JOBS (default 200) jobs takes, from the request to the last
 * byte of its HTML, over BENCH_ROUNDS (default 30) requests one at a time after two to warm up;
 * half of the jobs have finished on an agent, so the page names agents, durations and exit
 * statuses. The service runs in this process on 127.0.0.1, signed in through the sign-in form.
 * Then the live page's costs (issue 32): the `state` poll that stands in for the event stream
 * (one request for the whole page), and a running job's BENCH_LOG_MB (default 25) MB log as the
 * log viewer reads it: whole, in parts, then one new line from the offset already shown.
 * Not part of CI or `npm test`; BENCHMARKS.md has figures.
 *
 * Settings (environment): BENCH_JOBS, BENCH_ROUNDS, BENCH_LOG_MB, BENCH_STORES (sqlite,postgres),
 * BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432; the database
 * windsock_bench_web_<pid> is created and dropped).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { migrateLatest } from '../src/db/knex';
import { intEnv } from './bench-env';
import { benchAdmin, benchServices, benchStores, createPgDatabase, dropPgDatabase, jsonCaller, listenApp, PG_URL, type Store } from './bench-support';

const JOBS = intEnv('BENCH_JOBS', 200);
const ROUNDS = intEnv('BENCH_ROUNDS', 30);
const LOG_MB = intEnv('BENCH_LOG_MB', 25);
const STORES = benchStores();

async function run(kind: Store): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-web-'));
  const dbName = `windsock_bench_web_${process.pid}`;
  if (kind === 'postgres') await createPgDatabase(dbName);
  const services = benchServices(kind === 'sqlite' ? { kind, url: path.join(dir, 'bench.sqlite') } : { kind, url: `${PG_URL}/${dbName}` }, {
    artifacts: { dir: path.join(dir, 'artifacts') },
  });
  try {
    await migrateLatest(services.db);
    const { server, base } = await listenApp(services);
    try {
      const { jwt: token } = await benchAdmin(services);
      const call = jsonCaller(base);
      const api = (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => call(method, url, headers, body);
      const bearer = { Authorization: `Bearer ${token}` };
      const steps = Array.from({ length: JOBS }, (_, i) => `  - label: "step ${i} <with> \\"markup\\""\n    command: make test-${i}`).join('\n');
      await api(
        'POST',
        '/v2/organizations/bench/pipelines',
        { name: 'Web', repository: 'git@example.com:a/b.git', configuration: `steps:\n${steps}\n` },
        bearer,
      );
      const build = await api(
        'POST',
        '/v2/organizations/bench/pipelines/web/builds',
        { commit: 'HEAD', branch: 'main', message: 'Bench the build page' },
        bearer,
      );
      // Half of the jobs run on an agent and finish, so the page shows agents and durations.
      const reg = (await api('POST', '/v2/organizations/bench/agent-tokens', { description: 'bench' }, bearer)).token as string;
      const agent = (await api('POST', '/v3/register', { name: 'bench-agent' }, { Authorization: `Token ${reg}` })).access_token as string;
      const agentAuth = { Authorization: `Token ${agent}` };
      await api('POST', '/v3/connect', {}, agentAuth);
      for (let i = 0; i < JOBS / 2; i++) {
        const job = (await api('GET', '/v3/ping', undefined, agentAuth)).job as { id: string } | null;
        if (!job) break;
        await api('PUT', `/v3/jobs/${job.id}/accept`, {}, agentAuth);
        await api('PUT', `/v3/jobs/${job.id}/start`, {}, agentAuth);
        await api('PUT', `/v3/jobs/${job.id}/finish`, { exit_status: i % 7 === 0 ? 1 : 0 }, agentAuth);
      }

      // Sign in through the form: its CSRF cookie and field, then the session cookie.
      const form = await fetch(`${base}/login`, { headers: { Accept: 'text/html' } });
      const signinCookie = form.headers
        .getSetCookie()
        .map((c) => c.split(';')[0])
        .join('; ');
      const csrf = /name="_csrf" value="([^"]+)"/.exec(await form.text())![1]!;
      const signedIn = await fetch(`${base}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'Content-Type': 'application/x-www-form-urlencoded', Cookie: signinCookie },
        body: new URLSearchParams({ _csrf: csrf, token }).toString(),
      });
      const session = signedIn.headers
        .getSetCookie()
        .find((c) => c.startsWith('windsock_session='))!
        .split(';')[0]!;
      const page = `${base}/bench/web/builds/${build.number as number}`;
      const times: number[] = [];
      let bytes = 0;
      for (let i = 0; i < ROUNDS + 2; i++) {
        const t = process.hrtime.bigint();
        const res = await fetch(page, { headers: { Accept: 'text/html', Cookie: session } });
        const text = await res.text();
        const ms = Number(process.hrtime.bigint() - t) / 1e6;
        if (res.status !== 200) throw new Error(`build page: ${res.status}`);
        if (i >= 2) times.push(ms);
        bytes = text.length;
      }
      times.sort((a, b) => a - b);
      const pct = (p: number) => times[Math.min(times.length - 1, Math.floor((p / 100) * times.length))]!.toFixed(1);
      console.log(
        `${kind}: build page with ${JOBS} jobs (${(bytes / 1024).toFixed(0)} KiB of HTML), ${ROUNDS} requests: p50 ${pct(50)} ms, p90 ${pct(90)} ms, max ${times[times.length - 1]!.toFixed(1)} ms`,
      );

      // The fallback poll: the build and its jobs' states, one request for the whole page.
      const stateTimes: number[] = [];
      let stateBytes = 0;
      for (let i = 0; i < ROUNDS + 2; i++) {
        const t = process.hrtime.bigint();
        const res = await fetch(`${page}/state`, { headers: { Accept: 'application/json', Cookie: session } });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`state: ${res.status}`);
        if (i >= 2) stateTimes.push(Number(process.hrtime.bigint() - t) / 1e6);
        stateBytes = text.length;
      }
      stateTimes.sort((a, b) => a - b);
      console.log(
        `${kind}: state poll (${(stateBytes / 1024).toFixed(0)} KiB), ${ROUNDS} requests: p50 ${stateTimes[Math.floor(stateTimes.length / 2)]!.toFixed(1)} ms, max ${stateTimes[stateTimes.length - 1]!.toFixed(1)} ms`,
      );

      // A running job's big log, as the log viewer reads it.
      const running = (await api('GET', '/v3/ping', undefined, agentAuth)).job as { id: string } | null;
      if (!running) throw new Error('no job left to run');
      await api('PUT', `/v3/jobs/${running.id}/accept`, {}, agentAuth);
      await api('PUT', `/v3/jobs/${running.id}/start`, {}, agentAuth);
      let offset = 0;
      let sequence = 1;
      const line = (n: number) => `\x1b_bk;t=${1_700_000_000_000 + n}\x07\x1b[32mok\x1b[0m line ${n} of a long log with some words in it\n`;
      let n = 0;
      while (offset < LOG_MB * 1024 * 1024) {
        let content = '';
        while (content.length < 512 * 1024) content += line(++n);
        await api('POST', `/v3/jobs/${running.id}/chunks`, { sequence: sequence++, offset, content }, agentAuth);
        offset += Buffer.byteLength(content);
      }
      const logUrl = `${page}/jobs/${running.id}/log`;
      const read = async (from: number, state: string) => {
        const t = process.hrtime.bigint();
        const res = await fetch(`${logUrl}?offset=${from}${state ? `&state=${encodeURIComponent(state)}` : ''}`, {
          headers: { Accept: 'application/json', Cookie: session },
        });
        const text = await res.text();
        if (res.status !== 200) throw new Error(`log: ${res.status} ${text}`);
        const body = JSON.parse(text) as { offset: number; state: string; more: boolean; lines: unknown[] };
        return { ms: Number(process.hrtime.bigint() - t) / 1e6, bytes: text.length, ...body };
      };
      let whole = { ms: 0, bytes: 0, reads: 0, lines: 0 };
      let at = { offset: 0, state: '' };
      for (let more = true; more;) {
        const r = await read(at.offset, at.state);
        whole = { ms: whole.ms + r.ms, bytes: whole.bytes + r.bytes, reads: whole.reads + 1, lines: whole.lines + r.lines.length };
        at = { offset: r.offset, state: r.state };
        more = r.more;
      }
      console.log(
        `${kind}: ${(offset / 1024 / 1024).toFixed(1)} MB log (${whole.lines} lines) read whole by the viewer: ${whole.reads} reads, ${(whole.bytes / 1024 / 1024).toFixed(1)} MB of JSON, ${whole.ms.toFixed(0)} ms`,
      );
      const tails: { ms: number; bytes: number }[] = [];
      for (let i = 0; i < ROUNDS; i++) {
        const content = line(++n);
        await api('POST', `/v3/jobs/${running.id}/chunks`, { sequence: sequence++, offset, content }, agentAuth);
        offset += Buffer.byteLength(content);
        const r = await read(at.offset, at.state);
        if (r.lines.length !== 1) throw new Error(`a tail read brought ${r.lines.length} lines`);
        at = { offset: r.offset, state: r.state };
        tails.push({ ms: r.ms, bytes: r.bytes });
      }
      tails.sort((a, b) => a.ms - b.ms);
      console.log(
        `${kind}: tail of that log, one new line, ${ROUNDS} reads: ${tails[0]!.bytes} bytes each, p50 ${tails[Math.floor(tails.length / 2)]!.ms.toFixed(1)} ms, max ${tails[tails.length - 1]!.ms.toFixed(1)} ms`,
      );
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  } finally {
    await services.db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
    if (kind === 'postgres') await dropPgDatabase(dbName);
  }
}

async function main(): Promise<void> {
  for (const kind of STORES) await run(kind);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
