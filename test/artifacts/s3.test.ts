/**
 * Artifacts on an S3-compatible store (ARTIFACTS_STORE=s3://...), against s3rver started on
 * loopback by this file: the agent uploads each artifact straight to the bucket with the
 * per-artifact pre-signed form, Windsock checks the bytes when the agent reports them finished
 * (size, SHA-1, SHA-256) and keeps them at their content address; downloads (REST, the web
 * pages, the agent's search) are 302s to pre-signed GET URLs carrying the content policy's
 * headers; a delete removes the object. Uploads through Windsock's own form land in the bucket too.
 * The client's requests go through the one transport, to the store's host only.
 */
import crypto from 'node:crypto';
import { auth, describeEachDatabase } from '../support/context';
import { agentAuth } from '../support/agents';
import { testS3 } from '../support/s3';
import { batch, givenRunningJob, postForm, sha1, sha256, type Instructions } from './helpers';
import type { TestContext } from '../support/context';
import { HTML, signedIn } from '../web/support';
import { bucketOrigin, S3ArtifactStorage, storeHostOf } from '../../src/artifacts/s3-storage';
import { OutboundS3Handler } from '../../src/artifacts/s3-transport';
import { Outbound, OutboundRefused } from '../../src/security/outbound';

const s3 = testS3();
beforeAll(() => s3.start());
afterAll(() => s3.stop());

/** Posts the agent's form to where the instructions say (the bucket), as the agent's form uploader does: the fields, then the file last. */
async function postToStore(instructions: Instructions, path: string, content: string | Buffer): Promise<Response> {
  const url = new URL(instructions.action.url);
  url.pathname = instructions.action.path;
  const form = new FormData();
  for (const [k, v] of Object.entries(instructions.data)) form.append(k, v.split('${artifact:path}').join(path));
  form.append(instructions.action.file_input, new Blob([content]), path);
  return fetch(url, { method: instructions.action.method, body: form });
}

