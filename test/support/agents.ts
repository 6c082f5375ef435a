/**
 * Agents for tests: a registration token through the REST operation, agents that use the agent
 * API, a build for them to run, and the app on loopback for the reference agent (with the
 * polling and process checks its end-to-end tests share).
 */
import fs from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { runAgents, type AgentOptions } from '../../src/cli/agent';
import { clock } from '../../src/core/clock';
import type { Organization } from '../../src/core/identity';
import { auth, type TestContext } from './context';
import { givenBuild, givenPipeline } from './given';
import type { BuildJson } from './types';

export const agentAuth = (token: string) => ({ Authorization: `Token ${token}` });

export async function givenRegistrationToken(ctx: TestContext, orgSlug: string, adminToken: string): Promise<string> {
  const res = await ctx.http().post(`/v2/organizations/${orgSlug}/agent-tokens`).set(auth(adminToken)).send({ description: 'test' });
  if (res.status !== 201) throw new Error(`agent token: ${res.status} ${JSON.stringify(res.body)}`);
  return res.body.token as string;
}

/** Where most agent tests start: an organization with an admin, a registration token for its agents, and a pipeline with this YAML. */
export async function givenAgentPipeline(ctx: TestContext, yaml: string): Promise<{ org: Organization; token: string; reg: string; slug: string }> {
  const { org, token } = await ctx.givenAdmin();
  const reg = await givenRegistrationToken(ctx, org.slug, token);
  const { slug } = await givenPipeline(ctx, org.slug, token, yaml);
  return { org, token, reg, slug };
}

export interface TestAgent {
  id: string;
  token: string;
}

/** Registers and connects an agent with these tags. */
export async function givenAgent(ctx: TestContext, registrationToken: string, name: string, tags: string[] = []): Promise<TestAgent> {
  const reg = await ctx
    .http()
    .post('/v3/register')
    .set(agentAuth(registrationToken))
    .send({ name, hostname: `${name}.local`, version: '3.0.0', os: 'linux', arch: 'amd64', meta_data: tags });
  if (reg.status !== 201) throw new Error(`register: ${reg.status} ${JSON.stringify(reg.body)}`);
  const agent = { id: reg.body.id as string, token: reg.body.access_token as string };
  const conn = await ctx.http().post('/v3/connect').set(agentAuth(agent.token));
  if (conn.status !== 200) throw new Error(`connect: ${conn.status} ${JSON.stringify(conn.body)}`);
  return agent;
}

/** A job as `GET /v3/ping` offers it to an agent. */
export type OfferedJob = { id: string; command: string; env: Record<string, string> } & Record<string, unknown>;

/** How an agent authenticates: the agent, its access token, or the headers already made. */
export type AgentCredential = TestAgent | string | Record<string, string>;

const agentHeaders = (agent: AgentCredential): Record<string, string> =>
  typeof agent === 'string' ? agentAuth(agent) : 'token' in agent && 'id' in agent ? agentAuth(agent.token as string) : (agent as Record<string, string>);

/** The agent accepts this job and starts it (the two calls of the agent API a job goes through before its log). */
export async function acceptAndStart(ctx: TestContext, agent: AgentCredential, jobId: string): Promise<void> {
  const headers = agentHeaders(agent);
  await ctx.http().put(`/v3/jobs/${jobId}/accept`).set(headers).expect(200);
  await ctx.http().put(`/v3/jobs/${jobId}/start`).set(headers).expect(200);
}

/** The agent takes the next job it is offered: ping, accept, start. Fails when it is offered none. */
export async function takeNextJob(ctx: TestContext, agent: AgentCredential): Promise<OfferedJob> {
  const job = (await ctx.http().get('/v3/ping').set(agentHeaders(agent)).expect(200)).body.job as OfferedJob | null;
  if (!job) throw new Error('no job offered');
  await acceptAndStart(ctx, agent, job.id);
  return job;
}

/** The agent takes the next job it is offered and runs it to this exit status (and signal reason). */
export async function runNextJob(ctx: TestContext, agent: TestAgent, exitStatus: number, signalReason?: string): Promise<{ id: string; command: string }> {
  const job = await takeNextJob(ctx, agent);
  await ctx
    .http()
    .put(`/v3/jobs/${job.id}/finish`)
    .set(agentAuth(agent.token))
    .send({ exit_status: exitStatus, signal_reason: signalReason ?? null })
    .expect(200);
  return job;
}

