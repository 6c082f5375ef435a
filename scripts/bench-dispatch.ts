/**
 * Dispatch benchmark (`npm run bench:dispatch`), per store (SQLite, then Postgres): how long an
 * agent poll (`GET /v3/ping`) takes to find the one job its queue has while the organization
 * holds a growing backlog of older scheduled jobs for a queue no agent serves (BENCH_BACKLOGS,
 * default 0,1000,10000,100000).
 *
 * The backlog is copied from a real job (created through the API) straight into the jobs table,
 * each copy older than the last. At each backlog size the agent of queue `q2` polls
 * BENCH_REQUESTS times (default 200, after 20 to warm up); every poll must claim the q2 job,
 * which is then put back (not timed) for the next poll. Figures: p50 and p99 of the poll.
 *
 * The service runs in this process and polls are sequential, so every figure includes the
 * client's share of one event loop. Not part of CI or `npm test`; BENCHMARKS.md has figures.
 *
 * Settings (environment): BENCH_BACKLOGS, BENCH_REQUESTS, BENCH_STORES (sqlite,postgres;
 * Postgres is skipped with a note when unreachable), BENCH_PG_URL (server, default
 * postgres://postgres@127.0.0.1:5432; the database windsock_bench_dispatch_<pid> is created
 * and dropped).
 */
import crypto from 'node:crypto';
import type { Server } from 'node:http';
import os from 'node:os';
import { isPostgres, migrateLatest } from '../src/db/knex';
import type { Services } from '../src/services';
import { intEnv } from './bench-env';
import { benchAdmin, benchDatabase, benchServices, benchStores, jsonCaller, listenApp, percentile, storeSections, type Store } from './bench-support';

const BACKLOGS = (process.env.BENCH_BACKLOGS ?? '0,1000,10000,100000').split(',').map((s) => Number(s.trim().replace(/_/g, '')));
const REQUESTS = intEnv('BENCH_REQUESTS', 200);
const STORES = benchStores();

/** `count` copies of the job `templateId`, each older than every job before it. */
async function addBacklog(services: Services, templateId: string, from: number, count: number): Promise<void> {
  const db = services.db;
  const template = await db('jobs').where({ id: templateId }).first();
  if (!template) throw new Error(`no job ${templateId} to copy`);
  const perInsert = Math.floor(30_000 / Object.keys(template).length / 2);
  const oldest = Date.now() - 86_400_000;
  for (let i = 0; i < count; i += perInsert) {
    const rows = Array.from({ length: Math.min(perInsert, count - i) }, (_, j) => ({
      ...template,
      id: crypto.randomUUID(),
      step_id: crypto.randomUUID(),
      position: from + i + j + 1,
      created_at: new Date(oldest - (from + i + j) * 10),
      dispatch_at: new Date(oldest - (from + i + j) * 10),
    }));
    await db('jobs').insert(rows);
  }
  await db.raw(isPostgres(db) ? 'analyze jobs' : 'analyze');
}

async function benchStore(kind: Store): Promise<string[] | null> {
  const store = await benchDatabase(kind, 'dispatch', (message) => `\n[postgres] skipped: ${message}\n`);
  if (!store) return null;
  const services = benchServices({ kind, url: store.url });
  let server: Server | undefined;
  try {
    await migrateLatest(services.db);
    const listening = await listenApp(services);
    server = listening.server;
    // The client keeps its connection across the seeding pauses: the server must not close it meanwhile.
    server.keepAliveTimeout = 600_000;

    const { org, jwt } = await benchAdmin(services);
    const call = jsonCaller(listening.base);
    const bearer = { Authorization: `Bearer ${jwt}` };
    const buildOf = async (name: string, configuration: string) => {
      const p = await call('POST', '/v2/organizations/bench/pipelines', bearer, { name, repository: 'git@github.com:acme/app.git', configuration });
      const b = await call('POST', `/v2/organizations/bench/pipelines/${p.slug as string}/builds`, bearer, {
        commit: 'abc123',
        branch: 'main',
        message: 'bench',
      });
      return (b.jobs as { id: string }[])[0]!.id;
    };
    const stuckJob = await buildOf('Stuck', 'steps:\n  - command: stuck\n    agents: { queue: nobody }\n');
    const q2Job = await buildOf('Q2', 'steps:\n  - command: mine\n    agents: { queue: q2 }\n');
    const { token: registration } = await services.agents.createToken(org.id, null, 'bench');
    const agent = await call('POST', '/v3/register', { Authorization: `Token ${registration}` }, { name: 'q2-agent', meta_data: ['queue=q2'] });
    const agentAuth = { Authorization: `Token ${agent.access_token as string}` };
    await call('POST', '/v3/connect', agentAuth);

    const poll = async (): Promise<number> => {
      const t = process.hrtime.bigint();
      const body = await call('GET', '/v3/ping', agentAuth);
      const ms = Number(process.hrtime.bigint() - t) / 1e6;
      if ((body.job as { id: string } | null)?.id !== q2Job) throw new Error(`poll did not dispatch the q2 job: ${JSON.stringify(body).slice(0, 300)}`);
      await services.db('jobs').where({ id: q2Job }).update({ state: 'scheduled', agent_id: null });
      await services
        .db('agents')
        .where({ id: agent.id as string })
        .update({ job_id: null });
      return ms;
    };

    const lines: string[] = [];
    let backlog = 1; // the stuck build's own job
    for (const target of BACKLOGS) {
      const t = Date.now();
      if (target > backlog) await addBacklog(services, stuckJob, backlog, target - backlog);
      backlog = Math.max(backlog, target);
      process.stdout.write(`[${kind}] backlog ${backlog.toLocaleString('en')} (seeded in ${((Date.now() - t) / 1000).toFixed(1)} s)\n`);
      for (let i = 0; i < 20; i++) await poll();
      const times: number[] = [];
      for (let i = 0; i < REQUESTS; i++) times.push(await poll());
      times.sort((a, b) => a - b);
      lines.push(`| ${target.toLocaleString('en')} | ${percentile(times, 50).toFixed(2)} ms | ${percentile(times, 99).toFixed(2)} ms |`);
      process.stdout.write(`${lines[lines.length - 1]}\n`);
    }
    return lines;
  } finally {
    if (server) await new Promise((resolve) => server!.close(resolve));
    await services.db.destroy();
    await store.cleanup();
  }
}

async function main() {
  const report = await storeSections(STORES, ['| unservable jobs ahead | poll p50 | poll p99 |', '| --- | --- | --- |'], benchStore);
  process.stdout.write(`\n## Report (${REQUESTS} polls per row, ${os.cpus().length} CPUs, Node ${process.version})\n${report.join('\n')}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack}\n`);
  process.exit(1);
});
