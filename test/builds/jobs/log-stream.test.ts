/**
 * Job logs are capped per job and read from the store a few chunks at a time: a log of many
 * chunks reads back identical as JSON, as text and as log.txt; a chunk past the cap is refused
 * with a 413 (which the agent does not retry) and the job runs on.
 */
import { auth, describeEachDatabase, type TestContext } from '../../support/context';
import { agentAuth, givenBuildAndAgent } from '../../support/agents';
import { existing } from '../../support/rows';

/** A running job of a new build, and what its agent and its REST reader need. */
async function runningJob(ctx: TestContext) {
  const s = await givenBuildAndAgent(ctx, 'steps:\n  - command: make\n');
  const job = (await ctx.http().get('/v3/ping').set(agentAuth(s.agent.token))).body.job as { id: string };
  await ctx.http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(s.agent.token)).expect(200);
  await ctx.http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(s.agent.token)).expect(200);
  return { ...s, jobId: job.id, jobUrl: `${s.url}/jobs/${job.id}` };
}

/** Line `i` of the test log: multi-byte text, JSON escapes, control characters, a section header now and then. */
function line(i: number): string {
  const kinds = [
    `+++ section ${i}`,
    `plain ${i} "quoted" back\\slash\ttab`,
    `ünïcödé ${i} 🚀 €`,
    `\u001b[32mcolour ${i}\u001b[0m`,
    `--- header ${i}`,
    `</script> ${'x'.repeat(i % 50)}`,
  ];
  return `${kinds[i % kinds.length]}\n`;
}

describeEachDatabase('job log streaming', (ctx) => {
  it('reads a log of many chunks back identical as JSON, as text and as log.txt', async () => {
    const s = await runningJob(ctx());
    // 240 chunks: 30 pages of the reader.
    const chunks: string[] = [];
    for (let i = 0; i < 240; i++) chunks.push(Array.from({ length: 20 }, (_, j) => line(i * 20 + j)).join(''));
    const offsets = chunks.map((_, i) => chunks.slice(0, i).reduce((n, c) => n + Buffer.byteLength(c), 0));
    for (let i = 0; i < chunks.length; i++) {
      await ctx()
        .http()
        .post(`/v3/jobs/${s.jobId}/chunks`)
        .set(agentAuth(s.agent.token))
        .send({ sequence: i + 1, offset: offsets[i], content: chunks[i] })
        .expect(201);
    }
    const whole = chunks.join('');
    const headers = whole.split('\n').filter((l) => /^(---|\+\+\+|~~~) /.test(l)).length;

    const json = await ctx().http().get(`${s.jobUrl}/log`).set(auth(s.token));
    expect(json.status).toBe(200);
    expect(json.headers['content-type']).toMatch(/^application\/json/);
    // Streamed: no length known up front.
    expect(json.headers['content-length']).toBeUndefined();
    expect(Object.keys(json.body)).toEqual(['url', 'content', 'size', 'header_times']);
    expect(json.body.url).toBe(`http://windsock.test${s.jobUrl}/log`);
    expect(json.body.content).toBe(whole);
    expect(json.body.size).toBe(Buffer.byteLength(whole));
    expect(json.body.header_times).toHaveLength(headers);
    expect(json.body.header_times.every((t: unknown) => Number.isInteger(t))).toBe(true);

    const text = await ctx().http().get(`${s.jobUrl}/log`).set(auth(s.token)).set('Accept', 'text/plain');
    expect(text.status).toBe(200);
    expect(text.headers['content-type']).toMatch(/^text\/plain/);
    expect(text.text).toBe(whole);
    const raw = await ctx().http().get(`${s.jobUrl}/log.txt`).set(auth(s.token));
    expect(raw.status).toBe(200);
    expect(raw.text).toBe(whole);
  });

  it('answers an empty log, and a 404 for a job that is not there, before streaming anything', async () => {
    const s = await runningJob(ctx());
    expect((await ctx().http().get(`${s.jobUrl}/log`).set(auth(s.token))).body).toEqual({
      url: `http://windsock.test${s.jobUrl}/log`,
      content: '',
      size: 0,
      header_times: [],
    });
    expect((await ctx().http().get(`${s.jobUrl}/log.txt`).set(auth(s.token))).text).toBe('');
    const missing = await ctx().http().get(`${s.url}/jobs/00000000-0000-4000-8000-000000000000/log`).set(auth(s.token));
    expect(missing.status).toBe(404);
    expect(missing.body.message).toBe('No job found');
  });
});

describeEachDatabase(
  'job log cap',
  (ctx) => {
    it('refuses with a 413 a chunk that would take the log past the cap, keeps what came before, and lets the job finish', async () => {
      const s = await runningJob(ctx());
      const send = (sequence: number, offset: number, content: string) =>
        ctx().http().post(`/v3/jobs/${s.jobId}/chunks`).set(agentAuth(s.agent.token)).send({ sequence, offset, content });
      const a = 'a'.repeat(1500) + '\n';
      const b = 'é'.repeat(250) + '\n'; // 501 bytes: 2002 in all, 2 over
      expect((await send(1, 0, a)).status).toBe(201);
      const refused = await send(2, 1501, b);
      expect(refused.status).toBe(413);
      expect(refused.body.message).toBe("This job's log has reached its limit of 2000 bytes (JOB_LOG_LIMIT_BYTES): the chunk was not stored.");
      // What still fits is stored; the same chunk sent again is still refused; a stored one sent again is accepted.
      expect((await send(2, 1501, 'é'.repeat(249) + '\n')).status).toBe(201);
      expect((await send(3, 2000, 'b')).status).toBe(413);
      expect((await send(1, 0, a)).status).toBe(201);
      const log = await ctx().http().get(`${s.jobUrl}/log`).set(auth(s.token));
      expect(log.body.size).toBe(2000);
      expect(log.body.content).toBe(a + 'é'.repeat(249) + '\n');
      await ctx().http().put(`/v3/jobs/${s.jobId}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: 0 }).expect(200);

      // A deleted log no longer counts; a retried job starts with a log of its own.
      expect((await ctx().http().delete(`${s.jobUrl}/log`).set(auth(s.token))).status).toBe(204);
      expect(existing(await ctx().services.db('jobs').where({ id: s.jobId }).first('log_size'), 'the job').log_size).toEqual(
        ctx().kind === 'postgres' ? '0' : 0,
      );
    });

    it('gives a retried job a log cap of its own', async () => {
      const s = await runningJob(ctx());
      await ctx()
        .http()
        .post(`/v3/jobs/${s.jobId}/chunks`)
        .set(agentAuth(s.agent.token))
        .send({ sequence: 1, offset: 0, content: 'x'.repeat(1999) })
        .expect(201);
      await ctx().http().put(`/v3/jobs/${s.jobId}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: 1 }).expect(200);
      const retried = await ctx().http().put(`${s.jobUrl}/retry`).set(auth(s.token));
      expect(retried.status).toBe(200);
      const job = (await ctx().http().get('/v3/ping').set(agentAuth(s.agent.token))).body.job as { id: string };
      expect(job.id).toBe(retried.body.id);
      await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(s.agent.token)).expect(200);
      await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(s.agent.token)).expect(200);
      expect(
        (
          await ctx()
            .http()
            .post(`/v3/jobs/${job.id}/chunks`)
            .set(agentAuth(s.agent.token))
            .send({ sequence: 1, offset: 0, content: 'y'.repeat(1999) })
        ).status,
      ).toBe(201);
    });
  },
  { jobLogLimitBytes: 2000 },
);
