/**
 * The real `buildkite-agent`'s requests (test/agents/fixtures/real-agent-requests.ts), replayed
 * against the agent API on each store: every answer holds the fields the agent reads, with the
 * types its Go structs decode them into.
 */
import zlib from 'node:zlib';
import { auth, describeEachDatabase } from '../support/context';
import { takeNextJob, agentAuth, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import {
  FINISH_CANCELED,
  FINISH_PASSED,
  HEADER_TIMES,
  LOG_PARTS,
  OS_RELEASE,
  REGISTER_CURRENT,
  REGISTER_V3_20,
  START,
  stepExport,
  stepUpdate,
} from './fixtures/real-agent-requests';
import { existing } from '../support/rows';

/** RFC 3339 with nanoseconds -> Unix nanoseconds, as the log's header_times give them (a JS number, as the API's). */
const nanos = (text: string) => Date.parse(text.replace(/\.(\d{3})\d*/, '.$1')) * 1_000_000 + Number(/\.\d{3}(\d*)/.exec(text)![1]!.padEnd(6, '0'));

describeEachDatabase('the real agent protocol', (ctx) => {
  const setUp = async (configuration: string) => {
    const { org, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const { slug } = await givenPipeline(ctx(), org.slug, token, configuration);
    const url = `/v2/organizations/${org.slug}/pipelines/${slug}`;
    return { org, token, reg, slug, url };
  };
  const register = async (reg: string, body: object) => {
    const res = await ctx().http().post('/v3/register').set(agentAuth(reg)).send(body).expect(201);
    await ctx().http().post('/v3/connect').set(agentAuth(res.body.access_token)).expect(200);
    return res.body as { id: string; access_token: string };
  };
  /** A chunk as every agent version sends it: gzip-compressed text/plain, its numbers in the query. */
  const sendChunk = (token: string, jobId: string, sequence: number, offset: number, text: string) =>
    ctx()
      .http()
      .post(`/v3/jobs/${jobId}/chunks?sequence=${sequence}&offset=${offset}&size=${Buffer.byteLength(text)}`)
      .set(agentAuth(token))
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(zlib.gzipSync(Buffer.from(text)));

  it('registers v3.20 and current agents with every field they send, and answers what they run by', async () => {
    const { org, reg } = await setUp('steps:\n  - command: true\n');
    for (const body of [REGISTER_V3_20, REGISTER_CURRENT]) {
      const res = await ctx().http().post('/v3/register').set(agentAuth(reg)).send(body).expect(201);
      expect(res.body).toMatchObject({ name: body.name, meta_data: ['queue=default'], endpoint: 'http://windsock.test/v3' });
      // AgentRegisterResponse's ints: the agent crashes on start without them.
      for (const k of ['ping_interval', 'job_status_interval', 'heartbeat_interval']) expect(Number.isInteger(res.body[k]) && res.body[k] > 0).toBe(true);
      const row = existing(await ctx().services.db('agents').where({ id: res.body.id }).first(), 'the agent');
      expect(row).toMatchObject({ os: OS_RELEASE, pid: 31337, machine_id: REGISTER_V3_20.machine_id, build: body.build, version: body.version });
      expect(Boolean(row?.script_eval_enabled)).toBe(true);
      expect(row?.ignore_in_dispatches).toBeDefined();
      expect(Boolean(row?.ignore_in_dispatches)).toBe(false);
    }
    expect(OS_RELEASE).toHaveLength(267);
    const current = existing(await ctx().services.db('agents').where({ organization_id: org.id, name: 'ci-2' }).first(), 'agent ci-2');
    expect(Number(current.priority)).toBe(5);
    expect(JSON.parse(String(current.features))).toEqual(['redacted-vars', 'git-mirrors']);
  });

  it('answers a bad registration field as the REST API does, never with the validator wording', async () => {
    const { reg } = await setUp('steps:\n  - command: true\n');
    for (const [body, field] of [
      [{ ...REGISTER_V3_20, pid: 'many' }, 'pid'],
      [{ ...REGISTER_V3_20, os: 'x'.repeat(5000) }, 'os'],
      [{ ...REGISTER_V3_20, priority: 'high' }, 'priority'],
      [{ ...REGISTER_V3_20, name: undefined }, 'name'],
    ] as const) {
      const res = await ctx().http().post('/v3/register').set(agentAuth(reg)).send(body);
      expect(res.status).toBe(422);
      expect(res.body.message).toBe('Validation Failed');
      expect(res.body.errors).toEqual([expect.objectContaining({ field })]);
      expect(JSON.stringify(res.body)).not.toMatch(/must NOT have|must have required|additional properties/);
    }
  });

  it('replays a job: ping, accept, start, gzip chunks, header times, step get/update, finish "0"', async () => {
    const s = await setUp('steps:\n  - label: Tests\n    key: tests\n    command: make test\n');
    const build = await givenBuild(ctx(), s.org.slug, s.slug, s.token);
    const agent = await register(s.reg, REGISTER_V3_20);
    const t = agent.access_token;

    const ping = await ctx().http().get('/v3/ping').set(agentAuth(t)).expect(200);
    const job = ping.body.job;
    // What the agent reads of a job (api.Job): without chunks_max_size_bytes it refuses to run it.
    expect(job).toMatchObject({ id: build.jobs[0]!.id, state: 'assigned', endpoint: 'http://windsock.test/v3' });
    expect(job.chunks_max_size_bytes).toBeGreaterThan(0);
    expect(job.env).toMatchObject({
      BUILDKITE_JOB_ID: job.id,
      BUILDKITE_BUILD_ID: build.id,
      BUILDKITE_COMMAND: 'make test',
      BUILDKITE_LABEL: 'Tests',
      BUILDKITE_STEP_KEY: 'tests',
      BUILDKITE_ORGANIZATION_SLUG: s.org.slug,
      BUILDKITE_PIPELINE_SLUG: s.slug,
      BUILDKITE_AGENT_NAME: 'ci-1',
      BUILDKITE_RETRY_COUNT: '0',
    });
    for (const k of ['BUILDKITE_REPO', 'BUILDKITE_COMMIT', 'BUILDKITE_BRANCH', 'BUILDKITE_PIPELINE_PROVIDER', 'BUILDKITE_BUILD_URL', 'BUILDKITE_TIMEOUT'])
      expect(typeof job.env[k]).toBe('string');
    // Offered again until accepted (an answer may be lost), never after.
    expect((await ctx().http().get('/v3/ping').set(agentAuth(t)).expect(200)).body.job.id).toBe(job.id);
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(t)).expect(200);
    expect((await ctx().http().get('/v3/ping').set(agentAuth(t)).expect(200)).body).toEqual({ action: 'idle', job: null });
    const started = await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(t)).send(START).expect(200);
    expect(started.body.state).toBe('running');

    let offset = 0;
    for (const [i, part] of LOG_PARTS.entries()) {
      const res = await sendChunk(t, job.id, i + 1, offset, part).expect(201);
      expect(res.body).toEqual({ sequence: i + 1 });
      offset += Buffer.byteLength(part);
    }
    // A chunk sent again (a retry) is accepted and stored once.
    await sendChunk(t, job.id, 1, 0, LOG_PARTS[0]!).expect(201);
    await ctx().http().post(`/v3/jobs/${job.id}/header_times`).set(agentAuth(t)).send(HEADER_TIMES).expect(204);

    const exported = await ctx().http().post('/v3/steps/tests/export').set(agentAuth(t)).send(stepExport(build.id)).expect(200);
    expect(exported.body).toEqual({ output: 'Tests' });
    await ctx().http().put('/v3/steps/tests').set(agentAuth(t)).send(stepUpdate(build.id)).expect(204);
    const stepId = existing(await ctx().services.db('jobs').where({ id: job.id }).first(), 'the job').step_id;
    expect((await ctx().http().post(`/v3/steps/${stepId}/export`).set(agentAuth(t)).send({ attribute: 'label' }).expect(200)).body.output).toBe(
      'Tests (updated)',
    );
    expect(
      (await ctx().http().post('/v3/steps/tests/export').set(agentAuth(t)).send({ attribute: 'outcome', build_id: build.id }).expect(200)).body.output,
    ).toBe('neutral');
    expect((await ctx().http().post('/v3/steps/nope/export').set(agentAuth(t)).send(stepExport(build.id))).status).toBe(404);
    const badAttribute = await ctx().http().post('/v3/steps/tests/export').set(agentAuth(t)).send({ attribute: 'colour' });
    expect(badAttribute.status).toBe(422);
    expect(badAttribute.body.errors).toEqual([expect.objectContaining({ field: 'attribute' })]);

    const finished = await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(t)).send(FINISH_PASSED).expect(200);
    expect(finished.body).toMatchObject({ state: 'passed', exit_status: 0 });
    expect(existing(await ctx().services.db('jobs').where({ id: job.id }).first(), 'the job').chunks_failed_count).toBe(0);

    const log = await ctx().http().get(`${s.url}/builds/${build.number}/jobs/${job.id}/log`).set(auth(s.token)).expect(200);
    expect(log.body.content).toBe(LOG_PARTS.join(''));
    expect(log.body.size).toBe(Buffer.byteLength(LOG_PARTS.join('')));
    // The agent's own times, in place of the chunks' arrival.
    expect(log.body.header_times).toEqual(Object.values(HEADER_TIMES.header_times).map(nanos));
    const b = (await ctx().http().get(`${s.url}/builds/${build.number}`).set(auth(s.token)).expect(200)).body;
    expect(b.state).toBe('passed');
    expect(b.jobs[0].name).toBe('Tests (updated)');
  });

  it('takes chunks and the finish "-1" of a canceling job, which ends canceled', async () => {
    const s = await setUp('steps:\n  - command: sleep 100\n');
    const build = await givenBuild(ctx(), s.org.slug, s.slug, s.token);
    const agent = await register(s.reg, REGISTER_CURRENT);
    const t = agent.access_token;
    const job = (await ctx().http().get('/v3/ping').set(agentAuth(t)).expect(200)).body.job;
    await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(t)).expect(200);
    await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(t)).send(START).expect(200);
    await sendChunk(t, job.id, 1, 0, 'before\n').expect(201);
    await ctx().http().put(`${s.url}/builds/${build.number}/cancel`).set(auth(s.token)).expect(200);
    expect((await ctx().http().get(`/v3/jobs/${job.id}`).set(agentAuth(t)).expect(200)).body.state).toBe('canceling');
    // The output the command printed before it stopped, flushed after the cancel.
    await sendChunk(t, job.id, 2, 7, 'after the cancel\n').expect(201);
    expect((await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(t)).send(FINISH_CANCELED).expect(200)).body).toMatchObject({
      state: 'canceled',
      exit_status: -1,
    });
    const b = (await ctx().http().get(`${s.url}/builds/${build.number}`).set(auth(s.token)).expect(200)).body;
    expect(b.state).toBe('canceled');
    expect(b.jobs[0]).toMatchObject({ state: 'canceled', exit_status: -1, signal_reason: 'cancel' });
    const log = await ctx().http().get(`${s.url}/builds/${build.number}/jobs/${job.id}/log`).set(auth(s.token)).expect(200);
    expect(log.body.content).toBe('before\nafter the cancel\n');
    expect(existing(await ctx().services.db('jobs').where({ id: job.id }).first(), 'the job').chunks_failed_count).toBe(1);
    // Finished: no more chunks.
    expect((await sendChunk(t, job.id, 3, 24, 'late\n')).status).toBe(422);
  });

  it('refuses a corrupt gzip chunk, one without its numbers, and one too large once inflated', async () => {
    const s = await setUp('steps:\n  - command: true\n');
    await givenBuild(ctx(), s.org.slug, s.slug, s.token);
    const t = (await register(s.reg, REGISTER_V3_20)).access_token;
    const job = await takeNextJob(ctx(), t);
    const corrupt = await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/chunks?sequence=1&offset=0&size=5`)
      .set(agentAuth(t))
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(Buffer.from('not gzip at all'));
    expect(corrupt.status).toBe(400);
    expect(corrupt.body.message).toContain('gzip');
    const numberless = await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/chunks`)
      .set(agentAuth(t))
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(zlib.gzipSync('hello\n'));
    expect(numberless.status).toBe(422);
    expect(numberless.body.errors.map((e: { field: string }) => e.field)).toEqual(['sequence', 'offset']);
    // 2 MiB of zeros compress to a few KiB; the limit counts what they inflate to.
    const bomb = await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/chunks?sequence=1&offset=0&size=2097152`)
      .set(agentAuth(t))
      .set('Content-Type', 'text/plain')
      .set('Content-Encoding', 'gzip')
      .send(zlib.gzipSync(Buffer.alloc(2 * 1024 * 1024, 48)));
    expect(bomb.status).toBe(413);
    // JSON chunks keep working.
    await ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(t)).send({ sequence: 1, offset: 0, content: 'json\n' }).expect(201);
    const badTime = await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/header_times`)
      .set(agentAuth(t))
      .send({ header_times: { '0': 'yesterday' } });
    expect(badTime.status).toBe(422);
    expect(badTime.body.errors).toEqual([expect.objectContaining({ field: 'header_times.0' })]);
  });
});
