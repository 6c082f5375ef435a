/**
 * The REST side of artifacts: lists by build and by job (paginated, deleted ones left out), get,
 * download (a 302 to a 60-second signed URL on Windsock that serves the bytes, ranges included,
 * and refuses expired or altered URLs), delete (record kept as `deleted`, content gone), scopes
 * and tenancy.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { givenAgent, givenRegistrationToken, movableClock } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { givenArtifacts, givenRunningJob, sha1, startNextJob } from './helpers';
import { SCOPES } from '../../src/core/identity';
import { existing } from '../support/rows';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-artifacts-rest-'));
const clock = movableClock();
const objects = () => (fs.existsSync(path.join(dir, 'objects')) ? fs.readdirSync(path.join(dir, 'objects'), { recursive: true }).length : 0);

afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

describeEachDatabase(
  'the REST API for artifacts',
  (ctx) => {
    afterEach(() => clock.reset());

    async function given() {
      const g = await givenRunningJob(ctx());
      // Content is stored once per distinct bytes: each test's own, so deletes are its own.
      const unique = crypto.randomUUID();
      const content = `The quick brown fox jumps over the lazy dog ${unique}`;
      const small = `a ${unique}`;
      const ids = await givenArtifacts(ctx(), g.agent, g.job.id, [
        { path: 'dist/app.tar.gz', content },
        { path: 'report.html', content: `<p>${unique}</p>` },
        { path: 'coverage/a', content: small },
      ]);
      const jobUrl = `${g.url}/jobs/${g.job.id}`;
      return { ...g, ids, content, small, jobUrl };
    }

    it("lists a build's and a job's artifacts in the documented shape, paginated", async () => {
      const { token, url, jobUrl, ids, job, content } = await given();
      const list = await ctx().http().get(`${url}/artifacts`).set(auth(token)).expect(200);
      expect(list.body[0]).toEqual({
        id: ids[0],
        job_id: job.id,
        url: `${PUBLIC_URL}${jobUrl}/artifacts/${ids[0]}`,
        download_url: `${PUBLIC_URL}${jobUrl}/artifacts/${ids[0]}/download`,
        state: 'finished',
        path: 'dist/app.tar.gz',
        dirname: 'dist',
        filename: 'app.tar.gz',
        mime_type: 'application/gzip',
        file_size: content.length,
        glob_path: null,
        original_path: null,
        sha1sum: sha1(content),
      });
      expect(list.body.map((a: { path: string }) => a.path)).toEqual(['dist/app.tar.gz', 'report.html', 'coverage/a']);
      expect(list.body[1]).toMatchObject({ dirname: '.', filename: 'report.html', mime_type: 'text/html' });
      expect(list.body[2]).toMatchObject({ mime_type: 'binary/octet-stream' });
      const page = await ctx().http().get(`${jobUrl}/artifacts?per_page=2`).set(auth(token)).expect(200);
      expect(page.body.map((a: { id: string }) => a.id)).toEqual(ids.slice(0, 2));
      expect(page.headers.link).toContain('rel="next"');
      expect(page.headers.link).toContain('page=2');
      const second = await ctx().http().get(`${jobUrl}/artifacts?per_page=2&page=2`).set(auth(token)).expect(200);
      expect(second.body.map((a: { id: string }) => a.id)).toEqual([ids[2]]);
      const got = await ctx().http().get(`${jobUrl}/artifacts/${ids[1]}`).set(auth(token)).expect(200);
      expect(got.body).toEqual(list.body[1]);
    });

    it('filters the lists by state and by path, exact or with `*`; an unknown state is a 422', async () => {
      const { token, url, jobUrl, job } = await given();
      const paths = async (list: string, q: string) =>
        (await ctx().http().get(`${list}/artifacts?${q}`).set(auth(token)).expect(200)).body.map((a: { path: string }) => a.path);
      const byId = `/v2/organizations/${url.split('/')[3]}/jobs/${job.id}`;
      for (const list of [url, jobUrl, byId]) {
        expect(await paths(list, 'path=report.html')).toEqual(['report.html']);
        expect(await paths(list, 'path=dist/*')).toEqual(['dist/app.tar.gz']);
        expect(await paths(list, 'path=*a*')).toEqual(['dist/app.tar.gz', 'coverage/a']);
        expect(await paths(list, 'path=REPORT.html')).toEqual([]);
        expect(await paths(list, 'state=finished&path=*.html')).toEqual(['report.html']);
        expect(await paths(list, 'state=error')).toEqual([]);
        const refused = await ctx().http().get(`${list}/artifacts?state=bogus`).set(auth(token)).expect(422);
        expect(refused.body.errors).toEqual([{ field: 'state', code: 'is not one of new, error, finished, deleted, expired' }]);
        // Any other value is the same 422 (the docs), not a malformed request: capitals, a dash, nothing.
        for (const state of ['FINISHED', 'in-progress', '']) await ctx().http().get(`${list}/artifacts?state=${state}`).set(auth(token)).expect(422);
      }
    });

    it('downloads through a 60-second signed URL: bytes, type, length and ranges; expired or altered URLs are refused', async () => {
      const { token, jobUrl, ids, content } = await given();
      const res = await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}/download`).set(auth(token)).expect(302);
      expect(res.body).toEqual({ url: res.headers.location });
      const location = new URL(res.headers.location!);
      expect(location.origin).toBe(PUBLIC_URL);
      expect(location.pathname).toBe(`/artifact-content/${ids[0]}`);
      const target = location.pathname + location.search;
      const whole = await ctx().http().get(target).expect(200);
      expect(whole.headers['content-type']).toBe('application/gzip');
      expect(whole.headers['content-length']).toBe(String(content.length));
      expect(whole.headers['accept-ranges']).toBe('bytes');
      expect(Buffer.from(whole.body as Buffer).toString()).toBe(content);
      const range = await ctx().http().get(target).set('Range', 'bytes=4-8').expect(206);
      expect(range.headers['content-range']).toBe(`bytes 4-8/${content.length}`);
      expect(Buffer.from(range.body as Buffer).toString()).toBe('quick');
      const outside = await ctx()
        .http()
        .get(target)
        .set('Range', `bytes=${content.length + 10}-`)
        .expect(416);
      expect(outside.body.message).toBeDefined();
      // No token needed, and none helps: the signature is the credential.
      const params = location.searchParams;
      const sig = params.get('signature')!;
      const altered = sig.slice(0, -1) + (sig.endsWith('0') ? '1' : '0');
      const forged = await ctx()
        .http()
        .get(`/artifact-content/${ids[0]}?expires=${params.get('expires')}&signature=${altered}`)
        .set(auth(token));
      expect({ status: forged.status, body: forged.body }).toEqual({ status: 403, body: { message: 'The signature of this URL is not valid' } });
      await ctx().http().get(`/artifact-content/${ids[1]}${location.search}`).expect(403);
      await ctx()
        .http()
        .get(`/artifact-content/${ids[0]}?expires=${Number(params.get('expires')) + 600}&signature=${sig}`)
        .expect(403);
      await ctx().http().get(`/artifact-content/${ids[0]}?expires=1`).expect(400);
      clock.advance(61_000);
      const expired = await ctx().http().get(target);
      expect({ status: expired.status, body: expired.body }).toEqual({ status: 403, body: { message: 'This URL has expired' } });
    });

    it('does not download what was never uploaded', async () => {
      const { agent, job, token, jobUrl } = await given();
      const created = await ctx()
        .http()
        .post(`/v3/jobs/${job.id}/artifacts`)
        .set({ Authorization: `Token ${agent.token}` })
        .send({ artifacts: [{ path: 'pending.txt', file_size: 1, sha1sum: sha1('x') }] })
        .expect(201);
      const id = created.body.artifact_ids[0];
      const got = await ctx().http().get(`${jobUrl}/artifacts/${id}`).set(auth(token)).expect(200);
      expect(got.body).toMatchObject({ state: 'new', mime_type: 'text/plain' });
      await ctx().http().get(`${jobUrl}/artifacts/${id}/download`).set(auth(token)).expect(404);
    });

    it('deletes: 204, the content goes (unless another artifact holds the same bytes), the record is hidden from then on', async () => {
      const { token, url, jobUrl, ids, agent, job, build, small } = await given();
      // Another artifact with the same bytes as ids[2] keeps them stored.
      const [twin] = await givenArtifacts(ctx(), agent, job.id, [{ path: 'coverage/b', content: small }]);
      const signed = new URL((await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}/download`).set(auth(token)).expect(302)).headers.location!);
      const before = objects();
      await ctx().http().delete(`${jobUrl}/artifacts/${ids[0]}`).set(auth(token)).expect(204);
      expect(objects()).toBe(before - 1);
      await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}`).set(auth(token)).expect(404);
      await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}/download`).set(auth(token)).expect(404);
      await ctx()
        .http()
        .get(signed.pathname + signed.search)
        .expect(404);
      await ctx().http().delete(`${jobUrl}/artifacts/${ids[0]}`).set(auth(token)).expect(404);
      const list = await ctx().http().get(`${url}/artifacts`).set(auth(token)).expect(200);
      expect(list.body.map((a: { id: string }) => a.id)).toEqual([ids[1], ids[2], twin]);
      const row = existing(await ctx().services.db('artifacts').where({ id: ids[0] }).first(), 'the artifact');
      expect(row.state).toBe('deleted');
      await ctx().http().delete(`${jobUrl}/artifacts/${ids[2]}`).set(auth(token)).expect(204);
      expect(objects()).toBe(before - 1);
      const twinUrl = new URL((await ctx().http().get(`${jobUrl}/artifacts/${twin}/download`).set(auth(token)).expect(302)).headers.location!);
      expect(
        (
          await ctx()
            .http()
            .get(twinUrl.pathname + twinUrl.search)
            .expect(200)
        ).text,
      ).toBe(small);
      // The agent's search no longer finds it either.
      const found = await ctx()
        .http()
        .get(`/v3/builds/${build.id}/artifacts/search`)
        .query({ query: '*' })
        .set({ Authorization: `Token ${agent.token}` })
        .expect(200);
      expect(found.body.map((a: { path: string }) => a.path).sort()).toEqual(['coverage/b', 'report.html']);
    });

    it('lets a member whose team may only read the pipeline read its artifacts, not delete them', async () => {
      const { org, user, token } = await ctx().givenAdmin({ teamsEnabled: true });
      const member = await ctx().givenUser(org, 'member');
      const team = await ctx().givenTeam(org, [user, member]);
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const { slug } = await givenPipeline(ctx(), org.slug, token, {
        configuration: 'steps:\n  - command: make\n',
        teams: [{ id: team.id, access_level: 'read_only' }],
      });
      const build = await givenBuild(ctx(), org.slug, slug, token);
      const agent = await givenAgent(ctx(), reg, 'reader');
      const job = await startNextJob(ctx(), agent);
      const [id] = await givenArtifacts(ctx(), agent, job.id, [{ path: 'a.txt', content: crypto.randomUUID() }]);
      const memberToken = await ctx().givenToken(member, [org]);
      const artifactUrl = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}/jobs/${job.id}/artifacts/${id}`;
      await ctx().http().get(artifactUrl).set(auth(memberToken)).expect(200);
      const refused = await ctx().http().delete(artifactUrl).set(auth(memberToken)).expect(403);
      expect(refused.body).toEqual({ message: 'Forbidden' });
      await ctx().http().get(artifactUrl).set(auth(memberToken)).expect(200);
    });

    it('answers the same by job id only, under the organization', async () => {
      const { token, org, url, jobUrl, ids, job, content } = await given();
      const base = `/v2/organizations/${org.slug}/jobs/${job.id}/artifacts`;
      const list = await ctx().http().get(`${base}?per_page=2`).set(auth(token)).expect(200);
      expect(list.body).toEqual((await ctx().http().get(`${jobUrl}/artifacts?per_page=2`).set(auth(token)).expect(200)).body);
      expect(list.headers.link).toContain(`<${PUBLIC_URL}${base}?per_page=2&page=2>; rel="next"`);
      expect((await ctx().http().get(`${base}/${ids[0]}`).set(auth(token)).expect(200)).body.url).toBe(`${PUBLIC_URL}${jobUrl}/artifacts/${ids[0]}`);
      const download = await ctx().http().get(`${base}/${ids[0]}/download`).set(auth(token)).expect(302);
      const location = new URL(download.headers.location!);
      const bytes = await ctx()
        .http()
        .get(location.pathname + location.search)
        .expect(200);
      expect(Buffer.from(bytes.body as Buffer).toString()).toBe(content);
      await ctx().http().delete(`${base}/${ids[1]}`).set(auth(token)).expect(204);
      expect((await ctx().http().get(`${url}/artifacts`).set(auth(token)).expect(200)).body.map((a: { id: string }) => a.id)).toEqual([ids[0], ids[2]]);
      // Another organization's token, or this job under another organization's slug: 404.
      const other = await ctx().givenAdmin();
      await ctx().http().get(base).set(auth(other.token)).expect(404);
      const theirBase = `/v2/organizations/${other.org.slug}/jobs/${job.id}/artifacts`;
      const missing = await ctx().http().get(theirBase).set(auth(other.token)).expect(404);
      expect(missing.body).toEqual({ message: 'No job found' });
      await ctx().http().get(`${theirBase}/${ids[0]}`).set(auth(other.token)).expect(404);
      await ctx().http().delete(`${theirBase}/${ids[0]}`).set(auth(other.token)).expect(404);
      await ctx().http().get(`${base}/${ids[0]}`).set(auth(token)).expect(200);
    });

    it('needs read_artifacts to read and write_artifacts to delete; another organization sees nothing', async () => {
      const { token, url, jobUrl, ids, user, org } = await given();
      const without = async (scope: string) =>
        ctx().givenToken(
          user,
          [org],
          SCOPES.filter((s) => s !== scope),
        );
      const noRead = await without('read_artifacts');
      for (const p of [`${url}/artifacts`, `${jobUrl}/artifacts`, `${jobUrl}/artifacts/${ids[0]}`, `${jobUrl}/artifacts/${ids[0]}/download`]) {
        const res = await ctx().http().get(p).set(auth(noRead));
        expect({ p, status: res.status, body: res.body }).toEqual({
          p,
          status: 403,
          body: { message: "Your access token doesn't have the read_artifacts scope" },
        });
      }
      const noWrite = await without('write_artifacts');
      await ctx().http().delete(`${jobUrl}/artifacts/${ids[0]}`).set(auth(noWrite)).expect(403);
      await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}`).set(auth(token)).expect(200);

      const other = await ctx().givenAdmin();
      for (const p of [`${url}/artifacts`, `${jobUrl}/artifacts/${ids[0]}`]) await ctx().http().get(p).set(auth(other.token)).expect(404);
      // Another organization's own build path with this organization's artifact id: 404 too.
      const theirs = await given();
      const mixed = `${theirs.jobUrl}/artifacts/${ids[0]}`;
      await ctx().http().get(mixed).set(auth(theirs.token)).expect(404);
      await ctx().http().delete(mixed).set(auth(theirs.token)).expect(404);
      await ctx().http().get(`${jobUrl}/artifacts/${ids[0]}`).set(auth(token)).expect(200);
    });
  },
  { artifacts: { dir } },
);
