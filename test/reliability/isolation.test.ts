/**
 * Tenant isolation matrix (issue 7, item 1), generated from the spec: every operation with path
 * parameters is aimed at organization B's objects with organization A's token, once with all of
 * B's parameters and once per parameter with B's value among A's others. Each answer must be the
 * 404 a missing object of the same kind gets, byte for byte; B's rows must be identical before
 * and after; A's answers never name B's objects; B's ids inside A's bodies are refused like
 * unknown ids. The two operations outside /v2 (uploads with a suite token, webhook deliveries
 * with a URL token) get their own cases.
 */
import crypto from 'node:crypto';
import { auth, describeEachDatabase } from '../support/context';
import {
  BODIES,
  check,
  fillPath,
  givenTenant,
  missingParam,
  ownedRows,
  PARAM_KINDS,
  propertiesOf,
  send,
  specOperations,
  suiteAuth,
  type ParamKind,
  type Tenant,
  TENANT_SETUP_MS,
} from './spec-operations';

const operations = specOperations();

/** Request-body properties that carry the id of another object, per operation. */
const BODY_REFERENCES: Record<string, Record<string, (id: string) => unknown>> = {
  createPipeline: {
    teams: (id) => [id],
    team_uuids: (id) => [id],
    'teams[].id': (id) => [{ id, access_level: 'read_only' }],
    pipeline_template_uuid: (id) => id,
    cluster_id: (id) => id,
  },
  updatePipeline: {
    teams: (id) => [id],
    team_uuids: (id) => [id],
    'teams[].id': (id) => [{ id, access_level: 'read_only' }],
    pipeline_template_uuid: (id) => id,
    cluster_id: (id) => id,
  },
  createSuite: { team_ids: (id) => [id], teams_ids: (id) => [id] },
  createTeamMember: { user_id: (id) => id },
  createTeamPipeline: { pipeline_id: (id) => id },
  createTeamSuite: { suite_id: (id) => id },
  updateCluster: { default_queue_id: (id) => id },
  patchCluster: { default_queue_id: (id) => id },
  createClusterMaintainer: { team: (id) => id },
  // The fixtures' scope is some_teams: B's team in A's scope_uuids.
  createNotificationService: { scope_uuids: (id) => [id] },
  updateNotificationService: { scope_uuids: (id) => [id] },
  updateExecutionTags: { 'executions[].id': (id) => [{ id, tags: { 'mut.made': 'here' } }] },
  createInvitations: { teams: (id) => [{ id, role: 'member' }] },
  updatePipelineSettings: { default_cluster_id: (id) => id },
};
/** Reads whose answers name none of the organization's slugs: the object they are about is named instead. */
const ABOUT: Record<string, ParamKind> = {
  listTeams: 'team_id',
  getTeam: 'team_id',
  listTeamMembers: 'user_id',
  getTeamMember: 'user_id',
  listOrganizationMembers: 'user_id',
  getOrganizationMember: 'user_id',
  // A maintainer is documented as its user or team alone: A's maintainer is A's admin.
  listClusterMaintainers: 'user_id',
  getClusterMaintainer: 'user_id',
};
/** Which of B's objects a reference field is tried with (default: B's team). */
const REFERENCED: Record<string, (t: Tenant) => string> = {
  pipeline_template_uuid: (t) => t.params.template_uuid,
  user_id: (t) => t.admin.id,
  pipeline_id: (t) => t.pipeline.id,
  suite_id: (t) => t.suite.id,
  cluster_id: (t) => t.cluster.id,
  default_cluster_id: (t) => t.cluster.id,
  default_queue_id: (t) => t.cluster.queueId,
  executions: (t) => t.executionId,
};
/** Body properties whose names look like references but are not: each says why. */
const NOT_REFERENCES: Record<string, string> = {
  'createBuild.pull_request_id': "the provider's pull request number, not a Windsock object",
  'uploadPipeline.uuid': "the agent's own id for the upload (idempotency), not a Windsock object",
  'createArtifacts.id': "the agent's own id for the batch (idempotency), not a Windsock object",
  'registerAgent.machine_id': "the host's machine id (/etc/machine-id), not a Windsock object",
  'exportStep.build_id': "must be the build of the job the agent runs: any other build, its own organization's too, is a 404 (test/agents/real-agent-protocol)",
  'updateStep.build_id': 'as exportStep.build_id',
  'cancelStep.build_id': 'as exportStep.build_id',
  'updateStep.idempotency_uuid': "the agent's own id for the update (idempotency), not a Windsock object",
  'configureBuildExport.strategy_id': "an export strategy's name (s3, gcs), not a Windsock object",
};
const LOOKS_LIKE_REFERENCE = /(^|_)(ids?|uuids?)$|^teams$/;

