import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { runAgents } from '../../src/cli/agent';
import { describeEachDatabase } from '../support/context';
import { givenRegistrationToken, movableClock, onLoopback, running, until } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { buildRef, givenWatchedBuild, jobLogText, listAgents, readBuild, restClient } from '../support/sdk';
import type { BuildJson } from '../support/types';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** The service's clock (core/clock.ts): moved forward to time a step out. */
const { advance, reset } = movableClock();

describeEachDatabase('the reference agent, end to end on loopback', (ctx) => {
  const { endpoint } = onLoopback(ctx);
  // Each store's run starts on the real clock.
  beforeAll(() => reset());
  afterAll(() => reset());

  it('runs a pipeline with a wait, a soft failure, a parallel step, a trigger, a timed-out step and a block step, observed along the way', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug: deploy } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: echo "deployed $BUILDKITE_BRANCH"\n');
    const { slug } = await givenPipeline(
      ctx(),
      org.slug,
      token,
      [
        'steps:',
        '  - label: hello',
        '    command: echo "hello $BUILDKITE_BUILD_NUMBER from $BUILDKITE_PIPELINE_SLUG in $(basename $PWD)"',
        '  - wait',
        '  - command: echo soft; exit 3',
        '    soft_fail:',
        '      - exit_status: 3',
        '  - command: echo "part $BUILDKITE_PARALLEL_JOB of $BUILDKITE_PARALLEL_JOB_COUNT"',
        '    parallelism: 3',
        `  - trigger: ${deploy}`,
        '    label: Deploy',
        '    build:',
        '      branch: release',
        '  - label: slow',
        '    command: echo started; sleep 120 & wait',
        '    timeout_in_minutes: 1',
        '    soft_fail: true',
        '  - wait',
        '  - block: Ship',
        '  - command: echo shipped >&2; exit 0',
      ].join('\n'),
    );
    const build = await givenBuild(ctx(), org.slug, slug, token);
    // The REST API over the network, through the SDK, as any client watching the build would.
    const api = restClient(endpoint(), token);
    const ref = buildRef(org.slug, slug, build.number);
    // Every state each job and the build were seen in, in order (each poll of the REST API adds what changed).
    const seen = { build: [] as string[], jobs: new Map<string, string[]>() };
    const note = (trail: string[], state: string) => trail[trail.length - 1] !== state && trail.push(state);
    const read = async () => {
      const b = await readBuild(api, ref);
      note(seen.build, b.blocked ? `${b.state}+blocked` : b.state);
      for (const j of b.jobs) {
        if (!seen.jobs.has(j.id)) seen.jobs.set(j.id, []);
        note(seen.jobs.get(j.id)!, j.state);
      }
      return b;
    };
    /** Polls the build (bounded) until it satisfies `done`. */
    const untilBuild = (done: (b: BuildJson) => boolean, what: string) => until(read, done, what, 1500);
    const controller = new AbortController();
    const agents = runAgents({
      endpoint: endpoint(),
      token: reg,
      tags: ['queue=default'],
      name: 'e2e',
      spawn: 2,
      pollIntervalMs: 20,
      signal: controller.signal,
    });
    const log = (id: string) => jobLogText(api, ref, id);
    try {
      await read();
      // The slow step runs until the service's clock passes its timeout; then the agent is told.
      let b = await untilBuild((x) => x.jobs[7]!.state === 'running', 'the slow step running');
      for (let i = 0; i < 500 && !(await log(b.jobs[7]!.id)).includes('started'); i++) await new Promise((r) => setTimeout(r, 20));
      advance(61_000);
      expect((await ctx().services.sweeper.sweep()).timingOut).toBe(1);
      b = await untilBuild((x) => x.blocked, 'the block step');
      expect(b).toMatchObject({ state: 'passed', blocked: true });
      const jobs = b.jobs;
      expect(jobs.map((j) => j.type)).toEqual(
        ['script', 'waiter', 'script', 'script', 'script', 'script', 'trigger', 'script', 'waiter', 'manual', 'script'].slice(0, jobs.length),
      );
      expect(jobs.map((j) => j.state)).toEqual([
        'passed',
        'passed',
        'failed',
        'passed',
        'passed',
        'passed',
        'passed',
        'timed_out',
        'passed',
        'blocked',
        'waiting',
      ]);
      expect(jobs[2]).toMatchObject({ exit_status: 3, soft_failed: true });
      expect(jobs[7]).toMatchObject({ state: 'timed_out', exit_status: 143, signal_reason: 'timeout', soft_failed: true });
      expect(jobs[0]!.agent?.name).toMatch(/^e2e-[12]$/);
      expect(await log(jobs[0]!.id)).toMatch(new RegExp(`^hello ${build.number} from ${slug} in windsock-build-`));
      expect(await log(jobs[2]!.id)).toBe('soft\n');
      expect(new Set(await Promise.all([3, 4, 5].map((i) => log(jobs[i]!.id))))).toEqual(new Set(['part 0 of 3\n', 'part 1 of 3\n', 'part 2 of 3\n']));
      expect(await log(jobs[7]!.id)).toBe('started\n');
      // The synchronous trigger took its build's result; the agent ran that build too.
      const child = await readBuild(api, buildRef(org.slug, deploy, jobs[6]!.triggered_build!.number));
      expect(child).toMatchObject({ state: 'passed', branch: 'release', source: 'trigger_job', jobs: [{ state: 'passed', exit_status: 0 }] });

      await api.PUT('/v2/organizations/{org_slug}/pipelines/{pipeline_slug}/builds/{build_number}/jobs/{job_id}/unblock', {
        params: { path: { ...ref, job_id: jobs[9]!.id } },
        body: {},
      });
      b = await untilBuild((x) => !x.blocked && x.finished_at !== null, 'the build finishing');
      expect(b.state).toBe('passed');
      const last = b.jobs[10]!;
      expect(last).toMatchObject({ state: 'passed', exit_status: 0 });
      expect(await log(last.id)).toBe('shipped\n');

      // What was seen along the way: each trail follows the state machine's order.
      const order = ['waiting', 'blocked', 'unblocked', 'scheduled', 'assigned', 'accepted', 'running', 'timing_out', 'passed', 'failed', 'timed_out'];
      for (const [id, trail] of seen.jobs) {
        const ranks = trail.map((s) => order.indexOf(s));
        expect({ id, trail, ordered: ranks.every((r, i) => r >= 0 && (i === 0 || r > ranks[i - 1]!)) }).toEqual({ id, trail, ordered: true });
      }
      const trailOf = (i: number) => seen.jobs.get(b.jobs[i]!.id)!;
      expect(trailOf(0)[0]).toBe('scheduled'); // before the first wait: runnable at once
      expect(trailOf(2)[0]).toBe('waiting'); // behind the wait
      expect(trailOf(7)).toContain('running'); // the slow step was seen running before it timed out
      expect(trailOf(9)).toEqual(expect.arrayContaining(['blocked', 'unblocked']));
      expect(seen.build[0]).toBe('scheduled');
      expect(seen.build).toEqual(expect.arrayContaining(['running', 'passed+blocked']));
      expect(seen.build[seen.build.length - 1]).toBe('passed');

      // Timestamps: created <= scheduled <= started <= finished for every job that ran; the
      // build started with its first job and finished after its last.
      const t = (v: string | null | undefined) => (v === null || v === undefined ? null : Date.parse(v));
      for (const j of b.jobs) {
        expect(j.created_at).toMatch(ISO);
        if (j.type === 'script') {
          expect([j.scheduled_at, j.runnable_at, j.started_at, j.finished_at].every((v) => typeof v === 'string' && ISO.test(v))).toBe(true);
          expect(t(j.created_at)! <= t(j.scheduled_at)! && t(j.scheduled_at)! <= t(j.started_at)! && t(j.started_at)! <= t(j.finished_at)!).toBe(true);
        }
      }
      const started = b.jobs.map((j) => t(j.started_at)).filter((v): v is number => v !== null);
      expect(t(b.started_at)).toBe(Math.min(...started));
      expect(t(b.finished_at)!).toBeGreaterThanOrEqual(Math.max(...b.jobs.map((j) => t(j.finished_at) ?? 0)));
      // Jobs behind the first wait became runnable only once everything before it had finished.
      expect(t(b.jobs[2]!.runnable_at)!).toBeGreaterThanOrEqual(t(b.jobs[0]!.finished_at)!);
    } finally {
      controller.abort();
      await agents;
    }
    // Disconnected on their way out: no longer in the list (connected and stopping agents, as the real API's).
    expect(await listAgents(api, org.slug)).toEqual([]);
    expect(await ctx().services.db('agents').where({ organization_id: org.id }).pluck('connection_state')).toEqual(['disconnected', 'disconnected']);
  }, 60_000);

  it("kills the job's whole process group when the agent stops, and reports it failed", async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    // The shell and a background sleep note their pids: both are in the job's process group.
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-stopper-'));
    const { slug } = await givenPipeline(
      ctx(),
      org.slug,
      token,
      `steps:\n  - command: echo $$ > ${dir}/shell; sleep 30 & echo $! > ${dir}/sleep; echo started; sleep 30; wait\n`,
    );
    const { build, api, ref } = await givenWatchedBuild(ctx(), endpoint(), org.slug, slug, token);
    const controller = new AbortController();
    const agents = runAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'stopper', spawn: 1, pollIntervalMs: 20, signal: controller.signal });
    const jobId = build.jobs[0]!.id;
    for (let i = 0; i < 500 && !(await jobLogText(api, ref, jobId)).includes('started'); i++) {
      await new Promise((r) => setTimeout(r, 20));
    }
    const pids = ['shell', 'sleep'].map((f) => Number(fs.readFileSync(path.join(dir, f), 'utf8')));
    expect(pids.map(running)).toEqual([true, true]);
    controller.abort();
    await agents;
    // Killed, not left to finish their 30 s (how soon the agent is done: `npm run bench:timeouts`).
    await until(
      async () => pids.map(running),
      (r) => r.every((x) => !x),
      "the job's processes ending",
      250,
    );
    const b = await readBuild(api, ref);
    expect(b.jobs[0]).toMatchObject({ state: 'failed', exit_status: 143 });
    expect(b.state).toBe('failed');
    fs.rmSync(dir, { recursive: true, force: true });
  });
});
