/**
 * The reference agent against a real server on loopback, for jobs that end without a normal
 * finish: the service's timeout (its clock moved forward), a cancel during a running job, and
 * a server restart on the same database that the agent rides out.
 */
import fs from 'node:fs';
import type http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { runAgents } from '../../src/cli/agent';
import { ok, type WindsockClient } from '../../clients/typescript/src';
import { createTestContext, describeEachDatabase, type TestContext } from '../support/context';
import { givenAgentPipeline, givenRegistrationToken, listen, movableClock, onLoopback, running, stop, until } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { buildRef, givenWatchedBuild, jobLogText, listAgents, readBuild, restClient, type BuildRef } from '../support/sdk';
import type { BuildJson } from '../support/types';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

const { advance, reset } = movableClock();

/** Once the job's log has `text` in it, cancels its build through the API and waits for the build to be canceled. */
async function cancelOncePrinted(api: WindsockClient, ref: BuildRef, jobId: string, text: string): Promise<BuildJson> {
  await until(
    () => jobLogText(api, ref, jobId),
    (t) => t.includes(text),
    'the job printing',
  );
  await ok(api.PUT('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/cancel', { params: { path: ref } }));
  return until(
    () => readBuild(api, ref),
    (x) => x.state === 'canceled',
    'the build canceled',
  );
}

describeEachDatabase('the reference agent stops jobs the service stops', (ctx) => {
  const { endpoint } = onLoopback(ctx);
  let dir: string;

  beforeAll(() => {
    reset();
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-lifecycle-'));
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** A build of one step that starts a background sleep, notes its pid, and waits. */
  const givenSleeper = async (name: string, extra = '') => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const pidFile = path.join(dir, `${name}.pid`);
    const { slug } = await givenPipeline(ctx(), org.slug, token, `steps:\n  - command: sleep 120 & echo $! > ${pidFile}; echo started; wait\n${extra}`);
    const { build, api, ref } = await givenWatchedBuild(ctx(), endpoint(), org.slug, slug, token);
    const read = () => readBuild(api, ref);
    const controller = new AbortController();
    const agents = runAgents({ endpoint: endpoint(), token: reg, tags: [], name, spawn: 1, pollIntervalMs: 50, signal: controller.signal });
    const jobId = build.jobs[0]!.id;
    await until(
      () => jobLogText(api, ref, jobId),
      (t) => t.includes('started'),
      'the job starting',
    );
    const pid = Number(fs.readFileSync(pidFile, 'utf8'));
    expect(running(pid)).toBe(true);
    const done = async () => {
      controller.abort();
      await agents;
    };
    return { api, ref, read, pid, done };
  };

  it('times out a job on the service clock: the agent stops the process group and the job ends timed_out', async () => {
    const s = await givenSleeper('timeout', '    timeout_in_minutes: 1\n');
    try {
      advance(61_000);
      expect((await ctx().services.sweeper.sweep()).timingOut).toBe(1);
      const b = await until(s.read, (x) => x.finished_at !== null, 'the build finishing');
      expect(b.state).toBe('failed');
      // SIGTERM first, as the real agent does: the shell ends by it (128 + 15).
      expect(b.jobs[0]).toMatchObject({ state: 'timed_out', exit_status: 143, signal_reason: 'timeout' });
      await until(
        async () => running(s.pid),
        (r) => !r,
        'the process ending',
      );
    } finally {
      await s.done();
    }
  });

  it('cancels a running job: canceling, then canceled once the agent has stopped it', async () => {
    const s = await givenSleeper('cancel');
    try {
      const canceling = await ok(s.api.PUT('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/cancel', { params: { path: s.ref } }));
      expect(canceling.state).toBe('canceling');
      expect(canceling.jobs![0]!.state).toBe('canceling');
      const b = await until(s.read, (x) => x.state === 'canceled', 'the build canceled');
      expect(b.finished_at).toMatch(ISO);
      expect(b.jobs[0]).toMatchObject({ state: 'canceled', exit_status: 143, signal_reason: 'cancel' });
      expect(running(s.pid)).toBe(false);
    } finally {
      await s.done();
    }
  });

  it('cancel mid-output: the output printed after SIGTERM is kept, the build ends canceled, and the same agent runs the next build', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    // It prints, is told to stop (SIGTERM), says so and exits: that last line reaches the
    // service while the job is canceling.
    const { slug } = await givenPipeline(
      ctx(),
      org.slug,
      token,
      `steps:\n  - command: "trap 'echo stopping cleanly; exit 3' TERM; echo before the cancel; while true; do sleep 0.05; done"\n`,
    );
    const lines: string[] = [];
    const controller = new AbortController();
    const agents = runAgents({
      endpoint: endpoint(),
      token: reg,
      tags: [],
      name: 'canceled',
      spawn: 1,
      pollIntervalMs: 50,
      signal: controller.signal,
      log: (l) => lines.push(l),
    });
    const api = restClient(endpoint(), token);
    try {
      const first = await givenBuild(ctx(), org.slug, slug, token);
      const ref = buildRef(org.slug, slug, first.number);
      const jobId = first.jobs[0]!.id;
      const b = await cancelOncePrinted(api, ref, jobId, 'before the cancel');
      expect(b.jobs[0]).toMatchObject({ state: 'canceled', exit_status: 3, signal_reason: 'cancel' });
      // (The shell may also report its `sleep` ended by the signal: `Terminated`.)
      expect(await jobLogText(api, ref, jobId)).toMatch(/^before the cancel\n(.*\n)?stopping cleanly\n$/);

      // The agent lives on: the next build runs on it.
      const { slug: next } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: echo next build\n');
      const second = await givenBuild(ctx(), org.slug, next, token);
      const after = await until(
        () => readBuild(api, buildRef(org.slug, next, second.number)),
        (x) => x.finished_at !== null,
        'the next build finishing',
      );
      expect(after.state).toBe('passed');
      expect(after.jobs[0]!.agent!.id).toBe(b.jobs[0]!.agent!.id);
      expect(lines.filter((l) => /not sent|not accepted/.test(l))).toEqual([]);
    } finally {
      controller.abort();
      await agents;
    }
  });

  it('a command that ignores SIGTERM is killed once the cancel grace period is over', async () => {
    const { org, token, reg, slug } = await givenAgentPipeline(ctx(), `steps:\n  - command: "trap '' TERM; echo stubborn; while true; do sleep 0.05; done"\n`);
    const controller = new AbortController();
    const agents = runAgents({
      endpoint: endpoint(),
      token: reg,
      tags: [],
      name: 'stubborn',
      spawn: 1,
      pollIntervalMs: 50,
      cancelGracePeriodSeconds: 1,
      signal: controller.signal,
    });
    const api = restClient(endpoint(), token);
    try {
      const build = await givenBuild(ctx(), org.slug, slug, token);
      const ref = buildRef(org.slug, slug, build.number);
      const b = await cancelOncePrinted(api, ref, build.jobs[0]!.id, 'stubborn');
      expect(b.jobs[0]).toMatchObject({ state: 'canceled', exit_status: 137, signal_reason: 'cancel' });
    } finally {
      controller.abort();
      await agents;
    }
  });

  it('registers again when the service marked it lost, and goes on running jobs', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const controller = new AbortController();
    const agents = runAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'comeback', spawn: 1, pollIntervalMs: 200, signal: controller.signal });
    const api = restClient(endpoint(), token);
    const list = () => listAgents(api, org.slug);
    const stateOf = async (agent_id: string) =>
      (await ok(api.GET('/v2/organizations/{org_slug}/agents/{agent_id}', { params: { path: { org_slug: org.slug, agent_id } } }))).connection_state;
    try {
      const [first] = await until(list, (l) => l.length === 1 && l[0]!.connection_state === 'connected', 'the agent connecting');
      // Move the clock past the limit and sweep; a poll landing in between keeps it alive, so try again.
      await until(
        async () => {
          advance(181_000);
          await ctx().services.sweeper.sweep();
          return stateOf(first!.id);
        },
        (state) => state === 'lost',
        'the agent lost',
      );
      // The list shows connected and stopping agents only: the new registration, not the lost one.
      const l = await until(list, (x) => x.some((a) => a.id !== first!.id && a.connection_state === 'connected'), 'the agent registering again');
      expect(l).toHaveLength(1);
      const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: echo back\n');
      const build = await givenBuild(ctx(), org.slug, slug, token);
      const b = await until(
        () => readBuild(api, buildRef(org.slug, slug, build.number)),
        (x) => x.finished_at !== null,
        'the build finishing',
      );
      expect(b.state).toBe('passed');
      expect(b.jobs[0]!.agent!.id).not.toBe(first!.id);
    } finally {
      controller.abort();
      await agents;
    }
  });
});

