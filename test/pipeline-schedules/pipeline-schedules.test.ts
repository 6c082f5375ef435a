/**
 * Pipeline schedules: the REST operations (shape of the docs' samples, defaults, validation,
 * permissions) and the scheduler on a driven clock: a due schedule creates exactly one build at
 * its minute (`source: schedule`, its creator the schedule's), two server processes on one
 * database make one build per due minute, a restart after downtime catches up once.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { clock } from '../../src/core/clock';
import { auth, createTestContext, createTwoContexts, databases, type TestContext } from '../support/context';
import { givenPipeline } from '../support/given';
import sampleCreated from '../fixtures/samples/pipeline_schedules__03_create-a-pipeline-schedule.json';

const T0 = new Date('2030-01-01T00:03:00.000Z');

/** The service's one clock (src/core/clock.ts), stopped at `at` until moved again. */
const freeze = (at: Date) => clock.set({ kind: 'frozen', at });

describe.each(databases)('pipeline schedules [%s]', (kind) => {
  let ctx: TestContext;
  const at = (iso: string) => freeze(new Date(iso));
  beforeAll(async () => {
    ctx = await createTestContext(kind);
  });
  afterAll(async () => {
    clock.set({ kind: 'real' });
    await ctx?.close();
  });
  beforeEach(() => {
    freeze(T0);
  });

  const schedulesPath = (org: { slug: string }, p: { slug: string }) => `/v2/organizations/${org.slug}/pipelines/${p.slug}/schedules`;
  const buildsOf = async (org: { slug: string }, p: { slug: string }, token: string) =>
    (await ctx.http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds`).set(auth(token)).expect(200)).body as Record<string, unknown>[];

  async function given(body: Record<string, unknown> = { cronline: '*/10 * * * *' }, pipelineFields: Record<string, unknown> = {}) {
    const { org, user, token } = await ctx.givenAdmin();
    const p = await givenPipeline(ctx, org, token, pipelineFields);
    const res = await ctx.http().post(schedulesPath(org, p)).set(auth(token)).send(body);
    expect(res.status).toBe(201);
    return { org, user, token, p, schedule: res.body as Record<string, unknown> & { id: string } };
  }

  describe('CRUD', () => {
    it('creates a schedule with the representation of the docs, defaults filled in', async () => {
      const { org, user, p, schedule } = await given({
        cronline: '@daily',
        label: 'Nightly build',
        message: 'Nightly scheduled build',
        env: { DEPLOY_ENV: 'staging' },
      });
      expect(Object.keys(schedule)).toEqual(Object.keys(sampleCreated));
      expect(schedule).toMatchObject({
        label: 'Nightly build',
        cronline: '@daily',
        message: 'Nightly scheduled build',
        commit: 'HEAD',
        branch: 'main',
        env: { DEPLOY_ENV: 'staging' },
        enabled: true,
        next_build_at: '2030-01-02T00:00:00.000Z',
        failed_message: null,
        failed_at: null,
        created_at: T0.toISOString(),
        created_by: { id: user.id, name: user.name, email: user.email },
        pipeline: { id: p.id, slug: p.slug, url: `http://windsock.test/v2/organizations/${org.slug}/pipelines/${p.slug}` },
      });
      expect(schedule.url).toBe(`http://windsock.test/v2/organizations/${org.slug}/pipelines/${p.slug}/schedules/${schedule.id}`);
      expect(Buffer.from(schedule.graphql_id as string, 'base64').toString()).toBe(`PipelineSchedule---${schedule.id}`);
    });

    it("defaults the branch to the pipeline's default branch", async () => {
      const { schedule } = await given({ cronline: '@hourly' }, { default_branch: 'develop' });
      expect(schedule.branch).toBe('develop');
    });

    it('lists newest first with Link pagination, gets, updates and deletes', async () => {
      const { org, token, p, schedule: first } = await given({ cronline: '@hourly', label: 'one' });
      freeze(new Date(T0.getTime() + 1000));
      const second = (await ctx.http().post(schedulesPath(org, p)).set(auth(token)).send({ cronline: '@daily', label: 'two' }).expect(201)).body;
      const page1 = await ctx
        .http()
        .get(`${schedulesPath(org, p)}?per_page=1`)
        .set(auth(token))
        .expect(200);
      expect(page1.body.map((s: { label: string }) => s.label)).toEqual(['two']);
      expect(page1.headers.link).toContain('rel="next"');
      const all = await ctx.http().get(schedulesPath(org, p)).set(auth(token)).expect(200);
      expect(all.body.map((s: { id: string }) => s.id)).toEqual([second.id, first.id]);

      const got = await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${first.id}`)
        .set(auth(token))
        .expect(200);
      expect(got.body).toEqual(first);

      // The docs' update example: a new cronline, disabled.
      const disabled = await ctx
        .http()
        .put(`${schedulesPath(org, p)}/${first.id}`)
        .set(auth(token))
        .send({ cronline: '@daily', enabled: false })
        .expect(200);
      expect(disabled.body).toMatchObject({ cronline: '@daily', enabled: false, next_build_at: null, label: 'one' });
      freeze(new Date('2030-01-05T10:30:00.000Z'));
      const enabled = await ctx
        .http()
        .put(`${schedulesPath(org, p)}/${first.id}`)
        .set(auth(token))
        .send({ enabled: true, label: 'renamed' })
        .expect(200);
      expect(enabled.body).toMatchObject({ enabled: true, next_build_at: '2030-01-06T00:00:00.000Z', label: 'renamed' });
      const moved = await ctx
        .http()
        .put(`${schedulesPath(org, p)}/${first.id}`)
        .set(auth(token))
        .send({ cronline: '45 * * * *' })
        .expect(200);
      expect(moved.body.next_build_at).toBe('2030-01-05T10:45:00.000Z');

      await ctx
        .http()
        .delete(`${schedulesPath(org, p)}/${first.id}`)
        .set(auth(token))
        .expect(204);
      await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${first.id}`)
        .set(auth(token))
        .expect(404);
      await ctx
        .http()
        .delete(`${schedulesPath(org, p)}/${first.id}`)
        .set(auth(token))
        .expect(404);
    });

    it.each([['every day'], ['0 ~ * * *'], ['61 * * * *'], ['0 0 * * * Mars/Olympus'], ['0 0 31 2 *']])(
      'refuses the cronline %j with a 422 naming cronline',
      async (cronline) => {
        const { org, token, p, schedule } = await given();
        const created = await ctx.http().post(schedulesPath(org, p)).set(auth(token)).send({ cronline });
        expect(created.status).toBe(422);
        expect(created.body.message).toMatch(/^Validation failed: Cronline /);
        expect(created.body.errors).toEqual([expect.objectContaining({ field: 'cronline' })]);
        const updated = await ctx
          .http()
          .put(`${schedulesPath(org, p)}/${schedule.id}`)
          .set(auth(token))
          .send({ cronline });
        expect(updated.status).toBe(422);
        expect(updated.body.errors).toEqual([expect.objectContaining({ field: 'cronline' })]);
      },
    );

    it('refuses a create without a cronline and bad env names (422), never a 500', async () => {
      const { org, token, p } = await given();
      const missing = await ctx.http().post(schedulesPath(org, p)).set(auth(token)).send({ label: 'x' });
      expect(missing.status).toBe(422);
      expect(JSON.stringify(missing.body.errors)).toContain('cronline');
      const env = await ctx
        .http()
        .post(schedulesPath(org, p))
        .set(auth(token))
        .send({ cronline: '@daily', env: { 'not a name': 'x' } });
      expect(env.status).toBe(422);
    });

    it("follows the pipeline's permissions: a read-only team reads, only editors write; other pipelines' schedules are 404", async () => {
      const { org, token: adminToken } = await ctx.givenAdmin({ teamsEnabled: true });
      const reader = await ctx.givenUser(org, 'member');
      const team = await ctx.givenTeam(org, [reader]);
      const p = await givenPipeline(ctx, org, adminToken, { teams: [{ id: team.id, access_level: 'read_only' }] });
      const hidden = await givenPipeline(ctx, org, adminToken);
      const s = (await ctx.http().post(schedulesPath(org, p)).set(auth(adminToken)).send({ cronline: '@daily' }).expect(201)).body;
      const h = (await ctx.http().post(schedulesPath(org, hidden)).set(auth(adminToken)).send({ cronline: '@daily' }).expect(201)).body;
      const readerToken = await ctx.givenToken(reader, [org]);
      await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${s.id}`)
        .set(auth(readerToken))
        .expect(200);
      await ctx.http().post(schedulesPath(org, p)).set(auth(readerToken)).send({ cronline: '@daily' }).expect(403);
      await ctx
        .http()
        .put(`${schedulesPath(org, p)}/${s.id}`)
        .set(auth(readerToken))
        .send({ enabled: false })
        .expect(403);
      await ctx
        .http()
        .delete(`${schedulesPath(org, p)}/${s.id}`)
        .set(auth(readerToken))
        .expect(403);
      await ctx
        .http()
        .get(`${schedulesPath(org, hidden)}/${h.id}`)
        .set(auth(readerToken))
        .expect(404);
      // A schedule id under another pipeline is not found.
      await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${h.id}`)
        .set(auth(adminToken))
        .expect(404);
    });

    it('needs read_pipelines to read and write_pipelines to write', async () => {
      const { org, user, p, schedule } = await given();
      const readOnly = await ctx.givenToken(user, [org], ['read_pipelines']);
      await ctx.http().get(schedulesPath(org, p)).set(auth(readOnly)).expect(200);
      await ctx
        .http()
        .put(`${schedulesPath(org, p)}/${schedule.id}`)
        .set(auth(readOnly))
        .send({ enabled: false })
        .expect(403);
      const buildsOnly = await ctx.givenToken(user, [org], ['read_builds', 'write_builds']);
      await ctx.http().get(schedulesPath(org, p)).set(auth(buildsOnly)).expect(403);
    });
  });

  describe('the scheduler', () => {
    it('creates exactly one build at the minute the schedule is due, as the schedule says, and moves next_build_at on', async () => {
      const { org, user, token, p, schedule } = await given({
        cronline: '*/10 * * * *',
        branch: 'nightly',
        commit: 'abc123',
        message: 'Scheduled',
        env: { FROM: 'schedule' },
      });
      expect(schedule.next_build_at).toBe('2030-01-01T00:10:00.000Z');

      at('2030-01-01T00:09:59.999Z');
      expect(await ctx.services.scheduler.tick()).toEqual({ created: 0, failed: 0, skipped: 0 });
      expect(await buildsOf(org, p, token)).toHaveLength(0);

      at('2030-01-01T00:10:00.000Z');
      expect((await ctx.services.scheduler.tick()).created).toBeGreaterThanOrEqual(1);
      at('2030-01-01T00:10:40.000Z');
      await ctx.services.scheduler.tick();
      const builds = await buildsOf(org, p, token);
      expect(builds).toHaveLength(1);
      expect(builds[0]).toMatchObject({
        source: 'schedule',
        branch: 'nightly',
        commit: 'abc123',
        message: 'Scheduled',
        env: { FROM: 'schedule' },
        creator: { id: user.id, email: user.email },
        state: 'scheduled',
      });
      expect((builds[0]!.jobs as unknown[]).length).toBe(1);
      const after = await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${schedule.id}`)
        .set(auth(token))
        .expect(200);
      expect(after.body.next_build_at).toBe('2030-01-01T00:20:00.000Z');

      at('2030-01-01T00:20:00.000Z');
      await ctx.services.scheduler.tick();
      expect((await buildsOf(org, p, token)).map((b) => b.number)).toEqual([2, 1]);
    });

    it("gives a scheduled build its pipeline's notify (Build.notify, issue 17)", async () => {
      const { org, token, p } = await given({ cronline: '*/10 * * * *' }, { configuration: 'notify:\n  - slack: "#nightly"\nsteps:\n  - command: make\n' });
      at('2030-01-01T00:10:00.000Z');
      await ctx.services.scheduler.tick();
      const [build] = await buildsOf(org, p, token);
      expect((await ctx.services.builds.findById(build!.id as string))!.notify).toEqual([{ slack: '#nightly' }]);
    });

    it('after downtime creates one build for the missed minutes (catch up once), then keeps to the cronline', async () => {
      const { org, token, p, schedule } = await given({ cronline: '*/10 * * * *' });
      // The server was down from before 00:10 until 02:35: fourteen minutes were missed.
      at('2030-01-01T02:35:00.000Z');
      await ctx.services.scheduler.tick();
      await ctx.services.scheduler.tick();
      const builds = await buildsOf(org, p, token);
      expect(builds).toHaveLength(1);
      // defining_steps.md: a schedule's build's scheduled_at "represents the intended execution time".
      expect(builds[0]).toMatchObject({ created_at: '2030-01-01T02:35:00.000Z', scheduled_at: '2030-01-01T00:10:00.000Z' });
      const after = await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${schedule.id}`)
        .set(auth(token))
        .expect(200);
      expect(after.body.next_build_at).toBe('2030-01-01T02:40:00.000Z');
    });

    it("places a clustered pipeline's scheduled jobs in its cluster's queues, as any build of it", async () => {
      const { org, token } = await ctx.givenAdmin();
      const clusters = `/v2/organizations/${org.slug}/clusters`;
      const cluster = (await ctx.http().post(clusters).set(auth(token)).send({ name: 'Scheduled' }).expect(201)).body as { id: string };
      const queue = (await ctx.http().post(`${clusters}/${cluster.id}/queues`).set(auth(token)).send({ key: 'nightly' }).expect(201)).body as { id: string };
      await ctx.http().put(`${clusters}/${cluster.id}`).set(auth(token)).send({ default_queue_id: queue.id }).expect(200);
      const p = await givenPipeline(ctx, org, token, { cluster_id: cluster.id });
      await ctx.http().post(schedulesPath(org, p)).set(auth(token)).send({ cronline: '*/10 * * * *' }).expect(201);
      at('2030-01-01T00:10:00.000Z');
      expect((await ctx.services.scheduler.tick()).created).toBeGreaterThanOrEqual(1);
      const [build] = await buildsOf(org, p, token);
      expect(build).toMatchObject({ source: 'schedule' });
      expect(build!.jobs).toEqual([expect.objectContaining({ cluster_id: cluster.id, cluster_queue_id: queue.id })]);
    });

    it('a disabled schedule, or one of an archived pipeline, creates no build', async () => {
      const { org, token, p, schedule } = await given({ cronline: '*/10 * * * *', enabled: false });
      expect(schedule.next_build_at).toBeNull();
      const other = await given({ cronline: '*/10 * * * *' });
      await ctx.http().post(`/v2/organizations/${other.org.slug}/pipelines/${other.p.slug}/archive`).set(auth(other.token)).expect(200);
      at('2030-01-01T00:10:00.000Z');
      await ctx.services.scheduler.tick();
      expect(await buildsOf(org, p, token)).toHaveLength(0);
      expect(await buildsOf(other.org, other.p, other.token)).toHaveLength(0);
      // The archived pipeline's minute passed: unarchived, it is not caught up on.
      const s = await ctx
        .http()
        .get(`${schedulesPath(other.org, other.p)}/${other.schedule.id}`)
        .set(auth(other.token))
        .expect(200);
      expect(s.body.next_build_at).toBe('2030-01-01T00:20:00.000Z');
    });

    it('an archived pipeline takes no new schedule and no change to one (the docs: archived pipelines are read-only); deleting one works', async () => {
      const { org, token, p, schedule } = await given({ cronline: '@daily' });
      await ctx.http().post(`/v2/organizations/${org.slug}/pipelines/${p.slug}/archive`).set(auth(token)).expect(200);
      const refused = await ctx.http().post(schedulesPath(org, p)).set(auth(token)).send({ cronline: '@hourly' }).expect(422);
      expect(refused.body.message).toBe('This pipeline is archived: unarchive it before adding or changing its schedules.');
      await ctx
        .http()
        .patch(`${schedulesPath(org, p)}/${schedule.id}`)
        .set(auth(token))
        .send({ label: 'x' })
        .expect(422);
      await ctx
        .http()
        .delete(`${schedulesPath(org, p)}/${schedule.id}`)
        .set(auth(token))
        .expect(204);
    });

    it('a schedule that cannot create its build is disabled with failed_message; re-enabling clears it', async () => {
      const { org, token, p, schedule } = await given({ cronline: '*/10 * * * *' });
      // A second admin creates a schedule and then leaves the organization.
      const leaver = await ctx.givenUser(org, 'admin');
      const leaverToken = await ctx.givenToken(leaver, [org]);
      const theirs = (await ctx.http().post(schedulesPath(org, p)).set(auth(leaverToken)).send({ cronline: '*/10 * * * *' }).expect(201)).body;
      await ctx.services.db('organization_members').where({ organization_id: org.id, user_id: leaver.id }).delete();
      at('2030-01-01T00:10:00.000Z');
      const run = await ctx.services.scheduler.tick();
      expect(run.failed).toBeGreaterThanOrEqual(1);
      expect(await buildsOf(org, p, token)).toHaveLength(1);
      const failed = await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${theirs.id}`)
        .set(auth(token))
        .expect(200);
      expect(failed.body).toMatchObject({ enabled: false, next_build_at: null, failed_at: '2030-01-01T00:10:00.000Z' });
      expect(failed.body.failed_message).toMatch(/no longer a member/);
      const ok = await ctx
        .http()
        .get(`${schedulesPath(org, p)}/${schedule.id}`)
        .set(auth(token))
        .expect(200);
      expect(ok.body).toMatchObject({ enabled: true, failed_message: null, failed_at: null });
      const again = await ctx
        .http()
        .put(`${schedulesPath(org, p)}/${theirs.id}`)
        .set(auth(token))
        .send({ enabled: true })
        .expect(200);
      expect(again.body).toMatchObject({ enabled: true, failed_message: null, failed_at: null, next_build_at: '2030-01-01T00:20:00.000Z' });
    });

    it("builds as its creator while they can build the pipeline: a team's Build access lost fails the schedule", async () => {
      const { org, token: adminToken } = await ctx.givenAdmin({ teamsEnabled: true });
      const member = await ctx.givenUser(org, 'member');
      const team = await ctx.givenTeam(org, [member]);
      const p = await givenPipeline(ctx, org, adminToken, { teams: [{ id: team.id, access_level: 'manage_build_and_read' }] });
      const memberToken = await ctx.givenToken(member, [org]);
      const s = (await ctx.http().post(schedulesPath(org, p)).set(auth(memberToken)).send({ cronline: '*/10 * * * *' }).expect(201)).body;
      at('2030-01-01T00:10:00.000Z');
      await ctx.services.scheduler.tick();
      expect((await buildsOf(org, p, adminToken)).map((b) => (b.creator as { id: string }).id)).toEqual([member.id]);
      // The team now only reads the pipeline: the member can no longer build it, nor can their schedule.
      await ctx.services.db('pipeline_teams').where({ pipeline_id: p.id, team_id: team.id }).update({ access_level: 'read_only' });
      at('2030-01-01T00:20:00.000Z');
      expect((await ctx.services.scheduler.tick()).failed).toBeGreaterThanOrEqual(1);
      expect(await buildsOf(org, p, adminToken)).toHaveLength(1);
      const failed = (
        await ctx
          .http()
          .get(`${schedulesPath(org, p)}/${s.id}`)
          .set(auth(adminToken))
          .expect(200)
      ).body;
      expect(failed).toMatchObject({ enabled: false, next_build_at: null, failed_at: '2030-01-01T00:20:00.000Z' });
      expect(failed.failed_message).toMatch(/no longer has Build access/);
    });
  });

  it('two server processes on one database ticking at once make one build per due minute', async () => {
    freeze(T0);
    const contexts = await createTwoContexts(kind);
    const { one, two } = contexts;
    try {
      const { org, token } = await one.givenAdmin();
      const pipelines = [await givenPipeline(one, org, token), await givenPipeline(one, org, token)];
      for (const p of pipelines) {
        for (const cronline of ['*/10 * * * *', '*/20 * * * *']) {
          await one.http().post(schedulesPath(org, p)).set(auth(token)).send({ cronline }).expect(201);
        }
      }
      // 00:03 to 01:00, a tick of each process every minute: six minutes due for */10, three for */20.
      for (let m = 4; m <= 60; m++) {
        freeze(new Date(T0.getTime() + (m - 3) * 60_000));
        const ticks = await Promise.allSettled([
          one.services.scheduler.tick(),
          two.services.scheduler.tick(),
          one.services.scheduler.tick(),
          two.services.scheduler.tick(),
        ]);
        // Postgres: every tick completes (the loser of a claim waits on the row, then sees it moved on).
        // SQLite has one writer per database, and better-sqlite3 waits for a lock synchronously: two
        // contexts in ONE Node process can't both hold transactions, so a tick that meets the other's
        // lock is refused (SQLITE_BUSY; the scheduler logs it and its next tick retries). Separate
        // server processes would wait instead. Either way no minute is built twice or lost.
        for (const t of ticks) if (t.status === 'rejected') expect([kind, (t.reason as { code?: string }).code]).toEqual(['sqlite', 'SQLITE_BUSY']);
        if (ticks.every((t) => t.status === 'rejected')) await one.services.scheduler.tick();
      }
      for (const p of pipelines) {
        const builds = (await one.http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds?per_page=100`).set(auth(token)).expect(200)).body;
        expect(builds).toHaveLength(6 + 3);
        expect(builds.map((b: { number: number }) => b.number).sort((a: number, b: number) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9]);
        expect(new Set(builds.map((b: { source: string }) => b.source))).toEqual(new Set(['schedule']));
      }
    } finally {
      await contexts.close();
    }
  });

  it('a restart on the same database after downtime catches each schedule up once', async () => {
    const dir = kind === 'sqlite' ? fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-schedules-')) : undefined;
    const file = dir ? path.join(dir, 'shared.sqlite3') : undefined;
    freeze(T0);
    const before = await createTestContext(kind, { sqliteFile: file });
    let after: TestContext | undefined;
    try {
      const { org, token } = await before.givenAdmin();
      const p = await givenPipeline(before, org, token);
      const s = (await before.http().post(schedulesPath(org, p)).set(auth(token)).send({ cronline: '@hourly' }).expect(201)).body;
      freeze(new Date('2030-01-01T01:00:00.000Z'));
      await before.services.scheduler.tick();
      await before.close({ keepSchema: true });
      // Down from 01:00 until 05:30: the 02:00 to 05:00 builds were missed.
      freeze(new Date('2030-01-01T05:30:00.000Z'));
      after = await createTestContext(kind, { sqliteFile: file, sharePostgresSchemaOf: before });
      await after.services.scheduler.tick();
      const builds = (await after.http().get(`/v2/organizations/${org.slug}/pipelines/${p.slug}/builds`).set(auth(token)).expect(200)).body;
      expect(builds).toHaveLength(2);
      const got = (
        await after
          .http()
          .get(`${schedulesPath(org, p)}/${s.id}`)
          .set(auth(token))
          .expect(200)
      ).body;
      expect(got.next_build_at).toBe('2030-01-01T06:00:00.000Z');
    } finally {
      await after?.close();
      if (dir) fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
