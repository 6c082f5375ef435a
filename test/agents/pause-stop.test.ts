/**
 * Pausing, resuming and stopping agents through the REST API (`PUT .../agents/{id}/pause|resume|stop`):
 * what a paused agent is offered (nothing new, the job it holds still), a pause that times out on
 * the service clock, graceful and forced stops seen through the agent API, the documented errors,
 * and the reference agent ending when it is stopped.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ok } from '../../clients/typescript/src';
import { runAgents } from '../../src/cli/agent';
import { auth, describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, givenAgentPipeline, givenBuildAndAgent, givenRegistrationToken, movableClock, onLoopback, until } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { givenWatchedBuild, jobLogText, listAgents, readBuild } from '../support/sdk';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
const { advance, reset } = movableClock();

describeEachDatabase('pausing, resuming and stopping agents', (ctx) => {
  beforeEach(() => reset());

  const agentUrl = (org: string, id: string) => `/v2/organizations/${org}/agents/${id}`;
  const ping = async (token: string) =>
    (await ctx().http().get('/v3/ping').set(agentAuth(token)).expect(200)).body as { action: string; job: { id: string } | null };

  it('pauses an agent: it shows who, when, why and for how long, is offered no job while another agent takes it, and resumes', async () => {
    const { org, user, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const paused = await givenAgent(ctx(), reg, 'paused');
    const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: one\n  - command: two\n');
    const build = await givenBuild(ctx(), org.slug, slug, token);

    const res = await ctx()
      .http()
      .put(`${agentUrl(org.slug, paused.id)}/pause`)
      .set(auth(token))
      .send({ note: 'Upgrading the host', timeout_in_minutes: 60 });
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    const shown = (await ctx().http().get(agentUrl(org.slug, paused.id)).set(auth(token)).expect(200)).body;
    expect(shown).toMatchObject({
      paused: true,
      paused_note: 'Upgrading the host',
      paused_timeout_in_minutes: 60,
      paused_by: { id: user.id, email: user.email },
    });
    expect(shown.paused_at).toMatch(ISO);

    expect(await ping(paused.token)).toEqual({ action: 'pause', job: null });
    const other = await givenAgent(ctx(), reg, 'other');
    expect((await ping(other.token)).job?.id).toBe(build.jobs[0]!.id);

    await ctx()
      .http()
      .put(`${agentUrl(org.slug, paused.id)}/resume`)
      .set(auth(token))
      .send({})
      .expect(204);
    const resumed = (await ctx().http().get(agentUrl(org.slug, paused.id)).set(auth(token)).expect(200)).body;
    expect(resumed).toMatchObject({ paused: false, paused_at: null, paused_by: null, paused_note: null, paused_timeout_in_minutes: null });
    expect(await ping(paused.token)).toMatchObject({ action: 'idle', job: { id: build.jobs[1]!.id } });
  });

  it('keeps giving a paused agent the job it already holds', async () => {
    const { org, token, agent, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: held\n');
    expect((await ping(agent.token)).job?.id).toBe(build.jobs[0]!.id);
    await ctx()
      .http()
      .put(`${agentUrl(org.slug, agent.id)}/pause`)
      .set(auth(token))
      .expect(204);
    expect(await ping(agent.token)).toMatchObject({ action: 'idle', job: { id: build.jobs[0]!.id } });
  });

  it('rolls a claim back when the agent was paused or stopped while it polled: the job stays scheduled for others', async () => {
    const { org, token, agent, build, reg } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: raced\n');
    const jobId = build.jobs[0]!.id;
    const progress = ctx().services.progress;
    await ctx()
      .http()
      .put(`${agentUrl(org.slug, agent.id)}/pause`)
      .set(auth(token))
      .expect(204);
    // What a poll that read the agent before the pause landed would do next.
    expect(await progress.claim(jobId, agent.id)).toBe('agent');
    const other = await givenAgent(ctx(), reg, 'other');
    await ctx()
      .http()
      .put(`${agentUrl(org.slug, other.id)}/stop`)
      .set(auth(token))
      .send({ force: false })
      .expect(204);
    expect(await progress.claim(jobId, other.id)).toBe('agent');
    const job = await ctx().services.db('jobs').where({ id: jobId }).first('state', 'agent_id');
    expect(job).toEqual({ state: 'scheduled', agent_id: null });
    const held = await ctx().services.db('agents').whereIn('id', [agent.id, other.id]).pluck('job_id');
    expect(held).toEqual([null, null]);
    const third = await givenAgent(ctx(), reg, 'third');
    expect(await progress.claim(jobId, third.id)).toBe('claimed');
    expect(await progress.claim(jobId, agent.id)).toBe('taken');
  });

  it('ends a pause by itself after its timeout (5 minutes unless given) on the service clock', async () => {
    const { org, token, agent, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: later\n');
    await ctx()
      .http()
      .put(`${agentUrl(org.slug, agent.id)}/pause`)
      .set(auth(token))
      .expect(204);
    expect((await ctx().http().get(agentUrl(org.slug, agent.id)).set(auth(token))).body.paused_timeout_in_minutes).toBe(5);
    advance(4 * 60_000);
    expect(await ping(agent.token)).toEqual({ action: 'pause', job: null });
    advance(61_000);
    expect((await ctx().http().get(agentUrl(org.slug, agent.id)).set(auth(token))).body.paused).toBe(false);
    expect((await ping(agent.token)).job?.id).toBe(build.jobs[0]!.id);
    // Over is over: resuming it now is the documented 422.
    const again = await ctx()
      .http()
      .put(`${agentUrl(org.slug, agent.id)}/resume`)
      .set(auth(token));
    expect(again.status).toBe(422);
    expect(again.body).toEqual({ message: 'Agent is not paused' });
  });

  it('answers the documented errors, and only to administrators of the agent’s organization', async () => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const agent = await givenAgent(ctx(), reg, 'subject');
    const url = agentUrl(org.slug, agent.id);
    await ctx().http().put(`${url}/pause`).set(auth(token)).expect(204);
    const twice = await ctx().http().put(`${url}/pause`).set(auth(token));
    expect([twice.status, twice.body]).toEqual([422, { message: 'Agent is already paused' }]);
    await ctx().http().put(`${url}/resume`).set(auth(token)).expect(204);
    const notPaused = await ctx().http().put(`${url}/resume`).set(auth(token));
    expect([notPaused.status, notPaused.body]).toEqual([422, { message: 'Agent is not paused' }]);

    for (const minutes of [0, 10_081, 1.5]) {
      const bad = await ctx().http().put(`${url}/pause`).set(auth(token)).send({ timeout_in_minutes: minutes });
      expect(bad.status).toBe(422);
      expect(bad.body.errors[0].field).toBe('timeout_in_minutes');
    }

    const unconnected = await ctx().http().post('/v3/register').set(agentAuth(reg)).send({ name: 'never' }).expect(201);
    const never = await ctx()
      .http()
      .put(`${agentUrl(org.slug, unconnected.body.id)}/pause`)
      .set(auth(token));
    expect([never.status, never.body]).toEqual([422, { message: 'Only connected agents may be paused' }]);
    const cannotStop = await ctx()
      .http()
      .put(`${agentUrl(org.slug, unconnected.body.id)}/stop`)
      .set(auth(token));
    expect([cannotStop.status, cannotStop.body]).toEqual([400, { message: 'Can only stop connected agents' }]);

    const missing = await ctx()
      .http()
      .put(`${agentUrl(org.slug, '5b3ceff6-78cb-4fe9-88ae-51be5f145977')}/pause`)
      .set(auth(token));
    expect([missing.status, missing.body]).toEqual([404, { message: 'No agent found' }]);
    const stranger = await ctx().givenAdmin();
    for (const action of ['pause', 'resume', 'stop']) {
      const res = await ctx()
        .http()
        .put(`${agentUrl(stranger.org.slug, agent.id)}/${action}`)
        .set(auth(stranger.token));
      expect([action, res.status]).toEqual([action, 404]);
    }
    const member = await ctx().givenUser(org, 'member');
    const memberToken = await ctx().givenToken(member, [org]);
    for (const action of ['pause', 'resume', 'stop']) {
      const res = await ctx().http().put(`${url}/${action}`).set(auth(memberToken));
      expect([action, res.status]).toEqual([action, 403]);
    }
    expect((await ctx().http().get(url).set(auth(token))).body).toMatchObject({ paused: false, connection_state: 'connected' });
  });

  it('stops an agent gracefully: its job runs to the end, then it is told to disconnect and becomes stopped', async () => {
    const { org, token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: long\n  - command: next\n');
    const job = (await ping(agent.token)).job!;
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(agent.token)).expect(200);
    await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(agent.token)).expect(200);

    await ctx()
      .http()
      .put(`${agentUrl(org.slug, agent.id)}/stop`)
      .set(auth(token))
      .send({ force: false })
      .expect(204);
    expect((await ctx().http().get(agentUrl(org.slug, agent.id)).set(auth(token))).body.connection_state).toBe('stopping');
    const again = await ctx()
      .http()
      .put(`${agentUrl(org.slug, agent.id)}/stop`)
      .set(auth(token));
    expect([again.status, again.body]).toEqual([400, { message: 'Can only stop connected agents' }]);
    // Still running its job: no new work, and not told to disconnect yet.
    expect(await ping(agent.token)).toEqual({ action: 'idle', job: null });
    await ctx().http().post('/v3/heartbeat').set(agentAuth(agent.token)).expect(200);
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);

    // The next job is left for another agent.
    expect(await ping(agent.token)).toEqual({ action: 'disconnect', job: null });
    const left = await ctx().http().post('/v3/disconnect').set(agentAuth(agent.token)).expect(200);
    expect(left.body).toEqual({ id: agent.id, connection_state: 'stopped' });
    const shown = (await ctx().http().get(agentUrl(org.slug, agent.id)).set(auth(token))).body;
    expect(shown.connection_state).toBe('stopped');
    expect(shown.stopped_at).toMatch(ISO);
    const b = (await ctx().http().get(url).set(auth(token))).body;
    expect(b.jobs.map((j: { state: string }) => j.state)).toEqual(['passed', 'scheduled']);
  });

  it('stops an agent by force (the default): the job it runs and its build are canceled', async () => {
    const { org, token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: long\n');
    const job = (await ping(agent.token)).job!;
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(agent.token)).expect(200);
    await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(agent.token)).expect(200);

    await ctx()
      .http()
      .put(`${agentUrl(org.slug, agent.id)}/stop`)
      .set(auth(token))
      .expect(204);
    expect((await ctx().http().get(url).set(auth(token))).body).toMatchObject({ state: 'canceling', jobs: [{ state: 'canceling' }] });
    // What the agent polls while it runs the job tells it to stop the process.
    expect((await ctx().http().get(`/v3/jobs/${job.id}`).set(agentAuth(agent.token)).expect(200)).body.state).toBe('canceling');
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: -1, signal_reason: 'agent_stop' }).expect(200);
    expect((await ctx().http().get(url).set(auth(token))).body).toMatchObject({ state: 'canceled', jobs: [{ state: 'canceled' }] });
    expect(await ping(agent.token)).toEqual({ action: 'disconnect', job: null });
  });

  it('lets an agent pause, resume and stop itself through the agent API (buildkite-agent pause|resume|stop)', async () => {
    const { org, token, agent, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: one\n  - command: two\n');
    const url = agentUrl(org.slug, agent.id);
    const job = (await ping(agent.token)).job!;
    await ctx().http().post('/v3/pause').set(agentAuth(agent.token)).send({ note: 'from a job', timeout_in_minutes: 30 }).expect(204);
    expect((await ctx().http().get(url).set(auth(token))).body).toMatchObject({
      paused: true,
      paused_by: null,
      paused_note: 'from a job',
      paused_timeout_in_minutes: 30,
    });
    const twice = await ctx().http().post('/v3/pause').set(agentAuth(agent.token));
    expect([twice.status, twice.body]).toEqual([422, { message: 'Agent is already paused' }]);
    // It keeps the job it holds while paused.
    expect((await ping(agent.token)).job?.id).toBe(job.id);
    await ctx().http().post('/v3/resume').set(agentAuth(agent.token)).expect(204);
    const notPaused = await ctx().http().post('/v3/resume').set(agentAuth(agent.token));
    expect([notPaused.status, notPaused.body]).toEqual([422, { message: 'Agent is not paused' }]);

    // `stop` alone is graceful (the agent sends force only for --force): the job stays.
    await ctx().http().post('/v3/stop').set(agentAuth(agent.token)).send({}).expect(204);
    expect((await ctx().http().get(url).set(auth(token))).body.connection_state).toBe('stopping');
    const again = await ctx().http().post('/v3/stop').set(agentAuth(agent.token));
    expect([again.status, again.body]).toEqual([422, { message: 'Can only stop connected agents' }]);
    const b = (await ctx().http().get(`/v2/organizations/${org.slug}/pipelines/${build.pipeline!.slug}/builds/${build.number}`).set(auth(token))).body;
    expect(b.jobs[0].state).toBe('assigned');
  });
});

describeEachDatabase('the reference agent and stop', (ctx) => {
  const { endpoint } = onLoopback(ctx);

  /** One reference agent registered with `reg`, building in `dir`, its log lines kept; `agents` settles when it ends, `controller` aborts it. */
  function startAgent(name: string, reg: string, dir: string) {
    const controller = new AbortController();
    const lines: string[] = [];
    const agents = runAgents({
      endpoint: endpoint(),
      token: reg,
      tags: [],
      name,
      spawn: 1,
      pollIntervalMs: 50,
      signal: controller.signal,
      buildRoot: dir,
      log: (l) => lines.push(l),
    });
    return { controller, lines, agents };
  }

  it('ends when an administrator stops it, after the job it runs', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-stop-'));
    try {
      const { org, token, reg, slug } = await givenAgentPipeline(ctx(), 'steps:\n  - command: echo ran\n');
      const { api, ref } = await givenWatchedBuild(ctx(), endpoint(), org.slug, slug, token);
      const { controller, lines, agents } = startAgent('stoppable', reg, dir);
      try {
        await until(
          async () => (await readBuild(api, ref)).state,
          (s) => s === 'passed',
          'the build passing',
        );
        const [agent] = await listAgents(api, org.slug);
        const agentPath = { params: { path: { org_slug: org.slug, agent_id: agent!.id } } };
        await api.PUT('/v2/organizations/{org_slug}/agents/{agent_id}/stop', { ...agentPath, body: { force: false } });
        // runAgents resolves by itself: the agent ended, not the abort.
        await agents;
        expect(controller.signal.aborted).toBe(false);
        expect(lines).toContain('stoppable: stopped');
        expect((await ok(api.GET('/v2/organizations/{org_slug}/agents/{agent_id}', agentPath))).connection_state).toBe('stopped');
      } finally {
        controller.abort();
        await agents;
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('pauses, resumes and stops itself from a step with buildkite-agent, and ends after that job', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-self-stop-'));
    try {
      const { org, token, reg, slug } = await givenAgentPipeline(
        ctx(),
        [
          'steps:',
          '  - command: |',
          '      buildkite-agent pause --note "from the step" --timeout-in-minutes 10',
          '      buildkite-agent pause || echo "second pause refused"',
          '      buildkite-agent resume',
          '      buildkite-agent stop',
          '',
        ].join('\n'),
      );
      const { api, ref } = await givenWatchedBuild(ctx(), endpoint(), org.slug, slug, token);
      const { controller, lines, agents } = startAgent('self', reg, dir);
      try {
        // The agent ends by itself once the job that stopped it is done.
        await agents;
        expect(lines).toContain('self: stopped');
        const b = await readBuild(api, ref);
        expect(b.state).toBe('passed');
        const log = await jobLogText(api, ref, b.jobs[0]!.id);
        expect(log).toContain('buildkite-agent: paused\n');
        expect(log).toContain('Agent is already paused');
        expect(log).toContain('second pause refused\n');
        expect(log).toContain('buildkite-agent: resumed\n');
        expect(log).toContain('buildkite-agent: stopping\n');
      } finally {
        controller.abort();
        await agents;
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
