/** Artifacts for tests: a job an agent is running, and an artifact registered, uploaded and reported through the agent API. */
import crypto from 'node:crypto';
import type { TestContext } from '../support/context';
import { takeNextJob, agentAuth, givenBuildAndAgent, type TestAgent } from '../support/agents';

export const sha1 = (b: string | Buffer) => crypto.createHash('sha1').update(b).digest('hex');
export const sha256 = (b: string | Buffer) => crypto.createHash('sha256').update(b).digest('hex');

/** A build of a one-step pipeline (or `configuration`) whose first job the agent is running. */
export async function givenRunningJob(ctx: TestContext, configuration = 'steps:\n  - label: make\n    key: make\n    command: make\n') {
  const given = await givenBuildAndAgent(ctx, configuration);
  const job = await startNextJob(ctx, given.agent);
  return { ...given, job };
}

export async function startNextJob(ctx: TestContext, agent: TestAgent): Promise<{ id: string }> {
  const job = await takeNextJob(ctx, agent.token);
  return job;
}

/** The body the agent sends to register these files. */
export function batch(files: { path: string; content: string | Buffer; content_type?: string }[], id: string = crypto.randomUUID()) {
  return {
    id,
    artifacts: files.map((f) => ({
      id: '',
      path: f.path,
      absolute_path: `/work/${f.path}`,
      glob_path: '',
      file_size: Buffer.byteLength(f.content),
      sha1sum: sha1(f.content),
      sha256sum: sha256(f.content),
      job_id: '',
      created_at: '0001-01-01T00:00:00Z',
      ...(f.content_type ? { content_type: f.content_type } : {}),
    })),
    upload_destination: '',
    multipart_supported: true,
  };
}

export interface Instructions {
  action: { url: string; method: string; path: string; file_input: string };
  data: Record<string, string>;
}

/** Posts the upload form as the agent builds it from the instructions. */
export function postForm(ctx: TestContext, instructions: Instructions, path: string, content: string | Buffer, data: Record<string, string> = {}) {
  let req = ctx.http().post(instructions.action.path);
  for (const [k, v] of Object.entries({ ...instructions.data, ...data })) req = req.field(k, v.split('${artifact:path}').join(path));
  return req.attach(instructions.action.file_input, Buffer.from(content), path);
}

/** Registers, uploads and reports `finished` each file; answers the artifact ids. */
export async function givenArtifacts(
  ctx: TestContext,
  agent: TestAgent,
  jobId: string,
  files: { path: string; content: string | Buffer; content_type?: string }[],
) {
  const created = await ctx.http().post(`/v3/jobs/${jobId}/artifacts`).set(agentAuth(agent.token)).send(batch(files)).expect(201);
  for (const f of files) await postForm(ctx, created.body.upload_instructions, f.path, f.content).expect(204);
  const ids = created.body.artifact_ids as string[];
  await ctx
    .http()
    .put(`/v3/jobs/${jobId}/artifacts`)
    .set(agentAuth(agent.token))
    .send({ artifacts: ids.map((id) => ({ id, state: 'finished' })) })
    .expect(200);
  return ids;
}
