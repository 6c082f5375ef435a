/**
 * The build page over HTTP (issue 32): honest states (a blocked build says blocked, job states
 * read as words), the dense job list (n/N, emoji, retries under their step, why a job waits), and
 * the log viewer's data: lines from a byte offset, colours carried across two reads.
 */
import { describeEachDatabase, type TestContext } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { agentAuth, givenBuildAndAgent, runNextJob } from '../support/agents';
import { givenRunningJob } from '../artifacts/helpers';
import { auth } from '../support/context';
import type { Job } from '../../src/builds/jobs/model';
import { attemptsOf, logsOpenedByDefault, stuckReason } from '../../src/web/pages/builds';
import type { Agent } from '../../src/agents/repository';
import { buildBadge, stateBadge } from '../../src/web/ui';
import { emojify } from '../../src/web/emoji';
import { HTML, signedIn } from './support';

describeEachDatabase('build page', (get) => {
  let ctx: TestContext;
  beforeAll(() => {
    ctx = get();
  });

  const chunk = (agentToken: string, jobId: string, sequence: number, offset: number, content: string) =>
    ctx.http().post(`/v3/jobs/${jobId}/chunks`).set(agentAuth(agentToken)).send({ sequence, offset, content }).expect(201);

  it('reads a running log from the byte offset it has shown: only the new bytes, colours carried across', async () => {
    const { org, token, build, agent, job, slug } = await givenRunningJob(ctx);
    const web = await signedIn(ctx.app, token);
    const base = `/${org.slug}/${slug}/builds/${build.number}/jobs/${job.id}/log`;
    const first = '\x1b_bk;t=1700000000000\x07\x1b[38;5;208morange\nstill orange\x1b[0m plain\n\x1b[1mhalf a li';
    await chunk(agent.token, job.id, 1, 0, first);
    const one = (await web.get(base).expect(200)).body;
    expect(one.lines).toEqual([{ h: '<span data-fg="ff8700">orange</span>', t: 1700000000000 }, { h: '<span data-fg="ff8700">still orange</span> plain' }]);
    // The unfinished last line is shown, not counted: the next read renders it again, whole.
    expect(one.tail).toEqual({ h: '<span class="a-b">half a li</span>' });
    const shown = Buffer.byteLength(first) - Buffer.byteLength('\x1b[1mhalf a li');
    expect(one).toMatchObject({ offset: shown, size: Buffer.byteLength(first), finished: false, more: false, state: '~~' });

    const second = 'ne\n\x1b[2mfaint \x1b[38;2;1;2;3mtrue\n';
    await chunk(agent.token, job.id, 2, Buffer.byteLength(first), second);
    const two = (await web.get(`${base}?offset=${one.offset}&state=${encodeURIComponent(one.state)}`).expect(200)).body;
    expect(two.lines).toEqual([
      { h: '<span class="a-b">half a line</span>' },
      { h: '<span class="a-b a-d">faint </span><span class="a-b a-d" data-fg="010203">true</span>' },
    ]);
    expect(two.state).toBe('010203~~bd');
    expect(two.offset).toBe(Buffer.byteLength(first + second));

    // Carried style: a read from the second line with the first read's token keeps the colour.
    const carried = (await web.get(`${base}?offset=${'\x1b_bk;t=1700000000000\x07\x1b[38;5;208morange\n'.length}&state=ff8700~~`).expect(200)).body;
    expect(carried.lines[0]).toEqual({ h: '<span data-fg="ff8700">still orange</span> plain' });

    // Bad input: a clear 4xx, never a 500.
    for (const q of ['offset=-1', 'offset=1e3', 'offset=999999', 'state=%3Cscript%3E', 'limit=x']) {
      const bad = await web.get(`${base}?${q}`).expect(422);
      expect(bad.body.message).toEqual(expect.any(String));
    }
  });

  it('reads a big log in parts of whole lines', async () => {
    const { org, token, build, agent, job, slug } = await givenRunningJob(ctx);
    const web = await signedIn(ctx.app, token);
    const base = `/${org.slug}/${slug}/builds/${build.number}/jobs/${job.id}/log`;
    const lines = Array.from({ length: 600 }, (_, i) => `line ${i + 1} ${'x'.repeat(20)}`);
    const text = `${lines.join('\n')}\n`;
    const half = text.indexOf('\n', text.length / 2) + 1;
    await chunk(agent.token, job.id, 1, 0, text.slice(0, half));
    await chunk(agent.token, job.id, 2, half, text.slice(half));
    const seen: string[] = [];
    let offset = 0;
    for (let reads = 0; reads < 20; reads++) {
      const part = (await web.get(`${base}?offset=${offset}&limit=4096`).expect(200)).body;
      seen.push(...part.lines.map((l: { h: string }) => l.h));
      offset = part.offset;
      if (!part.more) break;
    }
    expect(seen).toEqual(lines);
    expect(offset).toBe(Buffer.byteLength(text));
  });
});

