/**
 * A pipeline's `default_command_step_timeout` and `maximum_command_step_timeout` (issue 12 item
 * 3), the real API's names: stored, returned and applied to the command jobs of its builds as the
 * build timeouts documentation orders them (the step's own timeout, else the pipeline default;
 * the maximum caps either, and applies when neither is set).
 */
import { commandTimeout } from '../../src/builds/jobs/plan';
import { auth, describeEachDatabase } from '../support/context';
import { acceptAndStart, takeNextJob, agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';

describe('commandTimeout', () => {
  it('takes the step timeout, else the default, capped by the maximum', () => {
    expect(commandTimeout(null, undefined)).toBeNull();
    expect(commandTimeout(30, undefined)).toBe(30);
    expect(commandTimeout(null, { defaultMinutes: 10, maximumMinutes: null })).toBe(10);
    expect(commandTimeout(30, { defaultMinutes: 10, maximumMinutes: null })).toBe(30);
    expect(commandTimeout(null, { defaultMinutes: null, maximumMinutes: 60 })).toBe(60);
    expect(commandTimeout(90, { defaultMinutes: 10, maximumMinutes: 60 })).toBe(60);
    expect(commandTimeout(20, { defaultMinutes: 10, maximumMinutes: 60 })).toBe(20);
    expect(commandTimeout(null, { defaultMinutes: 10, maximumMinutes: 60 })).toBe(10);
  });
});

describeEachDatabase('pipeline step timeouts', (ctx) => {
  const configuration = [
    'steps:',
    '  - command: own',
    '    timeout_in_minutes: 90',
    '  - command: short',
    '    timeout_in_minutes: 5',
    '  - command: none',
    '',
  ].join('\n');

  it('stores and returns them on create, get, list and update; null clears them', async () => {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const created = await ctx()
      .http()
      .post(base)
      .set(auth(token))
      .send({ name: 'Timeouts', repository: 'git@github.com:acme/t.git', configuration, default_command_step_timeout: 10, maximum_command_step_timeout: 60 })
      .expect(201);
    expect(created.body).toMatchObject({ default_command_step_timeout: 10, maximum_command_step_timeout: 60 });
    const got = await ctx().http().get(`${base}/timeouts`).set(auth(token)).expect(200);
    expect(got.body).toMatchObject({ default_command_step_timeout: 10, maximum_command_step_timeout: 60 });
    const listed = await ctx().http().get(base).set(auth(token)).expect(200);
    expect(listed.body[0]).toMatchObject({ default_command_step_timeout: 10, maximum_command_step_timeout: 60 });
    const updated = await ctx().http().patch(`${base}/timeouts`).set(auth(token)).send({ default_command_step_timeout: 20 }).expect(200);
    expect(updated.body).toMatchObject({ default_command_step_timeout: 20, maximum_command_step_timeout: 60 });
    const cleared = await ctx().http().patch(`${base}/timeouts`).set(auth(token)).send({ maximum_command_step_timeout: null }).expect(200);
    expect(cleared.body).toMatchObject({ default_command_step_timeout: 20, maximum_command_step_timeout: null });
  });

  it('refuses a default above the maximum, and values that are not whole minutes, naming the field', async () => {
    const { org, token } = await ctx().givenAdmin();
    const body = { name: 'Bad timeouts', repository: 'git@github.com:acme/t.git', configuration };
    const cases: [Record<string, unknown>, { field: string; code: string }][] = [
      [
        { default_command_step_timeout: 61, maximum_command_step_timeout: 60 },
        { field: 'default_command_step_timeout', code: 'must not be greater than maximum_command_step_timeout (60)' },
      ],
      [{ default_command_step_timeout: 0 }, { field: 'default_command_step_timeout', code: 'must be at least 1' }],
      [{ maximum_command_step_timeout: 'ten' }, { field: 'maximum_command_step_timeout', code: 'must be a whole number or null' }],
    ];
    for (const [extra, error] of cases) {
      const res = await ctx()
        .http()
        .post(`/v2/organizations/${org.slug}/pipelines`)
        .set(auth(token))
        .send({ ...body, ...extra });
      expect({ extra, status: res.status, errors: res.body.errors }).toEqual({ extra, status: 422, errors: [error] });
    }
  });

  it("applies them to a build's command jobs: what the agent is given as timeout_in_minutes", async () => {
    const { org, token } = await ctx().givenAdmin();
    await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({ name: 'Applied', repository: 'git@github.com:acme/t.git', configuration, default_command_step_timeout: 10, maximum_command_step_timeout: 60 })
      .expect(201);
    await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/applied/builds`).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    const agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'timer');
    const seen: Record<string, number | null> = {};
    for (let i = 0; i < 3; i++) {
      const job = (await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body.job as {
        id: string;
        command: string;
        timeout_in_minutes: number | null;
      };
      seen[job.command] = job.timeout_in_minutes;
      await acceptAndStart(ctx(), agent.token, job.id);
      await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
    }
    expect(seen).toEqual({ own: 60, short: 5, none: 10 });
  });

  it('applies them to steps a running job uploads', async () => {
    const { org, token } = await ctx().givenAdmin();
    await ctx()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(token))
      .send({
        name: 'Uploads',
        repository: 'git@github.com:acme/t.git',
        configuration: 'steps:\n  - command: buildkite-agent pipeline upload\n',
        default_command_step_timeout: 7,
        maximum_command_step_timeout: 30,
      })
      .expect(201);
    await ctx().http().post(`/v2/organizations/${org.slug}/pipelines/uploads/builds`).set(auth(token)).send({ commit: 'HEAD', branch: 'main' }).expect(201);
    const agent = await givenAgent(ctx(), await givenRegistrationToken(ctx(), org.slug, token), 'uploader');
    const uploader = await takeNextJob(ctx(), agent.token);
    const pipeline = 'steps:\n  - command: uploaded\n  - command: long\n    timeout_in_minutes: 99\n';
    const up = await ctx().http().post(`/v3/jobs/${uploader.id}/pipelines`).set(agentAuth(agent.token)).send({ pipeline });
    expect(up.status).toBeLessThan(300);
    await ctx().http().put(`/v3/jobs/${uploader.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
    const seen: Record<string, number | null> = {};
    for (let i = 0; i < 2; i++) {
      const job = (await ctx().http().get('/v3/ping').set(agentAuth(agent.token)).expect(200)).body.job as {
        id: string;
        command: string;
        timeout_in_minutes: number | null;
      };
      seen[job.command] = job.timeout_in_minutes;
      await acceptAndStart(ctx(), agent.token, job.id);
      await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
    }
    expect(seen).toEqual({ uploaded: 7, long: 30 });
  });
});