describe('the isolation matrix covers the spec', () => {
  it('has a fixture for every operation and every path parameter', () => {
    const missingBodies = operations.filter((op) => !(op.operationId in BODIES) || (op.requestSchema && !BODIES[op.operationId]));
    expect(missingBodies.map((o) => o.operationId)).toEqual([]);
    const unknownParams = operations.flatMap((op) =>
      op.pathParams.filter((p) => !(PARAM_KINDS as readonly string[]).includes(p)).map((p) => `${op.operationId}.${p}`),
    );
    expect(unknownParams).toEqual([]);
    expect(Object.keys(BODIES).sort()).toEqual(operations.map((o) => o.operationId).sort());
  });

  it('knows every body property that may name another object', () => {
    const unclassified = operations.flatMap((op) =>
      Object.keys(op.requestSchema ? propertiesOf(op.requestSchema) : {})
        .filter((name) => LOOKS_LIKE_REFERENCE.test(name))
        .map((name) => `${op.operationId}.${name}`)
        .filter((n) => !(n in NOT_REFERENCES) && !(n.split('.')[1]! in (BODY_REFERENCES[n.split('.')[0]!] ?? {}))),
    );
    expect(unclassified).toEqual([]);
  });
});

describeEachDatabase('tenant isolation', (ctx) => {
  let a: Tenant;
  let b: Tenant;
  let before: Record<string, string[]>;
  let requests = 0;
  let matrixCases = 0;
  /** B's webhook token of a pipeline deleted since: it must be as unknown as one never issued. */
  let deletedToken: string;
  /** A user who is an admin of both organizations, with a token that reaches only A. */
  let memberOfBothToken: string;

  beforeAll(async () => {
    a = await givenTenant(ctx(), 'a', { builds: 1 });
    b = await givenTenant(ctx(), 'b', { builds: 2 });
    const gone = await ctx()
      .http()
      .post(`/v2/organizations/${b.org.slug}/pipelines`)
      .set(auth(b.token))
      .send({ name: 'Gone', repository: 'git@github.com:acme/gone.git', configuration: 'steps:\n  - command: x\n' });
    check(gone, 201, 'create pipeline');
    deletedToken = String(gone.body.provider.webhook_url).split('/').pop()!;
    check(await ctx().http().delete(`/v2/organizations/${b.org.slug}/pipelines/${gone.body.slug}`).set(auth(b.token)), 204, 'delete pipeline');
    const both = await ctx().givenUser(a.org, 'admin');
    await ctx().services.orgs.addMember(b.org.id, both.id, 'admin');
    memberOfBothToken = await ctx().givenToken(both, [a.org]);
    before = await ownedRows(ctx(), b.org.id);
  }, TENANT_SETUP_MS);

  afterAll(() => {
    process.stdout.write(
      `isolation [${ctx().kind}]: ${bearerWithParams.length} operations with path parameters, ${matrixCases} cross-tenant cases, ${requests} requests, ${Object.values(before ?? {}).flat().length} rows of B's compared\n`,
    );
  });

  const bearerWithParams = operations.filter((op) => op.auth === 'bearer' && op.pathParams.length > 0);

  it.each(bearerWithParams.map((op) => [op.operationId, op] as const))("%s with A's token on B's objects: 404 like a missing one", async (_id, op) => {
    const body = BODIES[op.operationId]?.(a);
    const cases: { name: string; params: Record<string, string>; missing: Record<string, string>; token?: string }[] = [
      { name: "all of B's", params: b.params, missing: { ...b.params, org_slug: missingParam('org_slug') } },
      // Membership is not reach: the token names the organizations it may act in.
      {
        name: "all of B's, token of a member of both reaching only A",
        params: b.params,
        missing: { ...b.params, org_slug: missingParam('org_slug') },
        token: memberOfBothToken,
      },
      ...op.pathParams
        .filter((p) => p !== 'org_slug')
        .map((p) => ({
          name: `B's ${p} in A's organization`,
          params: { ...a.params, [p]: b.params[p as ParamKind] },
          missing: { ...a.params, [p]: missingParam(p as ParamKind) },
        })),
    ];
    for (const c of cases) {
      matrixCases++;
      const res = await send(ctx(), op, fillPath(op, c.params), c.token ?? a.token, body);
      const ref = await send(ctx(), op, fillPath(op, c.missing), c.token ?? a.token, body);
      requests += 2;
      expect({ case: c.name, status: ref.status }).toEqual({ case: c.name, status: 404 });
      expect({ case: c.name, status: res.status, body: res.text, type: res.get('content-type') }).toEqual({
        case: c.name,
        status: 404,
        body: ref.text,
        type: ref.get('content-type'),
      });
    }
  });

  const reads = operations.filter((op) => op.auth === 'bearer' && op.method === 'get');
  /** Reads whose answer names no object of the organization, so it cannot be told to be A's by a name in it. */
  const NAMES_NO_OBJECT: Record<string, string> = {
    getOrganizationRateLimit: "counts only; test/organizations/small-endpoints shows they are the organization's own",
    getOrganizationRateLimitStatus: "as getOrganizationRateLimit (the same answer at the docs' spelling)",
    getPipelineWebhookSecret:
      "a secret only; test/pipelines/webhook-secret shows it is the pipeline's own, and B's webhook secret test below that B's does not sign A's deliveries",
    listRepositoryConnectionRepositories:
      "repositories only (names and URLs on the provider); test/repository-connections shows they are the organization's own pipelines', never another's",
  };

  it.each(reads.map((op) => [op.operationId, op] as const))("%s with A's token on A's objects never names B's", async (_id, op) => {
    // A's admin, and a member of both organizations whose token reaches only A.
    for (const token of [a.token, memberOfBothToken]) {
      const res = await send(ctx(), op, fillPath(op, a.params), token);
      requests++;
      // A download answers a 302 to the content's signed URL, which names the artifact.
      expect(res.status).toBe(op.operationId.startsWith('downloadArtifact') ? 302 : 200);
      // The answer is about A (the fixture is right), and nothing of B's is in it.
      if (op.pathParams.length && !(op.operationId in NAMES_NO_OBJECT))
        expect(res.text).toContain(
          op.pathParams.includes('run_id')
            ? a.params.run_id
            : res.status === 302
              ? a.params.artifact_id
              : ABOUT[op.operationId]
                ? a.params[ABOUT[op.operationId]!]
                : a.org.slug,
        );
      expect(b.identifiers.filter((id) => res.text.includes(id))).toEqual([]);
    }
  });

  it.each(
    Object.entries(BODY_REFERENCES).flatMap(([opId, fields]) => Object.entries(fields).map(([field, make]) => [`${opId} ${field}`, opId, make] as const)),
  )("%s: B's id in A's body is refused like an unknown id", async (_name, opId, make) => {
    const op = operations.find((o) => o.operationId === opId)!;
    const field = _name.split(' ')[1]!.replace('[].id', '');
    const unknown = crypto.randomUUID();
    // Only the field under test names teams: the fixture's own team list goes.
    const bodyWith = (value: unknown) => {
      const { teams: _t, team_ids: _i, ...rest } = BODIES[opId]!(a) as Record<string, unknown>;
      return { ...rest, [field]: value };
    };
    const bId = (REFERENCED[field] ?? ((t: Tenant) => t.team.id))(b);
    const res = await send(ctx(), op, fillPath(op, a.params), a.token, bodyWith(make(bId)));
    const ref = await send(ctx(), op, fillPath(op, a.params), a.token, bodyWith(make(unknown)));
    requests += 2;
    expect(ref.status).toBe(422);
    expect(res.status).toBe(422);
    expect(res.text.replaceAll(bId, 'ID')).toBe(ref.text.replaceAll(unknown, 'ID'));
  });

  it("uploads with A's suite token land in A's suite whatever the body names", async () => {
    const runs = await ctx().http().get(`/v2/analytics/organizations/${b.org.slug}/suites/${b.suite.slug}/runs`).set(auth(b.token));
    const bRunKey = b.params.build_id;
    expect(runs.body.map((r: { id: string }) => r.id)).toContain(b.params.run_id);
    const res = await ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(a.suiteToken))
      .send({
        format: 'json',
        // B's run key, and B's suite and organization named in fields the API does not know.
        run_env: { ci: 'generic', key: bRunKey, commit_sha: 'abc123' },
        suite_id: b.suite.id,
        suite_slug: b.suite.slug,
        organization_id: b.org.id,
        organization_slug: b.org.slug,
        data: [{ name: 'lands in A', result: 'failed' }],
      });
    requests += 2;
    expect(res.status).toBe(202);
    const aRuns = await ctx().http().get(`/v2/analytics/organizations/${a.org.slug}/suites/${a.suite.slug}/runs`).set(auth(a.token));
    requests++;
    expect(aRuns.body).toHaveLength(2);
    expect(aRuns.body.map((r: { id: string }) => r.id)).not.toContain(b.params.run_id);
    // A bearer token of B is not a suite token.
    const bearer = await ctx()
      .http()
      .post('/v1/uploads')
      .set(auth(b.token))
      .send({ format: 'json', run_env: { key: 'x' }, data: [] });
    requests++;
    expect(bearer.status).toBe(401);
  });

  it("deliveries to A's webhook URL build in A's pipeline only, whatever repository they name", async () => {
    const res = await ctx()
      .http()
      .post(`/deliver/${a.params.token}`)
      .set('X-GitHub-Event', 'push')
      .send({
        ref: 'refs/heads/main',
        after: 'abc123',
        head_commit: { id: 'abc123', message: 'Into A' },
        repository: { full_name: `acme/${b.pipeline.slug}`, clone_url: `https://github.com/acme/${b.pipeline.slug}.git`, id: b.pipeline.id },
        pipeline: b.pipeline.id,
        organization: b.org.slug,
      });
    requests++;
    expect(res.status).toBe(201);
    const built = await ctx().http().get(`/v2/organizations/${a.org.slug}/pipelines/${a.pipeline.slug}/builds`).set(auth(a.token));
    requests++;
    expect(built.body.map((x: { message: string }) => x.message)).toContain('Into A');
  });

  it("B's webhook secret does not sign deliveries to A's URL", async () => {
    const body = JSON.stringify({ zen: 'Signed by B.', hook_id: 2 });
    const sign = (secret: string) => `sha256=${crypto.createHmac('sha256', secret).update(body).digest('hex')}`;
    const deliver = (signature: string) =>
      ctx()
        .http()
        .post(`/deliver/${a.params.token}`)
        .set('X-GitHub-Event', 'ping')
        .set('X-Hub-Signature-256', signature)
        .set('Content-Type', 'application/json')
        .send(body);
    // Each pipeline's secret in force (the matrix may have rotated it), as its editors read it.
    const secretOf = async (tenant: Tenant) => {
      const res = await ctx().http().get(`/v2/organizations/${tenant.org.slug}/pipelines/${tenant.pipeline.slug}/webhook-secret`).set(auth(tenant.token));
      check(res, 200, 'read webhook secret');
      return res.body.secret as string;
    };
    const byB = await deliver(sign(await secretOf(b)));
    const byNobody = await deliver(sign(crypto.randomBytes(32).toString('hex')));
    const byA = await deliver(sign(await secretOf(a)));
    requests += 5;
    expect(byNobody.status).toBe(401);
    expect({ status: byB.status, body: byB.text }).toEqual({ status: 401, body: byNobody.text });
    expect(byA.status).toBe(200);
  });

  it("a deleted pipeline's webhook token is as unknown as one never issued", async () => {
    const op = operations.find((o) => o.operationId === 'deliverWebhook')!;
    const res = await send(ctx(), op, `/deliver/${deletedToken}`, undefined, BODIES.deliverWebhook!(b));
    const ref = await send(ctx(), op, `/deliver/${missingParam('token')}`, undefined, BODIES.deliverWebhook!(b));
    requests += 2;
    expect(ref.status).toBe(404);
    expect({ status: res.status, body: res.text }).toEqual({ status: 404, body: ref.text });
  });

  it("leaves every row of B's exactly as it was", async () => {
    const after = await ownedRows(ctx(), b.org.id);
    expect(Object.values(before).flat().length).toBeGreaterThan(15);
    expect(after).toEqual(before);
  });
});