describeEachDatabase('build page states', (get) => {
  let ctx: TestContext;
  beforeAll(() => {
    ctx = get();
  });

  it('says blocked on the build page, the pipeline list and the organization page, with the prompt and Unblock', async () => {
    // The case: a command passed, then the build waits on a block step (API: passed, blocked).
    const { org, token, slug, build, agent, url } = await givenBuildAndAgent(
      ctx,
      'steps:\n  - command: make\n  - block: ":rocket: Ship it?"\n    prompt: "Release <v2> to production?"\n  - command: deploy\n',
    );
    await runNextJob(ctx, agent, 0);
    const api = (await ctx.http().get(url).set(auth(token)).expect(200)).body;
    expect(api).toMatchObject({ state: 'passed', blocked: true });
    const web = await signedIn(ctx.app, token);
    const page = (await web.get(`/${org.slug}/${slug}/builds/${build.number}`).set(HTML).expect(200)).text;
    const status = /<span data-region="status"[^>]*>([\s\S]*?)<\/span>\s*<span data-live-status/.exec(page)![1]!;
    expect(status).toContain('state-blocked');
    expect(status).toContain('Blocked');
    expect(status).not.toMatch(/Passed/);
    const banner = /<div data-region="banner">([\s\S]*?)<\/div>\s*<dl/.exec(page)![1]!;
    expect(banner).toContain('Release &lt;v2&gt; to production?');
    expect(banner).toContain('<span class="emoji" role="img" aria-label="rocket">🚀</span> Ship it?');
    expect(banner).toContain('Unblock</a>');
    expect(page).toContain('<button type="submit">Unblock</button>');
    // The build list and the organization page say blocked too.
    const list = (await web.get(`/${org.slug}/${slug}`).set(HTML).expect(200)).text;
    expect(list).toMatch(/state-blocked[\s\S]*Blocked/);
    expect(list).not.toMatch(/state-passed/);
    expect(list).toContain(`<code title="${build.commit}">${build.commit.slice(0, 7)}</code>`);
    const home = (await web.get(`/${org.slug}`).set(HTML).expect(200)).text;
    expect(home).toMatch(/state-blocked/);
    // The fallback poll carries the same.
    const state = (await web.get(`/${org.slug}/${slug}/builds/${build.number}/state`).expect(200)).body;
    expect(state.build).toMatchObject({ id: build.id, state: 'passed', blocked: true });
    expect(state.build.badge).toContain('Blocked');
    expect(state.count).toBe(3);
    expect(state.jobs.map((j: { state: string }) => j.state)).toEqual(['passed', 'blocked', 'waiting']);
    expect(state.jobs[0]).toMatchObject({ exit_status: 0, agent_name: 'runner' });
  });

  it('says blocked when the block step comes first (the API: scheduled, blocked)', async () => {
    const { org, token } = await ctx.givenAdmin();
    const pipeline = await givenPipeline(ctx, org, token, { configuration: 'steps:\n  - block: Go?\n  - command: deploy\n' });
    const build = await givenBuild(ctx, org, pipeline, token);
    const web = await signedIn(ctx.app, token);
    const page = (await web.get(`/${org.slug}/${pipeline.slug}/builds/${build.number}`).set(HTML).expect(200)).text;
    expect(/<span data-region="status"[^>]*>([\s\S]*?)<\/span>/.exec(page)![1]!).toContain('state-blocked');
  });

  it('lists jobs densely: n/N of parallel jobs, emoji, why a job waits, meta-data and environment', async () => {
    const { org, token } = await ctx.givenAdmin();
    await ctx.services.emojis.add(org.id, { name: 'windsock', url: 'https://emoji.example.com/windsock.png', aliases: ['ws'] });
    const pipeline = await givenPipeline(ctx, org, token, {
      configuration: [
        'steps:',
        '  - label: ":hammer: Unit tests :ws:"',
        '    command: make test',
        '    parallelism: 3',
        '  - label: Deploy',
        '    command: make deploy',
        '    agents:',
        '      queue: deploy',
      ].join('\n'),
    });
    const build = await givenBuild(ctx, org, pipeline, token, { env: { RELEASE: '<1>' }, meta_data: { 'release-name': 'v1 <beta>' } });
    const web = await signedIn(ctx.app, token);
    const res = await web.get(`/${org.slug}/${pipeline.slug}/builds/${build.number}`).set(HTML).expect(200);
    const page = res.text;
    for (const n of [1, 2, 3]) expect(page).toContain(`<span class="job-parallel" title="Parallel job ${n} of 3">${n}/3</span>`);
    expect(page).toContain('<span class="emoji" role="img" aria-label="hammer">🔨</span> Unit tests');
    expect(page).toContain('<img class="emoji" src="https://emoji.example.com/windsock.png" alt=":ws:" title=":ws:" />');
    // The custom emoji's origin is allowed for images on this page only.
    expect(res.headers['content-security-policy']).toContain("img-src 'self' data: https://emoji.example.com;");
    expect(page).toContain('Waiting for an agent matching queue=deploy: 0 connected');
    expect(page).toContain('Waiting for an agent matching queue=default: 0 connected');
    expect(page).toContain('<code>release-name</code>');
    expect(page).toContain('<code>v1 &lt;beta&gt;</code>');
    expect(page).toContain('<code>RELEASE</code>');
    // Logs of jobs still waiting for an agent do not open by themselves (no requests for them).
    expect(page).not.toMatch(/<details class="job-log"\s+open/);
    // No inline script, no style attribute.
    expect(page).not.toMatch(/<script(?![^>]*src=)/);
    expect(page).not.toMatch(/\sstyle=/);
  });
});

