/**
 * Rules: the REST operations (the docs' representation, pipelines named by UUID or slug,
 * validation, administrators only) and what they allow: a trigger step reaching a pipeline of
 * another cluster, and an agent's artifact search of another pipeline's build across clusters.
 */
import { auth, describeEachDatabase } from '../support/context';
import { agentAuth, givenAgent, givenRegistrationToken } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { givenArtifacts, startNextJob } from '../artifacts/helpers';
import sample from '../fixtures/samples/rules__01_get-a-rule.json';
import { factsWanted, RULE_VARIABLES, ruleConditionError } from '../../src/rules/policy';
import { STEP_BUILD_VARIABLES } from '../../src/pipelines/filter-condition';
import { stepConditionContext } from '../../src/builds/jobs/plan';

describe('rule variables', () => {
  it("offers every build variable of a step's if, as source.build.* (and target.build.* for artifacts), and nothing else", () => {
    const asCondition = (v: string) => (v.endsWith('.build.env') ? `${v}("X") == null` : `${v} == null`);
    for (const v of STEP_BUILD_VARIABLES) {
      expect([v, ruleConditionError('pipeline.trigger_build.pipeline', asCondition(`source.${v}`))]).toEqual([v, null]);
      expect([v, ruleConditionError('pipeline.artifacts_read.pipeline', asCondition(`target.${v}`))]).toEqual([v, null]);
      expect(ruleConditionError('pipeline.trigger_build.pipeline', asCondition(`target.${v}`))).toContain('unknown variable `target.build.');
    }
    // The old four and the others stay.
    expect(RULE_VARIABLES['pipeline.trigger_build.pipeline']).toEqual(
      expect.arrayContaining(['source.build.branch', 'source.build.commit', 'source.build.message', 'source.build.source', 'target.trigger.branch']),
    );
    expect(RULE_VARIABLES['pipeline.artifacts_read.pipeline']).toEqual(expect.arrayContaining(['target.build.source', 'source.request.query']));
    expect(ruleConditionError('pipeline.trigger_build.pipeline', 'source.build.nonsense == 1')).toContain('unknown variable `source.build.nonsense`');
    expect(ruleConditionError('pipeline.trigger_build.pipeline', 'source.build.env == 1')).toContain('`source.build.env` is a function');
    expect(ruleConditionError('pipeline.trigger_build.pipeline', 'build.branch == 1')).toContain(
      "names `build.branch`, which a pipeline.trigger_build.pipeline rule's",
    );
    // What a check reads for them: nothing more for the old four, the teams only when named.
    const wanted = (conditions: string[], side: 'source' | 'target' = 'source') => factsWanted('pipeline.artifacts_read.pipeline', [{ conditions }], side);
    expect(wanted(["source.build.branch == 'main' && source.build.source != 'api'", "target.build.tag == 'v1'"])).toBeNull();
    expect(wanted(["target.build.creator.teams includes 'core'"])).toBeNull();
    expect(wanted(["target.build.creator.teams includes 'core'"], 'target')).toEqual({ creatorTeams: true, env: false });
    expect(wanted(['source.build.tag == null || source.build.env("X") == "y"'])).toEqual({ creatorTeams: false, env: true });
    // Their values: what a step's if reads of a build (one source for both).
    const facts = stepConditionContext({
      build: {
        id: 'b',
        number: 1,
        branch: 'main',
        commit: 'abc',
        message: 'm',
        tag: null,
        source: 'api',
        pullRequest: null,
        triggeredFrom: null,
        rebuiltFrom: null,
        author: null,
        webhookEvent: null,
        creator: null,
      },
      pipeline: { id: 'p', name: 'P', slug: 'p', defaultBranch: 'main', repository: 'r', providerId: 'git' },
      organization: { id: 'o', slug: 'o' },
      creatorTeams: [],
      env: {},
    });
    for (const v of STEP_BUILD_VARIABLES.filter((name) => name !== 'build.env')) expect([v, facts.has(v)]).toEqual([v, true]);
  });
});