describeEachDatabase(
  'artifacts on an S3-compatible store',
  (ctx) => {
    /** A running job, a batch registered for `files` (declared as they are), and the answer. */
    async function registered(c: TestContext, files: { path: string; content: string }[]) {
      const g = await givenRunningJob(c);
      const created = await c.http().post(`/v3/jobs/${g.job.id}/artifacts`).set(agentAuth(g.agent.token)).send(batch(files)).expect(201);
      const ids = created.body.artifact_ids as string[];
      const perArtifact = created.body.per_artifact_instructions as Record<string, Instructions>;
      return { ...g, ids, perArtifact, template: created.body.upload_instructions as Instructions };
    }

    /** One artifact registered and uploaded straight to the bucket with its own form, not reported yet. */
    async function uploadedOne(path: string, content: string) {
      const g = await registered(ctx(), [{ path, content }]);
      expect((await postToStore(g.perArtifact[g.ids[0]!]!, path, content)).status).toBe(204);
      return g;
    }

    const report = (c: TestContext, g: { job: { id: string }; agent: { token: string } }, ids: string[]) =>
      c
        .http()
        .put(`/v3/jobs/${g.job.id}/artifacts`)
        .set(agentAuth(g.agent.token))
        .send({ artifacts: ids.map((id) => ({ id, state: 'finished' })) });

    it('takes uploads straight to the bucket, checks them when reported, and serves them through pre-signed URLs', async () => {
      const unique = crypto.randomUUID();
      const files = [
        { path: 'logs/build.log', content: `built ${unique}\n` },
        { path: 'report.html', content: `<script>alert(1)</script>${unique}` },
      ];
      const g = await registered(ctx(), files);
      // Each artifact's own form, to the bucket's host; the batch's form to Windsock stays as the fallback.
      for (const id of g.ids) {
        const i = g.perArtifact[id]!;
        expect(i.action).toEqual({ url: s3.settings.endpoint, method: 'POST', path: `/${s3.settings.bucket}`, file_input: 'file' });
        expect(i.data.key).toBe(`${s3.settings.prefix}uploads/${id}`);
        expect(i.data.Policy).toEqual(expect.any(String));
      }
      expect(g.template.action.path).toBe('/artifact-uploads');

      for (const [n, f] of files.entries()) expect((await postToStore(g.perArtifact[g.ids[n]!]!, f.path, f.content)).status).toBe(204);
      const done = await report(ctx(), g, g.ids).expect(200);
      expect(done.body.artifacts).toEqual(expect.arrayContaining(g.ids.map((id) => ({ id, state: 'finished' }))));
      expect(done.body.artifacts).toHaveLength(g.ids.length);

      // Kept at the address of the bytes Windsock read; the uploads are gone.
      for (const f of files) expect(await s3.exists(`${s3.settings.prefix}objects/${sha256(f.content)}`)).toBe(true);
      for (const id of g.ids) expect(await s3.exists(`${s3.settings.prefix}uploads/${id}`)).toBe(false);

      const jobUrl = `${g.url}/jobs/${g.job.id}`;
      const list = await ctx().http().get(`${jobUrl}/artifacts`).set(auth(g.token)).expect(200);
      expect(list.body.map((a: { path: string; state: string; sha1sum: string }) => [a.path, a.state, a.sha1sum])).toEqual(
        files.map((f) => [f.path, 'finished', sha1(f.content)]),
      );

      // REST download: a 302 to the bucket, whose answer carries the content policy's type and disposition.
      const download = await ctx().http().get(`${jobUrl}/artifacts/${g.ids[0]}/download`).set(auth(g.token)).expect(302);
      const location = download.headers.location!;
      expect(new URL(location).origin).toBe(s3.settings.endpoint);
      expect(new URL(location).searchParams.get('X-Amz-Expires')).toBe('60');
      expect(download.body).toEqual({ url: location });
      const log = await fetch(location);
      expect(log.status).toBe(200);
      expect(await log.text()).toBe(files[0]!.content);
      expect(log.headers.get('content-type')).toBe('text/plain');
      expect(log.headers.get('content-disposition')).toMatch(/^inline; filename="build.log"/);

      const html = await fetch((await ctx().http().get(`${jobUrl}/artifacts/${g.ids[1]}/download`).set(auth(g.token)).expect(302)).headers.location!);
      expect(html.headers.get('content-type')).toBe('text/html');
      expect(html.headers.get('content-disposition')).toMatch(/^attachment; filename="report.html"/);

      // The agent's search (what `artifact download` fetches) answers pre-signed URLs too.
      const found = await ctx().http().get(`/v3/builds/${g.build.id}/artifacts/search`).query({ query: 'logs/*' }).set(agentAuth(g.agent.token)).expect(200);
      expect(found.body).toHaveLength(1);
      expect(new URL(found.body[0].url).origin).toBe(s3.settings.endpoint);
      expect(await (await fetch(found.body[0].url)).text()).toBe(files[0]!.content);
    });

    it('refuses a report whose uploaded bytes are not the declared ones, and deletes them', async () => {
      const unique = crypto.randomUUID();
      const declared = `declared ${unique}`;
      const g = await registered(ctx(), [
        { path: 'same-size', content: declared },
        { path: 'other-size', content: declared },
      ]);
      const [sameSize, otherSize] = g.ids as [string, string];
      // s3rver does not enforce the form's size condition (S3 would refuse this upload): Windsock's check still does.
      await postToStore(g.perArtifact[sameSize]!, 'same-size', declared.replace('declared', 'DECLARED'));
      await postToStore(g.perArtifact[otherSize]!, 'other-size', `${declared} and more`);

      const wrongHash = await report(ctx(), g, [sameSize]).expect(422);
      expect(wrongHash.body.errors).toEqual([
        {
          field: 'artifacts[0].state',
          code: expect.stringMatching(/^is finished, but the uploaded content has the SHA-1 [0-9a-f]{40}, but the artifact was registered with/),
        },
      ]);
      const wrongSize = await report(ctx(), g, [otherSize]).expect(422);
      expect(wrongSize.body.errors[0].code).toBe(
        `is finished, but the uploaded content has ${Buffer.byteLength(declared) + 9} bytes, but the artifact was registered with ${Buffer.byteLength(declared)}`,
      );
      for (const id of g.ids) expect(await s3.exists(`${s3.settings.prefix}uploads/${id}`)).toBe(false);
      expect(await s3.keys(`objects/${sha256(declared)}`)).toEqual([]);

      // Nothing uploaded (any more) is refused as on the disk store; the right bytes then pass.
      expect((await report(ctx(), g, [sameSize]).expect(422)).body.errors[0].code).toBe('is finished, but no content was uploaded');
      await postToStore(g.perArtifact[sameSize]!, 'same-size', declared);
      await report(ctx(), g, [sameSize]).expect(200);
      expect(await s3.exists(`${s3.settings.prefix}objects/${sha256(declared)}`)).toBe(true);
    });

    it("puts uploads through Windsock's own form in the bucket, and a delete removes the object", async () => {
      const content = `through windsock ${crypto.randomUUID()}`;
      const g = await registered(ctx(), [{ path: 'dist/out.txt', content }]);
      await postForm(ctx(), g.template, 'dist/out.txt', content).expect(204);
      await report(ctx(), g, g.ids).expect(200);
      const key = `${s3.settings.prefix}objects/${sha256(content)}`;
      expect(await s3.exists(key)).toBe(true);

      const jobUrl = `${g.url}/jobs/${g.job.id}`;
      const location = (await ctx().http().get(`${jobUrl}/artifacts/${g.ids[0]}/download`).set(auth(g.token)).expect(302)).headers.location!;
      expect(await (await fetch(location)).text()).toBe(content);

      await ctx().http().delete(`${jobUrl}/artifacts/${g.ids[0]}`).set(auth(g.token)).expect(204);
      expect(await s3.exists(key)).toBe(false);
      expect((await fetch(location)).status).toBe(404);
      await ctx().http().get(`${jobUrl}/artifacts/${g.ids[0]}/download`).set(auth(g.token)).expect(404);
    });

    it("sends the web pages' artifact links to the bucket, and lets the pages show images from it", async () => {
      const content = `shot ${crypto.randomUUID()}`;
      const g = await uploadedOne('shot.png', content);
      await report(ctx(), g, g.ids).expect(200);
      const web = await signedIn(ctx().app, g.token);
      const pagePath = `/${g.org.slug}/${g.slug}/builds/${g.build.number}`;
      const page = await web.get(pagePath).set(HTML).expect(200);
      expect(page.headers['content-security-policy']).toContain(`img-src 'self' data: ${s3.settings.endpoint};`);
      for (const link of [`${pagePath}/jobs/${g.job.id}/artifacts/${g.ids[0]}`, `${pagePath}/artifacts?path=shot.png`]) {
        const redirect = await web.get(link).expect(302);
        expect(new URL(redirect.headers.location!).origin).toBe(s3.settings.endpoint);
        const image = await fetch(redirect.headers.location!);
        expect([image.headers.get('content-type'), image.headers.get('content-disposition')?.split(';')[0], await image.text()]).toEqual([
          'image/png',
          'inline',
          content,
        ]);
      }
    });

    it('takes the same report sent twice at once (an agent retrying while the first still reads) without an error', async () => {
      const content = `twice ${crypto.randomUUID()}`;
      const g = await uploadedOne('twice.txt', content);
      const [a, b] = await Promise.all([report(ctx(), g, g.ids), report(ctx(), g, g.ids)]);
      expect([a.status, b.status]).toEqual([200, 200]);
      expect(await s3.exists(`${s3.settings.prefix}objects/${sha256(content)}`)).toBe(true);
      expect(await s3.exists(`${s3.settings.prefix}uploads/${g.ids[0]}`)).toBe(false);
    });

    it('answers a report whose copy of the upload fails because a report sent at the same time took it', async () => {
      const content = `raced ${crypto.randomUUID()}`;
      const g = await uploadedOne('raced.txt', content);
      const stageDirect = S3ArtifactStorage.prototype.stageDirect;
      let retried: number | undefined;
      const spy = jest.spyOn(S3ArtifactStorage.prototype, 'stageDirect').mockImplementationOnce(async function (this: S3ArtifactStorage, ...args) {
        const staged = await stageDirect.apply(this, args);
        return (
          staged && {
            ...staged,
            commit: async () => {
              // The agent's retry, answered while this report still copies; then the store fails the
              // copy whose source went meanwhile as s3rver does (a 500, not a "no such key").
              retried = (await report(ctx(), g, g.ids)).status;
              throw new Error('We encountered an internal error. Please try again.');
            },
          }
        );
      });
      try {
        expect((await report(ctx(), g, g.ids)).status).toBe(200);
      } finally {
        spy.mockRestore();
      }
      expect(retried).toBe(200);
      expect(await s3.exists(`${s3.settings.prefix}objects/${sha256(content)}`)).toBe(true);
      expect(await s3.exists(`${s3.settings.prefix}uploads/${g.ids[0]}`)).toBe(false);
    });

    it('answers a report whose upload cannot be removed once its content is kept, and says so in the log', async () => {
      const content = `stays ${crypto.randomUUID()}`;
      const g = await uploadedOne('stays.txt', content);
      const remove = jest.spyOn(S3ArtifactStorage.prototype, 'deleteKey' as never).mockRejectedValue(new Error('Service Unavailable') as never);
      const warn = jest.spyOn(ctx().services.artifacts['logger'], 'warn');
      let warned: unknown[][];
      try {
        const done = await report(ctx(), g, g.ids).expect(200);
        expect(done.body.artifacts).toEqual([{ id: g.ids[0], state: 'finished' }]);
      } finally {
        warned = [...warn.mock.calls];
        remove.mockRestore();
        warn.mockRestore();
      }
      expect(warned).toEqual([
        [{ artifact: g.ids[0], reason: 'Service Unavailable' }, "an artifact's direct upload could not be removed after its content was kept"],
      ]);
      expect(await s3.exists(`${s3.settings.prefix}objects/${sha256(content)}`)).toBe(true);
      expect(await s3.exists(`${s3.settings.prefix}uploads/${g.ids[0]}`)).toBe(true);
      // The agent's report again: the artifact is finished, and stays so.
      await report(ctx(), g, g.ids).expect(200);
    });

    it('removes a direct upload only once the artifact records its content, so a report sent meanwhile finds one or the other', async () => {
      const content = `ordered ${crypto.randomUUID()}`;
      const g = await uploadedOne('ordered.txt', content);
      // What the database holds for the artifact at the moment its upload is deleted.
      const seen: unknown[] = [];
      const remove = S3ArtifactStorage.prototype['deleteKey'];
      const spy = jest.spyOn(S3ArtifactStorage.prototype, 'deleteKey' as never).mockImplementation(async function (this: S3ArtifactStorage, key: string) {
        if (key.endsWith(`uploads/${g.ids[0]}`)) seen.push((await ctx().services.db('artifacts').where({ id: g.ids[0] }).first())?.content_sha256);
        return remove.call(this, key);
      } as never);
      try {
        expect((await report(ctx(), g, g.ids)).status).toBe(200);
      } finally {
        spy.mockRestore();
      }
      expect(seen).toEqual([sha256(content)]);
      expect(await s3.exists(`${s3.settings.prefix}uploads/${g.ids[0]}`)).toBe(false);
    });

    it('answers the same per-artifact forms when the agent sends its batch again', async () => {
      const content = `again ${crypto.randomUUID()}`;
      const g = await givenRunningJob(ctx());
      const body = batch([{ path: 'a.txt', content }]);
      const first = await ctx().http().post(`/v3/jobs/${g.job.id}/artifacts`).set(agentAuth(g.agent.token)).send(body).expect(201);
      const again = await ctx().http().post(`/v3/jobs/${g.job.id}/artifacts`).set(agentAuth(g.agent.token)).send(body).expect(201);
      expect(again.body.artifact_ids).toEqual(first.body.artifact_ids);
      const id = first.body.artifact_ids[0] as string;
      expect(again.body.per_artifact_instructions[id].data.key).toBe(`${s3.settings.prefix}uploads/${id}`);
    });
  },
  { artifacts: { s3: s3.settings } },
);

