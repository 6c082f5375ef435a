/**
 * Live pages across instances (issue 31): two app instances on one database, as two server
 * processes behind a load balancer. A change made through one (an agent runs a job, appends to
 * its log) reaches a stream opened on the other: through Postgres LISTEN/NOTIFY, or Redis
 * pub/sub; the LISTEN connection, terminated, comes back. And what is read per request needs
 * no feed: a token revoked, or a page signed out, on one instance is refused on the other within
 * the token cache time.
 */
import { auth, createTwoContexts, databases, type ContextOptions, type TestContext } from '../support/context';
import { agentAuth, givenBuildAndAgent, listen, stop, takeNextJob, until } from '../support/agents';
import { moveDateOn, PAST_CACHE_WINDOW_MS } from '../support/date';
import { json, openStream, type SseStream } from '../support/sse';
import { describeWithRedis, itWithRedis } from '../support/redis';
import { SESSION_COOKIE } from '../../src/web/routes';
import type { RedisSettings } from '../../src/db/redis';
import { HTML } from '../web/support';

const TWO_STEPS = 'steps:\n  - command: echo one\n  - wait\n  - command: echo two\n';

/** Two instances on one store, `two` listening on loopback. */
async function twoInstances(kind: 'sqlite' | 'postgres', opts: ContextOptions) {
  const contexts = await createTwoContexts(kind, opts);
  const { one, two } = contexts;
  await Promise.all([one.feed?.ready, two.feed?.ready]);
  const { server, endpoint } = await listen(two.app);
  return {
    one,
    two,
    endpoint,
    close: async () => {
      await stop(server);
      await contexts.close();
    },
  };
}

/** A build run by an agent through `one`, watched on a stream opened on `two`. */
async function runAcross(one: TestContext, two: TestContext, endpoint: string): Promise<{ s: SseStream; next: () => Promise<void> }> {
  const { org, slug, build, agent, token } = await givenBuildAndAgent(one, TWO_STEPS);
  const { sid } = await two.services.webSessions.create(token);
  const s = await openStream(`${endpoint}/${org.slug}/${slug}/builds/${build.number}/events`, { Cookie: `${SESSION_COOKIE}=${sid}` });
  expect(s.status).toBe(200);
  await s.next((e) => e.event === 'job');
  const job = await takeNextJob(one, agent);
  await s.find((e) => e.event === 'job' && json(e).id === job.id && json(e).state === 'running', 'the job running');
  await s.find((e) => e.event === 'build' && json(e).state === 'running', 'the build running');
  await one.http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence: 1, offset: 0, content: 'from one\n' }).expect(201);
  expect(json(await s.find((e) => e.event === 'log', 'the log'))).toEqual({ job_id: job.id, size: 9 });
  await one.http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
  await s.find((e) => e.event === 'job' && json(e).id === job.id && json(e).state === 'passed', 'the job passed');
  // The second command job, after the wait.
  return {
    s,
    next: async () => {
      const second = await takeNextJob(one, agent);
      await s.find((e) => e.event === 'job' && json(e).id === second.id && json(e).state === 'running', 'the second job running');
    },
  };
}

describe.each(databases.filter((k) => k === 'postgres'))('live pages across instances, LISTEN/NOTIFY [%s]', (kind) => {
  let pair: Awaited<ReturnType<typeof twoInstances>>;
  beforeAll(async () => {
    pair = await twoInstances(kind, { liveFeed: true });
  });
  afterAll(async () => {
    await pair?.close();
  });

  it("a change made through one instance reaches a stream on the other, and again after the other's LISTEN connection was terminated", async () => {
    const { one, two, endpoint } = pair;
    const { s, next } = await runAcross(one, two, endpoint);
    const channel = two.feed!.channel!;
    expect(channel.listens).toBe(1);
    const pid = channel.backendPid;
    expect(pid).toEqual(expect.any(Number));
    await one.services.db.raw('select pg_terminate_backend(?)', [pid]);
    await until(
      async () => channel.listens,
      (n) => n === 2,
      'the LISTEN connection back',
    );
    expect(channel.backendPid).not.toBe(pid);
    await next();
    s.close();
  });
});

describe.each(databases)('live pages across instances, Redis [%s]', (kind) => {
  describeWithRedis(`live pages across instances, Redis [${kind}]`, (redis) => {
    let pair: Awaited<ReturnType<typeof twoInstances>> | undefined;
    let settings: RedisSettings | undefined;
    beforeAll(async () => {
      try {
        settings = redis();
      } catch {
        return; // Redis unreachable: the tests say so and do nothing.
      }
      pair = await twoInstances(kind, { liveFeed: true, redis: settings });
    });
    afterAll(async () => {
      await pair?.close();
    });

    itWithRedis('a change made through one instance reaches a stream on the other', async () => {
      redis();
      const { one, two, endpoint } = pair!;
      expect(two.feed!.channel).toBeUndefined();
      const { s, next } = await runAcross(one, two, endpoint);
      await next();
      s.close();
    });
  });
});

describe.each(databases)('what is read per request, across instances [%s]', (kind) => {
  let pair: Awaited<ReturnType<typeof twoInstances>>;
  beforeAll(async () => {
    pair = await twoInstances(kind, {});
  });
  afterAll(async () => {
    await pair?.close();
  });

  // Tests move the Date past the token cache instead of waiting.
  afterEach(() => jest.useRealTimers());

  it('a token revoked through one instance is refused by the other within the token cache time', async () => {
    const { one, two } = pair;
    const { org, token } = await one.givenAdmin();
    const pipelines = `/v2/organizations/${org.slug}/pipelines`;
    await two.http().get(pipelines).set(auth(token)).expect(200);
    await one.http().delete('/v2/access-token').set(auth(token)).expect(204);
    await one.http().get(pipelines).set(auth(token)).expect(401);
    moveDateOn(PAST_CACHE_WINDOW_MS);
    await two.http().get(pipelines).set(auth(token)).expect(401);
  });

  it('a web session signed out on one instance is refused by the other at once', async () => {
    const { one, two } = pair;
    const { org, token } = await one.givenAdmin();
    const { sid } = await one.services.webSessions.create(token);
    const cookie = `${SESSION_COOKIE}=${sid}`;
    await two.http().get(`/${org.slug}`).set(HTML).set('Cookie', cookie).expect(200);
    const page = await one.http().get(`/${org.slug}`).set(HTML).set('Cookie', cookie).expect(200);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(page.text)![1]!;
    await one.http().post('/logout').type('form').set('Cookie', cookie).send({ _csrf: csrf }).expect(303);
    const refused = await two.http().get(`/${org.slug}`).set(HTML).set('Cookie', cookie).expect(303);
    expect(refused.headers.location).toBe(`/login?next=${encodeURIComponent(`/${org.slug}`)}`);
  });

  it("a token revoked through one instance ends the other's web session within the token cache time", async () => {
    const { one, two } = pair;
    const { org, token } = await one.givenAdmin();
    const { sid } = await two.services.webSessions.create(token);
    const cookie = `${SESSION_COOKIE}=${sid}`;
    await two.http().get(`/${org.slug}`).set(HTML).set('Cookie', cookie).expect(200);
    await one.http().delete('/v2/access-token').set(auth(token)).expect(204);
    moveDateOn(PAST_CACHE_WINDOW_MS);
    await two.http().get(`/${org.slug}`).set(HTML).set('Cookie', cookie).expect(303);
  });
});
