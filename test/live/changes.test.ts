/**
 * The change feed (src/live/changes.ts): delivery to a build's listeners, log changes coalesced
 * per job, the relay's messages read back; and the publishers: build progression and the agent's
 * log appends announce what they changed, after it committed.
 */
import { changeOf, LocalChangeFeed, LogCoalescer, RelayedChangeFeed, type Change, type Relay } from '../../src/live/changes';
import { describeEachDatabase } from '../support/context';
import { agentAuth, givenBuildAndAgent, takeNextJob } from '../support/agents';

const build = (buildId: string): Change => ({ kind: 'build', organizationId: 'o', pipelineId: 'p', buildId });
const log = (jobId: string, size: number): Extract<Change, { kind: 'log' }> => ({ kind: 'log', organizationId: 'o', buildId: 'b', jobId, size });

/** Resolves with the changes heard once `count` have arrived. */
function collect(feed: { subscribe(id: string, l: (c: Change) => void): () => void }, buildId: string, done: (seen: Change[]) => boolean) {
  const seen: Change[] = [];
  let stop = () => undefined as void;
  const promise = new Promise<Change[]>((resolve) => {
    stop = feed.subscribe(buildId, (c) => {
      seen.push(c);
      if (done(seen)) resolve(seen);
    });
  });
  return { seen, promise, stop: () => stop() };
}

describe('LocalChangeFeed', () => {
  it("delivers a build's changes to its listeners only, after the publisher's call returned", async () => {
    const feed = new LocalChangeFeed();
    const a = collect(feed, 'a', (s) => s.length === 2);
    const b: Change[] = [];
    feed.subscribe('b', (c) => b.push(c));
    feed.publish(build('a'));
    expect(a.seen).toEqual([]);
    feed.publish({ kind: 'job', organizationId: 'o', buildId: 'a', jobId: 'j' });
    expect(await a.promise).toEqual([build('a'), { kind: 'job', organizationId: 'o', buildId: 'a', jobId: 'j' }]);
    expect(b).toEqual([]);
    await feed.close();
  });

  it('unsubscribes, and a listener that throws does not stop the others or the publisher', async () => {
    const errors: string[] = [];
    const feed = new LocalChangeFeed((_err, what) => errors.push(what));
    const gone: Change[] = [];
    const unsubscribe = feed.subscribe('a', (c) => gone.push(c));
    feed.subscribe('a', () => {
      throw new Error('boom');
    });
    const kept = collect(feed, 'a', (s) => s.length === 1);
    unsubscribe();
    expect(() => feed.publish(build('a'))).not.toThrow();
    await kept.promise;
    expect(gone).toEqual([]);
    expect(errors).toEqual(['change listener']);
    expect(feed.subscriptions).toBe(2);
    await feed.close();
    expect(feed.subscriptions).toBe(0);
  });
});

describe('LogCoalescer', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  it("sends a quiet job's first change at once, then at most one per window with the latest size", () => {
    const sent: Change[] = [];
    const c = new LogCoalescer((x) => sent.push(x), 250);
    c.offer(log('j', 10));
    expect(sent).toEqual([log('j', 10)]);
    c.offer(log('j', 20));
    c.offer(log('j', 30));
    c.offer(log('k', 5));
    expect(sent).toEqual([log('j', 10), log('k', 5)]);
    jest.advanceTimersByTime(250);
    expect(sent).toEqual([log('j', 10), log('k', 5), log('j', 30)]);
    // The window reopened with that send: another change waits for its end.
    c.offer(log('j', 40));
    jest.advanceTimersByTime(249);
    expect(sent).toHaveLength(3);
    jest.advanceTimersByTime(1);
    expect(sent.at(-1)).toEqual(log('j', 40));
    // Quiet for a whole window: the next change goes at once.
    jest.advanceTimersByTime(250);
    c.offer(log('j', 50));
    expect(sent.at(-1)).toEqual(log('j', 50));
  });

  it('flush sends what waits', () => {
    const sent: Change[] = [];
    const c = new LogCoalescer((x) => sent.push(x), 250);
    c.offer(log('j', 1));
    c.offer(log('j', 2));
    c.flush();
    expect(sent).toEqual([log('j', 1), log('j', 2)]);
    expect(jest.getTimerCount()).toBe(0);
  });
});