describeEachDatabase('rules', (ctx) => {
  const rulesPath = (org: { slug: string }) => `/v2/organizations/${org.slug}/rules`;

  async function setup() {
    const { org, user, token } = await ctx().givenAdmin();
    const pipeline = (name: string, configuration = 'steps:\n  - command: make\n', extra: Record<string, unknown> = {}) =>
      givenPipeline(ctx(), org, token, { name, configuration, ...extra });
    const cluster = async (name: string) =>
      (await ctx().http().post(`/v2/organizations/${org.slug}/clusters`).set(auth(token)).send({ name }).expect(201)).body.id as string;
    const createRule = (body: Record<string, unknown>, t = token) => ctx().http().post(rulesPath(org)).set(auth(t)).send(body);
    const moveTo = (slug: string, clusterId: string | null) =>
      ctx()
        .http()
        .patch(`/v2/organizations/${org.slug}/pipelines/${slug}`)
        .set(auth(token))
        .send({ cluster_id: clusterId ?? '' })
        .expect(200);
    return { org, user, token, pipeline, cluster, createRule, moveTo };
  }

  describe('CRUD', () => {
    it('creates, lists, gets and deletes a rule with the representation of the docs', async () => {
      const s = await setup();
      const ci = await s.pipeline('ci');
      const deploy = await s.pipeline('deploy');
      const res = await s.createRule({
        type: 'pipeline.trigger_build.pipeline',
        description: 'CI may deploy',
        value: { source_pipeline: ci.id, target_pipeline: 'deploy', conditions: ["source.build.branch == 'main'"] },
      });
      expect(res.status).toBe(201);
      const rule = res.body;
      for (const key of Object.keys(sample)) expect(rule).toHaveProperty(key);
      expect(rule).toMatchObject({
        organization_uuid: s.org.id,
        url: `http://windsock.test${rulesPath(s.org)}/${rule.uuid}`,
        type: 'pipeline.trigger_build.pipeline',
        description: 'CI may deploy',
        source_type: 'pipeline',
        source_uuid: ci.id,
        target_type: 'pipeline',
        target_uuid: deploy.id,
        effect: 'allow',
        action: 'trigger_build',
        value: { source_pipeline: ci.id, target_pipeline: deploy.id, conditions: ["source.build.branch == 'main'"] },
        created_by: { id: s.user.id },
      });
      expect(rule.graphql_id).toBe(Buffer.from(`Rule---${rule.uuid}`).toString('base64'));

      // The rules pages' spelling: `rule` for the type, slugs for both pipelines.
      const artifacts = await s.createRule({ rule: 'pipeline.artifacts_read.pipeline', value: { source_pipeline: 'deploy', target_pipeline: 'ci' } });
      expect(artifacts.status).toBe(201);
      expect(artifacts.body).toMatchObject({
        type: 'pipeline.artifacts_read.pipeline',
        action: 'artifacts_read',
        description: null,
        value: { conditions: [] },
      });

      const list = await ctx().http().get(rulesPath(s.org)).set(auth(s.token)).expect(200);
      expect(list.body.map((r: { uuid: string }) => r.uuid)).toEqual([artifacts.body.uuid, rule.uuid]);
      const page = await ctx()
        .http()
        .get(`${rulesPath(s.org)}?per_page=1`)
        .set(auth(s.token))
        .expect(200);
      expect(page.body).toHaveLength(1);
      expect(page.headers.link).toContain('rel="next"');

      expect(
        (
          await ctx()
            .http()
            .get(`${rulesPath(s.org)}/${rule.uuid}`)
            .set(auth(s.token))
            .expect(200)
        ).body,
      ).toEqual(rule);
      await ctx()
        .http()
        .delete(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(s.token))
        .expect(204);
      const gone = await ctx()
        .http()
        .get(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(s.token))
        .expect(404);
      expect(gone.body).toEqual({ message: 'No rule found' });
      await ctx()
        .http()
        .delete(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(s.token))
        .expect(404);
    });

    it('refuses what is wrong with a 422 naming the field', async () => {
      const s = await setup();
      const ci = await s.pipeline('ci');
      await s.pipeline('deploy');
      const other = await ctx().givenAdmin();
      const elsewhere = await givenPipeline(ctx(), other.org, other.token, { name: 'elsewhere', configuration: 'steps:\n  - command: x\n' });
      const cases: [Record<string, unknown>, string][] = [
        [{ value: { source_pipeline: 'ci', target_pipeline: 'deploy' } }, 'type'],
        [{ type: 'pipeline.nope.pipeline', value: { source_pipeline: 'ci', target_pipeline: 'deploy' } }, 'type'],
        [
          { type: 'pipeline.trigger_build.pipeline', rule: 'pipeline.artifacts_read.pipeline', value: { source_pipeline: 'ci', target_pipeline: 'deploy' } },
          'rule',
        ],
        [{ type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: 'missing', target_pipeline: 'deploy' } }, 'value.source_pipeline'],
        [{ type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: 'ci', target_pipeline: elsewhere.id } }, 'value.target_pipeline'],
        [
          { type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions: ['source.build.branch =='] } },
          'value.conditions[0]',
        ],
        [
          { type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions: ["target.build.branch == 'x'"] } },
          'value.conditions[0]',
        ],
        [
          {
            type: 'pipeline.trigger_build.pipeline',
            value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions: ["source.build.nonsense == 'x'"] },
          },
          'value.conditions[0]',
        ],
        [
          { type: 'pipeline.artifacts_read.pipeline', value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions: ['target.build.nonsense'] } },
          'value.conditions[0]',
        ],
        [{ type: 'pipeline.trigger_build.pipeline' }, 'value'],
      ];
      for (const [body, field] of cases) {
        const res = await s.createRule(body);
        expect([res.status, body]).toEqual([422, body]);
        expect(res.body.errors.map((e: { field: string }) => e.field)).toContain(field);
      }
      // Another organization's pipeline is refused exactly like one that does not exist.
      const body = (target: string) => ({ type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: 'ci', target_pipeline: target } });
      const theirs = await s.createRule(body(elsewhere.id));
      const unknown = '6f1f7a0e-0000-4000-8000-000000000000';
      expect(theirs.text.replaceAll(elsewhere.id, 'ID')).toBe((await s.createRule(body(unknown))).text.replaceAll(unknown, 'ID'));
      await s.createRule({ type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: ci.id, target_pipeline: 'deploy' } }).expect(201);
      // Another organization's rules are not found; a malformed uuid is not a 500.
      const mine = (await ctx().http().get(rulesPath(s.org)).set(auth(s.token)).expect(200)).body[0].uuid;
      await ctx()
        .http()
        .get(`${rulesPath(other.org)}/${mine}`)
        .set(auth(other.token))
        .expect(404);
      await ctx()
        .http()
        .delete(`${rulesPath(other.org)}/${mine}`)
        .set(auth(other.token))
        .expect(404);
      await ctx()
        .http()
        .get(`${rulesPath(s.org)}/not-a-uuid`)
        .set(auth(s.token))
        .expect(404);
    });

    it("accepts conditions over every variable a build has in a step's if, and still refuses unknown ones", async () => {
      const s = await setup();
      await s.pipeline('ci');
      await s.pipeline('deploy');
      const create = (type: string, conditions: string[]) => s.createRule({ type, value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions } });
      const trigger = 'pipeline.trigger_build.pipeline';
      const artifacts = 'pipeline.artifacts_read.pipeline';
      for (const [type, conditions] of [
        [trigger, ["source.build.creator.teams includes 'core'"]],
        [trigger, ['source.build.tag != null', 'source.build.pull_request.id == 42']],
        [trigger, ['source.build.env("DEPLOY") == "yes" && source.build.number == 1 || source.build.pull_request.labels includes "ok"']],
        [artifacts, ["target.build.creator.teams includes 'core' && source.build.author.email =~ /@example\\.com$/"]],
        [artifacts, ["target.build.env('BUILDKITE_TAG') == source.build.tag && source.request.query == 'dist/*'"]],
      ] as const) {
        const res = await create(type, [...conditions]);
        expect([res.status, conditions]).toEqual([201, conditions]);
        expect(res.body.value.conditions).toEqual(conditions);
      }
      const unknown = await create(trigger, ["source.build.nonsense == 'x'"]);
      expect(unknown.status).toBe(422);
      expect(unknown.body.errors).toEqual([{ field: 'value.conditions[0]', code: expect.stringContaining('unknown variable `source.build.nonsense`') }]);
      // A build's variables are the source build's only, in a trigger rule.
      expect((await create(trigger, ["target.build.creator.teams includes 'core'"])).status).toBe(422);
    });

    it('lets members read rules and only administrators write them; scopes read_rules and write_rules', async () => {
      const s = await setup();
      await s.pipeline('ci');
      await s.pipeline('deploy');
      const member = await ctx().givenUser(s.org, 'member');
      const memberToken = await ctx().givenToken(member, [s.org]);
      const body = { type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: 'ci', target_pipeline: 'deploy' } };
      expect((await s.createRule(body, memberToken)).status).toBe(403);
      const rule = (await s.createRule(body).expect(201)).body;
      await ctx()
        .http()
        .get(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(memberToken))
        .expect(200);
      await ctx()
        .http()
        .delete(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(memberToken))
        .expect(403);
      const readOnly = await ctx().givenToken(s.user, [s.org], ['read_rules']);
      await ctx().http().get(rulesPath(s.org)).set(auth(readOnly)).expect(200);
      const refused = await s.createRule(body, readOnly);
      expect(refused.status).toBe(403);
      expect(refused.body.message).toBe("Your access token doesn't have the write_rules scope");
      const noScope = await ctx().givenToken(s.user, [s.org], ['read_pipelines']);
      expect((await ctx().http().get(rulesPath(s.org)).set(auth(noScope))).body.message).toBe("Your access token doesn't have the read_rules scope");
    });

    it('goes with its pipelines: deleting one deletes its rules', async () => {
      const s = await setup();
      await s.pipeline('ci');
      await s.pipeline('deploy');
      const rule = (await s.createRule({ type: 'pipeline.trigger_build.pipeline', value: { source_pipeline: 'ci', target_pipeline: 'deploy' } }).expect(201))
        .body;
      await ctx().http().delete(`/v2/organizations/${s.org.slug}/pipelines/deploy`).set(auth(s.token)).expect(204);
      await ctx()
        .http()
        .get(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(s.token))
        .expect(404);
    });
  });

  describe('trigger steps across clusters', () => {
    const triggerJob = async (s: Awaited<ReturnType<typeof setup>>, slug: string, body: Record<string, unknown> = {}) => {
      const build = await givenBuild(ctx(), s.org, slug, s.token, { branch: 'main', ...body });
      const read = await ctx().http().get(`/v2/organizations/${s.org.slug}/pipelines/${slug}/builds/${build.number}`).set(auth(s.token)).expect(200);
      const job = read.body.jobs[0];
      const log = await ctx()
        .http()
        .get(`/v2/organizations/${s.org.slug}/pipelines/${slug}/builds/${build.number}/jobs/${job.id}/log`)
        .set(auth(s.token))
        .expect(200);
      return { job, log: log.body.content as string };
    };

    it('needs a rule to trigger a pipeline of another cluster, whose conditions must hold', async () => {
      const s = await setup();
      const blue = await s.cluster('Blue');
      const green = await s.cluster('Green');
      await s.pipeline('deploy', 'steps:\n  - command: ./deploy.sh\n', { cluster_id: green });
      await s.pipeline('ci', 'steps:\n  - trigger: deploy\n', { cluster_id: blue });

      // Same cluster: allowed by default.
      await s.pipeline('same', 'steps:\n  - command: x\n', { cluster_id: blue });
      await s.pipeline('ci-same', 'steps:\n  - trigger: same\n', { cluster_id: blue });
      expect((await triggerJob(s, 'ci-same')).job).toMatchObject({ state: 'running', triggered_build: { number: 1 } });

      // Another cluster and no rule: the trigger job fails and says why.
      const refused = await triggerJob(s, 'ci');
      expect(refused.job.state).toBe('failed');
      expect(refused.job.triggered_build).toBeFalsy();
      expect(refused.log).toContain(
        'The pipeline "ci" is not allowed to trigger a build of the pipeline "deploy": the two pipelines are in different clusters, and no pipeline.trigger_build.pipeline rule allows it',
      );

      // A rule whose condition does not hold: still refused, the condition named.
      const rule = (
        await s
          .createRule({
            type: 'pipeline.trigger_build.pipeline',
            value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions: ["source.build.branch == 'release'"] },
          })
          .expect(201)
      ).body;
      const guarded = await triggerJob(s, 'ci');
      expect(guarded.job.state).toBe('failed');
      expect(guarded.log).toContain("the conditions of the pipeline.trigger_build.pipeline rule were not met: `source.build.branch == 'release'`");

      // A rule that holds: the build is created in the other cluster.
      await ctx()
        .http()
        .delete(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(s.token))
        .expect(204);
      await s
        .createRule({
          type: 'pipeline.trigger_build.pipeline',
          value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions: ["source.build.branch == 'main' && target.trigger.commit == 'HEAD'"] },
        })
        .expect(201);
      const allowed = await triggerJob(s, 'ci');
      expect(allowed.job).toMatchObject({ state: 'running', triggered_build: { number: 1 } });
      // The rule is one way: deploy may not trigger ci.
      await s.pipeline('deploy-back', 'steps:\n  - trigger: ci\n', { cluster_id: green });
      expect((await triggerJob(s, 'deploy-back')).job.state).toBe('failed');
    });

    it("decides on the triggering build's other variables: its creator's teams, its env", async () => {
      const s = await setup();
      const blue = await s.cluster('Blue');
      const green = await s.cluster('Green');
      await s.pipeline('deploy', 'steps:\n  - command: ./deploy.sh\n', { cluster_id: green });
      await s.pipeline('ci', 'steps:\n  - trigger: deploy\n', { cluster_id: blue });
      const rule = (
        await s
          .createRule({
            type: 'pipeline.trigger_build.pipeline',
            value: { source_pipeline: 'ci', target_pipeline: 'deploy', conditions: ["source.build.creator.teams includes 'core'"] },
          })
          .expect(201)
      ).body;

      // The build's creator is in no team called core: refused, the condition named.
      const refused = await triggerJob(s, 'ci');
      expect(refused.job.state).toBe('failed');
      expect(refused.log).toContain("the conditions of the pipeline.trigger_build.pipeline rule were not met: `source.build.creator.teams includes 'core'`");
      // In another team still refused.
      await ctx().givenTeam(s.org, [s.user]);
      expect((await triggerJob(s, 'ci')).job.state).toBe('failed');

      // Once the creator is in the team core, allowed.
      const core = await ctx().services.orgs.createTeam({ organizationId: s.org.id, slug: 'core', name: 'Core' });
      await ctx().services.orgs.addTeamMember(core.id, s.user.id);
      expect((await triggerJob(s, 'ci')).job).toMatchObject({ state: 'running', triggered_build: { number: 1 } });

      // The build's env (its own, and the BUILDKITE_* ones), and the old fields beside them.
      await ctx()
        .http()
        .delete(`${rulesPath(s.org)}/${rule.uuid}`)
        .set(auth(s.token))
        .expect(204);
      await s
        .createRule({
          type: 'pipeline.trigger_build.pipeline',
          value: {
            source_pipeline: 'ci',
            target_pipeline: 'deploy',
            conditions: [
              'source.build.env("RELEASE") == "yes" && source.build.env("BUILDKITE_PIPELINE_SLUG") == "ci"',
              `source.build.creator.email == "${s.user.email}" && source.build.branch == 'main' && source.build.tag == null && source.build.pull_request.id == null`,
            ],
          },
        })
        .expect(201);
      expect((await triggerJob(s, 'ci')).job.state).toBe('failed');
      expect((await triggerJob(s, 'ci', { env: { RELEASE: 'no' } })).job.state).toBe('failed');
      expect((await triggerJob(s, 'ci', { env: { RELEASE: 'yes' } })).job).toMatchObject({ state: 'running', triggered_build: { number: 2 } });
    });
  });

  describe('artifact searches across clusters', () => {
    it("reads another pipeline's artifacts in the same cluster, and across clusters only where a rule allows it", async () => {
      const s = await setup();
      const reg = await givenRegistrationToken(ctx(), s.org.slug, s.token);
      const agent = await givenAgent(ctx(), reg, 'runner');
      await s.pipeline('assets');
      await s.pipeline('release');
      // A build of `assets` uploads an artifact, and finishes.
      const assetsBuild = await givenBuild(ctx(), s.org, 'assets', s.token, { branch: 'main' });
      const assetsJob = await startNextJob(ctx(), agent);
      await givenArtifacts(ctx(), agent, assetsJob.id, [{ path: 'dist/app.js', content: 'console.log(1)' }]);
      await ctx().http().put(`/v3/jobs/${assetsJob.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }).expect(200);
      // The agent now runs a job of `release`, which downloads `assets`' artifact (`--build`).
      await givenBuild(ctx(), s.org, 'release', s.token, { branch: 'main' });
      await startNextJob(ctx(), agent);
      const search = () => ctx().http().get(`/v3/builds/${assetsBuild.id}/artifacts/search`).query({ query: 'dist/*' }).set(agentAuth(agent.token));

      // Both in no cluster: one cluster, readable.
      expect((await search().expect(200)).body.map((a: { path: string }) => a.path)).toEqual(['dist/app.js']);

      // `assets` moves to a cluster: across clusters, refused without a rule.
      const vault = await s.cluster('Vault');
      await s.moveTo('assets', vault);
      const refused = await search().expect(403);
      expect(refused.body.message).toBe(
        'The pipeline "release" is not allowed to read the artifacts of the pipeline "assets": the two pipelines are in different clusters, and no pipeline.artifacts_read.pipeline rule allows it (source_pipeline "release", target_pipeline "assets").',
      );

      // A rule with a condition over the search: only the query it names.
      await s
        .createRule({
          type: 'pipeline.artifacts_read.pipeline',
          value: {
            source_pipeline: 'release',
            target_pipeline: 'assets',
            conditions: ["source.request.query == 'dist/*' && target.build.branch == source.build.branch"],
          },
        })
        .expect(201);
      expect((await search().expect(200)).body).toHaveLength(1);
      const other = await ctx().http().get(`/v3/builds/${assetsBuild.id}/artifacts/search`).query({ query: '*' }).set(agentAuth(agent.token)).expect(403);
      expect(other.body.message).toContain('the conditions of the pipeline.artifacts_read.pipeline rule were not met');
      // Another rule over the target build's creator's teams and the source build's env: it allows once the creator is in core.
      await s
        .createRule({
          type: 'pipeline.artifacts_read.pipeline',
          value: {
            source_pipeline: 'release',
            target_pipeline: 'assets',
            conditions: ["target.build.creator.teams includes 'core' && source.build.env('BUILDKITE_PIPELINE_SLUG') == 'release'"],
          },
        })
        .expect(201);
      await ctx().http().get(`/v3/builds/${assetsBuild.id}/artifacts/search`).query({ query: '*' }).set(agentAuth(agent.token)).expect(403);
      const core = await ctx().services.orgs.createTeam({ organizationId: s.org.id, slug: 'core', name: 'Core' });
      await ctx().services.orgs.addTeamMember(core.id, s.user.id);
      await ctx().http().get(`/v3/builds/${assetsBuild.id}/artifacts/search`).query({ query: '*' }).set(agentAuth(agent.token)).expect(200);

      // Another organization's build is not found at all.
      const stranger = await ctx().givenAdmin();
      const theirs = await givenPipeline(ctx(), stranger.org, stranger.token, { name: 'theirs', configuration: 'steps:\n  - command: x\n' });
      const theirBuild = await givenBuild(ctx(), stranger.org, theirs.slug, stranger.token);
      await ctx().http().get(`/v3/builds/${theirBuild.id}/artifacts/search`).set(agentAuth(agent.token)).expect(404);
    });
  });
});