describe("the bucket's origin (what the pages' images may come from)", () => {
  const base = { bucket: 'ci-artifacts', prefix: '', region: 'eu-west-1', accessKeyId: 'a', secretAccessKey: 's' };
  it('is the endpoint with path-style URLs, the bucket under it otherwise, AWS by its region without an endpoint', () => {
    expect(bucketOrigin({ ...base, endpoint: 'http://minio.internal:9000/', forcePathStyle: true })).toBe('http://minio.internal:9000');
    expect(bucketOrigin({ ...base, endpoint: 'https://s3.example.com', forcePathStyle: false })).toBe('https://ci-artifacts.s3.example.com');
    expect(bucketOrigin({ ...base, forcePathStyle: false })).toBe('https://ci-artifacts.s3.eu-west-1.amazonaws.com');
    expect(bucketOrigin({ ...base, forcePathStyle: true })).toBe('https://s3.eu-west-1.amazonaws.com');
    // AWS's other partitions, by the SDK's endpoint rules.
    expect(bucketOrigin({ ...base, region: 'cn-north-1', forcePathStyle: false })).toBe('https://ci-artifacts.s3.cn-north-1.amazonaws.com.cn');
    expect(bucketOrigin({ ...base, region: 'aws-global', forcePathStyle: false })).toBe('https://ci-artifacts.s3.amazonaws.com');
  });
});

