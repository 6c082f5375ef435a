/**
 * Web interface benchmark (`npm run bench:web`), per store (SQLite, then Postgres): how long the
 * build page of a build with BENCH_JOBS (default 200) jobs takes, from the request to the last
 * byte of its HTML, over BENCH_ROUNDS (default 30) requests one at a time after two to warm up;
 * half of the jobs have finished on an agent, so the page names agents, durations and exit
 * statuses. The service runs in this process on 127.0.0.1, signed in through the sign-in form.
 * Not part of CI or `npm test`; BENCHMARKS.md has figures.
 *
 * Settings (environment): BENCH_JOBS, BENCH_ROUNDS, BENCH_STORES (sqlite,postgres),
 * BENCH_PG_URL (default postgres://postgres@127.0.0.1:5432; the database
 * windsock_bench_web_<pid> is created and dropped).
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { createApp } from '../src/app';
import { migrateLatest } from '../src/db/knex';
import { createLogger } from '../src/http/middleware/logger';
import { createServices } from '../src/services';
import { SCOPES } from '../src/core/identity';
import { intEnv } from './bench-env';

const JOBS = intEnv('BENCH_JOBS', 200);
const ROUNDS = intEnv('BENCH_ROUNDS', 30);
const STORES = (process.env.BENCH_STORES ?? 'sqlite,postgres').split(',').map((s) => s.trim()) as ('sqlite' | 'postgres')[];
const PG_URL = (process.env.BENCH_PG_URL ?? 'postgres://postgres@127.0.0.1:5432').replace(/\/+$/, '');

async function run(kind: 'sqlite' | 'postgres'): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-bench-web-'));
  const dbName = `windsock_bench_web_${process.pid}`;
  if (kind === 'postgres') {
    const admin = new pg.Client({ connectionString: `${PG_URL}/postgres` });
    await admin.connect();
    await admin.query(`create database ${dbName}`);
    await admin.end();
  }
  const logger = createLogger('silent');
  const services = createServices({
    database: kind === 'sqlite' ? { kind, url: path.join(dir, 'bench.sqlite') } : { kind, url: `${PG_URL}/${dbName}` },
    secret: crypto.randomBytes(32).toString('hex'),
    publicUrl: 'http://127.0.0.1',
    github: { apiUrl: undefined, token: undefined },
    githubEnterprise: { apiUrl: undefined, token: undefined },
    logger,
    artifacts: { dir: path.join(dir, 'artifacts') },
  });
  try {
    await migrateLatest(services.db);
    const app = createApp({
      ...services,
      logger,
      publicUrl: 'http://127.0.0.1',
      bodyLimitBytes: 1024 * 1024,
      uploadBodyLimitBytes: 64 * 1024 * 1024,
      validateResponses: false,
    });
    const server = http.createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const org = await services.orgs.create({ slug: 'bench', name: 'Bench' });
      const user = await services.users.create({ name: 'Bench', email: 'bench@example.com' });
      await services.orgs.addMember(org.id, user.id, 'admin');
      const { jwt: token } = await services.tokens.create({
        userId: user.id,
        organizationIds: [org.id],
        scopes: [...SCOPES],
        expiresAt: new Date(Date.now() + 3600_000),
      });
      const api = async (method: string, url: string, body?: unknown, headers: Record<string, string> = {}) => {
        const res = await fetch(`${base}${url}`, {
          method,
          headers: { 'Content-Type': 'application/json', ...headers },
          body: body === undefined ? undefined : JSON.stringify(body),
        });
        if (!res.ok) throw new Error(`${method} ${url}: ${res.status} ${await res.text()}`);
        return res.json() as Promise<Record<string, unknown>>;
      };
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
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  } finally {
    await services.db.destroy();
    fs.rmSync(dir, { recursive: true, force: true });
    if (kind === 'postgres') {
      const admin = new pg.Client({ connectionString: `${PG_URL}/postgres` });
      await admin.connect();
      await admin.query(`drop database if exists ${dbName}`);
      await admin.end();
    }
  }
}

async function main(): Promise<void> {
  for (const kind of STORES) await run(kind);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