describeEachDatabase('team isolation inside an organization', (ctx) => {
  let c: Tenant;
  let outsider: string;

  beforeAll(async () => {
    // Teams on: a member of none of the teams the pipeline and the suite belong to.
    c = await givenTenant(ctx(), 'c', { teamsEnabled: true });
    const member = await ctx().givenUser(c.org, 'member');
    await ctx().givenTeam(c.org, [member]);
    outsider = await ctx().givenToken(member, [c.org]);
  }, TENANT_SETUP_MS);

  const behindTeams = operations.filter((op) => op.auth === 'bearer' && (op.pathParams.includes('pipeline_slug') || op.pathParams.includes('suite_slug')));

  it.each(behindTeams.map((op) => [op.operationId, op] as const))("%s by a member outside the object's teams: 404 like a missing one", async (_id, op) => {
    const kind: ParamKind = op.pathParams.includes('pipeline_slug') ? 'pipeline_slug' : 'suite_slug';
    const body = BODIES[op.operationId]?.(c);
    const res = await send(ctx(), op, fillPath(op, c.params), outsider, body);
    const ref = await send(ctx(), op, fillPath(op, { ...c.params, [kind]: missingParam(kind) }), outsider, body);
    expect(ref.status).toBe(404);
    expect({ status: res.status, body: res.text, type: res.get('content-type') }).toEqual({ status: 404, body: ref.text, type: ref.get('content-type') });
  });

  /**
   * Objects of a pipeline reached without its slug (a job by its id, a build's tests by the
   * build's id): the same status, message and content type as a random id gets (issue 26: a
   * hidden job answered `No pipeline found` where a random one answered `No job found`).
   */
  const BY_OWN_ID: ParamKind[] = ['job_id', 'build_id'];
  const behindTeamsById = operations.filter(
    (op) =>
      op.auth === 'bearer' &&
      !op.pathParams.includes('pipeline_slug') &&
      !op.pathParams.includes('suite_slug') &&
      op.pathParams.some((p) => (BY_OWN_ID as string[]).includes(p)),
  );

  it("finds the operations that reach a pipeline's objects by their own ids", () => {
    expect(behindTeamsById.map((op) => op.operationId).sort()).toEqual(
      expect.arrayContaining(['listOrganizationJobAnnotations', 'reprioritizeOrganizationJob', 'listJobArtifactsByJobId', 'listBuildTests']),
    );
  });

  it.each(behindTeamsById.map((op) => [op.operationId, op] as const))(
    "%s by a member outside the pipeline's teams: exactly what a random id gets",
    async (_id, op) => {
      const kind = BY_OWN_ID.find((p) => op.pathParams.includes(p))!;
      const body = BODIES[op.operationId]?.(c);
      const res = await send(ctx(), op, fillPath(op, c.params), outsider, body);
      const ref = await send(ctx(), op, fillPath(op, { ...c.params, [kind]: missingParam(kind) }), outsider, body);
      expect(ref.status).toBe(404);
      expect({ status: res.status, body: res.text, type: res.get('content-type') }).toEqual({ status: 404, body: ref.text, type: ref.get('content-type') });
    },
  );
});