describe("the S3 client's transport", () => {
  it('sends only to the store host (and its subdomains), through the guarded transport', async () => {
    const handler = new OutboundS3Handler(new Outbound({ allowPrivate: true, timeoutMs: 1000, maxResponseBytes: 1024 }), '127.0.0.1');
    const elsewhere = handler.handle({ method: 'GET', protocol: 'http:', hostname: '169.254.169.254', path: '/latest/meta-data/', query: {}, headers: {} });
    await expect(elsewhere).rejects.toBeInstanceOf(OutboundRefused);
    await expect(elsewhere).rejects.toThrow("169.254.169.254 is not the artifact store's host (127.0.0.1): refused");
  });

  it('keeps the server-wide refusal of private addresses for a store without an endpoint of its own', async () => {
    // A resolver that answers a private address for the store's name, as a poisoned DNS could.
    const outbound = new Outbound({ allowPrivate: false, timeoutMs: 1000, maxResponseBytes: 1024 }, () =>
      Promise.resolve([{ address: '10.0.0.5', family: 4 }]),
    );
    const handler = new OutboundS3Handler(outbound, storeHostOf({ region: 'eu-west-1', forcePathStyle: false }));
    const resolvedPrivately = handler.handle({
      method: 'GET',
      protocol: 'https:',
      hostname: 'bucket.s3.eu-west-1.amazonaws.com',
      path: '/',
      query: {},
      headers: {},
    });
    await expect(resolvedPrivately).rejects.toMatchObject({ reason: 'unsafe_address' });
  });

  it("sends to AWS's S3 host of the store's region only, not to any name under amazonaws.com", async () => {
    expect(storeHostOf({ region: 'eu-west-1', forcePathStyle: false })).toBe('s3.eu-west-1.amazonaws.com');
    expect(storeHostOf({ region: 'cn-north-1', forcePathStyle: true })).toBe('s3.cn-north-1.amazonaws.com.cn');
    expect(storeHostOf({ endpoint: 'http://minio.internal:9000/', region: 'eu-west-1', forcePathStyle: true })).toBe('minio.internal');
    const handler = new OutboundS3Handler(new Outbound({ allowPrivate: false, timeoutMs: 1000, maxResponseBytes: 1024 }), 's3.eu-west-1.amazonaws.com');
    // A customer's EC2 instance and another region's S3 are both under amazonaws.com.
    for (const hostname of ['ec2-203-0-113-7.eu-west-1.compute.amazonaws.com', 'bucket.s3.us-east-1.amazonaws.com', 'amazonaws.com']) {
      await expect(handler.handle({ method: 'GET', protocol: 'https:', hostname, path: '/', query: {}, headers: {} })).rejects.toThrow(
        `${hostname} is not the artifact store's host (s3.eu-west-1.amazonaws.com): refused`,
      );
    }
  });
});

