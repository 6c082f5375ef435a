/**
 * Jobs that end without a normal finish: a cancel that reaches the agents, the service's own
 * timeouts, lost agents and expired jobs. The service's one clock (src/core/clock.ts) is moved
 * forward instead of waiting.
 */
import { AgentRepository } from '../../src/agents/repository';
import { JobRepository } from '../../src/builds/jobs/repository';
import { heartbeatWriteEveryMs, Sweeper } from '../../src/builds/jobs/sweeper';
import { clock } from '../../src/core/clock';
import { auth, describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken, type TestAgent } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import type { BuildJson, JobJson } from '../support/types';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const LOST_AFTER_MS = 180_000;
const EXPIRY_MS = 3600_000;

describeEachDatabase(
  'jobs that end without a normal finish',
  (ctx) => {
    // Each store's run starts on the real clock.
    beforeAll(() => {
      clock.set({ kind: 'real' });
    });
    afterAll(() => {
      clock.set({ kind: 'real' });
    });
    const setUp = async (configuration: string) => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const { slug } = await givenPipeline(ctx(), org.slug, token, configuration);
      const build = await givenBuild(ctx(), org.slug, slug, token);
      const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
      const read = async () => (await ctx().http().get(url).set(auth(token)).expect(200)).body as BuildJson;
      return { org, token, reg, build, url, read };
    };
    /** The agent takes the next job it is offered up to `upTo` (assigned, accepted or running). */
    const take = async (agent: TestAgent, upTo: 'assigned' | 'accepted' | 'running') => {
      const ping = await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200);
      const id = ping.body.job.id as string;
      if (upTo !== 'assigned') await ctx().http().put(`/v3/jobs/${id}/accept`).set(agentAuth(agent.token)).expect(200);
      if (upTo === 'running') await ctx().http().put(`/v3/jobs/${id}/start`).set(agentAuth(agent.token)).expect(200);
      return id;
    };
    const finish = (agent: TestAgent, id: string, body: object) => ctx().http().put(`/v3/jobs/${id}/finish`).set(agentAuth(agent.token)).send(body);
    const jobState = async (agent: TestAgent, id: string) =>
      (await ctx().http().get(`/v3/jobs/${id}`).set(agentAuth(agent.token)).expect(200)).body.state as string;

    describe('cancel', () => {
      it('cancels jobs no agent accepted at once and has agents stop the others, then the build is canceled', async () => {
        const s = await setUp('steps:\n  - command: one\n  - command: two\n  - command: three\n  - command: four\n');
        const [running, accepted, assigned] = await Promise.all(['a', 'b', 'c'].map((n) => givenAgent(ctx(), s.reg, `cancel-${n}`)));
        const runningId = await take(running!, 'running');
        const acceptedId = await take(accepted!, 'accepted');
        const assignedId = await take(assigned!, 'assigned');

        const res = await ctx().http().put(`${s.url}/cancel`).set(auth(s.token)).expect(200);
        expect(res.body.state).toBe('canceling');
        expect(res.body.finished_at).toBeNull();
        const byId = (b: { jobs: JobJson[] }) => new Map(b.jobs.map((j) => [j.id, j]));
        let jobs = byId(res.body);
        expect(jobs.get(runningId)!.state).toBe('canceling');
        expect(jobs.get(acceptedId)!.state).toBe('canceling');
        expect(jobs.get(assignedId)!.state).toBe('canceled');
        expect(jobs.get(assignedId)!.finished_at).toMatch(ISO);
        expect(res.body.jobs.filter((j: JobJson) => j.state === 'canceled')).toHaveLength(2); // the scheduled one too
        // Canceling a canceling build: 422 with the reason.
        expect((await ctx().http().put(`${s.url}/cancel`).set(auth(s.token))).body.message).toContain('canceling');

        // The agent that was only assigned a job is free of it and can't accept it.
        expect((await ctx().http().get(`/v2/organizations/${s.org.slug}/agents/${assigned!.id}`).set(auth(s.token)).expect(200)).body.job).toBeNull();
        expect((await ctx().http().put(`/v3/jobs/${assignedId}/accept`).set(agentAuth(assigned!.token))).status).toBe(422);
        // The others learn of it from the job's state; a ping offers no job they already hold
        // (the real agent would take it for a new assignment).
        expect(await jobState(running!, runningId)).toBe('canceling');
        expect(await jobState(accepted!, acceptedId)).toBe('canceling');
        const ping = await ctx().http().get('/v3/ping').set(agentAuth(accepted!.token)).expect(200);
        expect(ping.body).toEqual({ action: 'idle', job: null });

        const stopped = await finish(running!, runningId, { exit_status: 137, signal: 'SIGTERM', signal_reason: 'cancel' }).expect(200);
        expect(stopped.body).toMatchObject({ state: 'canceled', exit_status: 137 });
        expect((await s.read()).state).toBe('canceling');
        // One never started: finished all the same.
        await finish(accepted!, acceptedId, { exit_status: -1, signal_reason: 'cancel' }).expect(200);
        const b = await s.read();
        expect(b.state).toBe('canceled');
        expect(b.finished_at).toMatch(ISO);
        jobs = byId(b);
        expect(jobs.get(runningId)).toMatchObject({ state: 'canceled', exit_status: 137, signal: 'SIGTERM', signal_reason: 'cancel', soft_failed: false });
        expect(jobs.get(runningId)!.finished_at).toMatch(ISO);
        expect(jobs.get(acceptedId)).toMatchObject({ state: 'canceled', exit_status: -1, signal: null, signal_reason: 'cancel', started_at: null });
        // The agents are free again.
        expect((await ctx().http().get('/v3/ping').set(agentAuth(running!.token)).expect(200)).body.job).toBeNull();

        // Jobs of a canceled build are not retried, as the REST jobs docs say: the build stays canceled.
        const refused = await ctx().http().put(`${s.url}/jobs/${runningId}/retry`).set(auth(s.token)).expect(422);
        expect(refused.body.message).toBe('Jobs from canceled builds cannot be retried');
        expect((await s.read()).state).toBe('canceled');
      });

      it('cancels at once a build with no job on an agent, and refuses retries while canceling', async () => {
        const s = await setUp('steps:\n  - command: one\n  - command: two\n');
        const agent = await givenAgent(ctx(), s.reg, 'retry-while-canceling');
        const id = await take(agent, 'running');
        await finish(agent, id, { exit_status: 1 }).expect(200);
        const other = await givenAgent(ctx(), s.reg, 'retry-while-canceling-2');
        const second = await take(other, 'running');
        expect((await ctx().http().put(`${s.url}/cancel`).set(auth(s.token)).expect(200)).body.state).toBe('canceling');
        const refused = await ctx().http().put(`${s.url}/jobs/${id}/retry`).set(auth(s.token));
        // The docs' refusal for a canceled build, as retry_failed_jobs gives it for a canceling one too.
        expect([refused.status, refused.body]).toEqual([422, { message: 'Jobs from canceled builds cannot be retried' }]);
        await finish(other, second, { exit_status: 0 }).expect(200);
        expect(await s.read()).toMatchObject({ state: 'canceled' });

        const quiet = await setUp('steps:\n  - command: one\n');
        const res = await ctx().http().put(`${quiet.url}/cancel`).set(auth(quiet.token)).expect(200);
        expect(res.body.state).toBe('canceled');
        expect(res.body.finished_at).toMatch(ISO);
        expect(res.body.jobs[0].state).toBe('canceled');
      });

      it('has agents stop the running jobs of a build canceled by cancel_running_branch_builds', async () => {
        const { org, token } = await ctx().givenAdmin();
        const reg = await givenRegistrationToken(ctx(), org.slug, token);
        const created = await ctx()
          .http()
          .post(`/v2/organizations/${org.slug}/pipelines`)
          .set(auth(token))
          .send({
            name: 'Superseded',
            repository: 'git@github.com:acme/app.git',
            configuration: 'steps:\n  - command: one\n',
            cancel_running_branch_builds: true,
          })
          .expect(201);
        const older = await givenBuild(ctx(), org.slug, created.body.slug, token);
        const agent = await givenAgent(ctx(), reg, 'superseded');
        const id = await take(agent, 'running');
        await givenBuild(ctx(), org.slug, created.body.slug, token);
        const url = `/v2/organizations/${org.slug}/pipelines/${created.body.slug}/builds/${older.number}`;
        const canceling = (await ctx().http().get(url).set(auth(token)).expect(200)).body;
        expect(canceling).toMatchObject({ state: 'canceling', finished_at: null });
        expect(canceling.jobs[0].state).toBe('canceling');
        expect(await jobState(agent, id)).toBe('canceling');
        await finish(agent, id, { exit_status: 137, signal_reason: 'cancel' }).expect(200);
        const canceled = (await ctx().http().get(url).set(auth(token)).expect(200)).body;
        expect(canceled).toMatchObject({ state: 'canceled' });
        expect(canceled.finished_at).toMatch(ISO);
        expect(canceled.jobs[0]).toMatchObject({ state: 'canceled', signal_reason: 'cancel' });
      });
    });

    describe('timeouts', () => {
      it('times out a running job past its timeout_in_minutes: timing_out, then timed_out when the agent finishes', async () => {
        const s = await setUp('steps:\n  - command: sleep 600\n    timeout_in_minutes: 1\n');
        const agent = await givenAgent(ctx(), s.reg, 'timeout');
        const id = await take(agent, 'running');
        clock.advance(59_000);
        await ctx().services.sweeper.sweep();
        expect(await jobState(agent, id)).toBe('running');
        clock.advance(2_000);
        expect((await ctx().services.sweeper.sweep()).timingOut).toBe(1);
        expect(await jobState(agent, id)).toBe('timing_out');
        expect((await s.read()).jobs[0]!.state).toBe('timing_out');
        expect((await ctx().services.sweeper.sweep()).timingOut).toBe(0);

        const done = await finish(agent, id, { exit_status: 137, signal_reason: 'timeout' }).expect(200);
        expect(done.body.state).toBe('timed_out');
        const b = await s.read();
        expect(b.state).toBe('failed');
        expect(b.finished_at).toMatch(ISO);
        expect(b.jobs[0]).toMatchObject({ state: 'timed_out', exit_status: 137, signal_reason: 'timeout', soft_failed: false });
      });

      it('passes a job that times out with exit status 0, as documented, whether the sweeper or the agent timed it', async () => {
        const s = await setUp('steps:\n  - command: trap "exit 0" TERM; sleep 600\n    timeout_in_minutes: 1\n  - command: own\n    timeout_in_minutes: 1\n');
        const agent = await givenAgent(ctx(), s.reg, 'zero');
        const id = await take(agent, 'running');
        clock.advance(61_000);
        expect((await ctx().services.sweeper.sweep()).timingOut).toBe(1);
        expect((await finish(agent, id, { exit_status: 0, signal_reason: 'timeout' }).expect(200)).body.state).toBe('passed');
        const own = await take(agent, 'running');
        expect((await finish(agent, own, { exit_status: 0, signal_reason: 'timeout' }).expect(200)).body.state).toBe('passed');
        const b = await s.read();
        expect(b.jobs.map((j) => [j.state, j.exit_status, j.signal_reason])).toEqual([
          ['passed', 0, 'timeout'],
          ['passed', 0, 'timeout'],
        ]);
        expect(b.state).toBe('passed');
      });

      it("counts a soft_fail step's timeout as soft, and takes the agent's own timeout as timed_out", async () => {
        const s = await setUp('steps:\n  - command: sleep 600\n    timeout_in_minutes: 2\n    soft_fail: true\n');
        const agent = await givenAgent(ctx(), s.reg, 'own-timer');
        const id = await take(agent, 'running');
        // The agent's timer fired before the service's sweep.
        await finish(agent, id, { exit_status: 137, signal_reason: 'timeout' }).expect(200);
        const b = await s.read();
        expect(b.jobs[0]).toMatchObject({ state: 'timed_out', soft_failed: true, signal_reason: 'timeout' });
        expect(b.state).toBe('passed');
      });
    });

    describe('lost agents', () => {
      it('marks silent agents lost: the running job fails and jobs not started expire, each with a log line; canceling ones end canceled', async () => {
        const s = await setUp('steps:\n  - command: one\n  - command: two\n  - command: three\n');
        const [runner, assignee, acceptor] = await Promise.all(['run', 'asg', 'acc'].map((n) => givenAgent(ctx(), s.reg, `lost-${n}`)));
        const runningId = await take(runner!, 'running');
        await ctx()
          .http()
          .post(`/v3/jobs/${runningId}/chunks`)
          .set(agentAuth(runner!.token))
          .send({ sequence: 1, offset: 0, content: 'working\n' })
          .expect(201);
        const assignedId = await take(assignee!, 'assigned');
        const acceptedId = await take(acceptor!, 'accepted');
        await ctx()
          .http()
          .post(`/v3/jobs/${acceptedId}/chunks`)
          .set(agentAuth(acceptor!.token))
          .send({ sequence: 1, offset: 0, content: 'checking out\n' })
          .expect(201);
        const c = await setUp('steps:\n  - command: four\n');
        const stopper = await givenAgent(ctx(), c.reg, 'lost-canceling');
        const cancelingId = await take(stopper, 'running');
        await ctx().http().put(`${c.url}/cancel`).set(auth(c.token)).expect(200);

        clock.advance(LOST_AFTER_MS - 5_000);
        const alive = await givenAgent(ctx(), s.reg, 'lost-alive');
        clock.advance(10_000);
        await ctx().http().post('/v3/heartbeat').set(agentAuth(alive.token)).expect(200);
        const [first, second] = await Promise.all([ctx().services.sweeper.sweep(), ctx().services.sweeper.sweep()]);
        const get = async (setup: typeof s, id: string) =>
          (await ctx().http().get(`/v2/organizations/${setup.org.slug}/agents/${id}`).set(auth(setup.token)).expect(200)).body;
        const agents = await Promise.all([get(s, runner!.id), get(s, assignee!.id), get(s, acceptor!.id), get(c, stopper.id), get(s, alive.id)]);
        expect(agents.map((a) => a.connection_state)).toEqual(['lost', 'lost', 'lost', 'lost', 'connected']);
        for (const a of agents.slice(0, 4)) {
          expect(a.lost_at).toMatch(ISO);
          expect(a.job).toBeNull();
        }
        // Two sweeps at once lost each agent once (other tests' agents count too).
        expect(first.lostAgents + second.lostAgents).toBeGreaterThanOrEqual(4);
        expect((await ctx().services.sweeper.sweep()).lostAgents).toBe(0);

        const b = await s.read();
        const byId = new Map(b.jobs.map((j) => [j.id, j]));
        expect(byId.get(runningId)).toMatchObject({ state: 'failed', exit_status: -1, signal_reason: null });
        expect(byId.get(runningId)!.finished_at).toMatch(ISO);
        for (const id of [assignedId, acceptedId]) {
          expect(byId.get(id)).toMatchObject({ state: 'expired', started_at: null });
          expect(byId.get(id)!.expired_at).toMatch(ISO);
          expect(byId.get(id)!.finished_at).toBe(byId.get(id)!.expired_at);
        }
        expect(b.state).toBe('failed'); // every job ended, two of them expired: hard failures
        const log = (await ctx().http().get(`${s.url}/jobs/${runningId}/log.txt`).set(auth(s.token)).expect(200)).text;
        expect(log).toMatch(
          /^working\nwindsock: the agent running this job stopped reporting \(no heartbeat for more than 180 s\); the job ended failed with exit status -1\.\n$/,
        );
        expect((await ctx().http().get(`${s.url}/jobs/${acceptedId}/log.txt`).set(auth(s.token)).expect(200)).text).toBe(
          'checking out\nwindsock: the agent that took this job stopped reporting (no heartbeat for more than 180 s) before starting it; the job expired.\n',
        );
        const canceled = await c.read();
        expect(canceled.state).toBe('canceled');
        expect(canceled.finished_at).toMatch(ISO);
        expect(canceled.jobs[0]).toMatchObject({ id: cancelingId, state: 'canceled', exit_status: -1 });

        // A lost agent is told to disconnect and can't come back without registering again.
        expect((await ctx().http().get('/v3/ping').set(agentAuth(runner!.token)).expect(200)).body).toEqual({ action: 'disconnect', job: null });
        const connect = await ctx().http().post('/v3/connect').set(agentAuth(runner!.token));
        expect(connect.status).toBe(422);
        expect(connect.body.message).toContain('register again');
        expect((await ctx().http().post('/v3/heartbeat').set(agentAuth(runner!.token))).status).toBe(422);
        expect((await finish(runner!, runningId, { exit_status: 0 })).status).toBe(422);
        // The expired jobs are not offered again.
        const again = await ctx().http().get('/v3/ping').set(agentAuth(alive.token)).expect(200);
        expect(again.body.job).toBeNull();
      });

      it('ends the job of an agent that disconnected without finishing it, once it has been silent too long', async () => {
        const s = await setUp('steps:\n  - command: one\n');
        const agent = await givenAgent(ctx(), s.reg, 'walked-away');
        const id = await take(agent, 'running');
        await ctx().http().post('/v3/disconnect').set(agentAuth(agent.token)).expect(200);
        clock.advance(LOST_AFTER_MS - 10_000);
        await ctx().services.sweeper.sweep();
        expect((await s.read()).jobs[0]!.state).toBe('running');
        clock.advance(20_000);
        await ctx().services.sweeper.sweep();
        const b = await s.read();
        expect(b.jobs[0]).toMatchObject({ id, state: 'failed', exit_status: -1 });
        expect(b.state).toBe('failed');
        expect((await ctx().http().get(`/v2/organizations/${s.org.slug}/agents/${agent.id}`).set(auth(s.token)).expect(200)).body.connection_state).toBe(
          'disconnected',
        );
      });

      it("retries a lost agent's job when the step's retry.automatic names exit status -1", async () => {
        const s = await setUp('steps:\n  - command: flaky-host\n    retry:\n      automatic:\n        - exit_status: -1\n          limit: 1\n');
        const agent = await givenAgent(ctx(), s.reg, 'lost-retried');
        const id = await take(agent, 'running');
        clock.advance(LOST_AFTER_MS + 10_000);
        await ctx().services.sweeper.sweep();
        const b = (await ctx().http().get(`${s.url}?include_retried_jobs=true`).set(auth(s.token)).expect(200)).body as BuildJson;
        const lost = b.jobs.find((j) => j.id === id)!;
        expect(lost).toMatchObject({ state: 'failed', exit_status: -1, retried: true });
        const retry = b.jobs.find((j) => j.id === lost.retried_in_job_id)!;
        expect(retry).toMatchObject({ state: 'scheduled', retry_type: 'automatic', retries_count: 1, agent: null });
        expect(b.state).toBe('running');
      });

      it('keeps a polling agent connected, though a poll writes its heartbeat only when the stored one is 15 s old or more', async () => {
        const s = await setUp('steps:\n  - command: one\n    agents:\n      queue: nobody\n');
        const agent = await givenAgent(ctx(), s.reg, 'poller');
        const stored = async () => (await new AgentRepository(ctx().services.db).find(s.org.id, agent.id))!.lastHeartbeatAt!.getTime();
        const connected = await stored();
        expect(heartbeatWriteEveryMs({ agentLostAfterMs: LOST_AFTER_MS })).toBe(15_000);
        expect(heartbeatWriteEveryMs({ agentLostAfterMs: 60_000 })).toBe(5_000);
        const ping = async () =>
          expect((await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body).toEqual({ action: 'idle', job: null });
        // Polls every 5 s: the stored heartbeat moves on the first poll 15 s or more after it.
        for (let i = 1; i <= 2; i++) {
          clock.advance(5_000);
          await ping();
          expect(await stored()).toBe(connected);
        }
        clock.advance(5_000);
        await ping();
        const first = await stored();
        expect(first - connected).toBeGreaterThanOrEqual(15_000);
        expect(first - connected).toBeLessThan(20_000);
        clock.advance(5_000);
        await ping();
        expect(await stored()).toBe(first);
        // Polling for longer than the agent may stay silent: never lost.
        for (let t = 0; t < LOST_AFTER_MS + 30_000; t += 5_000) {
          clock.advance(5_000);
          await ping();
          expect(clock.now().getTime() - (await stored())).toBeLessThanOrEqual(15_000);
        }
        expect((await ctx().services.sweeper.sweep()).lostAgents).toBe(0);
        expect((await ctx().http().get(`/v2/organizations/${s.org.slug}/agents/${agent.id}`).set(auth(s.token)).expect(200)).body.connection_state).toBe(
          'connected',
        );
        // Silent from here: lost once the stored heartbeat is older than AGENT_LOST_AFTER.
        clock.advance(LOST_AFTER_MS);
        await ctx().services.sweeper.sweep();
        expect((await ctx().http().get(`/v2/organizations/${s.org.slug}/agents/${agent.id}`).set(auth(s.token)).expect(200)).body.connection_state).toBe(
          'lost',
        );
      });

      it('completes a sweep cut short: the job of an agent already marked lost still ends', async () => {
        const s = await setUp('steps:\n  - command: one\n');
        const agent = await givenAgent(ctx(), s.reg, 'half-swept');
        await take(agent, 'running');
        clock.advance(LOST_AFTER_MS + 10_000);
        const now = clock.now();
        // What the first step of a sweep that then stopped would have done.
        expect(await new AgentRepository(ctx().services.db).markLost(agent.id, new Date(now.getTime() - LOST_AFTER_MS), now)).toBe(true);
        expect((await s.read()).jobs[0]!.state).toBe('running');
        await ctx().services.sweeper.sweep();
        expect((await s.read()).jobs[0]).toMatchObject({ state: 'failed', exit_status: -1 });
      });
    });

    describe('expiry', () => {
      it('expires a scheduled job no agent took in time, failing the build', async () => {
        const s = await setUp('steps:\n  - command: one\n    agents:\n      queue: nobody-serves-this\n  - wait\n  - command: two\n');
        // The job was scheduled just now by the service's clock: a minute short of its expiry, then a minute past it.
        clock.advance(EXPIRY_MS - 60_000);
        await ctx().services.sweeper.sweep();
        expect((await s.read()).jobs[0]!.state).toBe('scheduled');
        clock.advance(120_000);
        const results = await Promise.all([ctx().services.sweeper.sweep(), ctx().services.sweeper.sweep()]);
        expect(results.map((r) => r.expired).reduce((a, b) => a + b)).toBeGreaterThanOrEqual(1);
        const b = await s.read();
        expect(b.jobs[0]!.state).toBe('expired');
        expect(b.jobs[0]!.expired_at).toMatch(ISO);
        expect(b.jobs[0]!.finished_at).toBe(b.jobs[0]!.expired_at);
        expect(b.jobs.map((j) => j.state)).toEqual(['expired', 'waiting_failed', 'waiting_failed']);
        expect(b.state).toBe('failed');
        expect(b.finished_at).toMatch(ISO);
      });

      it('counts the expiry from when a job was created, not when it was scheduled (the docs’ build timeouts)', async () => {
        const s = await setUp('steps:\n  - command: one\n  - wait\n  - command: two\n    agents:\n      queue: nobody-serves-this\n');
        const agent = await givenAgent(ctx(), s.reg, 'first');
        const id = await take(agent, 'running');
        // `two` is scheduled once `one` passes, past its expiry counted from the build's creation.
        clock.advance(EXPIRY_MS + 60_000);
        await finish(agent, id, { exit_status: 0 }).expect(200);
        expect((await s.read()).jobs[2]!.state).toBe('scheduled');
        await ctx().services.sweeper.sweep();
        expect((await s.read()).jobs.map((j) => j.state)).toEqual(['passed', 'passed', 'expired']);
      });
    });

    describe('the sweeper', () => {
      it('sweeps on its interval until stopped, on the service clock', async () => {
        const s = await setUp('steps:\n  - command: sleep 600\n    timeout_in_minutes: 1\n');
        const agent = await givenAgent(ctx(), s.reg, 'interval');
        const id = await take(agent, 'running');
        const db = ctx().services.db;
        const sweeper = new Sweeper(ctx().services.agents, new JobRepository(db), ctx().services.progress, {
          intervalMs: 20,
          agentLostAfterMs: 3600_000_000,
          jobExpiryMs: 0,
        });
        sweeper.start();
        try {
          await until(async () => (await ctx().http().get(`/v3/jobs/${id}`).set(agentAuth(agent.token))).body.state === 'running');
          clock.advance(120_000);
          await until(async () => (await ctx().http().get(`/v3/jobs/${id}`).set(agentAuth(agent.token))).body.state === 'timing_out');
        } finally {
          await sweeper.stop();
        }
        await sweeper.stop(); // twice is fine
      });
    });
  },
  { sweep: { intervalMs: 60_000, agentLostAfterMs: LOST_AFTER_MS, jobExpiryMs: EXPIRY_MS } },
);

async function until(done: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await done()) return;
    await new Promise((r) => setTimeout(r, 10));
  }
  throw new Error('never got there');
}