/**
 * The team dimension of the matrix: in a Teams-enabled organization a member reaches a pipeline
 * or a suite only through their teams' grants, at the grant's level. Every operation on a
 * pipeline's or a suite's path is sent by members whose teams hold each level: below the level
 * the operation needs, 403 and nothing written; at it, never a 403 or a 404. Admins reach all.
 */
const PIPELINE_LEVELS = ['read_only', 'build_and_read', 'manage_build_and_read'] as const;
const SUITE_LEVELS = ['read', 'edit'] as const;
/** Operations on a pipeline's path that change the pipeline itself (everything else that writes is a build's). */
/** Pipeline writes that change its settings (full access); a pipeline's schedules are settings, as in the real service. */
const EDITS_PIPELINE = [
  'updatePipeline',
  'deletePipeline',
  'archivePipeline',
  'unarchivePipeline',
  'addPipelineWebhook',
  // The webhook secret is a credential, shown (even read) only to those who may edit the pipeline.
  'getPipelineWebhookSecret',
  'rotatePipelineWebhookSecret',
  // GitHub webhook processing: the docs ask full access to the pipeline, to read it too.
  'getGithubWebhookProcessing',
  'enableGithubWebhookProcessing',
  'disableGithubWebhookProcessing',
  'createPipelineSchedule',
  'updatePipelineSchedule',
  'patchPipelineSchedule',
  'deletePipelineSchedule',
  // A pipeline's triggers are its settings too (the docs: Full Access to the pipeline), their deliveries with them.
  'listPipelineTriggers',
  'createPipelineTrigger',
  'getPipelineTrigger',
  'updatePipelineTrigger',
  'deletePipelineTrigger',
  'listPipelineTriggerDeliveries',
  'getPipelineTriggerDelivery',
  'getPipelineTriggerDeliveryRequest',
];

