/**
 * Step uploads (issue 30, `step_uploads.md`): each `pipeline upload` a running job sends is
 * recorded, applied or rejected, and the REST API lists a build's uploads newest first by
 * cursor (without definitions, `filter[source_job_id]`) and gets one with its definition
 * rendered as YAML.
 */
import crypto from 'node:crypto';
import { auth, describeEachDatabase, PUBLIC_URL, type TestContext } from '../../support/context';
import { takeNextJob, agentAuth, givenBuildAndAgent, type TestAgent } from '../../support/agents';
import * as stepUploads from '../../../src/db/migrations/20261127091000_step_uploads';

async function take(ctx: TestContext, agent: TestAgent): Promise<string> {
  const job = await takeNextJob(ctx, agent.token);
  return job.id as string;
}

type UploadJson = Record<string, unknown> & { uuid: string; state: string; source_job_id: string };

describeEachDatabase('step uploads', (ctx) => {
  it('records applied and rejected uploads, lists them newest first by cursor, and gets one with its definition', async () => {
    const { token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: buildkite-agent pipeline upload\n  - command: other\n');
    const uploader = await take(ctx(), agent);
    const send = (pipeline: unknown, uuid?: string) =>
      ctx()
        .http()
        .post(`/v3/jobs/${uploader}/pipelines`)
        .set(agentAuth(agent.token))
        .send(uuid ? { pipeline, uuid } : { pipeline });
    const uuid = crypto.randomUUID();
    await send('steps:\n  - command: echo hello\n    key: dynamic-step\n', uuid).expect(201);
    // The agent retrying the same send: nothing new, recorded once.
    await send('steps:\n  - command: echo hello\n    key: dynamic-step\n', uuid).expect(201);
    await send({ steps: [{ command: 'one' }, { command: 'two' }] }).expect(201);
    const bad = await send('steps: 12\n');
    expect(bad.status).toBe(422);

    const list = await ctx().http().get(`${url}/step-uploads`).set(auth(token)).expect(200);
    const items = list.body.items as UploadJson[];
    expect(items.map((u) => [u.state, u.created_jobs_count, u.rejection_type])).toEqual([
      ['rejected', null, 'validation_error'],
      ['applied', 2, null],
      ['applied', 1, null],
    ]);
    expect(items[0]!.message).toEqual(bad.body.message);
    expect(items[2]).toMatchObject({
      source: 'job',
      source_job_id: uploader,
      replace_existing_steps: false,
      url: `${PUBLIC_URL}${url}/step-uploads/${items[2]!.uuid}`,
    });
    expect(items[2]).not.toHaveProperty('definition_yaml');
    expect(list.body.links).toEqual({ self: `${PUBLIC_URL}${url}/step-uploads` });

    const one = await ctx().http().get(`${url}/step-uploads/${items[2]!.uuid}`).set(auth(token)).expect(200);
    expect(one.body).toMatchObject({ ...items[2], definition_yaml_omitted: false });
    expect(one.body.definition_yaml).toBe('steps:\n  - command: echo hello\n    key: dynamic-step\n');
    expect(one.body.definition_bytes).toBe(Buffer.byteLength(JSON.stringify({ steps: [{ command: 'echo hello', key: 'dynamic-step' }] })));

    // Pages of one, followed through links.next, then read back with before.
    const seen: string[] = [];
    let next: string | undefined = `${url}/step-uploads?per_page=1`;
    while (next) {
      const page: { body: { items: UploadJson[]; links: { next?: string } } } = await ctx().http().get(next).set(auth(token)).expect(200);
      seen.push(...page.body.items.map((u) => u.uuid));
      next = page.body.links.next?.slice(PUBLIC_URL.length);
    }
    expect(seen).toEqual(items.map((u) => u.uuid));
    const second = await ctx().http().get(`${url}/step-uploads?per_page=1`).set(auth(token)).expect(200);
    const cursor = new URL(second.body.links.next as string).searchParams.get('after')!;
    const back = await ctx().http().get(`${url}/step-uploads?before=${cursor}`).set(auth(token)).expect(200);
    expect(back.body.items).toEqual([]);

    const own = await ctx().http().get(`${url}/step-uploads?filter[source_job_id]=${uploader}`).set(auth(token)).expect(200);
    expect(own.body.items).toHaveLength(3);
    const none = await ctx().http().get(`${url}/step-uploads?filter[source_job_id]=${crypto.randomUUID()}`).set(auth(token)).expect(200);
    expect(none.body.items).toEqual([]);
  });

  it('records an upload from a job no longer running as rejected, and answers 4xx for bad filters, cursors and ids', async () => {
    const { token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n');
    const job = await take(ctx(), agent);
    await ctx().http().put(`/v3/jobs/${job}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
    const late = await ctx().http().post(`/v3/jobs/${job}/pipelines`).set(agentAuth(agent.token)).send({ pipeline: 'steps:\n  - command: x\n' });
    expect(late.status).toBe(422);
    const list = await ctx().http().get(`${url}/step-uploads`).set(auth(token)).expect(200);
    expect(list.body.items).toMatchObject([
      { state: 'rejected', rejection_type: 'build_not_running_error', created_jobs_count: null, message: late.body.message },
    ]);

    const status = async (path: string) => (await ctx().http().get(path).set(auth(token))).status;
    expect(await status(`${url}/step-uploads?filter[state]=applied`)).toBe(422);
    expect(await status(`${url}/step-uploads?filter[source_job_id]=not-a-job`)).toBe(422);
    expect(await status(`${url}/step-uploads?after=bm9wZQ`)).toBe(400);
    expect(await status(`${url}/step-uploads?after=a&before=b`)).toBe(400);
    expect(await status(`${url}/step-uploads?per_page=101`)).toBe(400);
    const missing = await ctx().http().get(`${url}/step-uploads/${crypto.randomUUID()}`).set(auth(token));
    expect({ status: missing.status, body: missing.body }).toEqual({ status: 404, body: { message: 'No step upload found' } });
    expect(await status(`${url}/step-uploads/not-a-uuid`)).toBe(404);

    const stranger = await ctx().givenAdmin();
    expect((await ctx().http().get(`${url}/step-uploads`).set(auth(stranger.token))).status).toBe(404);
  });

  it("keeps the docs' default quotas: 500 jobs an upload, 500 uploads a build, each refusal recorded", async () => {
    const { token, agent, url, build } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: buildkite-agent pipeline upload\n');
    const uploader = await take(ctx(), agent);
    const send = (pipeline: unknown) => ctx().http().post(`/v3/jobs/${uploader}/pipelines`).set(agentAuth(agent.token)).send({ pipeline });
    const tooMany = await send({ steps: [{ command: 'shard', parallelism: 501 }] }).expect(422);
    expect(tooMany.body.message).toBe("A pipeline upload can't create more than 500 jobs: this one makes 501 (parallelism and matrix steps count each job).");
    await send({ steps: [{ command: 'shard', parallelism: 500 }] }).expect(201);
    // 499 more applied uploads recorded as the service records them, then the 501st is refused.
    const db = ctx().services.db;
    const rows = Array.from({ length: 499 }, (_, i) => ({
      id: crypto.randomUUID(),
      build_id: build.id,
      source_job_id: uploader,
      upload_uuid: null,
      state: 'applied',
      replace_existing_steps: false,
      created_jobs_count: 0,
      rejection_type: null,
      message: null,
      definition: null,
      definition_bytes: 0,
      created_at: new Date(Date.now() + i),
      processed_at: new Date(Date.now() + i),
    }));
    for (let i = 0; i < rows.length; i += 50) await db('step_uploads').insert(rows.slice(i, i + 50));
    const over = await send({ steps: [{ command: 'one more' }] }).expect(422);
    expect(over.body.message).toBe("A build can't have more than 500 pipeline uploads: this one would go over.");
    const latest = (await ctx().http().get(`${url}/step-uploads?per_page=1`).set(auth(token)).expect(200)).body.items[0];
    expect(latest).toMatchObject({ state: 'rejected', rejection_type: 'job_creation_error' });
  });

  it('has a step_uploads migration that goes down and up again with builds in place', async () => {
    const { token, agent, url } = await givenBuildAndAgent(ctx(), 'steps:\n  - command: a\n');
    const job = await take(ctx(), agent);
    const upload = () =>
      ctx()
        .http()
        .post(`/v3/jobs/${job}/pipelines`)
        .set(agentAuth(agent.token))
        .send({ pipeline: { steps: [{ command: 'x' }] } });
    await upload().expect(201);
    const db = ctx().services.db;
    await stepUploads.down(db);
    expect(await db.schema.hasTable('step_uploads')).toBe(false);
    await stepUploads.up(db);
    await upload().expect(201);
    const list = await ctx().http().get(`${url}/step-uploads`).set(auth(token)).expect(200);
    expect(list.body.items).toMatchObject([{ state: 'applied', created_jobs_count: 1 }]);
  });
});
