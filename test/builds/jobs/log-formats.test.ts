/**
 * Issue 30 §1: the job log and env in the forms real clients ask for, as the docs' jobs page
 * describes them: HTML (`Accept: text/html`, pybuildkite's default, and `.../log.html`) escaped
 * (the log is untrusted), `Range: bytes=-N` for its tail (206, with
 * the documented 400s and 416), and the env as `KEY=VALUE` text (`env.txt`, `Accept: text/plain`).
 */
import { auth, describeEachDatabase } from '../../support/context';
import { takeNextJob, agentAuth, givenBuildAndAgent } from '../../support/agents';

describeEachDatabase('job log and env formats', (ctx) => {
  /** A running job whose log is `content`, sent by its agent in chunks. */
  async function jobWithLog(chunks: string[]) {
    const s = await givenBuildAndAgent(ctx(), 'steps:\n  - command: make\n    env:\n      GREETING: "hello world"\n      PLAIN: yes\n');
    const a = agentAuth(s.agent.token);
    const job = await takeNextJob(ctx(), a);
    let offset = 0;
    for (const [i, content] of chunks.entries()) {
      await ctx()
        .http()
        .post(`/v3/jobs/${job.id}/chunks`)
        .set(a)
        .send({ sequence: i + 1, offset, content })
        .expect(201);
      offset += Buffer.byteLength(content);
    }
    return { ...s, jobUrl: `${s.url}/jobs/${job.id}` };
  }

  const LOG = ['--- :hammer: Build <b>\n', '\x1b[31mred <script>alert(1)</script>\x1b[0m & "done"\n', 'wörld\n'];

  it('renders the log as escaped HTML for Accept: text/html and at log.html', async () => {
    const s = await jobWithLog(LOG);
    const viaAccept = await ctx().http().get(`${s.jobUrl}/log`).set(auth(s.token)).set('Accept', 'text/html');
    expect(viaAccept.status).toBe(200);
    expect(viaAccept.headers['content-type']).toMatch(/^text\/html/);
    const html = viaAccept.text;
    // The log's markup is text: nothing of it becomes an element or an attribute.
    expect(html).not.toContain('<script>');
    expect(html).not.toContain('<b>');
    expect(html).toContain('red &lt;script&gt;alert(1)&lt;/script&gt;');
    expect(html).toContain('&amp; &quot;done&quot;');
    expect(html).toContain('wörld');
    // Colours become classed spans, sections folding groups; escape sequences are gone.
    expect(html).toMatch(/<span class="[^"]*">red &lt;script&gt;/);
    expect(html).toContain('<details');
    expect(html).toContain('<summary>:hammer: Build &lt;b&gt;</summary>');
    expect(html).not.toContain('\x1b');
    const viaExtension = await ctx().http().get(`${s.jobUrl}/log.html`).set(auth(s.token));
    expect(viaExtension.status).toBe(200);
    expect(viaExtension.headers['content-type']).toMatch(/^text\/html/);
    expect(viaExtension.text).toBe(html);
    // Scope and 404 as the other forms.
    const noLogs = await ctx().givenToken(s.user, [s.org], ['read_builds']);
    expect((await ctx().http().get(`${s.jobUrl}/log.html`).set(auth(noLogs))).status).toBe(403);
    expect((await ctx().http().get(`${s.url}/jobs/00000000-0000-4000-8000-000000000000/log.html`).set(auth(s.token))).status).toBe(404);
  });

  it("answers Range: bytes=-N with the log's last N bytes, and refuses the forms the docs refuse", async () => {
    const s = await jobWithLog(['0123456789\n', 'abcdef\n']);
    const text = (r: string) => ctx().http().get(`${s.jobUrl}/log`).set(auth(s.token)).set('Accept', 'text/plain').set('Range', r);
    const tail = await text('bytes=-7');
    expect(tail.status).toBe(206);
    expect(tail.text).toBe('abcdef\n');
    expect(tail.headers['content-range']).toBe('bytes 11-17/18');
    expect(tail.headers['content-length']).toBe('7');
    expect(tail.headers['accept-ranges']).toBe('bytes');
    // More than the log: all of it.
    const all = await text('bytes=-1000');
    expect(all.status).toBe(206);
    expect(all.text).toBe('0123456789\nabcdef\n');
    expect(all.headers['content-range']).toBe('bytes 0-17/18');
    for (const [range, accept, message] of [
      ['bytes=-5', 'application/json', 'Range requests are only supported with Accept: text/plain'],
      ['bytes=0-5', 'text/plain', 'Only suffix byte ranges (bytes=-N) are supported'],
      ['bytes=-1,-2', 'text/plain', 'Only suffix byte ranges (bytes=-N) are supported'],
      ['bytes=5-', 'text/plain', 'Only suffix byte ranges (bytes=-N) are supported'],
      ['bytes=-0', 'text/plain', 'A suffix byte range must ask for at least one byte (bytes=-0)'],
    ]) {
      const res = await ctx().http().get(`${s.jobUrl}/log`).set(auth(s.token)).set('Accept', accept!).set('Range', range!);
      expect({ range, status: res.status, message: res.body.message }).toEqual({ range, status: 400, message });
    }
    const empty = await jobWithLog([]);
    const none = await ctx().http().get(`${empty.jobUrl}/log`).set(auth(empty.token)).set('Accept', 'text/plain').set('Range', 'bytes=-5');
    expect(none.status).toBe(416);
    expect(none.headers['content-range']).toBe('bytes */0');
    expect(none.body.message).toMatch(/empty/);
  });

  it('serves the env as KEY=VALUE text at env.txt and for Accept: text/plain', async () => {
    const s = await jobWithLog([]);
    const json = (await ctx().http().get(`${s.jobUrl}/env`).set(auth(s.token)).expect(200)).body.env as Record<string, string>;
    const txt = await ctx().http().get(`${s.jobUrl}/env.txt`).set(auth(s.token));
    expect(txt.status).toBe(200);
    expect(txt.headers['content-type']).toMatch(/^text\/plain/);
    const lines = txt.text.trimEnd().split('\n');
    expect(lines).toHaveLength(Object.keys(json).length);
    expect(lines).toContain('GREETING="hello world"');
    expect(lines).toContain('PLAIN=yes');
    expect(lines).toContain(`BUILDKITE_JOB_ID=${json.BUILDKITE_JOB_ID}`);
    // Sorted by name.
    expect(lines.map((l) => l.slice(0, l.indexOf('=')))).toEqual(Object.keys(json).sort());
    const viaAccept = await ctx().http().get(`${s.jobUrl}/env`).set(auth(s.token)).set('Accept', 'text/plain');
    expect(viaAccept.text).toBe(txt.text);
    const noEnv = await ctx().givenToken(s.user, [s.org], ['read_builds']);
    expect((await ctx().http().get(`${s.jobUrl}/env.txt`).set(auth(noEnv))).status).toBe(403);
  });
});