/** Reads sent with POST (a lookup with a body) or PUT (the skipped list as the docs show it): a team with read access may make them. */
const READS_BY_POST = ['findTest', 'listSkippedTestsByPut'];

function levelNeeded(op: { operationId: string; method: string; pathParams: string[] }): string {
  const onPipeline = op.pathParams.includes('pipeline_slug');
  if (EDITS_PIPELINE.includes(op.operationId)) return 'manage_build_and_read';
  if (op.method === 'get' || READS_BY_POST.includes(op.operationId)) return onPipeline ? 'read_only' : 'read';
  if (!onPipeline) return 'edit';
  return EDITS_PIPELINE.includes(op.operationId) ? 'manage_build_and_read' : 'build_and_read';
}

describeEachDatabase('team access levels inside an organization', (ctx) => {
  let c: Tenant;
  const tokens: Record<string, string> = {};
  let before: Record<string, string[]>;

  beforeAll(async () => {
    c = await givenTenant(ctx(), 'levels', { teamsEnabled: true });
    const base = `/v2/organizations/${c.org.slug}/teams`;
    for (const level of [...PIPELINE_LEVELS, ...SUITE_LEVELS]) {
      const member = await ctx().givenUser(c.org, 'member');
      const team = await ctx()
        .http()
        .post(base)
        .set(auth(c.token))
        .send({ name: `Level ${level}` });
      check(team, 201, 'create team');
      check(await ctx().http().post(`${base}/${team.body.id}/members`).set(auth(c.token)).send({ user_id: member.id }), 201, 'add member');
      const grant = (PIPELINE_LEVELS as readonly string[]).includes(level)
        ? ctx().http().post(`${base}/${team.body.id}/pipelines`).set(auth(c.token)).send({ pipeline_id: c.pipeline.id, access_level: level })
        : ctx()
            .http()
            .post(`${base}/${team.body.id}/suites`)
            .set(auth(c.token))
            .send({ suite_id: c.suite.id, access_level: [level] });
      check(await grant, 201, 'grant');
      tokens[level] = await ctx().givenToken(member, [c.org]);
    }
    before = await ownedRows(ctx(), c.org.id);
  }, TENANT_SETUP_MS);

  const behindTeams = operations.filter((op) => op.auth === 'bearer' && (op.pathParams.includes('pipeline_slug') || op.pathParams.includes('suite_slug')));
  const below = behindTeams.flatMap((op) => {
    const levels: readonly string[] = op.pathParams.includes('pipeline_slug') ? PIPELINE_LEVELS : SUITE_LEVELS;
    return levels.slice(0, levels.indexOf(levelNeeded(op))).map((level) => [op.operationId, level, op] as const);
  });

  it.each(below)('%s by a member whose team has %s: 403, nothing written', async (_id, level, op) => {
    const res = await send(ctx(), op, fillPath(op, c.params), tokens[level], BODIES[op.operationId]?.(c));
    expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: { message: 'Forbidden' } });
  });

  it.each(behindTeams.filter((op) => op.method === 'get').map((op) => [op.operationId, op] as const))('%s by an admin in no team: allowed', async (_id, op) => {
    const res = await send(ctx(), op, fillPath(op, c.params), c.token);
    expect({ status: res.status, ok: res.status < 400 }).toEqual({ status: res.status, ok: true });
  });

  it('lists show a member exactly what their teams reach', async () => {
    const base = `/v2/organizations/${c.org.slug}`;
    for (const [level, token] of Object.entries(tokens)) {
      const onPipeline = (PIPELINE_LEVELS as readonly string[]).includes(level);
      const pipelines = await ctx().http().get(`${base}/pipelines`).set(auth(token));
      const builds = await ctx().http().get(`${base}/builds`).set(auth(token));
      const suites = await ctx().http().get(`/v2/analytics/organizations/${c.org.slug}/suites`).set(auth(token));
      expect({
        level,
        pipelines: pipelines.body.map((p: { id: string }) => p.id),
        builds: builds.body.length > 0,
        suites: suites.body.map((x: { id: string }) => x.id),
      }).toEqual({ level, pipelines: onPipeline ? [c.pipeline.id] : [], builds: onPipeline, suites: onPipeline ? [] : [c.suite.id] });
    }
  });

  it('the refused writes left every row as it was', async () => {
    expect(below.length).toBeGreaterThan(20);
    const { access_tokens: _a, access_token_organizations: _o, ...after } = await ownedRows(ctx(), c.org.id);
    const { access_tokens: _b, access_token_organizations: _p, ...was } = before;
    expect(after).toEqual(was);
  });

  // Deletions of the pipeline and the suite go last, so every other case finds them.
  const last = (op: { operationId: string }) => (['deletePipeline', 'deleteSuite'].includes(op.operationId) ? 2 : op.operationId.startsWith('delete') ? 1 : 0);
  const atLevel = [...behindTeams].sort((x, y) => last(x) - last(y)).map((op) => [op.operationId, levelNeeded(op), op] as const);

  /** Deletions that take an object other cases also name get one of their own (the two annotation routes reach the same annotation). */
  const freshAnnotation = async (): Promise<Partial<Record<ParamKind, string>>> => {
    const made = await ctx()
      .http()
      .post(`/v2/organizations/${c.org.slug}/pipelines/${c.params.pipeline_slug}/builds/${c.params.build_number}/jobs/${c.params.job_id}/annotations`)
      .set(auth(c.token))
      .send({ body: 'to delete', context: `delete-${crypto.randomUUID()}` });
    check(made, 201, 'create annotation');
    return { annotation_id: made.body.id as string };
  };
  const OWN_OBJECT: Record<string, () => Promise<Partial<Record<ParamKind, string>>>> = {
    deleteBuildAnnotation: freshAnnotation,
    deleteJobAnnotation: freshAnnotation,
  };

  it.each(atLevel)('%s by a member whose team has %s: allowed', async (_id, level, op) => {
    const params = { ...c.params, ...(await (OWN_OBJECT[op.operationId]?.() ?? {})) };
    const res = await send(ctx(), op, fillPath(op, params), tokens[level], BODIES[op.operationId]?.(c));
    expect({ status: res.status, forbiddenOrMissing: [403, 404].includes(res.status) }).toEqual({ status: res.status, forbiddenOrMissing: false });
    expect(res.status).toBeLessThan(500);
  });
});