describe('RelayedChangeFeed', () => {
  /** Two feeds on one in-memory relay: what one sends, every one hears (itself too, as NOTIFY echoes). */
  function bus() {
    const hearers: ((m: string) => void)[] = [];
    const sent: string[] = [];
    const relay = (): Relay => ({
      send: async (m) => {
        sent.push(m);
        for (const h of hearers) h(m);
      },
      start: async (on) => void hearers.push(on),
      close: async () => undefined,
    });
    return { relay, sent };
  }

  it("delivers here at once and to the other instance once, never this instance's own echo twice", async () => {
    const { relay, sent } = bus();
    const a = new RelayedChangeFeed(relay());
    const b = new RelayedChangeFeed(relay());
    await a.start();
    await b.start();
    const onA = collect(a, 'x', (s) => s.length === 1);
    const onB = collect(b, 'x', (s) => s.length === 1);
    a.publish(build('x'));
    expect(await onA.promise).toEqual([build('x')]);
    expect(await onB.promise).toEqual([build('x')]);
    await new Promise((r) => setImmediate(r));
    expect(onA.seen).toHaveLength(1);
    expect(JSON.parse(sent[0]!)).toEqual({ o: a.instanceId, c: build('x') });
    await a.close();
    await b.close();
  });

  it('reports a send that failed and messages that are not changes, and never throws', async () => {
    const errors: string[] = [];
    let hear: (m: string) => void = () => undefined;
    const feed = new RelayedChangeFeed(
      {
        send: () => Promise.reject(new Error('down')),
        start: async (on) => void (hear = on),
        close: async () => undefined,
      },
      (_e, what) => errors.push(what),
    );
    await feed.start();
    expect(() => feed.publish(build('x'))).not.toThrow();
    hear('not json');
    hear(JSON.stringify({ o: 'other', c: { kind: 'build', buildId: 'x' } }));
    await new Promise((r) => setImmediate(r));
    expect(errors.sort()).toEqual(['change feed receive', 'change feed receive', 'change feed send']);
    await feed.close();
  });
});

describe('changeOf', () => {
  it('reads the three kinds and refuses anything else', () => {
    expect(changeOf(build('b'))).toEqual(build('b'));
    expect(changeOf(log('j', 3))).toEqual(log('j', 3));
    expect(changeOf({ kind: 'job', organizationId: 'o', buildId: 'b', jobId: 'j' })).toEqual({ kind: 'job', organizationId: 'o', buildId: 'b', jobId: 'j' });
    expect(changeOf({ kind: 'log', organizationId: 'o', buildId: 'b', jobId: 'j', size: '3' })).toBeNull();
    expect(changeOf({ kind: 'other', organizationId: 'o', buildId: 'b' })).toBeNull();
    expect(changeOf(null)).toBeNull();
  });
});

describeEachDatabase('publishers of changes', (ctx) => {
  it("announce a job's claim, start, log and finish, and the build's moves, with the ids of its organization and pipeline", async () => {
    const { build: b, agent, org } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: echo hi\n');
    const feed = ctx().services.changes;
    const heard = collect(
      feed,
      b.id,
      (s) => s.some((c) => c.kind === 'build') && s.some((c) => c.kind === 'log') && s.filter((c) => c.kind === 'job').length >= 3,
    );
    const job = await takeNextJob(ctx(), agent);
    await ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence: 1, offset: 0, content: 'hello\n' }).expect(201);
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
    const seen = await heard.promise;
    heard.stop();
    const organizationId = org.id;
    expect(seen).toContainEqual({ kind: 'log', organizationId, buildId: b.id, jobId: job.id, size: 6 });
    expect(seen).toContainEqual({ kind: 'job', organizationId, buildId: b.id, jobId: job.id });
    const buildChange = seen.find((c) => c.kind === 'build');
    expect(buildChange).toEqual({ kind: 'build', organizationId, pipelineId: expect.any(String), buildId: b.id });
  });

  it('announces the build when a pipeline upload adds jobs to it', async () => {
    const { build: b, agent } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: upload\n');
    const job = await takeNextJob(ctx(), agent);
    const heard = collect(ctx().services.changes, b.id, (s) => s.some((c) => c.kind === 'build'));
    await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/pipelines`)
      .set(agentAuth(agent.token))
      .send({ uuid: '6bb4f2f6-8a8c-4b0e-9a35-5c8d1b0f1a01', pipeline: { steps: [{ command: 'two' }] } })
      .expect(201);
    expect((await heard.promise).find((c) => c.kind === 'build')).toMatchObject({ kind: 'build', buildId: b.id });
    heard.stop();
  });
});
