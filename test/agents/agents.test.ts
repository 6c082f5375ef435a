import listSample from '../fixtures/samples/agents__01_list-agents.json';
import { sha256Hex } from '../../src/security/keys';
import { auth, describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

describeEachDatabase('agents', (ctx) => {
  describe('registration tokens', () => {
    it('creates a token shown once and stores only its hash', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const res = await ctx().http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(token)).send({ description: 'CI fleet' });
      expect(res.status).toBe(201);
      expect(res.body).toMatchObject({ description: 'CI fleet', created_by: { id: user.id, email: user.email } });
      expect(res.body.created_at).toMatch(ISO);
      const rows = await ctx().services.db('agent_tokens').where({ organization_id: org.id });
      expect(rows).toHaveLength(1);
      expect(rows[0]?.token_hash).toBe(sha256Hex(res.body.token));
      expect(JSON.stringify(rows[0])).not.toContain(res.body.token);
    });

    it('needs write_agents and an administrator', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const readOnly = await ctx().givenToken(user, [org], ['read_agents']);
      const denied = await ctx().http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(readOnly)).send({ description: 'x' });
      expect(denied.status).toBe(403);
      expect(denied.body.message).toContain('write_agents');
      const member = await ctx().givenUser(org, 'member');
      const memberToken = await ctx().givenToken(member, [org]);
      expect((await ctx().http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(memberToken)).send({ description: 'x' })).status).toBe(403);
      const blank = await ctx().http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(token)).send({});
      expect(blank.status).toBe(422);
      expect(blank.body.errors).toEqual([expect.objectContaining({ field: 'description' })]);
      expect((await ctx().http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(token)).send({ description: 'x' })).status).toBe(201);
    });

    it('registers agents only with a known token', async () => {
      const bad = await ctx()
        .http()
        .post('/v3/register')
        .set(agentAuth('x'.repeat(43)))
        .send({ name: 'a' });
      expect(bad.status).toBe(401);
      expect(bad.headers['www-authenticate']).toContain('Token');
      expect((await ctx().http().post('/v3/register').send({ name: 'a' })).status).toBe(401);
      expect(
        (
          await ctx()
            .http()
            .get('/v3/ping')
            .set(agentAuth('y'.repeat(43)))
        ).status,
      ).toBe(401);
    });
  });

  describe('the agent API', () => {
    it('runs a job: register, connect, ping, accept, start, log chunks, finish, disconnect', async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - label: Test\n    command: make test\n    env:\n      FOO: bar\n');
      const build = await givenBuild(ctx(), org.slug, slug, token);
      const agent = await givenAgent(ctx(), reg, 'runner-1', ['queue=default', 'os=linux']);

      const ping = await ctx().http().get('/v3/ping').set(agentAuth(agent.token));
      expect(ping.status).toBe(200);
      expect(ping.body.action).toBe('idle');
      const job = ping.body.job;
      expect(job).toMatchObject({ id: build.jobs[0]!.id, state: 'assigned', command: 'make test' });
      expect(job.env).toMatchObject({
        FOO: 'bar',
        BUILDKITE: 'true',
        BUILDKITE_JOB_ID: job.id,
        BUILDKITE_BUILD_NUMBER: String(build.number),
        BUILDKITE_BRANCH: 'main',
        BUILDKITE_COMMIT: 'abc123',
        BUILDKITE_PIPELINE_SLUG: slug,
        BUILDKITE_ORGANIZATION_SLUG: org.slug,
        BUILDKITE_AGENT_NAME: 'runner-1',
      });
      // Polling again answers the same job: the agent holds it.
      expect((await ctx().http().get('/v3/ping').set(agentAuth(agent.token))).body.job.id).toBe(job.id);
      // Out of order: a job can't start before it is accepted.
      expect((await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(agent.token))).status).toBe(422);

      const accepted = await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(agent.token));
      expect(accepted.status).toBe(200);
      expect(accepted.body.state).toBe('accepted');
      const started = await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(agent.token));
      expect(started.body.state).toBe('running');
      expect(started.body.started_at).toMatch(ISO);

      const buildUrl = `/v2/organizations/${org.slug}/pipelines/${slug}/builds/${build.number}`;
      const running = await ctx().http().get(buildUrl).set(auth(token));
      expect(running.body.jobs[0]).toMatchObject({
        state: 'running',
        agent: { id: agent.id, name: 'runner-1', connection_state: 'connected', hostname: 'runner-1.local' },
      });
      const agentNow = await ctx().http().get(`/v2/organizations/${org.slug}/agents/${agent.id}`).set(auth(token));
      expect(agentNow.body.job).toMatchObject({ id: job.id, state: 'running', agent: null });

      for (const [sequence, offset, content] of [
        [1, 0, 'hello '],
        [2, 6, 'world\n'],
        [2, 6, 'world\n'],
      ] as const) {
        const chunk = await ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(agent.token)).send({ sequence, offset, content });
        expect(chunk.status).toBe(201);
      }
      const chunks = await ctx().services.db('job_log_chunks').where({ job_id: job.id }).orderBy('sequence');
      expect(chunks.map((c) => c.content).join('')).toBe('hello world\n');

      const finished = await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 });
      expect(finished.status).toBe(200);
      expect(finished.body).toMatchObject({ state: 'passed', exit_status: 0, soft_failed: false });
      expect(finished.body.finished_at).toMatch(ISO);
      expect((await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 })).status).toBe(422);

      const after = await ctx().http().get(buildUrl).set(auth(token));
      expect(after.body.jobs[0]).toMatchObject({ state: 'passed', exit_status: 0, agent: { id: agent.id } });
      const free = await ctx().http().get(`/v2/organizations/${org.slug}/agents/${agent.id}`).set(auth(token));
      expect(free.body.job).toBeNull();
      expect(free.body.last_job_finished_at).toBe(finished.body.finished_at);

      expect((await ctx().http().get('/v3/ping').set(agentAuth(agent.token))).body).toEqual({ action: 'idle', job: null });
      const bye = await ctx().http().post('/v3/disconnect').set(agentAuth(agent.token));
      expect(bye.body.connection_state).toBe('disconnected');
      expect((await ctx().http().get('/v3/ping').set(agentAuth(agent.token))).body).toEqual({ action: 'disconnect', job: null });
      expect((await ctx().http().post('/v3/heartbeat').set(agentAuth(agent.token))).status).toBe(422);
    });

    it('fails a job by exit status and soft-fails what soft_fail covers', async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: hard\n  - command: soft\n    soft_fail:\n      - exit_status: 3\n');
      await givenBuild(ctx(), org.slug, slug, token);
      const agent = await givenAgent(ctx(), reg, 'runner');
      const results: Record<string, unknown>[] = [];
      for (const exit of [1, 3]) {
        const job = (await ctx().http().get('/v3/ping').set(agentAuth(agent.token))).body.job;
        await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(agent.token)).expect(200);
        await ctx().http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(agent.token)).expect(200);
        results.push((await ctx().http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: exit })).body);
      }
      expect(results).toMatchObject([
        { command: 'hard', state: 'failed', exit_status: 1, soft_failed: false },
        { command: 'soft', state: 'failed', exit_status: 3, soft_failed: true },
      ]);
    });

    it("keeps an agent's job to that agent", async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: one\n');
      await givenBuild(ctx(), org.slug, slug, token);
      const a = await givenAgent(ctx(), reg, 'a');
      const b = await givenAgent(ctx(), reg, 'b');
      const job = (await ctx().http().get('/v3/ping').set(agentAuth(a.token))).body.job;
      expect((await ctx().http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(b.token))).status).toBe(404);
      expect((await ctx().http().post(`/v3/jobs/${job.id}/chunks`).set(agentAuth(b.token)).send({ sequence: 1, offset: 0, content: 'x' })).status).toBe(404);
      // An agent that leaves before accepting gives the job back.
      await ctx().http().post('/v3/disconnect').set(agentAuth(a.token)).expect(200);
      expect((await ctx().http().get('/v3/ping').set(agentAuth(b.token))).body.job).toMatchObject({ id: job.id, state: 'assigned' });
    });

    it('polling before connecting is refused', async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const res = await ctx().http().post('/v3/register').set(agentAuth(reg)).send({ name: 'new' });
      const ping = await ctx().http().get('/v3/ping').set(agentAuth(res.body.access_token));
      expect(ping.status).toBe(422);
    });
  });

  describe('dispatch', () => {
    it('matches agent_query_rules to tags: queues, other tags, wildcards, the default queue', async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const { slug } = await givenPipeline(
        ctx(),
        org.slug,
        token,
        [
          'steps:',
          '  - command: deploy',
          '    agents: { queue: deploy }',
          '  - command: linux-any-queue',
          '    agents: { queue: "*", os: linux }',
          '  - command: wildcard',
          '    agents: { queue: "build-*" }',
          '  - command: plain',
        ].join('\n'),
      );
      await givenBuild(ctx(), org.slug, slug, token);
      const take = async (tags: string[]) => {
        const agent = await givenAgent(ctx(), reg, tags.join(',') || 'untagged', tags);
        const job = (await ctx().http().get('/v3/ping').set(agentAuth(agent.token))).body.job;
        return job ? (job.command as string) : null;
      };
      expect(await take(['queue=other'])).toBeNull();
      expect(await take(['queue=deploy'])).toBe('deploy');
      expect(await take(['queue=nightly', 'os=linux'])).toBe('linux-any-queue');
      expect(await take(['queue=build-arm'])).toBe('wildcard');
      expect(await take(['os=mac'])).toBe('plain');
      expect(await take([])).toBeNull();
    });

    it('gives each job to exactly one agent when many poll at once', async () => {
      const { org, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const { slug } = await givenPipeline(ctx(), org.slug, token, 'steps:\n  - command: work\n    parallelism: 12\n');
      const build = await givenBuild(ctx(), org.slug, slug, token);
      const agents = await Promise.all(Array.from({ length: 16 }, (_, i) => givenAgent(ctx(), reg, `fleet-${i}`)));
      const polls = await Promise.all(agents.map((a) => ctx().http().get('/v3/ping').set(agentAuth(a.token))));
      const taken = polls.flatMap((p) => (p.body.job ? [p.body.job.id as string] : []));
      expect(taken).toHaveLength(12);
      expect(new Set(taken).size).toBe(12);
      expect(new Set(taken)).toEqual(new Set(build.jobs.map((j) => j.id)));
      const rows = await ctx().services.db('jobs').where({ build_id: build.id });
      expect(new Set(rows.map((r) => r.agent_id)).size).toBe(12);
    });
  });

  describe('REST', () => {
    it('lists and gets agents in the sample shape, filtered, paginated, within the organization', async () => {
      const { org, user, token } = await ctx().givenAdmin();
      const reg = await givenRegistrationToken(ctx(), org.slug, token);
      const a = await givenAgent(ctx(), reg, 'alpha', ['queue=deploy', 'os=linux']);
      await givenAgent(ctx(), reg, 'beta');
      const list = await ctx().http().get(`/v2/organizations/${org.slug}/agents`).set(auth(token));
      expect(list.status).toBe(200);
      expect(list.body.map((x: { name: string }) => x.name).sort()).toEqual(['alpha', 'beta']);
      const alpha = list.body.find((x: { name: string }) => x.name === 'alpha');
      // Every key of the documented example, plus the pause fields (empty: not paused; test/agents/pause-stop pauses).
      expect(Object.keys(alpha)).toEqual(expect.arrayContaining(Object.keys(listSample[0]!)));
      expect(alpha).toMatchObject({ paused: false, paused_at: null, paused_by: null, paused_note: null, paused_timeout_in_minutes: null });
      expect(alpha).toMatchObject({
        id: a.id,
        queue: 'deploy',
        meta_data: ['queue=deploy', 'os=linux'],
        connection_state: 'connected',
        os_id: 'linux',
        arch: 'amd64',
        version: '3.0.0',
        job: null,
      });
      // The creator is the user who made the registration token, as the documented example shows one.
      expect(alpha.creator).toMatchObject({ id: user.id, name: user.name, email: user.email });
      expect(alpha.connected_at).toMatch(ISO);
      expect(alpha.url).toBe(`http://windsock.test/v2/organizations/${org.slug}/agents/${a.id}`);
      const filtered = await ctx().http().get(`/v2/organizations/${org.slug}/agents?name=beta`).set(auth(token));
      expect(filtered.body.map((x: { name: string }) => x.name)).toEqual(['beta']);
      const paged = await ctx().http().get(`/v2/organizations/${org.slug}/agents?per_page=1`).set(auth(token));
      expect(paged.body).toHaveLength(1);
      expect(paged.headers.link).toContain('rel="next"');

      const one = await ctx().http().get(`/v2/organizations/${org.slug}/agents/${a.id}`).set(auth(token));
      expect(one.body).toEqual(alpha);
      const other = await ctx().givenAdmin();
      expect((await ctx().http().get(`/v2/organizations/${other.org.slug}/agents/${a.id}`).set(auth(other.token))).status).toBe(404);
      expect((await ctx().http().get(`/v2/organizations/${other.org.slug}/agents`).set(auth(other.token))).body).toEqual([]);
      const noScope = await ctx().givenToken(other.user, [other.org], ['read_builds']);
      expect((await ctx().http().get(`/v2/organizations/${other.org.slug}/agents`).set(auth(noScope))).status).toBe(403);
    });
  });
});
