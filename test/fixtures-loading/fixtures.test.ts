/**
 * Fixture files (src/fixtures/), the installation admin token (src/bootstrap.ts) and the test
 * controls (src/test-controls/): a rich file reads back through the REST API as it says (every
 * response validated against the spec), a bad file loads nothing and names its line, a reset
 * returns to the loaded state, and a frozen clock dates what is made.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { auth, createTestContext, type TestContext, describeEachDatabase } from '../support/context';
import { loadFixtureFile } from '../../src/fixtures/load';
import { AdminTokenError, bootstrapIfEmpty } from '../../src/bootstrap';
import { clock } from '../../src/core/clock';

const ADMIN = 'admin-secret-0123456789-abcdefghijklmnop';
const ADA = 'ada-secret-0123456789-abcdefghijklmnopqrs';

const RICH = `
organizations:
  - slug: acme
    name: Acme
users:
  - name: Ada
    email: ada@example.com
    organizations: { acme: admin }
tokens:
  - user: ada@example.com
    secret: ${ADA}
agents:
  - organization: acme
    name: builder-1
    hostname: box-1
    meta_data: [queue=default]
pipelines:
  - organization: acme
    name: Web
    repository: git@github.com:acme/web.git
    default_branch: main
    configuration: |
      steps:
        - label: Test
          command: make test
        - label: Lint
          command: make lint
    builds:
      - message: first
        created_at: '2026-01-01T10:00:00.000Z'
        meta_data: { release: '1.0' }
        jobs:
          - { agent: builder-1, log: "ok\\n" }
          - { agent: builder-1 }
      - message: second
        jobs:
          - { exit_status: 0, agent: builder-1 }
          - { exit_status: 2, agent: builder-1, log: "lint failed\\n" }
      - message: third
        state: running
        jobs:
          - { state: running, agent: builder-1 }
suites:
  - organization: acme
    name: Unit
    default_branch: main
    runs:
      - build: { pipeline: web, number: 2 }
        results:
          - { id: 5b3a1d0e-5a4f-4d63-9a38-0a3c6b0e0001, scope: Cart, name: adds, location: ./cart_spec.rb:1, result: passed, history: { duration: 0.1 } }
          - { id: 5b3a1d0e-5a4f-4d63-9a38-0a3c6b0e0002, scope: Cart, name: flaps, location: ./cart_spec.rb:9, result: failed, failure_reason: boom, history: { duration: 0.2 } }
          - { id: 5b3a1d0e-5a4f-4d63-9a38-0a3c6b0e0003, scope: Cart, name: flaps, location: ./cart_spec.rb:9, result: passed, history: { duration: 0.2 } }
`;

function fileWith(text: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-fixtures-'));
  const file = path.join(dir, 'windsock.yaml');
  fs.writeFileSync(file, text);
  return file;
}

describeEachDatabase('fixtures, admin token and test controls', { testControls: true }, (get) => {
  let ctx: TestContext;
  beforeAll(async () => {
    ctx = get();
    await loadFixtureFile(ctx.services, fileWith(RICH));
    expect(await bootstrapIfEmpty(ctx.services, { adminToken: ADMIN })).toBeNull();
    await ctx.testControls!.takeSnapshot(true);
  });
  afterAll(async () => {
    clock.set({ kind: 'real' });
    await ctx?.testControls?.dispose();
  });
  const base = '/v2/organizations/acme/pipelines/web';

  it('builds read back as the file says: numbers, states, times, jobs, logs, meta-data', async () => {
    const list = await ctx.http().get(`${base}/builds`).set(auth(ADA)).expect(200);
    expect(list.body.map((b: { number: number; state: string }) => [b.number, b.state])).toEqual([
      [3, 'running'],
      [2, 'failed'],
      [1, 'passed'],
    ]);
    const first = list.body[2];
    expect(first.created_at).toBe('2026-01-01T10:00:00.000Z');
    expect(first.meta_data).toEqual({ release: '1.0' });
    expect(new Date(first.finished_at).getTime()).toBeGreaterThanOrEqual(new Date(first.started_at).getTime());
    expect(first.jobs.map((j: { state: string; exit_status: number | null }) => [j.state, j.exit_status])).toEqual([
      ['passed', 0],
      ['passed', 0],
    ]);
    expect(first.jobs[0].agent.name).toBe('builder-1');
    expect(list.body[1].jobs.map((j: { exit_status: number }) => j.exit_status)).toEqual([0, 2]);
    expect(list.body[0].finished_at).toBeNull();
    const log = await ctx.http().get(`${base}/builds/1/jobs/${first.jobs[0].id}/log`).set(auth(ADA)).expect(200);
    expect(log.body.content).toBe('ok\n');
    const pipeline = await ctx.http().get(base).set(auth(ADA)).expect(200);
    expect(pipeline.body.builds_count ?? 3).toBe(3);
    const agents = await ctx.http().get('/v2/organizations/acme/agents').set(auth(ADA)).expect(200);
    expect(agents.body.map((a: { name: string; connection_state: string }) => [a.name, a.connection_state])).toEqual([['builder-1', 'connected']]);
    const suiteBase = '/v2/analytics/organizations/acme/suites/unit';
    expect((await ctx.http().get(suiteBase).set(auth(ADA)).expect(200)).body.default_branch).toBe('main');
    const runs = await ctx.http().get(`${suiteBase}/runs`).set(auth(ADA)).expect(200);
    expect(runs.body.map((r: { branch: string; commit_sha: string }) => [r.branch, r.commit_sha])).toEqual([['main', 'HEAD']]);
    const failed = await ctx.http().get(`${suiteBase}/runs/${runs.body[0].id}/failed_executions`).set(auth(ADA)).expect(200);
    expect(failed.body.map((e: { failure_reason: string }) => e.failure_reason)).toEqual(['boom']);
    const flaky = await ctx.http().get(`${suiteBase}/flaky-tests`).set(auth(ADA)).expect(200);
    expect(flaky.body.map((t: { name: string }) => t.name)).toEqual(['flaps']);
    const tests = await ctx.http().get(`/v2/analytics/organizations/acme/builds/${list.body[1].id}/tests`).set(auth(ADA)).expect(200);
    expect(tests.body.length).toBeGreaterThan(0);
    // The next build continues the numbering.
    const next = await ctx.http().post(`${base}/builds`).set(auth(ADA)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    expect(next.body.number).toBe(4);
  });

  it('the admin token: same value again is fine, another or a short one is refused', async () => {
    await expect(bootstrapIfEmpty(ctx.services, { adminToken: ADMIN })).resolves.toBeNull();
    await expect(bootstrapIfEmpty(ctx.services, { adminToken: `x${ADMIN}` })).rejects.toThrow(/WINDSOCK_ADMIN_TOKEN differs/);
    await expect(bootstrapIfEmpty(ctx.services, { adminToken: 'short' })).rejects.toThrow(AdminTokenError);
    await expect(bootstrapIfEmpty(ctx.services, { adminToken: 'short' })).rejects.toThrow(/WINDSOCK_ADMIN_TOKEN is 5 characters long/);
    // The admin token reaches the fixture's organizations.
    await ctx.http().get(`${base}/builds`).set(auth(ADMIN)).expect(200);
  });

  it('test controls need the installation admin token', async () => {
    await ctx.http().post('/_windsock/reset').expect(401);
    await ctx.http().post('/_windsock/reset').set(auth(ADA)).expect(403);
    await ctx.http().get('/_windsock/clock').set(auth(ADA)).expect(403);
  });

  it('a reset returns to the loaded state, and its tokens work at once', async () => {
    await ctx.http().post(`${base}/builds`).set(auth(ADA)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    await ctx
      .http()
      .post('/v2/organizations/acme/pipelines')
      .set(auth(ADA))
      .send({ name: 'Extra', repository: 'git@x:y.git', configuration: 'steps:\n  - command: x\n' })
      .expect(201);
    const reset = await ctx.http().post('/_windsock/reset').set(auth(ADMIN)).expect(200);
    expect(reset.body).toMatchObject({ state: 'fixtures' });
    expect(reset.body.rows).toBeGreaterThan(0);
    const list = await ctx.http().get(`${base}/builds`).set(auth(ADA)).expect(200);
    expect(list.body.map((b: { number: number }) => b.number)).toEqual([3, 2, 1]);
    await ctx.http().get('/v2/organizations/acme/pipelines/extra').set(auth(ADA)).expect(404);
    const next = await ctx.http().post(`${base}/builds`).set(auth(ADA)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    expect(next.body.number).toBe(4);
    await ctx.http().post('/_windsock/reset').set(auth(ADMIN)).expect(200);
  });

  it('a frozen clock set through the endpoint dates a new build; advance moves it', async () => {
    const frozen = await ctx.http().put('/_windsock/clock').set(auth(ADMIN)).send({ mode: 'frozen', at: '2030-05-01T12:00:00.000Z' }).expect(200);
    expect(frozen.body).toMatchObject({ mode: 'frozen', at: '2030-05-01T12:00:00.000Z', now: '2030-05-01T12:00:00.000Z', offset_seconds: null });
    const b = await ctx.http().post(`${base}/builds`).set(auth(ADA)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    expect(b.body.created_at).toBe('2030-05-01T12:00:00.000Z');
    const moved = await ctx.http().put('/_windsock/clock').set(auth(ADMIN)).send({ advance_seconds: 90 }).expect(200);
    expect(moved.body.now).toBe('2030-05-01T12:01:30.000Z');
    await ctx.http().put('/_windsock/clock').set(auth(ADMIN)).send({ mode: 'offset' }).expect(422);
    const real = await ctx.http().put('/_windsock/clock').set(auth(ADMIN)).send({ mode: 'real' }).expect(200);
    expect(real.body).toMatchObject({ mode: 'real', at: null, offset_seconds: null });
    await ctx.http().get('/_windsock/clock').set(auth(ADMIN)).expect(200);
  });
});

describeEachDatabase('bad fixture files load nothing', (get) => {
  let ctx: TestContext;
  beforeAll(() => {
    ctx = get();
  });

  it.each([
    [
      'a schema violation, with its line',
      RICH.replace('state: running\n', 'state: sideways\n'),
      /pipelines\[0\]\.builds\[2\]\.state \(line 40\): must be one of/,
    ],
    [
      'an unknown property, with its line',
      RICH.replace('    hostname: box-1\n', '    hostname: box-1\n    colour: red\n'),
      /agents\[0\]\.colour \(line 16\): unknown property/,
    ],
    [
      'an unknown organization reference',
      RICH.replace('  - organization: acme\n    name: Web', '  - organization: nope\n    name: Web'),
      /pipelines\[0\]\.organization \(line 18\): no organization "nope"/,
    ],
    [
      'a duplicate slug',
      RICH.replace('organizations:\n  - slug: acme\n    name: Acme\n', 'organizations:\n  - slug: acme\n  - slug: acme\n'),
      /organizations\[1\]\.slug \(line 4\): duplicate organization slug/,
    ],
    [
      'an unknown agent',
      RICH.replace('{ state: running, agent: builder-1 }', '{ state: running, agent: ghost }'),
      /jobs\[0\]\.agent \(line 42\): no agent "ghost"/,
    ],
    ['a bad configuration, after other objects were written', RICH.replace('command: make lint', 'command: [make, 1: 2'), /pipelines\[0\]/],
    [
      'a run of a build the file does not have',
      RICH.replace('{ pipeline: web, number: 2 }', '{ pipeline: web, number: 9 }'),
      /suites\[0\]\.runs\[0\]\.build \(line \d+\): no build 9/,
    ],
    ['YAML that does not parse', 'organizations: [\n', /line \d+/],
  ])('%s', async (_what, text, message) => {
    await expect(loadFixtureFile(ctx.services, fileWith(text))).rejects.toThrow(message);
    expect(await ctx.services.orgs.count()).toBe(0);
    expect(Number((await ctx.services.db('users').count({ n: '*' }).first())!.n)).toBe(0);
  });
});

describeEachDatabase('test controls off', (get, kind) => {
  let ctx: TestContext;
  beforeAll(() => {
    ctx = get();
  });

  it('answer 404 as if they did not exist, whatever the token', async () => {
    const { token } = await ctx.givenAdmin();
    await ctx.http().post('/_windsock/reset').set(auth(token)).expect(404);
    await ctx.http().get('/_windsock/clock').expect(404);
  });

  it('a first start with a given admin token makes it the installation admin token; the reset state is the bootstrap one', async () => {
    const fresh = await createTestContext(kind, { testControls: true });
    try {
      expect(await bootstrapIfEmpty(fresh.services, { adminToken: ADMIN })).toEqual({ jwt: null, orgSlug: 'default' });
      await fresh.testControls!.takeSnapshot(false);
      await fresh
        .http()
        .post('/v2/organizations/default/pipelines')
        .set(auth(ADMIN))
        .send({ name: 'P', repository: 'git@x:y.git', configuration: 'steps:\n  - command: x\n' })
        .expect(201);
      const reset = await fresh.http().post('/_windsock/reset').set(auth(ADMIN)).expect(200);
      expect(reset.body.state).toBe('bootstrap');
      expect((await fresh.http().get('/v2/organizations/default/pipelines').set(auth(ADMIN)).expect(200)).body).toEqual([]);
    } finally {
      await fresh.testControls?.dispose();
      await fresh.close();
    }
  });
});
