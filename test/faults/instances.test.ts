/**
 * Issue 31: several instances on one Postgres behave as one service. Three `windsock serve`
 * processes (dist/, as deployed) share a fresh Postgres database; a load generator in this
 * process drives them all at once:
 *
 * - builds created through the REST API, round-robin across the instances (every 201 recorded
 *   with its number: an acknowledged write);
 * - simulated agents speaking the agent API (`/v3`: register, connect, ping, accept, start, log
 *   chunks, finish), two homed on each instance; on a connection error an agent goes on through
 *   the next instance, as behind a load balancer, and a call whose answer was lost is judged by
 *   the job's state as the agent then reads it;
 * - a pipeline schedule firing every minute: the instances' clocks are frozen
 *   (`WINDSOCK_CLOCK`) and moved a minute at a time through the test controls, each step waiting
 *   for that minute's build;
 * - a webhook notification service to a receiver in this process;
 * - one agent that takes a job and goes silent, for the sweepers to find.
 *
 * Mid-run, while creates are in flight, one instance is killed with SIGKILL. Then, from the
 * database and the API: no acknowledged write lost (builds, log chunks), build numbers unique and
 * contiguous, every job offered to one agent and finished once, every build ended (one whose
 * state machine died with the killed instance is moved on by a sweeper), every schedule minute
 * one build, the silent agent's job ended once by one sweeper, every delivery made, and the
 * killed instance's agents carried on through the others.
 *
 * Deterministic in what it does (a fixed count of builds and clock steps, no wall-time phases);
 * waits are bounded polls. Postgres only (SQLite has one writer): skipped with a warning without
 * it, failing under CI=true.
 */
import knexFactory, { type Knex } from 'knex';
import { databases } from '../support/context';
import { startReceiver, type Receiver } from '../notifications/receiver';
import { freshStore, itRequiring, sleep, startService, stopService, type Service, type Store } from './support';

const ADMIN_TOKEN = 'instances-fault-admin-token-0123456789';
const T0 = Date.parse('2030-01-01T00:00:00Z');
/** Clock steps (minutes), each after a batch of creates: the schedule's builds. */
const STEPS = 8;
const BUILDS_PER_STEP = 8;
/** The step during whose creates one instance is killed. */
const KILL_AT_STEP = 3;
const AGENTS_PER_INSTANCE = 2;
const CHUNKS_PER_JOB = 2;
const CONCURRENCY = 4;
/** A silent agent is lost after this (service clock): STEPS minutes reach past it. */
const AGENT_LOST_AFTER_SECONDS = 300;
/** How many times a call answered 503 is made again. */
const BUSY_RETRIES = 5;

const ENV = {
  WINDSOCK_ADMIN_TOKEN: ADMIN_TOKEN,
  WINDSOCK_TEST_CONTROLS: 'true',
  WINDSOCK_CLOCK: new Date(T0).toISOString(),
  SCHEDULE_INTERVAL_MS: '200',
  SWEEP_INTERVAL_MS: '300',
  AGENT_LOST_AFTER_SECONDS: String(AGENT_LOST_AFTER_SECONDS),
  OUTBOUND_ALLOW_PRIVATE: 'true',
  OUTBOUND_TIMEOUT_MS: '5000',
  NOTIFICATION_RETRY_BASE_MS: '50',
  NOTIFICATION_RETRY_CAP_MS: '500',
  NOTIFICATION_CONCURRENCY: String(CONCURRENCY),
};

const CONFIGURATION = 'steps:\n  - command: echo one\n  - command: echo two\n';
const ORG = '/v2/organizations/default';

type Answer = { status: number; body: unknown };