const down = testS3('down/');
beforeAll(() => down.start());
afterAll(() => down.stop());

describeEachDatabase(
  'artifacts on an S3-compatible store that goes down',
  (ctx) => {
    it("answers the agent's report and a delete with 503s to retry, changing nothing, while the store cannot be reached", async () => {
      const unique = crypto.randomUUID();
      const files = [
        { path: 'a.txt', content: `down a ${unique}` },
        { path: 'b.txt', content: `down b ${unique}` },
      ];
      const g = await givenRunningJob(ctx());
      const created = await ctx().http().post(`/v3/jobs/${g.job.id}/artifacts`).set(agentAuth(g.agent.token)).send(batch(files)).expect(201);
      const [a, b] = created.body.artifact_ids as [string, string];
      for (const [i, f] of files.entries()) {
        const id = created.body.artifact_ids[i] as string;
        expect((await postToStore(created.body.per_artifact_instructions[id], f.path, f.content)).status).toBe(204);
      }
      const report = (id: string) =>
        ctx()
          .http()
          .put(`/v3/jobs/${g.job.id}/artifacts`)
          .set(agentAuth(g.agent.token))
          .send({ artifacts: [{ id, state: 'finished' }] });
      await report(b).expect(200);

      await down.pause();
      const res = await report(a).expect(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body.message).toMatch(
        /^The artifact store cannot be reached right now \(the request to 127\.0\.0\.1 failed \(ECONNREFUSED\)\), please retry$/,
      );
      expect(res.body.message).not.toContain(down.settings.secretAccessKey);
      const jobUrl = `${g.url}/jobs/${g.job.id}`;
      await ctx().http().delete(`${jobUrl}/artifacts/${b}`).set(auth(g.token)).expect(503);
      const listed = await ctx().http().get(`${jobUrl}/artifacts`).set(auth(g.token)).expect(200);
      expect(listed.body.map((x: { id: string; state: string }) => [x.id, x.state])).toEqual([
        [a, 'new'],
        [b, 'finished'],
      ]);

      // Back up (on a new port) for the next database's context.
      await down.start();
    });
  },
  { artifacts: { s3: down.settings } },
);