describeEachDatabase('the reference agent across a server restart', null, (_get, kind) => {
  it('reconnects to a server restarted on the same database and runs a job', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-restart-'));
    const sqliteFile = path.join(dir, 'db.sqlite3');
    let first: TestContext | null = await createTestContext(kind, { sqliteFile });
    let second: TestContext | null = null;
    const lines: string[] = [];
    const controller = new AbortController();
    let agents: Promise<void> | null = null;
    let server: http.Server | null = null;
    try {
      const { org, token } = await first.givenAdmin();
      const reg = await givenRegistrationToken(first, org.slug, token);
      const { slug } = await givenPipeline(first, org.slug, token, 'steps:\n  - command: echo "after the restart"\n');
      const listening = await listen(first.app);
      server = listening.server;
      const port = Number(new URL(listening.endpoint).port);
      agents = runAgents({
        endpoint: listening.endpoint,
        token: reg,
        tags: [],
        name: 'restart',
        spawn: 1,
        pollIntervalMs: 50,
        signal: controller.signal,
        log: (l) => lines.push(l),
      });
      // The same address before and after the restart: one client serves both servers.
      const api = restClient(listening.endpoint, token);
      const listed = () => listAgents(api, org.slug);
      const [agent] = await until(listed, (l) => l.length === 1 && l[0]!.connection_state === 'connected', 'the agent connecting');

      // The server goes away; the agent notices (it logs the failed poll) and keeps trying.
      const quiet = lines.length;
      await stop(server);
      server = null;
      await first.close({ keepSchema: true });
      const reached = first;
      first = null;
      await until(
        async () => lines.slice(quiet),
        (l) => l.length > 0,
        'the agent noticing',
      );

      second = await createTestContext(kind, { sqliteFile, sharePostgresSchemaOf: reached });
      server = (await listen(second.app, port)).server;
      const build = await givenBuild(second, org.slug, slug, token);
      const ref = buildRef(org.slug, slug, build.number);
      const b = await until(
        () => readBuild(api, ref),
        (x) => x.finished_at !== null,
        'the build finishing',
      );
      expect(b.state).toBe('passed');
      expect(b.jobs[0]!.agent!.id).toBe(agent!.id); // the same agent, not a new registration
      expect(await jobLogText(api, ref, b.jobs[0]!.id)).toBe('after the restart\n');
      expect(await listed()).toEqual([expect.objectContaining({ id: agent!.id, connection_state: 'connected' })]);
    } finally {
      controller.abort();
      await agents;
      if (server) await stop(server);
      await first?.close();
      await second?.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