describe('build page pieces', () => {
  const job = (over: Partial<Job>): Job =>
    ({ id: over.id ?? 'j', type: 'script', state: 'passed', retried: false, retriedInJobId: null, retrySource: null, ...over }) as Job; // cast: only the fields these functions read

  it('groups retried attempts under their latest attempt, oldest first', () => {
    const jobs = [
      job({ id: 'a', state: 'failed', retried: true, retriedInJobId: 'b' }),
      job({ id: 'c', state: 'passed' }),
      job({ id: 'b', state: 'failed', retried: true, retriedInJobId: 'd', retrySource: { job_id: 'a', retry_type: 'manual' } }),
      job({ id: 'd', state: 'running', retrySource: { job_id: 'b', retry_type: 'automatic' } }),
    ];
    const { earlier, hidden } = attemptsOf(jobs);
    expect([...hidden].sort()).toEqual(['a', 'b']);
    expect(earlier.get('d')!.map((j) => j.id)).toEqual(['a', 'b']);
    expect(earlier.has('c')).toBe(false);
  });

  it('opens failed logs first, then running ones, capped', () => {
    const jobs = [
      ...Array.from({ length: 4 }, (_, i) => job({ id: `r${i}`, state: 'running' })),
      ...Array.from({ length: 3 }, (_, i) => job({ id: `f${i}`, state: 'failed' })),
      job({ id: 'q', state: 'scheduled' }),
    ];
    expect([...logsOpenedByDefault(jobs, new Set())]).toEqual(['f0', 'f1', 'f2', 'r0', 'r1']);
  });

  it('explains a waiting job by the agents that could take it: its queue, its cluster, busy or idle', () => {
    const agent = (over: Partial<Agent>): Agent => ({ id: 'a', metaData: [], clusterId: null, clusterQueueId: null, jobId: null, ...over }) as Agent; // cast: only the fields stuckReason reads
    const waiting = job({ state: 'scheduled', agentId: null, agentQueryRules: ['queue=deploy', 'os=linux'] });
    const agents = [
      agent({ metaData: ['queue=deploy', 'os=linux'] }),
      agent({ metaData: ['queue=deploy', 'os=linux'], jobId: 'other' }),
      agent({ metaData: ['queue=deploy', 'os=mac'] }),
      agent({ metaData: ['queue=deploy', 'os=linux'], clusterId: 'c1', clusterQueueId: 'q1' }),
    ];
    expect(stuckReason(waiting, agents)).toBe('Waiting for an agent matching queue=deploy os=linux: 2 connected, 1 idle');
    expect(stuckReason({ ...waiting, clusterId: 'c1', clusterQueueId: 'q1' }, agents)).toBe(
      'Waiting for an agent matching queue=deploy os=linux: 1 connected, 1 idle',
    );
    expect(stuckReason({ ...waiting, clusterId: 'c1', clusterQueueId: 'q2' }, agents)).toBe('Waiting for an agent matching queue=deploy os=linux: 0 connected');
    // Not for a job an agent holds, one not yet runnable, or when the token may not list agents.
    expect(stuckReason({ ...waiting, agentId: 'a' }, agents)).toBeNull();
    expect(stuckReason({ ...waiting, state: 'waiting' }, agents)).toBeNull();
    expect(stuckReason(waiting, null)).toBeNull();
  });

  it('labels every job state in words, blocked failed and waiting failed included', () => {
    expect(stateBadge('blocked_failed').value).toContain('Not run');
    expect(stateBadge('blocked_failed').value).toContain('title="It was blocked when the build failed"');
    expect(stateBadge('waiting_failed').value).toContain('Not run');
    expect(stateBadge('timed_out').value).toContain('Timed out');
    expect(stateBadge('some_new_state').value).toContain('Some new state');
    expect(stateBadge('<x>').value).toContain('state-x');
    expect(buildBadge({ state: 'passed', blocked: true }).value).toContain('Blocked');
    expect(buildBadge({ state: 'passed', blocked: false }).value).toContain('Passed');
  });

  it('renders shortcodes: standard as Unicode, custom as images, unknown and markup as text', () => {
    const custom = new Map([['bk', 'https://e.example/bk.png?a=1&b=2']]);
    expect(emojify(':rocket: <b>:nope: :bk:', custom).value).toBe(
      '<span class="emoji" role="img" aria-label="rocket">🚀</span> &lt;b&gt;:nope: <img class="emoji" src="https://e.example/bk.png?a=1&amp;b=2" alt=":bk:" title=":bk:" />',
    );
  });
});
