/**
 * The agent's side of artifacts: registering a batch, uploading each content through the signed
 * form, reporting states and searching a build, with everything refused that must be: paths
 * that climb out of a directory, files over the limits (nothing of them left in storage),
 * content that is not what was registered, forged or expired forms, other agents' jobs.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, movableClock } from '../support/agents';
import { batch, givenArtifacts, givenRunningJob, postForm, sha1, sha256, startNextJob } from './helpers';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-artifacts-test-'));
const clock = movableClock();
const MAX_FILE = 1000;
const MAX_JOB = 2500;

/** Every file under the storage directory (staging and content). */
const stored = (root: string): string[] =>
  fs.existsSync(root)
    ? fs
        .readdirSync(root, { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile())
        .map((e) => e.name)
    : [];

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describeEachDatabase(
  'the agent API for artifacts',
  (ctx) => {
    let root: string;
    beforeAll(() => {
      root = dir;
    });
    afterEach(() => clock.reset());

    /** The agent (by its token) registers a batch of these files for its job: the answer (201), with the upload instructions. */
    const createBatch = (agentToken: string, jobId: string, files: Parameters<typeof batch>[0]) =>
      ctx().http().post(`/v3/jobs/${jobId}/artifacts`).set(agentAuth(agentToken)).send(batch(files)).expect(201);

    it('registers a batch in order, takes each upload, marks them finished and finds them', async () => {
      const { agent, job, build } = await givenRunningJob(ctx());
      const files = [
        { path: 'dist/app.tar.gz', content: 'gzip bytes' },
        { path: 'log/test.log', content: 'log line\n', content_type: 'text/x-log' },
        { path: 'README', content: 'readme' },
      ];
      const created = await ctx().http().post(`/v3/jobs/${job.id}/artifacts`).set(agentAuth(agent.token)).send(batch(files, 'batch-1')).expect(201);
      expect(created.body).toMatchObject({ id: 'batch-1', per_artifact_instructions: {} });
      expect(created.body.artifact_ids).toHaveLength(3);
      const instructions = created.body.upload_instructions;
      expect(instructions.action).toEqual({
        url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+$/),
        method: 'POST',
        path: '/artifact-uploads',
        file_input: 'file',
      });
      expect(instructions.data.path).toBe('${artifact:path}');
      // The same batch again (a retried create) answers the same artifacts.
      const again = await ctx().http().post(`/v3/jobs/${job.id}/artifacts`).set(agentAuth(agent.token)).send(batch(files, 'batch-1')).expect(201);
      expect(again.body.artifact_ids).toEqual(created.body.artifact_ids);

      for (const f of files) await postForm(ctx(), instructions, f.path, f.content).expect(204);
      // The same content again is fine (a retried upload).
      await postForm(ctx(), instructions, files[0]!.path, files[0]!.content).expect(204);
      const ids = created.body.artifact_ids as string[];
      const states = await ctx()
        .http()
        .put(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(agent.token))
        .send({
          artifacts: [
            { id: ids[0], state: 'finished' },
            { id: ids[1], state: 'finished' },
            { id: ids[2], state: 'error' },
          ],
        })
        .expect(200);
      expect(states.body.artifacts).toEqual(
        expect.arrayContaining([
          { id: ids[0], state: 'finished' },
          { id: ids[1], state: 'finished' },
          { id: ids[2], state: 'error' },
        ]),
      );

      const search = (query: Record<string, string>) =>
        ctx().http().get(`/v3/builds/${build.id}/artifacts/search`).query(query).set(agentAuth(agent.token)).expect(200);
      const all = await search({ query: '*', state: 'finished' });
      expect(all.body.map((a: { path: string }) => a.path).sort()).toEqual(['dist/app.tar.gz', 'log/test.log']);
      const log = (await search({ query: 'log/*', state: 'finished' })).body;
      expect(log).toEqual([
        {
          id: ids[1],
          job_id: job.id,
          path: 'log/test.log',
          absolute_path: 'log/test.log',
          glob_path: '',
          file_size: 9,
          sha1sum: sha1('log line\n'),
          sha256sum: sha256('log line\n'),
          url: expect.stringMatching(new RegExp(`^http://127\\.0\\.0\\.1:\\d+/artifact-content/${ids[1]}\\?expires=\\d+&signature=[0-9a-f]{64}$`)),
          upload_destination: '',
          created_at: expect.stringMatching(/Z$/),
        },
      ]);
      // The search's URL serves the bytes without a token.
      const content = await ctx()
        .http()
        .get(new URL(log[0].url).pathname + new URL(log[0].url).search)
        .expect(200);
      expect(content.text).toBe('log line\n');
      expect(content.headers['content-type']).toBe('text/x-log');
      // `*` crosses `/`; `?` and `[` are literal; the error one is found only without state=finished.
      expect((await search({ query: 'dist*', state: 'finished' })).body).toHaveLength(1);
      expect((await search({ query: 'dist/app.tar.g?', state: 'finished' })).body).toHaveLength(0);
      expect((await search({ query: 'README' })).body).toHaveLength(1);
      // Reserved characters need no escaping in the query.
      await ctx().http().get(`/v3/builds/${build.id}/artifacts/search?query=a/b:c@d,e;f$g+h!*'()&scope=make`).set(agentAuth(agent.token)).expect(200);
      expect((await search({ query: 'README', state: 'finished' })).body).toHaveLength(0);
      // By step key, label or job id; an unknown step is a 404.
      for (const scope of ['make', job.id]) expect((await search({ query: '*', state: 'finished', scope })).body).toHaveLength(2);
      const unknown = await ctx()
        .http()
        .get(`/v3/builds/${build.id}/artifacts/search`)
        .query({ query: '*', scope: 'nope' })
        .set(agentAuth(agent.token))
        .expect(404);
      expect(unknown.body.message).toBe('No step matching: `nope` found');
    });

    it('takes the leading .. segments the agent sends for a file outside its working directory (artifact upload "../out/*")', async () => {
      const { agent, job, build } = await givenRunningJob(ctx());
      await givenArtifacts(ctx(), agent, job.id, [{ path: '../../out/report.txt', content: 'report' }]);
      const found = await ctx()
        .http()
        .get(`/v3/builds/${build.id}/artifacts/search`)
        .query({ query: '../../out/*', state: 'finished' })
        .set(agentAuth(agent.token))
        .expect(200);
      expect(found.body.map((a: { path: string }) => a.path)).toEqual(['../../out/report.txt']);
    });

    it('refuses paths that are not the clean relative paths the agent makes, with a 422 naming each', async () => {
      const { agent, job, build } = await givenRunningJob(ctx());
      for (const bad of ['..', '../..', 'a/../x', '../a/../../x', '/etc/passwd', 'C:/x', 'a\\b', 'a//b', './a', '../', 'a\u0001b']) {
        const res = await ctx()
          .http()
          .post(`/v3/jobs/${job.id}/artifacts`)
          .set(agentAuth(agent.token))
          .send(
            batch([
              { path: 'fine.txt', content: 'x' },
              { path: bad, content: 'x' },
            ]),
          );
        expect({ bad, status: res.status, field: res.body.errors?.[0]?.field }).toEqual({ bad, status: 422, field: 'artifacts[1].path' });
      }
      const nul = await ctx()
        .http()
        .post(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(agent.token))
        .send(batch([{ path: 'a\u0000b', content: 'x' }]));
      expect(nul.status).toBe(422);
      expect(nul.body.errors[0].field).toBe('artifacts[0].path');
      // Nothing was registered.
      const search = await ctx().http().get(`/v3/builds/${build.id}/artifacts/search`).set(agentAuth(agent.token)).expect(200);
      expect(search.body).toEqual([]);
    });

    it('refuses files over the limits, and an upload over the limit leaves nothing behind', async () => {
      const { agent, job } = await givenRunningJob(ctx());
      const big = await ctx()
        .http()
        .post(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(agent.token))
        .send(batch([{ path: 'big.bin', content: 'x'.repeat(MAX_FILE + 1) }]));
      expect(big.status).toBe(422);
      expect(big.body.errors).toEqual([{ field: 'artifacts[0].file_size', code: `is larger than the limit of ${MAX_FILE} bytes per artifact` }]);
      // The job's total: three files of 900 bytes go over 2,500.
      const nine = 'y'.repeat(900);
      await givenArtifacts(ctx(), agent, job.id, [
        { path: 'one.bin', content: nine },
        { path: 'two.bin', content: nine },
      ]);
      const over = await ctx()
        .http()
        .post(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(agent.token))
        .send(batch([{ path: 'three.bin', content: nine }]));
      expect(over.status).toBe(413);
      expect(over.body.message).toMatch(/over the limit of 2500 bytes \(1800 bytes used\)/);

      // Registered small, uploaded large: 413 and no trace in storage.
      const before = stored(root);
      const { agent: other, job: otherJob } = await givenRunningJob(ctx());
      const created = await createBatch(other.token, otherJob.id, [{ path: 'liar.bin', content: 'small' }]);
      const res = await postForm(ctx(), created.body.upload_instructions, 'liar.bin', 'z'.repeat(MAX_FILE + 500));
      expect(res.status).toBe(413);
      expect(res.body.message).toBe(`The file is larger than the limit of ${MAX_FILE} bytes per artifact`);
      expect(stored(root)).toEqual(before);
      const finish = await ctx()
        .http()
        .put(`/v3/jobs/${otherJob.id}/artifacts`)
        .set(agentAuth(other.token))
        .send({ artifacts: [{ id: created.body.artifact_ids[0], state: 'finished' }] });
      expect(finish.status).toBe(422);
      expect(finish.body.errors).toEqual([{ field: 'artifacts[0].state', code: 'is finished, but no content was uploaded' }]);
    });

    it('refuses content that is not what was registered (size, SHA-1), keeping none of it', async () => {
      const { agent, job, build } = await givenRunningJob(ctx());
      const created = await createBatch(agent.token, job.id, [{ path: 'a.txt', content: 'expected' }]);
      const before = stored(root);
      const wrongSha = await postForm(ctx(), created.body.upload_instructions, 'a.txt', 'EXPECTED');
      expect(wrongSha.status).toBe(422);
      expect(wrongSha.body.errors[0]).toEqual({
        field: 'file',
        code: `has the SHA-1 ${sha1('EXPECTED')}, but the artifact was registered with ${sha1('expected')}`,
      });
      const wrongSize = await postForm(ctx(), created.body.upload_instructions, 'a.txt', 'expected!');
      expect(wrongSize.status).toBe(422);
      expect(wrongSize.body.errors[0].code).toBe('has 9 bytes, but the artifact was registered with 8');
      expect(stored(root)).toEqual(before);
      await ctx()
        .http()
        .put(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(agent.token))
        .send({ artifacts: [{ id: created.body.artifact_ids[0], state: 'finished' }] })
        .expect(422);
      const found = await ctx().http().get(`/v3/builds/${build.id}/artifacts/search`).query({ query: '*', state: 'finished' }).set(agentAuth(agent.token));
      expect(found.body).toEqual([]);
      // The right content is still taken.
      await postForm(ctx(), created.body.upload_instructions, 'a.txt', 'expected').expect(204);
    });

    it('refuses a forged, an expired or an unsigned upload form (403), and a path not in the batch (404)', async () => {
      const { agent, job } = await givenRunningJob(ctx());
      const created = await createBatch(agent.token, job.id, [{ path: 'a.txt', content: 'abc' }]);
      const i = created.body.upload_instructions;
      const forged = await postForm(ctx(), i, 'a.txt', 'abc', { signature: i.data.signature.replace(/^./, (c: string) => (c === '0' ? '1' : '0')) });
      expect({ status: forged.status, body: forged.body }).toEqual({ status: 403, body: { message: 'The signature of this URL is not valid' } });
      const stretched = await postForm(ctx(), i, 'a.txt', 'abc', { expires: String(Number(i.data.expires) + 3600) });
      expect(stretched.status).toBe(403);
      const otherBatch = await postForm(ctx(), i, 'a.txt', 'abc', { batch_id: '00000000-0000-4000-8000-000000000000' });
      expect(otherBatch.status).toBe(403);
      await postForm(ctx(), i, 'b.txt', 'abc').expect(404);
      clock.advance(3601_000);
      const expired = await postForm(ctx(), i, 'a.txt', 'abc');
      expect({ status: expired.status, body: expired.body }).toEqual({ status: 403, body: { message: 'This URL has expired' } });
      const unsigned = await ctx().http().post('/artifact-uploads').field('path', 'a.txt').attach('file', Buffer.from('abc'), 'a.txt');
      expect(unsigned.status).toBe(422);
    });

    it('answers malformed uploads with a 4xx that says why, leaving nothing behind', async () => {
      const { agent, job } = await givenRunningJob(ctx());
      const created = await createBatch(agent.token, job.id, [{ path: 'a.txt', content: 'abc' }]);
      const i = created.body.upload_instructions;
      const before = stored(root);
      const json = await ctx()
        .http()
        .post('/artifact-uploads')
        .send({ ...i.data, path: 'a.txt', file: 'abc' });
      expect(json.status).toBe(415);
      const twoFiles = await postForm(ctx(), i, 'a.txt', 'abc').attach('other', Buffer.from('x'), 'x.txt');
      expect(twoFiles.status).toBe(422);
      expect(twoFiles.body.errors[0].code).toMatch(/only `file` may be one/);
      let noFile = ctx().http().post('/artifact-uploads');
      for (const [k, v] of Object.entries(i.data as Record<string, string>)) noFile = noFile.field(k, v);
      const missing = await noFile;
      expect(missing.status).toBe(422);
      expect(missing.body.errors).toEqual([expect.objectContaining({ field: 'file' })]);
      const truncated = await ctx()
        .http()
        .post('/artifact-uploads')
        .set('Content-Type', 'multipart/form-data; boundary=XYZ')
        .send('--XYZ\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nab');
      expect(truncated.status).toBe(400);
      expect(truncated.body.message).toMatch(/^Malformed multipart body/);
      expect(stored(root)).toEqual(before);
    });

    it("keeps other agents out: another agent's job is a 404, and so is a build it runs no job of", async () => {
      const { agent, job, build, reg } = await givenRunningJob(ctx());
      const stranger = await givenAgent(ctx(), reg, 'stranger');
      const res = await ctx()
        .http()
        .post(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(stranger.token))
        .send(batch([{ path: 'a.txt', content: 'abc' }]));
      expect(res.status).toBe(404);
      await ctx().http().get(`/v3/builds/${build.id}/artifacts/search`).set(agentAuth(stranger.token)).expect(404);
      const [id] = await givenArtifacts(ctx(), agent, job.id, [{ path: 'a.txt', content: 'abc' }]);
      await ctx()
        .http()
        .put(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(stranger.token))
        .send({ artifacts: [{ id, state: 'error' }] })
        .expect(404);
      // Once the job finished, its agent may add no more.
      await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
      await ctx()
        .http()
        .post(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(agent.token))
        .send(batch([{ path: 'late.txt', content: 'abc' }]))
        .expect(404);
    });

    it('answers the newest of each path, hides retried attempts unless asked, and lists every duplicate when asked', async () => {
      const { agent, job, build } = await givenRunningJob(
        ctx(),
        'steps:\n  - label: first\n    key: first\n    command: a\n    retry: { automatic: { exit_status: 7, limit: 1 } }\n  - label: second\n    key: second\n    command: b\n',
      );
      await givenArtifacts(ctx(), agent, job.id, [{ path: 'out.txt', content: 'first attempt' }]);
      await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 7 }).expect(200);
      // The second step, then the retry of the first.
      const jobs: { id: string }[] = [];
      for (let n = 0; n < 2; n++) {
        const next = await startNextJob(ctx(), agent);
        clock.advance(1000);
        await givenArtifacts(ctx(), agent, next.id, [{ path: 'out.txt', content: `run ${n}` }]);
        jobs.push(next);
        if (n === 0) await ctx().http().put(`/v3/jobs/${next.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
      }
      const search = async (query: Record<string, string>) =>
        (await ctx().http().get(`/v3/builds/${build.id}/artifacts/search`).query(query).set(agentAuth(agent.token)).expect(200)).body as {
          job_id: string;
          sha1sum: string;
        }[];
      const newest = await search({ query: 'out.txt', state: 'finished' });
      expect(newest.map((a) => a.sha1sum)).toEqual([sha1('run 1')]);
      const all = await search({ query: 'out.txt', state: 'finished', include_duplicates: 'true' });
      expect(all.map((a) => a.sha1sum)).toEqual([sha1('run 1'), sha1('run 0')]);
      const retried = await search({ query: 'out.txt', state: 'finished', include_duplicates: 'true', include_retried_jobs: 'true' });
      expect(retried.map((a) => a.sha1sum)).toEqual([sha1('run 1'), sha1('run 0'), sha1('first attempt')]);
      expect((await search({ query: 'out.txt', scope: 'second' })).map((a) => a.sha1sum)).toEqual([sha1('run 0')]);
      // The first step's latest attempt (the retry) is the one its key finds.
      expect((await search({ query: 'out.txt', scope: 'first' })).map((a) => a.sha1sum)).toEqual([sha1('run 1')]);
    });
  },
  { artifacts: { dir, maxFileBytes: MAX_FILE, maxJobBytes: MAX_JOB } },
);