/** A pipeline with this configuration, a build of it, and a connected agent of the same organization. */
export async function givenBuildAndAgent(ctx: TestContext, configuration: string) {
  const { org, user, token } = await ctx.givenAdmin();
  const reg = await givenRegistrationToken(ctx, org.slug, token);
  const { slug } = await givenPipeline(ctx, org.slug, token, configuration);
  const build = await givenBuild(ctx, org.slug, slug, token);
  const agent = await givenAgent(ctx, reg, 'runner');
  const url = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
  return { org, user, token, reg, slug, build, agent, url };
}

/**
 * givenBuildAndAgent, with what a test of a build's steps does with it: read the build, its
 * jobs' states by command (block and input steps by label; wait steps left out), unblock a
 * block step by its label, read its pipeline, and run the next job the agent is offered to an
 * exit status.
 */
export async function givenSteppedBuild(ctx: TestContext, configuration: string) {
  const s = await givenBuildAndAgent(ctx, configuration);
  const read = async () => (await ctx.http().get(s.url).set(auth(s.token)).expect(200)).body as BuildJson;
  const states = async () =>
    Object.fromEntries((await read()).jobs.filter((j) => j.type !== 'waiter').map((j) => [j.type === 'manual' ? j.label : j.command, j.state]));
  const unblock = async (label: string) => {
    const job = (await read()).jobs.find((j) => j.type === 'manual' && j.label === label);
    if (!job) throw new Error(`no block step ${label}`);
    await ctx.http().put(`${s.url}/jobs/${job.id}/unblock`).set(auth(s.token)).send({}).expect(200);
  };
  /** The build's pipeline, as the API shows it. */
  const pipeline = async () =>
    (
      await ctx
        .http()
        .get(s.url.replace(/\/builds\/\d+$/, ''))
        .set(auth(s.token))
        .expect(200)
    ).body as { steps: Record<string, unknown>[] };
  return { ...s, read, states, unblock, pipeline, run: async (exit: number) => (await runNextJob(ctx, s.agent, exit)).command };
}

/** The app on 127.0.0.1 (port 0 unless given), for the reference agent to reach. */
export async function listen(app: http.RequestListener, port = 0): Promise<{ server: http.Server; endpoint: string }> {
  const server = http.createServer(app);
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return { server, endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}` };
}

/** Stops the server, closing connections still open. */
export async function stop(server: http.Server): Promise<void> {
  const closed = new Promise((resolve) => server.close(resolve));
  server.closeAllConnections();
  await closed;
}

/** The suite's app on loopback for its whole duration: `endpoint()` is where the reference agent goes. */
export function onLoopback(ctx: () => TestContext): { endpoint: () => string } {
  let server: http.Server | undefined;
  let endpoint = '';
  beforeAll(async () => {
    ({ server, endpoint } = await listen(ctx().app));
  });
  afterAll(async () => {
    if (server) await stop(server);
  });
  return { endpoint: () => endpoint };
}

/** The service's one clock (src/core/clock.ts), moved forward (`advance`) instead of waiting; `reset` puts it back on real time. */
export function movableClock() {
  return {
    advance: (ms: number) => clock.advance(ms),
    reset: () => clock.set({ kind: 'real' }),
  };
}

/**
 * Reference agents (`windsock agent`, src/cli/agent.ts) running while `body` does: stopped and
 * awaited when it ends, however it ends.
 */
export async function withReferenceAgents<T>(options: Omit<AgentOptions, 'signal'>, body: () => Promise<T>): Promise<T> {
  const controller = new AbortController();
  const agents = runAgents({ ...options, signal: controller.signal });
  try {
    return await body();
  } finally {
    controller.abort();
    await agents;
  }
}

/** Polls (bounded: `tries` reads 20 ms apart) until `done` holds. */
export async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, what: string, tries = 1000): Promise<T> {
  for (let i = 0; i < tries; i++) {
    const v = await read();
    if (done(v)) return v;
    await new Promise((r) => setTimeout(r, 20));
  }
  throw new Error(`${what} never happened: ${JSON.stringify(await read())}`);
}

/** Whether the process runs: a zombie (killed, not yet reaped by init) does not. */
export function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    return fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.[0] !== 'Z';
  } catch {
    return true; // no /proc: kill(0) said it is there
  }
}