/** One HTTP call; a connection error (the instance is gone) rejects, as fetch does. */
async function call(base: string, method: string, path: string, authorization: string, body?: unknown): Promise<Answer> {
  const res = await fetch(base + path, {
    method,
    headers: { Authorization: authorization, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(20_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed };
}

async function admin(s: Service, method: string, path: string, body?: unknown): Promise<Answer> {
  return call(s.url, method, path, `Bearer ${ADMIN_TOKEN}`, body);
}

async function must(what: string, a: Promise<Answer>, status: number): Promise<Record<string, unknown>> {
  const r = await a;
  if (r.status !== status) throw new Error(`${what} answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r.body as Record<string, unknown>;
}

/** Polls `read` until `done`, at most `ms`; fails naming what is missing. */
async function waitFor<T>(what: string, ms: number, read: () => Promise<T>, done: (v: T) => boolean, show: (v: T) => string = String): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v)) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not done after ${ms} ms (${show(v)})`);
    await sleep(100);
  }
}

/** What one simulated agent did, as its answers told it. */
interface AgentRecord {
  name: string;
  home: number;
  offered: Set<string>;
  /** Jobs it finished, with the instance that answered the finish and whether that was after the kill. */
  finished: { job: string; instance: number; afterKill: boolean }[];
  /** Chunks acknowledged (201) per job. */
  chunks: Map<string, string[]>;
  failovers: number;
  /** Calls made again after a 503. */
  busy: number;
}

/**
 * A simulated agent: registers and connects through its home instance, then polls and runs
 * jobs until `stop`. Every call goes to the instance it is on; a connection error moves it to
 * the next instance and the call is made again there.
 */
class SimAgent {
  token = '';
  id = '';
  private at: number;
  readonly record: AgentRecord;

  constructor(
    private readonly instances: Service[],
    name: string,
    home: number,
    private readonly killed: () => boolean,
  ) {
    this.at = home;
    this.record = { name, home, offered: new Set(), finished: [], chunks: new Map(), failovers: 0, busy: 0 };
  }

  /**
   * The call through the current instance, moving on after a connection error (up to every
   * instance twice), and made again after a 503 (the database was slow to give a connection on a
   * loaded machine), as the real agent retries. `retried`: an earlier attempt may have been
   * applied with its answer lost.
   */
  private async send(method: string, path: string, body?: unknown, auth = `Token ${this.token}`): Promise<Answer & { instance: number; retried: boolean }> {
    let retried = false;
    for (let attempt = 0, busy = 0; ; attempt++) {
      const instance = this.at;
      let answer: Answer;
      try {
        answer = await call(this.instances[instance]!.url, method, path, auth, body);
      } catch (err) {
        if (attempt >= this.instances.length * 2) throw err;
        this.at = (this.at + 1) % this.instances.length;
        this.record.failovers++;
        retried = true;
        continue;
      }
      if (answer.status === 503 && busy++ < BUSY_RETRIES) {
        this.record.busy++;
        retried = true;
        await sleep(200);
        continue;
      }
      return { ...answer, instance, retried };
    }
  }

  async register(registrationToken: string): Promise<void> {
    const reg = await this.send(
      'POST',
      '/v3/register',
      { name: this.record.name, hostname: `${this.record.name}.local`, version: '3.0.0', os: 'linux', arch: 'amd64', meta_data: [] },
      `Token ${registrationToken}`,
    );
    if (reg.status !== 201) throw new Error(`register ${this.record.name}: ${reg.status} ${JSON.stringify(reg.body)}`);
    const b = reg.body as { id: string; access_token: string };
    this.id = b.id;
    this.token = b.access_token;
    const conn = await this.send('POST', '/v3/connect');
    if (conn.status !== 200) throw new Error(`connect ${this.record.name}: ${conn.status} ${JSON.stringify(conn.body)}`);
  }

  /** The job as its agent reads it (`GET /v3/jobs/:id`): its state. */
  private async stateOf(job: string): Promise<string> {
    const r = await this.send('GET', `/v3/jobs/${job}`);
    if (r.status !== 200) throw new Error(`${this.record.name} reading job ${job}: ${r.status} ${JSON.stringify(r.body)}`);
    return (r.body as { state: string }).state;
  }

  /**
   * A move of the job; a 422 after a retry (the first attempt may have been applied, its answer
   * lost with the instance) is fine when the job is now in one of `reached`.
   */
  private async move(what: string, method: string, path: string, body: unknown, ok: number, job: string, reached: string[]) {
    const r = await this.send(method, path, body);
    if (r.status === ok) return r;
    if (r.status === 422 && r.retried && reached.includes(await this.stateOf(job))) return r;
    throw new Error(`${this.record.name} ${what} ${job}: ${r.status} ${JSON.stringify(r.body)} (through instance ${r.instance})`);
  }

  /** One ping: the job offered, if any. */
  async poll(): Promise<string | null> {
    const r = await this.send('GET', '/v3/ping');
    if (r.status !== 200) throw new Error(`${this.record.name} ping: ${r.status} ${JSON.stringify(r.body)}`);
    const job = (r.body as { job?: { id: string } | null }).job;
    if (!job) return null;
    this.record.offered.add(job.id);
    return job.id;
  }

  /** Accepts and starts the job, and sends `chunks` log chunks. */
  async begin(job: string, chunks: number): Promise<void> {
    await this.move('accept', 'PUT', `/v3/jobs/${job}/accept`, undefined, 200, job, ['accepted', 'running']);
    await this.move('start', 'PUT', `/v3/jobs/${job}/start`, undefined, 200, job, ['running']);
    let offset = 0;
    const sent: string[] = [];
    for (let sequence = 1; sequence <= chunks; sequence++) {
      const content = `${this.record.name} ${job} chunk ${sequence}\n`;
      const r = await this.send('POST', `/v3/jobs/${job}/chunks`, { sequence, offset, content });
      if (r.status !== 201) throw new Error(`${this.record.name} chunk ${sequence} of ${job}: ${r.status} ${JSON.stringify(r.body)}`);
      sent.push(content);
      offset += Buffer.byteLength(content);
    }
    this.record.chunks.set(job, sent);
  }

  async finish(job: string): Promise<void> {
    const r = await this.move('finish', 'PUT', `/v3/jobs/${job}/finish`, { exit_status: '0' }, 200, job, ['passed']);
    this.record.finished.push({ job, instance: r.instance, afterKill: this.killed() });
  }

  /** Polls and runs jobs until `stopped()`; an error ends the loop and is rethrown by the caller. */
  async run(stopped: () => boolean): Promise<void> {
    while (!stopped()) {
      const job = await this.poll();
      if (!job) {
        await sleep(50);
        continue;
      }
      await this.begin(job, CHUNKS_PER_JOB);
      await this.finish(job);
    }
  }
}

const postgresMissing = databases.includes('postgres') ? undefined : 'Postgres (TEST_DATABASES does not name it): the several-instances fault test';

describe('several instances on one Postgres', () => {
  let store: Store | undefined;
  let receiver: Receiver | undefined;
  let db: Knex | undefined;
  const instances: Service[] = [];

  afterEach(async () => {
    for (const s of instances.splice(0)) await stopService(s);
    await receiver?.close();
    await db?.destroy();
    await store?.drop();
  });

  itRequiring(postgresMissing)(
    'three instances under a mixed load, one killed mid-run, behave as one service',
    async () => {
      store = await freshStore('postgres');
      const env = { ...store.env, ...ENV };
      db = knexFactory({ client: 'pg', connection: store.env.DATABASE_URL, pool: { min: 0, max: 2 } });
      const q = db;
      receiver = await startReceiver();
      const r = receiver;

      // One after the other: each takes the test controls' snapshot of the database at its start
      // (src/test-controls), which is one process's. Starts at once on an empty database are
      // test/db/concurrent-migrations.test.ts's.
      for (let i = 0; i < 3; i++) instances.push(await startService(env));
      const [a] = instances as [Service, Service, Service];
      const victim = 2;
      let killedAt = false;
      const live = () => instances.filter((_, i) => i !== victim || !killedAt);

      try {
        // The organization's setup, through the first instance.
        const pipeline = await must(
          'pipeline',
          admin(a, 'POST', `${ORG}/pipelines`, { name: 'Instances', repository: 'git@github.com:acme/app.git', configuration: CONFIGURATION }),
          201,
        );
        const builds = `${ORG}/pipelines/${String(pipeline.slug)}/builds`;
        const registration = String((await must('agent token', admin(a, 'POST', `${ORG}/agent-tokens`, { description: 'instances' }), 201)).token);
        await must(
          'webhook service',
          admin(a, 'POST', `${ORG}/services`, {
            provider: 'webhook',
            description: 'instances',
            settings: { url: r.url, token: 'instances-token', events: ['build.scheduled', 'build.finished'] },
          }),
          201,
        );
        const schedule = await must(
          'schedule',
          admin(a, 'POST', `${ORG}/pipelines/${String(pipeline.slug)}/schedules`, {
            label: 'every minute',
            cronline: '* * * * *',
            branch: 'main',
            commit: 'HEAD',
          }),
          201,
        );
        expect(schedule.next_build_at).toBe(new Date(T0 + 60_000).toISOString());

        /** Every acknowledged create: the build's id and number as the 201 said. */
        const acknowledged: { id: string; number: number; instance: number }[] = [];
        /** Creates answered with another status: none is expected, each is shown. */
        const refused: string[] = [];
        /** Creates whose connection failed (the instance died): made again through the next instance. */
        let unanswered = 0;
        /** Creates answered 503 and made again. */
        let retried503 = 0;
        let created = 0;
        const create = async (i: number) => {
          let instance = i % instances.length;
          let failovers = 0;
          let busy = 0;
          for (;;) {
            let res: Answer;
            try {
              res = await admin(instances[instance]!, 'POST', builds, { commit: 'HEAD', branch: 'main', message: `build ${i}` });
            } catch (err) {
              // The instance is gone: through the next one, as a load balancer does.
              unanswered++;
              if (++failovers > instances.length) throw err;
              instance = (instance + 1) % instances.length;
              continue;
            }
            if (res.status === 503 && busy++ < BUSY_RETRIES) {
              // "Retry shortly" (no database connection for it in time on a loaded machine): as a client does.
              retried503++;
              await sleep(200);
              continue;
            }
            if (res.status !== 201) return void refused.push(`${instance}: ${res.status} ${JSON.stringify(res.body)}`);
            const b = res.body as { id: string; number: number };
            return void acknowledged.push({ id: b.id, number: b.number, instance });
          }
        };

        // The silent agent: takes a job of the first build and is never heard of again.
        await create(created++);
        const ghost = new SimAgent(instances, 'ghost', 0, () => killedAt);
        await ghost.register(registration);
        const ghostJob = await waitFor(
          'a job for the silent agent',
          20_000,
          () => ghost.poll(),
          (j) => j !== null,
        );
        await ghost.begin(ghostJob!, 1);

        // The agents, two homed on each instance.
        const agents = instances.flatMap((_, home) =>
          Array.from({ length: AGENTS_PER_INSTANCE }, (_x, n) => new SimAgent(instances, `agent-${home}-${n}`, home, () => killedAt)),
        );
        for (const agent of agents) await agent.register(registration);
        let stopAgents = false;
        const running = agents.map((agent) => agent.run(() => stopAgents));
        // Rejects as soon as one agent fails (raced against each wait, so a failure is seen at once).
        const agentFailure = Promise.race(running.map((p) => p.then(() => new Promise<never>(() => undefined))));
        agentFailure.catch(() => undefined);

        const setClocks = async (at: number) => {
          for (const s of live()) await must('clock', admin(s, 'PUT', '/_windsock/clock', { mode: 'frozen', at: new Date(at).toISOString() }), 200);
        };
        const scheduledBuilds = async () => Number((await q('builds').where({ source: 'schedule' }).count<{ n: string }[]>({ n: '*' }))[0]!.n);

        for (let step = 1; step <= STEPS; step++) {
          // A batch of creates, CONCURRENCY at a time, round-robin across the instances.
          const batch = Array.from({ length: BUILDS_PER_STEP }, () => created++);
          let next = 0;
          await Promise.race([
            agentFailure,
            Promise.all(
              Array.from({ length: CONCURRENCY }, async () => {
                while (next < batch.length) {
                  const i = batch[next++]!;
                  // Mid-batch, with creates in flight: the victim dies.
                  if (step === KILL_AT_STEP && next === BUILDS_PER_STEP / 2 && !killedAt) {
                    instances[victim]!.proc.kill('SIGKILL');
                    killedAt = true;
                  }
                  await create(i);
                }
              }),
            ),
          ]);
          // The next minute on every live instance: the schedule's build of that minute, once.
          await setClocks(T0 + step * 60_000 + 1_000);
          await Promise.race([agentFailure, waitFor(`the schedule's build of minute ${step}`, 30_000, scheduledBuilds, (n) => n >= step)]);
        }
        expect(await instances[victim]!.exited).toEqual({ code: null, signal: 'SIGKILL' });

        // No more schedule minutes; every job runs to its end (the silent agent's by a sweeper).
        await must(
          'disabling the schedule',
          admin(a, 'PATCH', `${ORG}/pipelines/${String(pipeline.slug)}/schedules/${String(schedule.id)}`, { enabled: false }),
          200,
        );
        const unfinished = () =>
          q('jobs')
            .whereNull('finished_at')
            .count<{ n: string }[]>({ n: '*' })
            .then((rows) => Number(rows[0]!.n));
        await Promise.race([agentFailure, waitFor('every job finished', 90_000, unfinished, (n) => n === 0)]);
        // Two more minutes: a build whose advance died with the killed instance counts as stalled
        // (STALLED_AFTER_MS after its last job) and a sweeper moves it on; the leases the killed
        // instance held on deliveries run out, and another instance sends them.
        await setClocks(T0 + (STEPS + 2) * 60_000 + 1_000);
        const unfinishedBuilds = () => q('builds').whereNotIn('state', ['passed', 'failed']).select('id', 'state');
        await waitFor(
          'every build finished',
          30_000,
          unfinishedBuilds,
          (bs) => bs.length === 0,
          (bs) => JSON.stringify(bs),
        );
        stopAgents = true;
        await Promise.all(running);

        const undelivered = () =>
          q('notification_deliveries')
            .whereNot({ state: 'delivered' })
            .count<{ n: string }[]>({ n: '*' })
            .then((rows) => Number(rows[0]!.n));
        const unfanned = () =>
          q('outbox_events')
            .whereNull('fanned_out_at')
            .count<{ n: string }[]>({ n: '*' })
            .then((rows) => Number(rows[0]!.n));
        await waitFor(
          'every delivery made',
          60_000,
          async () => (await undelivered()) + (await unfanned()),
          (n) => n === 0,
        );

        const jobsOf = (job: string) => String(jobRows.find((j) => j.id === job)?.build_id);
        const jobRows = await q('jobs').select('id', 'build_id');
        // --- Builds: no acknowledged create lost; numbers unique and contiguous, per pipeline and per organization.
        const rows = await q('builds').select('id', 'number', 'org_number', 'source', 'created_at', 'state').orderBy('number');
        const byId = new Map(rows.map((b) => [b.id as string, b]));
        const ghostBuild = jobsOf(ghostJob!);
        expect(rows.filter((b) => b.state !== 'passed').map((b) => [b.id, b.state])).toEqual([[ghostBuild, 'failed']]);
        for (const ack of acknowledged) expect(Number(byId.get(ack.id)?.number)).toBe(ack.number);
        expect(rows.map((b) => Number(b.number))).toEqual(rows.map((_, i) => i + 1));
        expect(rows.map((b) => Number(b.org_number)).sort((x, y) => x - y)).toEqual(rows.map((_, i) => i + 1));
        // Only creates that got no 201 may have made a build nobody heard of.
        const apiBuilds = rows.filter((b) => b.source !== 'schedule');
        expect(apiBuilds.length).toBeGreaterThanOrEqual(acknowledged.length);
        expect(apiBuilds.length).toBeLessThanOrEqual(acknowledged.length + refused.length + unanswered + retried503);
        expect(refused).toEqual([]);
        expect(acknowledged).toHaveLength(created);

        // --- Schedule: one build per minute stepped, each in its own minute.
        const scheduled = rows.filter((b) => b.source === 'schedule');
        expect(scheduled).toHaveLength(STEPS);
        expect(new Set(scheduled.map((b) => Math.floor(new Date(String(b.created_at)).getTime() / 60_000))).size).toBe(STEPS);

        // --- Jobs: each offered to one agent, finished once by it, its acknowledged chunks all stored.
        const everyone = [...agents, ghost].map((x) => x.record);
        const offeredTo = new Map<string, string[]>();
        for (const rec of everyone) for (const job of rec.offered) offeredTo.set(job, [...(offeredTo.get(job) ?? []), rec.name]);
        expect([...offeredTo].filter(([, names]) => names.length > 1)).toEqual([]);
        const finishes = new Map<string, string[]>();
        for (const rec of everyone) for (const f of rec.finished) finishes.set(f.job, [...(finishes.get(f.job) ?? []), rec.name]);
        expect([...finishes].filter(([, names]) => names.length > 1)).toEqual([]);
        const jobs = await q('jobs').select('id', 'state', 'agent_id', 'exit_status', 'build_id');
        expect(jobs).toHaveLength(rows.length * 2);
        const agentIds = new Map([...agents, ghost].map((x) => [x.id, x.record.name]));
        for (const job of jobs) {
          if (job.id === ghostJob) continue;
          expect([job.id, job.state, agentIds.get(job.agent_id as string)]).toEqual([job.id, 'passed', finishes.get(job.id as string)?.[0]]);
        }
        const logs = await q('job_log_chunks').select('job_id', 'sequence', 'content').orderBy(['job_id', 'sequence']);
        const logOf = (job: string) => logs.filter((c) => c.job_id === job).map((c) => c.content as string);
        for (const rec of everyone) for (const [job, sent] of rec.chunks) expect(logOf(job).slice(0, sent.length)).toEqual(sent);

        // --- The silent agent: lost, its job failed once (one sweeper's line, whichever instance ran it).
        const lostJob = jobs.find((j) => j.id === ghostJob)!;
        expect([lostJob.state, Number(lostJob.exit_status)]).toEqual(['failed', -1]);
        expect(logOf(ghostJob!).filter((l) => l.includes('stopped reporting'))).toHaveLength(1);
        expect((await q('agents').where({ id: ghost.id }).first('connection_state'))?.connection_state).toBe('lost');

        // --- Deliveries: every build told scheduled and finished; duplicates only of what the killed instance had in flight.
        const deliveries = await q('notification_deliveries').select('id', 'event', 'state', 'payload');
        expect(deliveries.filter((d) => d.state !== 'delivered')).toEqual([]);
        const heard = (event: string) =>
          new Set(r.received.filter((x) => x.headers['x-buildkite-event'] === event).map((x) => (x.body.build as { id: string }).id));
        for (const event of ['build.scheduled', 'build.finished']) expect([...heard(event)].sort()).toEqual(rows.map((b) => b.id as string).sort());
        const perDelivery = new Map<string, number>();
        for (const x of r.received)
          perDelivery.set(String(x.headers['x-buildkite-request']), (perDelivery.get(String(x.headers['x-buildkite-request'])) ?? 0) + 1);
        expect(new Set(perDelivery.keys())).toEqual(new Set(deliveries.map((d) => d.id as string)));
        const twice = [...perDelivery].filter(([, n]) => n > 1);
        expect(twice.length).toBeLessThanOrEqual(CONCURRENCY);
        expect(twice.every(([, n]) => n === 2)).toBe(true);

        // --- The killed instance's agents went on through the others.
        for (const agent of agents.filter((x) => x.record.home === victim)) {
          expect(agent.record.failovers).toBeGreaterThan(0);
          expect(agent.record.finished.filter((f) => f.afterKill && f.instance !== victim).length).toBeGreaterThan(0);
        }

        const stalled = instances
          .flatMap((x) => x.output().split('\n'))
          .filter((l) => l.includes('sweep ran the state machine of builds'))
          .reduce((n, l) => n + Number((JSON.parse(l) as { builds: number }).builds), 0);
        process.stdout.write(
          `several instances: ${stalled} builds moved on by a sweeper, ${rows.length} builds (${acknowledged.length} acknowledged, ${unanswered} creates made again after a lost connection and ${retried503} after a 503, ${scheduled.length} scheduled), ` +
            `${jobs.length} jobs, ${deliveries.length} deliveries (${twice.length} sent twice), failovers ${agents.map((x) => x.record.failovers).join('/')}, agent calls made again after a 503: ${agents.reduce((n, x) => n + x.record.busy, 0)}\n`,
        );
      } catch (err) {
        const notable = (o: string) =>
          o
            .split('\n')
            .filter((l) => /"level":(4|5)\d|"status":5\d\d/.test(l))
            .slice(-10)
            .join('\n');
        throw new Error(`${(err as Error).message}\n${instances.map((s, i) => `--- instance ${i}:\n${notable(s.output())}`).join('\n')}`);
      }
    },
    300_000,
  );
});
