/**
 * The build page's live stream (src/web/live.ts) on one instance: who may open it, what it sends
 * on connect and as the build moves, its bounds, and its end (the page's session ends, the server
 * shuts down, the browser goes).
 */
import http from 'node:http';
import express from 'express';
import { describeEachDatabase, type TestContext } from '../support/context';
import { agentAuth, givenBuildAndAgent, listen, stop, takeNextJob, until } from '../support/agents';
import { json, openStream, type SseStream } from '../support/sse';
import { webRoutes } from '../../src/web/routes';
import { DEFAULT_LIVE_SETTINGS, LiveStreams } from '../../src/web/live';
import { SESSION_COOKIE } from '../../src/web/routes';
import { stateBadge } from '../../src/web/ui';

const TWO_STEPS = 'steps:\n  - command: echo one\n  - wait\n  - command: echo two\n';

async function sessionOf(ctx: TestContext, token: string): Promise<Record<string, string>> {
  const { sid } = await ctx.services.webSessions.create(token);
  return { Cookie: `${SESSION_COOKIE}=${sid}` };
}

describeEachDatabase('live build stream', (ctx) => {
  let server: http.Server;
  let endpoint: string;
  const streams: SseStream[] = [];
  beforeAll(async () => {
    ({ server, endpoint } = await listen(ctx().app));
  });
  afterEach(() => {
    for (const s of streams.splice(0)) s.close();
  });
  afterAll(async () => {
    await stop(server);
  });
  const open = async (path: string, headers: Record<string, string>) => {
    const s = await openStream(`${endpoint}${path}`, headers);
    streams.push(s);
    return s;
  };

  it('sends the build, its job count and every job on connect, then what changes as an agent runs a job', async () => {
    const { org, slug, build, agent, token } = await givenBuildAndAgent(ctx(), TWO_STEPS);
    const s = await open(`/${org.slug}/${slug}/builds/${build.number}/events`, await sessionOf(ctx(), token));
    expect(s.status).toBe(200);
    expect(s.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(s.headers['cache-control']).toBe('no-store');
    expect(s.headers['x-accel-buffering']).toBe('no');
    expect(await s.next(() => true)).toEqual({ event: 'retry', data: '3000' });
    const first = json(await s.next((e) => e.event === 'build'));
    expect(first).toEqual({
      id: build.id,
      state: 'scheduled',
      blocked: false,
      started_at: null,
      finished_at: null,
      badge: stateBadge('scheduled').value,
    });
    expect(json(await s.next((e) => e.event === 'jobs'))).toEqual({ count: 3 });
    const jobs = [json(await s.next((e) => e.event === 'job')), json(await s.next((e) => e.event === 'job')), json(await s.next((e) => e.event === 'job'))];
    expect(jobs.map((j) => j.state).sort()).toEqual(['scheduled', 'waiting', 'waiting']);
    expect(Object.keys(jobs[0]!).sort()).toEqual(['agent_name', 'badge', 'exit_status', 'finished_at', 'id', 'started_at', 'state']);

    const job = await takeNextJob(ctx(), agent);
    // The job's and the build's moves come in either order (reads coalesce what committed meanwhile).
    const running = json(await s.find((e) => e.event === 'job' && json(e).id === job.id && json(e).state === 'running'));
    expect(running).toMatchObject({ agent_name: 'runner', exit_status: null, badge: stateBadge('running').value });
    expect(typeof running.started_at).toBe('string');
    expect(json(await s.find((e) => e.event === 'build' && json(e).state === 'running'))).toMatchObject({ started_at: expect.any(String) });

    await ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence: 1, offset: 0, content: 'hello\n' }).expect(201);
    expect(json(await s.find((e) => e.event === 'log'))).toEqual({ job_id: job.id, size: 6 });

    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 1 }).expect(200);
    expect(json(await s.find((e) => e.event === 'job' && json(e).id === job.id && json(e).state === 'failed'))).toMatchObject({ exit_status: 1 });
    expect(json(await s.find((e) => e.event === 'build' && json(e).state === 'failed'))).toMatchObject({
      badge: stateBadge('failed').value,
      finished_at: expect.any(String),
    });
  });

  it('carries, byte for byte, what the fallback poll (/state) answers: the page reads both alike', async () => {
    const { org, slug, build, agent, token } = await givenBuildAndAgent(ctx(), TWO_STEPS);
    // A job on an agent: the agent's name and the start time are in both.
    await takeNextJob(ctx(), agent);
    const session = await sessionOf(ctx(), token);
    const s = await open(`/${org.slug}/${slug}/builds/${build.number}/events`, session);
    const built = await s.next((e) => e.event === 'build');
    const count = json(await s.next((e) => e.event === 'jobs'));
    const jobs = [await s.next((e) => e.event === 'job'), await s.next((e) => e.event === 'job'), await s.next((e) => e.event === 'job')];
    const state = (await ctx().http().get(`/${org.slug}/${slug}/builds/${build.number}/state`).set(session).expect(200)).body;
    expect(JSON.stringify(state.build)).toBe(built.data);
    expect(state.jobs.map((j: unknown) => JSON.stringify(j)).sort()).toEqual(jobs.map((e) => e.data).sort());
    expect(state.jobs.some((j: unknown) => JSON.stringify(j).includes('"agent_name":"runner"'))).toBe(true);
    expect({ count: state.count }).toEqual(count);
  });

  it('says when the set of jobs changes: a pipeline upload adds some', async () => {
    const { org, slug, build, agent, token } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: upload\n');
    const s = await open(`/${org.slug}/${slug}/builds/${build.number}/events`, await sessionOf(ctx(), token));
    expect(json(await s.next((e) => e.event === 'jobs'))).toEqual({ count: 1 });
    const job = await takeNextJob(ctx(), agent);
    await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/pipelines`)
      .set(agentAuth(agent.token))
      .send({ pipeline: { steps: [{ command: 'two' }, { command: 'three' }] } })
      .expect(201);
    expect(json(await s.next((e) => e.event === 'jobs'))).toEqual({ count: 3 });
  });

  it('is refused without a session (401), for a build the caller cannot see (404), and beyond six per session (429)', async () => {
    const { org, slug, build, token } = await givenBuildAndAgent(ctx(), TWO_STEPS);
    const path = `/${org.slug}/${slug}/builds/${build.number}/events`;
    const none = await open(path, {});
    expect(none.status).toBe(401);
    expect(JSON.parse(none.body)).toEqual({ message: 'Sign in first' });
    const other = await ctx().givenAdmin();
    const stranger = await sessionOf(ctx(), other.token);
    expect((await open(path, stranger)).status).toBe(404);
    const mine = await sessionOf(ctx(), token);
    expect((await open(`/${org.slug}/${slug}/builds/99999/events`, mine)).status).toBe(404);
    expect((await open(`/${org.slug}/${slug}/builds/x/events`, mine)).status).toBe(404);

    const six = await Promise.all(Array.from({ length: 6 }, () => open(path, mine)));
    expect(six.map((s) => s.status)).toEqual([200, 200, 200, 200, 200, 200]);
    const seventh = await open(path, mine);
    expect(seventh.status).toBe(429);
    expect(seventh.headers['retry-after']).toBe('3');
    expect(JSON.parse(seventh.body)).toMatchObject({ message: expect.stringMatching(/at most 6/), scope: 'live_streams', limit: 6 });
    // Another session has its own six.
    expect((await open(path, await sessionOf(ctx(), token))).status).toBe(200);
    // A page that goes frees its place.
    const before = ctx().services.liveStreams.size;
    six[0]!.close();
    await until(
      async () => ctx().services.liveStreams.size,
      (n) => n === before - 1,
      'the closed stream released',
    );
    expect((await open(path, mine)).status).toBe(200);
  });

  it('ends when the page session is signed out or its user leaves the organization (seen at the next heartbeat), and every stream ends at shutdown', async () => {
    const { org, slug, build, token } = await givenBuildAndAgent(ctx(), TWO_STEPS);
    // An app of its own with a short heartbeat and its own streams, on the same services.
    const liveStreams = new LiveStreams({ ...DEFAULT_LIVE_SETTINGS, heartbeatMs: 50 });
    const app = express();
    app.use(webRoutes({ ...ctx().services, liveStreams, publicUrl: 'http://windsock.test' }));
    const own = await listen(app);
    try {
      const { sid } = await ctx().services.webSessions.create(token);
      const cookie = { Cookie: `${SESSION_COOKIE}=${sid}` };
      const path = `${own.endpoint}/${org.slug}/${slug}/builds/${build.number}/events`;
      const signedOut = await openStream(path, cookie);
      await signedOut.next((e) => e.event === 'comment' && e.data === 'heartbeat');
      await ctx().services.webSessions.destroy(sid);
      await signedOut.ended;

      // A member who leaves the organization: the stream ends at a heartbeat once the token's
      // cached principal (a second) no longer reaches it, as a new stream would be refused.
      const member = await ctx().givenUser(org, 'member');
      const memberSession = await ctx().services.webSessions.create(await ctx().givenToken(member, [org]));
      const leaving = await openStream(path, { Cookie: `${SESSION_COOKIE}=${memberSession.sid}` });
      await leaving.next((e) => e.event === 'build');
      await ctx().services.db('organization_members').where({ organization_id: org.id, user_id: member.id }).delete();
      await leaving.ended;

      const again = await ctx().services.webSessions.create(token);
      const a = await openStream(path, { Cookie: `${SESSION_COOKIE}=${again.sid}` });
      const b = await openStream(path, { Cookie: `${SESSION_COOKIE}=${again.sid}` });
      await a.next((e) => e.event === 'build');
      await b.next((e) => e.event === 'build');
      liveStreams.endAll();
      await Promise.all([a.ended, b.ended]);
      expect(liveStreams.size).toBe(0);
      // Shutting down: no new stream.
      const late = await openStream(path, { Cookie: `${SESSION_COOKIE}=${again.sid}` });
      expect(late.status).toBe(429);
    } finally {
      await stop(own.server);
    }
  });
});
