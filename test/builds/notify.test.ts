/**
 * A build's notifications (issue 17): `Build.notify` is its pipeline's top-level `notify` (or,
 * when a template governs the pipeline, the template's) copied when the build is created, by the
 * API, a rebuild or a trigger step; each pipeline upload's top-level `notify` is appended once.
 * Step-level entries stay on the steps, so on the jobs' steps (`job.step.notify`).
 */
import { auth, describeEachDatabase } from '../support/context';
import { takeNextJob, agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import type { BuildJson } from '../support/types';

describeEachDatabase('Build.notify', (ctx) => {
  async function setup() {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const notifyOf = async (id: string) => (await ctx().services.builds.findById(id))!.notify;
    return { org, token, base, notifyOf };
  }

  it('copies the pipeline’s notify to a build created through the API and to its rebuild; later edits leave them alone', async () => {
    const s = await setup();
    const p = await givenPipeline(
      ctx(),
      s.org,
      s.token,
      'notify:\n  - slack: "#ci"\n    if: build.state == "failed"\n  - webhook: https://example.com/hook\nsteps:\n  - command: make\n',
    );
    const build = await givenBuild(ctx(), s.org, p.slug, s.token);
    expect(await s.notifyOf(build.id)).toEqual([{ slack: '#ci', if: 'build.state == "failed"' }, { webhook: 'https://example.com/hook' }]);

    await ctx()
      .http()
      .patch(`${s.base}/${p.slug}`)
      .set(auth(s.token))
      .send({ configuration: 'notify:\n  - email: dev@example.com\nsteps:\n  - command: make\n' })
      .expect(200);
    expect(await s.notifyOf(build.id)).toEqual([{ slack: '#ci', if: 'build.state == "failed"' }, { webhook: 'https://example.com/hook' }]);
    // A rebuild builds from the pipeline as it is now.
    const rebuilt = (await ctx().http().put(`${s.base}/${p.slug}/builds/${build.number}/rebuild`).set(auth(s.token)).expect(200)).body as BuildJson;
    expect(await s.notifyOf(rebuilt.id)).toEqual([{ email: 'dev@example.com' }]);

    // A pipeline without notify, or of visual steps, gives its builds none.
    const plain = await givenPipeline(ctx(), s.org, s.token, 'steps:\n  - command: make\n');
    expect(await s.notifyOf((await givenBuild(ctx(), s.org, plain.slug, s.token)).id)).toEqual([]);
    const visual = await givenPipeline(ctx(), s.org, s.token, {
      configuration: undefined,
      steps: [{ type: 'script', command: 'make', notify: [{ slack: '#step' }] }],
    });
    const visualBuild = await givenBuild(ctx(), s.org, visual.slug, s.token);
    expect(await s.notifyOf(visualBuild.id)).toEqual([]);
    const withJobs = (await ctx().services.builds.findWithJobsById(visualBuild.id))!;
    expect(withJobs.jobs[0]!.step).toMatchObject({ notify: [{ slack: '#step' }] });
  });

  it('gives a triggered build its own pipeline’s notify, not the triggering one’s', async () => {
    const s = await setup();
    const target = await givenPipeline(ctx(), s.org, s.token, {
      name: 'deploy',
      configuration: 'notify:\n  - slack: "#deploys"\nsteps:\n  - command: ./deploy.sh\n',
    });
    const app = await givenPipeline(ctx(), s.org, s.token, {
      name: 'app',
      configuration: `notify:\n  - slack: "#app"\nsteps:\n  - trigger: ${target.slug}\n    async: true\n`,
    });
    const parent = await givenBuild(ctx(), s.org, app.slug, s.token);
    expect(await s.notifyOf(parent.id)).toEqual([{ slack: '#app' }]);
    const children = (await ctx().http().get(`${s.base}/${target.slug}/builds`).set(auth(s.token)).expect(200)).body as BuildJson[];
    expect(children).toHaveLength(1);
    expect(children[0]!.source).toBe('trigger_job');
    expect(await s.notifyOf(children[0]!.id)).toEqual([{ slack: '#deploys' }]);
  });

  it('takes the template’s notify when a template governs the pipeline', async () => {
    const s = await setup();
    const template = await ctx()
      .http()
      .post(`/v2/organizations/${s.org.slug}/pipeline-templates`)
      .set(auth(s.token))
      .send({ name: 'Governed', configuration: 'notify:\n  - github_commit_status: {context: governed}\nsteps:\n  - command: make\n' });
    expect(template.status).toBe(201);
    const p = await givenPipeline(ctx(), s.org, s.token, {
      configuration: 'notify:\n  - slack: "#own"\nsteps:\n  - command: own\n',
      pipeline_template_uuid: template.body.uuid,
    });
    const build = await givenBuild(ctx(), s.org, p.slug, s.token);
    expect(await s.notifyOf(build.id)).toEqual([{ github_commit_status: { context: 'governed' } }]);
  });

  it('appends each pipeline upload’s top-level notify, once, and keeps step-level entries on the uploaded jobs’ steps', async () => {
    const s = await setup();
    const reg = await givenRegistrationToken(ctx(), s.org.slug, s.token);
    const p = await givenPipeline(ctx(), s.org, s.token, 'notify:\n  - slack: "#pipeline"\nsteps:\n  - command: buildkite-agent pipeline upload\n');
    const build = await givenBuild(ctx(), s.org, p.slug, s.token);
    const agent = await givenAgent(ctx(), reg, 'runner');
    const job = await takeNextJob(ctx(), agent.token);
    const upload = (pipeline: unknown, uuid?: string) =>
      ctx()
        .http()
        .post(`/v3/jobs/${job.id}/pipelines`)
        .set(agentAuth(agent.token))
        .send(uuid ? { pipeline, uuid } : { pipeline });

    const first = await upload(
      'notify:\n  - webhook: https://example.com/uploaded\n  - pagerduty_change_event: key\nsteps:\n  - command: tests\n    notify:\n      - github_commit_status: {context: tests}\n',
      '0b5c1a36-8f8e-4a57-9d1e-6d3c2b1a0f00',
    );
    expect(first.status).toBe(201);
    expect(first.headers.warning).toContain('pagerduty_change_event');
    // The agent sends it again after a lost answer: nothing is appended twice.
    const again = await upload(
      'notify:\n  - webhook: https://example.com/uploaded\n  - pagerduty_change_event: key\nsteps:\n  - command: tests\n    notify:\n      - github_commit_status: {context: tests}\n',
      '0b5c1a36-8f8e-4a57-9d1e-6d3c2b1a0f00',
    );
    expect(again.status).toBe(201);
    expect((await upload({ notify: [{ email: 'dev@example.com' }], steps: [{ command: 'more' }] })).status).toBe(201);
    // An upload without notify adds none.
    expect((await upload({ steps: [{ command: 'last' }] })).status).toBe(201);

    expect(await s.notifyOf(build.id)).toEqual([
      { slack: '#pipeline' },
      { webhook: 'https://example.com/uploaded' },
      { pagerduty_change_event: 'key' },
      { email: 'dev@example.com' },
    ]);
    const { jobs } = (await ctx().services.builds.findWithJobsById(build.id))!;
    const tests = jobs.find((j) => j.step.type === 'script' && j.step.command === 'tests')!;
    expect(tests.step).toMatchObject({ notify: [{ github_commit_status: { context: 'tests' } }] });
    expect(jobs.find((j) => j.step.type === 'script' && j.step.command === 'more')!.step).not.toHaveProperty('notify');

    // A bad notify in an upload is refused like any other field of it, and nothing is appended.
    const bad = await upload({ notify: [{ webhook: 'not a url' }], steps: [{ command: 'x' }] });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([{ field: 'pipeline', code: 'line 1: "notify[0].webhook" must be an http or https URL' }]);
    expect(await s.notifyOf(build.id)).toHaveLength(4);
  });
});
