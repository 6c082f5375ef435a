/**
 * Issue 31: the compiled service with its artifacts on an S3-compatible store (s3rver on loopback,
 * started here), configured as an operator would, through ARTIFACTS_STORE and ARTIFACTS_S3_*.
 * An agent uploads straight to the bucket with the per-artifact form, and the service is killed
 * with SIGKILL before the agent reports the upload: after the restart the report is checked
 * against the bucket and the content is downloadable through a pre-signed URL. Nothing the
 * service printed holds the store's secret.
 */
import crypto from 'node:crypto';
import { describeEachDatabase } from '../support/context';
import { testS3 } from '../support/s3';
import { freshStore, PIPELINE, startService, stopService, type Service, type Store } from './support';

const SECRET = 'faults-s3-secret-never-printed-0123456789';

async function call(
  base: string,
  authorization: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; body: unknown; location: string | null }> {
  const res = await fetch(base + path, {
    method,
    redirect: 'manual',
    headers: { Authorization: authorization, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await res.text();
  let parsed: unknown = text;
  try {
    parsed = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: res.status, body: parsed, location: res.headers.get('location') };
}

/** The answer's body as the record the test expects it to be (a failed expectation names the answer). */
function ok<T>(res: { status: number; body: unknown }, status: number): T {
  if (res.status !== status) throw new Error(`expected ${status}, got ${res.status}: ${JSON.stringify(res.body)}`);
  return res.body as T; // cast: the status was checked; the test reads the documented fields
}

const s3 = testS3('faults/');
beforeAll(() => s3.start());
afterAll(() => s3.stop());

describeEachDatabase('artifacts on S3 across a crash of the service', null, (_get, kind) => {
  let store: Store;
  let service: Service | undefined;
  beforeAll(async () => {
    store = await freshStore(kind);
  });
  afterAll(async () => {
    await stopService(service);
    await store.drop();
  });

  it('checks an upload made before a SIGKILL when the agent reports it after the restart, and serves it from the bucket', async () => {
    const env = {
      ...store.env,
      ARTIFACTS_STORE: `s3://${s3.settings.bucket}/faults`,
      ARTIFACTS_S3_ENDPOINT: s3.settings.endpoint!,
      ARTIFACTS_S3_REGION: s3.settings.region,
      ARTIFACTS_S3_ACCESS_KEY_ID: s3.settings.accessKeyId,
      // s3rver checks the key id, not the signature: any secret signs, so one that would show in a log.
      ARTIFACTS_S3_SECRET_ACCESS_KEY: SECRET,
    };
    service = await startService(env, { expectToken: true });
    const admin = `Bearer ${service.token!}`;
    const pipeline = ok<{ slug: string }>(await call(service.url, admin, 'POST', '/v2/organizations/default/pipelines', PIPELINE), 201);
    const builds = `/v2/organizations/default/pipelines/${pipeline.slug}/builds`;
    const build = ok<{ number: number }>(await call(service.url, admin, 'POST', builds, { commit: 'HEAD', branch: 'main' }), 201);
    const registration = ok<{ token: string }>(
      await call(service.url, admin, 'POST', '/v2/organizations/default/agent-tokens', { description: 'faults' }),
      201,
    );
    const registered = ok<{ access_token: string }>(
      await call(service.url, `Token ${registration.token}`, 'POST', '/v3/register', {
        name: 'faults',
        hostname: 'faults.local',
        version: '3.0.0',
        os: 'linux',
        arch: 'amd64',
        meta_data: [],
      }),
      201,
    );
    const agent = `Token ${registered.access_token}`;
    ok(await call(service.url, agent, 'POST', '/v3/connect'), 200);
    const job = ok<{ job: { id: string } }>(await call(service.url, agent, 'GET', '/v3/ping'), 200).job;
    ok(await call(service.url, agent, 'PUT', `/v3/jobs/${job.id}/accept`), 200);
    ok(await call(service.url, agent, 'PUT', `/v3/jobs/${job.id}/start`), 200);

    const content = `uploaded before the crash ${crypto.randomUUID()}\n`;
    const hash = (algorithm: string) => crypto.createHash(algorithm).update(content).digest('hex');
    const created = ok<{
      artifact_ids: string[];
      per_artifact_instructions: Record<string, { action: { url: string; path: string; file_input: string }; data: Record<string, string> }>;
    }>(
      await call(service.url, agent, 'POST', `/v3/jobs/${job.id}/artifacts`, {
        id: crypto.randomUUID(),
        artifacts: [
          {
            path: 'out/result.txt',
            absolute_path: '/work/out/result.txt',
            glob_path: 'out/*',
            file_size: Buffer.byteLength(content),
            sha1sum: hash('sha1'),
            sha256sum: hash('sha256'),
          },
        ],
        upload_destination: '',
        multipart_supported: true,
      }),
      201,
    );
    const id = created.artifact_ids[0]!;
    const form = created.per_artifact_instructions[id]!;
    const url = new URL(form.action.url);
    url.pathname = form.action.path;
    const body = new FormData();
    for (const [k, v] of Object.entries(form.data)) body.append(k, v);
    body.append(form.action.file_input, new Blob([content]), 'out/result.txt');
    expect((await fetch(url, { method: 'POST', body })).status).toBe(204);

    service.proc.kill('SIGKILL');
    expect(await service.exited).toEqual({ code: null, signal: 'SIGKILL' });
    const before = service.output();
    service = await startService(env);

    const reported = ok<{ artifacts: { id: string; state: string }[] }>(
      await call(service.url, agent, 'PUT', `/v3/jobs/${job.id}/artifacts`, { artifacts: [{ id, state: 'finished' }] }),
      200,
    );
    expect(reported.artifacts).toEqual([{ id, state: 'finished' }]);
    expect(await s3.exists(`faults/objects/${hash('sha256')}`)).toBe(true);
    expect(await s3.exists(`faults/uploads/${id}`)).toBe(false);

    const download = await call(service.url, admin, 'GET', `${builds}/${build.number}/jobs/${job.id}/artifacts/${id}/download`);
    expect(download.status).toBe(302);
    expect(new URL(download.location!).origin).toBe(s3.settings.endpoint);
    const fetched = await fetch(download.location!);
    expect([fetched.status, await fetched.text()]).toEqual([200, content]);

    expect(before + service.output()).not.toContain(SECRET);
  }, 120_000);
});
