/**
 * The build page over HTTP (issue 32): honest states (a blocked build says blocked, job states
 * read as words), the dense job list (n/N, emoji, retries under their step, why a job waits), and
 * the log viewer's data: lines from a byte offset, colours carried across two reads.
 */
import { describeEachDatabase, type TestContext } from '../support/context';
import { givenBuild, givenPipeline } from '../support/given';
import { agentAuth } from '../support/agents';
import { givenRunningJob } from '../artifacts/helpers';
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

  it('shows the page', async () => {
    const { org, token, build, slug } = await givenRunningJob(ctx);
    const web = await signedIn(ctx.app, token);
    await web.get(`/${org.slug}/${slug}/builds/${build.number}`).set(HTML).expect(200);
  });
});
