/**
 * A pipeline's `notify` entries end to end: the YAML on the pipeline (and on a pipeline upload),
 * builds run by an agent through the agent API, the worker driven by the test (`settle`), and
 * what each kind of entry sends arriving at a receiver on loopback: `webhook` (the documented
 * body and event header, no token), `basecamp_campfire` (`{content}`), `slack` (through the
 * organization's Slack service, with the channel override), `email` (recorded, not sent), and
 * `if` conditions deciding which entries hear of a build.
 */
import { auth, describeEachDatabase } from '../support/context';
import { takeNextJob, agentAuth, givenAgent, givenRegistrationToken, runNextJob } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { receiverForEachTest, startReceiver } from './receiver';

describeEachDatabase('notify entries of pipeline YAML', { notifications: { retryBaseMs: 1, retryCapMs: 5, maxAttempts: 3 } }, (ctx) => {
  const receiver = receiverForEachTest();

  const settle = () => ctx().services.notificationWorker.settle();

  /** An organization, a pipeline with this YAML, a build of it, and an agent to run it. */
  async function setup(yaml: string, build: Record<string, unknown> = {}) {
    const { org, user, token } = await ctx().givenAdmin();
    const reg = await givenRegistrationToken(ctx(), org.slug, token);
    const agent = await givenAgent(ctx(), reg, 'runner');
    const pipeline = await givenPipeline(ctx(), org, token, yaml);
    const run = () => givenBuild(ctx(), org, pipeline, token, build);
    return { org, user, token, agent, pipeline, run };
  }

  async function givenSlackService(org: { slug: string }, token: string, url: string, extra: Record<string, unknown> = {}) {
    const res = await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/services`)
      .set(auth(token))
      .send({ provider: 'slack', description: 'chat', ...extra, settings: { url } });
    expect(res.status).toBe(201);
    return res.body as { id: string };
  }

  it('POSTs the build events to a build-level webhook with the documented body and no token', async () => {
    const s = await setup(`notify:\n  - webhook: "${receiver().url}"\nsteps:\n  - command: one\n`);
    const b = await s.run();
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    expect(receiver().events()).toEqual(['build.scheduled', 'build.running', 'build.finished']);
    for (const r of receiver().received) {
      expect(r.method).toBe('POST');
      expect(r.headers['content-type']).toBe('application/json');
      expect(r.headers['x-buildkite-token']).toBeUndefined();
      expect(r.headers['x-buildkite-signature']).toBeUndefined();
      expect(r.body.event).toBe(r.headers['x-buildkite-event']);
    }
    const finished = receiver().received[2]!.body as { build: Record<string, unknown>; pipeline: Record<string, unknown>; sender: unknown };
    expect(finished.build).toMatchObject({ id: b.id, number: b.number, state: 'passed', branch: 'main' });
    expect(finished.pipeline).toMatchObject({ id: s.pipeline.id, slug: s.pipeline.slug });
    expect(finished.sender).toEqual({ id: s.user.id, name: s.user.name });
  });

  it('honours `if` conditions on the build state and branch', async () => {
    const failed = await startReceiver('/failed');
    const main = await startReceiver('/main');
    try {
      const s = await setup(
        [
          'notify:',
          `  - webhook: "${failed.url}"`,
          '    if: build.state == "failed"',
          `  - webhook: "${main.url}"`,
          '    if: build.branch == "main"',
          'steps:',
          '  - command: one',
          '',
        ].join('\n'),
      );
      await s.run(); // main, passes
      await runNextJob(ctx(), s.agent, 0);
      await givenBuild(ctx(), s.org, s.pipeline, s.token, { branch: 'feature/x' }); // fails
      await runNextJob(ctx(), s.agent, 1);
      await settle();
      expect(failed.events()).toEqual(['build.finished']);
      expect(failed.received[0]!.body.build).toMatchObject({ branch: 'feature/x', state: 'failed' });
      expect(main.events()).toEqual(['build.scheduled', 'build.running', 'build.finished']);
      expect(main.received.every((r) => (r.body.build as { branch: string }).branch === 'main')).toBe(true);
    } finally {
      await failed.close();
      await main.close();
    }
  });

  it('takes every variable of a step’s `if` in an entry’s `if`: build.env(), the creator’s teams, the organization’s id', async () => {
    const deploy = await startReceiver('/deploy');
    const core = await startReceiver('/core');
    try {
      const s = await setup(
        [
          'env:',
          '  STAGE: prod',
          'notify:',
          `  - webhook: "${deploy.url}"`,
          '    if: build.env("DEPLOY") == "1" && build.env("STAGE") == "prod" && build.env("BUILDKITE_BRANCH") == "main" && build.state == "passed"',
          `  - webhook: "${core.url}"`,
          `    if: build.creator.teams includes "core" && organization.id != null`,
          'steps:',
          '  - command: one',
          '',
        ].join('\n'),
      );
      await givenBuild(ctx(), s.org, s.pipeline, s.token, { env: { DEPLOY: '1' } });
      await runNextJob(ctx(), s.agent, 0);
      await givenBuild(ctx(), s.org, s.pipeline, s.token, { env: { DEPLOY: '0' } });
      await runNextJob(ctx(), s.agent, 0);
      await settle();
      expect(deploy.events()).toEqual(['build.finished']);
      expect(deploy.received[0]!.body.build).toMatchObject({ number: 1, state: 'passed' });
      // The creator is in no team core yet; once they are, the next build's events reach it.
      expect(core.events()).toEqual([]);
      const team = await ctx().services.orgs.createTeam({ organizationId: s.org.id, slug: 'core', name: 'Core' });
      await ctx().services.orgs.addTeamMember(team.id, s.user.id);
      await s.run();
      await runNextJob(ctx(), s.agent, 0);
      await settle();
      expect(core.events()).toEqual(['build.scheduled', 'build.running', 'build.finished']);
    } finally {
      await deploy.close();
      await core.close();
    }
  });

  it('records an email notification as a failed delivery: there is no mail transport', async () => {
    const s = await setup('notify:\n  - email: "dev@example.com"\nsteps:\n  - command: one\n');
    await s.run();
    await runNextJob(ctx(), s.agent, 1);
    await settle();
    const ds = (await ctx().services.notifications.ofOrganization(s.org.id)).filter((d) => d.target?.kind === 'email');
    expect(ds.length).toBeGreaterThan(0);
    expect(ds.map((d) => d.event)).toContain('build.finished');
    for (const d of ds) expect(d).toMatchObject({ state: 'failed', attempts: 1, serviceId: null, target: { to: 'dev@example.com' } });
    // The attempt's excerpt says why (notify deliveries belong to no service's history).
    const attempts = await ctx()
      .services.db('notification_attempts')
      .whereIn(
        'delivery_id',
        ds.map((d) => d.id),
      );
    expect(attempts).toHaveLength(ds.length);
    for (const a of attempts) expect(String(a.excerpt)).toContain('no mail transport');
    expect(receiver().received).toEqual([]);
  });

  it("posts a build-level slack notification through the organization's Slack service with the channel override", async () => {
    const s = await setup('notify:\n  - slack:\n      channels: ["acme#builds"]\n      message: "Deployed <@U024BE7LH>"\nsteps:\n  - command: one\n');
    // The service itself hears of nothing (no build states): only the notify entry posts.
    await givenSlackService(s.org, s.token, receiver().url, { build_states: { build_passed: false, build_failed: false } });
    const b = await s.run();
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    expect(receiver().received).toHaveLength(1);
    const msg = receiver().received[0]!.body as { text: string; channel: string };
    expect(msg.channel).toBe('#builds');
    expect(msg.text).toContain('Deployed <@U024BE7LH>');
    expect(receiver().received[0]!.raw).toContain(String(b.number));
  });

  it("posts a parallel step's slack notifications once at step.failing and once at step.finished, with step.* conditions", async () => {
    const s = await setup(
      [
        'steps:',
        '  - label: Unit tests',
        '    command: one',
        '    parallelism: 3',
        '    notify:',
        '      - slack: "#all"',
        '      - slack: "#hard"',
        '        if: step.outcome == "hard_failed"',
        '      - slack: "#failing"',
        '        if: step.state == "failing"',
        '      - slack: "#passed"',
        '        if: step.outcome == "passed" && step.label == "Unit tests"',
        // The docs: a step cannot know the build's state; it reads null here.
        '      - slack: "#build-state"',
        '        if: build.state == "failed" || build.state == "failing"',
        '      - slack: "#no-build-state"',
        '        if: build.state == null && step.state == "finished"',
        '',
      ].join('\n'),
    );
    await givenSlackService(s.org, s.token, receiver().url, { build_states: { build_passed: false, build_failed: false } });
    await s.run();
    await runNextJob(ctx(), s.agent, 1);
    await settle();
    const said = () =>
      receiver()
        .received.map((r) => r.body as { text: string; channel: string })
        .map((m) => `${m.channel} ${/Unit tests (is failing|failed|passed)/.exec(m.text)?.[1] ?? m.text}`)
        .sort();
    // The first job failed while the others have not run: the step is failing, told once.
    expect(said()).toEqual(['#all is failing', '#failing is failing', '#hard is failing']);
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    expect(said()).toHaveLength(3);
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    // The last job's end finishes the step: told once, hard failed.
    expect(said()).toEqual(['#all failed', '#all is failing', '#failing is failing', '#hard failed', '#hard is failing', '#no-build-state failed']);
  });

  it("tells a step's promised failure at step.failing, then its end at step.finished", async () => {
    const s = await setup('steps:\n  - label: Unit tests\n    command: one\n    notify:\n      - slack: "#ci"\n');
    await givenSlackService(s.org, s.token, receiver().url, { build_states: { build_passed: false, build_failed: false } });
    await s.run();
    const job = await takeNextJob(ctx(), s.agent);
    await ctx().http().put(`/v3/jobs/${job.id}/promise_failure`).set(agentAuth(s.agent.token)).send({ exit_status: 1 }).expect(204);
    await settle();
    expect(receiver().received.map((r) => (r.body as { text: string }).text)).toEqual([expect.stringContaining('Unit tests is failing')]);
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: '1' }).expect(200);
    await settle();
    expect(receiver().received.map((r) => (r.body as { text: string }).text)).toEqual([
      expect.stringContaining('Unit tests is failing'),
      expect.stringContaining('Unit tests failed'),
    ]);
  });

  it('tells nothing of a job its step retries automatically: the retry finishes the step', async () => {
    const s = await setup(
      'steps:\n  - label: Unit tests\n    command: one\n    retry: { automatic: [{ exit_status: 1, limit: 1 }] }\n    notify:\n      - slack: "#ci"\n',
    );
    await givenSlackService(s.org, s.token, receiver().url, { build_states: { build_passed: false, build_failed: false } });
    await s.run();
    await runNextJob(ctx(), s.agent, 1);
    await settle();
    expect(receiver().received).toEqual([]);
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    expect(receiver().received.map((r) => (r.body as { text: string }).text)).toEqual([expect.stringContaining('Unit tests passed')]);
  });

  it('takes step.* variables in the if of a step-level entry only', async () => {
    const { org, token } = await ctx().givenAdmin();
    const create = (configuration: string) =>
      ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(token))
        .send({ name: `p-${Math.random().toString(36).slice(2, 8)}`, repository: 'git@example.com:a/b.git', configuration });
    await create('steps:\n  - command: one\n    notify:\n      - slack: "#ci"\n        if: step.outcome == "hard_failed"\n').expect(201);
    const refused = await create('notify:\n  - slack: "#ci"\n    if: step.outcome == "hard_failed"\nsteps:\n  - command: one\n').expect(422);
    expect(JSON.stringify(refused.body)).toContain('step.outcome');
  });

  it('posts a step-level slack notification when the step finishes', async () => {
    const s = await setup('steps:\n  - label: Unit tests\n    command: one\n    notify:\n      - slack: "#ci"\n');
    await givenSlackService(s.org, s.token, receiver().url, { build_states: { build_passed: false, build_failed: false } });
    await s.run();
    await runNextJob(ctx(), s.agent, 1);
    await settle();
    expect(receiver().received).toHaveLength(1);
    const msg = receiver().received[0]!.body as { text: string; channel: string };
    expect(msg.channel).toBe('#ci');
    expect(msg.text).toContain('Unit tests');
    expect(msg.text).toContain('failed');
  });

  it("POSTs {content} to a step-level Basecamp Campfire URL at the step's end", async () => {
    const s = await setup(`steps:\n  - label: Unit tests\n    command: one\n    parallelism: 2\n    notify:\n      - basecamp_campfire: "${receiver().url}"\n`);
    const b = await s.run();
    await runNextJob(ctx(), s.agent, 0);
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    expect(receiver().received.map((r) => r.body)).toEqual([{ content: expect.stringMatching(new RegExp(`^Unit tests passed in .* #${b.number}: http`)) }]);
  });

  it('POSTs {content} to a Basecamp Campfire URL', async () => {
    const s = await setup(`notify:\n  - basecamp_campfire: "${receiver().url}"\nsteps:\n  - command: one\n`);
    const b = await s.run();
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    expect(receiver().received.length).toBe(3);
    for (const r of receiver().received) expect(Object.keys(r.body)).toEqual(['content']);
    const last = String(receiver().received.at(-1)!.body.content);
    expect(last).toContain(`#${b.number} passed`);
    expect(last).toContain(s.pipeline.name);
  });

  it("honours a pipeline upload's top-level notify", async () => {
    const s = await setup('steps:\n  - command: upload\n');
    await s.run();
    const job = await takeNextJob(ctx(), s.agent.token);
    await ctx()
      .http()
      .post(`/v3/jobs/${job.id}/pipelines`)
      .set(agentAuth(s.agent.token))
      .send({ pipeline: `notify:\n  - webhook: "${receiver().url}"\nsteps:\n  - command: two\n` })
      .expect(201);
    await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(s.agent.token)).send({ exit_status: 0 }).expect(200);
    await runNextJob(ctx(), s.agent, 0);
    await settle();
    // Added while the build ran: its finish is told, with the upload's step in it.
    expect(receiver().events()).toContain('build.finished');
    const finished = receiver().received.find((r) => r.headers['x-buildkite-event'] === 'build.finished')!;
    expect(finished.body.build).toMatchObject({ state: 'passed' });
  });
});
