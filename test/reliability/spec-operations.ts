/**
 * The operations of the contract, read from the parsed spec (not a hand list), and a fixture
 * per path parameter kind: a tenant is an organization with one object of every kind the paths
 * name (pipeline, builds, suite, run, test, webhook token), so every operation can be aimed at
 * one tenant's objects with another tenant's token. Shared by the isolation, scope,
 * mass-assignment and secrets matrices.
 */
import crypto from 'node:crypto';
import { loadSpec } from '../../src/spec';
import { OutboxRepository } from '../../src/notifications/repository';
import { auth, type TestContext } from '../support/context';
import type { Organization, User } from '../../src/core/identity';

export type Schema = Record<string, unknown>;
type Doc = { paths: Record<string, Record<string, unknown>>; security?: Record<string, string[]>[] };

export interface SpecOperation {
  operationId: string;
  method: 'get' | 'put' | 'post' | 'delete' | 'patch';
  /** The spec's template, e.g. /v2/organizations/{org_slug}/pipelines */
  path: string;
  pathParams: string[];
  auth: 'bearer' | 'suiteToken' | 'agentToken' | 'none';
  /** The role names of the bearerAuth requirement: the scopes the token needs. */
  scopes: string[];
  /** The application/json request body schema, $refs resolved at the top. */
  requestSchema?: Schema;
  /** The schema of the first 2xx JSON response, $refs resolved at the top. */
  responseSchema?: Schema;
}

const METHODS = ['get', 'put', 'post', 'delete', 'patch'] as const;

export function specDoc(): Doc {
  return loadSpec().doc as unknown as Doc;
}

/** Follows `$ref`s (local ones only, as the spec has). */
export function deref(schema: unknown): Schema {
  let s = schema as Schema;
  while (s && typeof s.$ref === 'string') {
    s = (s.$ref as string)
      .replace(/^#\//, '')
      .split('/')
      .reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], specDoc()) as Schema;
  }
  return s;
}

/** Every property a schema declares, through allOf/$ref, with the schema of each. */
export function propertiesOf(schema: unknown): Record<string, Schema> {
  const s = deref(schema);
  const out: Record<string, Schema> = {};
  for (const part of (s.allOf as unknown[] | undefined) ?? []) Object.assign(out, propertiesOf(part));
  // A $ref's siblings (readOnly, description) belong to the property, not to the schema it names.
  for (const [k, v] of Object.entries((s.properties as Record<string, Schema> | undefined) ?? {})) {
    const { $ref: _ref, ...siblings } = v;
    out[k] = { ...deref(v), ...siblings };
  }
  return out;
}

export function specOperations(): SpecOperation[] {
  const doc = specDoc();
  const ops: SpecOperation[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const method of METHODS) {
      const op = item[method] as Record<string, unknown> | undefined;
      if (!op) continue;
      const security = (op.security as Record<string, string[]>[] | undefined) ?? doc.security ?? [];
      const bearer = security.find((s) => 'bearerAuth' in s);
      const params = [...((item.parameters as unknown[]) ?? []), ...((op.parameters as unknown[]) ?? [])].map(deref);
      const body = (op.requestBody as Schema | undefined)?.content as Record<string, { schema: unknown }> | undefined;
      const responses = Object.entries((op.responses as Record<string, unknown>) ?? {}).filter(([status]) => status.startsWith('2'));
      const json = responses
        .map(([, r]) => (deref(r).content as Record<string, { schema: unknown }> | undefined)?.['application/json']?.schema)
        .find((s) => s !== undefined);
      ops.push({
        operationId: String(op.operationId),
        method,
        path,
        pathParams: params.filter((p) => p.in === 'path').map((p) => String(p.name)),
        auth: bearer ? 'bearer' : security.some((s) => 'suiteToken' in s) ? 'suiteToken' : security.some((s) => 'agentToken' in s) ? 'agentToken' : 'none',
        scopes: bearer ? (bearer.bearerAuth ?? []) : [],
        requestSchema: body?.['application/json'] ? deref(body['application/json'].schema) : undefined,
        responseSchema: json ? deref(json) : undefined,
      });
    }
  }
  return ops;
}

/** The id of the build's newest step upload (a tenant's last build has one). */
async function stepUploadOf(ctx: TestContext, base: string, pipelineSlug: string, number: number, token: string): Promise<string> {
  const res = await ctx.http().get(`${base}/pipelines/${pipelineSlug}/builds/${number}/step-uploads`).set(auth(token));
  check(res, 200, 'list step uploads');
  return (res.body.items as { uuid: string }[])[0]?.uuid ?? crypto.randomUUID();
}

/** The path parameter kinds a tenant has a fixture for. */
export const PARAM_KINDS = [
  'org_slug',
  'pipeline_slug',
  'build_number',
  'suite_slug',
  'run_id',
  'test_id',
  'token',
  'agent_id',
  'job_id',
  'annotation_id',
  'context',
  'artifact_id',
  'build_id',
  'template_uuid',
  'schedule_id',
  'team_id',
  'user_id',
  'pipeline_id',
  'suite_id',
  'cluster_id',
  'queue_id',
  'token_id',
  'maintainer_id',
  'secret_id',
  'service_id',
  'delivery_id',
  'step_id_or_key',
  'step_upload_id',
  'event_uuid',
  'invitation_id',
  'rule_uuid',
  'trigger_id',
  'trigger_delivery_id',
  'connection_id',
] as const;
export type ParamKind = (typeof PARAM_KINDS)[number];
export type Params = Record<ParamKind, string>;

/** A value of each kind that names nothing. */
export function missingParam(kind: ParamKind): string {
  const r = crypto.randomBytes(4).toString('hex');
  switch (kind) {
    case 'build_number':
      return '987654';
    case 'run_id':
    case 'test_id':
    case 'build_id':
    case 'agent_id':
    case 'job_id':
    case 'annotation_id':
    case 'artifact_id':
    case 'template_uuid':
    case 'schedule_id':
    case 'team_id':
    case 'user_id':
    case 'pipeline_id':
    case 'suite_id':
    case 'cluster_id':
    case 'queue_id':
    case 'token_id':
    case 'maintainer_id':
    case 'secret_id':
    case 'service_id':
    case 'delivery_id':
    case 'step_id_or_key':
    case 'step_upload_id':
    case 'event_uuid':
    case 'invitation_id':
    case 'rule_uuid':
    case 'trigger_id':
    case 'trigger_delivery_id':
    case 'connection_id':
      return crypto.randomUUID();
    case 'token':
      return crypto.randomBytes(32).toString('base64url');
    default:
      return `missing-${kind.replace('_slug', '')}-${r}`;
  }
}

export function fillPath(op: SpecOperation, params: Record<string, string>): string {
  return op.path.replace(/\{([^}]+)\}/g, (_, name: string) => {
    const v = params[name];
    if (v === undefined) throw new Error(`${op.operationId}: no value for path parameter ${name}`);
    return encodeURIComponent(v);
  });
}

export interface Tenant {
  label: string;
  org: Organization;
  admin: User;
  /** The admin's token with every scope. */
  token: string;
  params: Params;
  team: { id: string; slug: string };
  pipeline: { id: string; slug: string; webhook_url: string };
  builds: { id: string; number: number }[];
  suite: { id: string; slug: string };
  suiteToken: string;
  /** A failed execution of the suite's run (the execution tags API names executions by id). */
  executionId: string;
  /** The scope and name of that execution's test (what find looks a test up by). */
  test: { scope: string; name: string };
  /** The organization's agent registration token, and a connected agent with its access token. */
  agentRegistrationToken: string;
  agent: { id: string; token: string };
  /** A cluster with its default queue and an agent token, and an agent registered with that token. */
  cluster: {
    id: string;
    queueId: string;
    tokenId: string;
    token: string;
    agent: { id: string; token: string };
    maintainerId: string;
    secretId: string;
    secretValue: string;
  };
  /** A Slack notification service scoped to the tenant's team, with its secret incoming-webhook URL. */
  notificationService: { id: string; slackUrl: string };
  /** The pipeline trigger's plaintext token (its endpoint URL's last segment), shown once at creation. */
  pipelineTriggerToken: string;
  /** Every identifier of this tenant's objects: none may show up in another tenant's answers. */
  identifiers: string[];
}

export function check(res: { status: number; body: unknown }, status: number, what: string): void {
  if (res.status !== status) throw new Error(`${what}: expected ${status}, got ${res.status} ${JSON.stringify(res.body)}`);
}

export const suiteAuth = (apiToken: string) => ({ Authorization: `Token token="${apiToken}"` });
export const agentAuth = (agentToken: string) => ({ Authorization: `Token ${agentToken}` });

/**
 * An organization with an admin, a team, a pipeline with `builds` builds, a suite with one run
 * holding a passed and a flaky test, and a connected agent that ran every job (passed, with a
 * log): one object behind every path parameter of the spec.
 */
export async function givenTenant(ctx: TestContext, label: string, opts: { builds?: number; teamsEnabled?: boolean } = {}): Promise<Tenant> {
  const tag = `${label}-${crypto.randomBytes(3).toString('hex')}`;
  const org = await ctx.givenOrg({ teamsEnabled: opts.teamsEnabled, name: `Org ${tag}` });
  const admin = await ctx.givenUser(org, 'admin');
  const token = await ctx.givenToken(admin, [org]);
  const team = await ctx.givenTeam(org, [admin]);
  const base = `/v2/organizations/${org.slug}`;
  const p = await ctx
    .http()
    .post(`${base}/pipelines`)
    .set(auth(token))
    .send({ name: `Pipeline ${tag}`, repository: `git@github.com:acme/${tag}.git`, configuration: 'steps:\n  - command: make test\n', teams: [team.id] });
  check(p, 201, 'create pipeline');
  const builds: { id: string; number: number; jobIds: string[]; stepIds: string[] }[] = [];
  for (let i = 0; i < (opts.builds ?? 1); i++) {
    const b = await ctx
      .http()
      .post(`${base}/pipelines/${p.body.slug}/builds`)
      .set(auth(token))
      .send({ commit: 'HEAD', branch: 'main', message: `Build ${tag}` });
    check(b, 201, 'create build');
    builds.push({
      id: b.body.id,
      number: b.body.number,
      jobIds: (b.body.jobs as { id: string }[]).map((j) => j.id),
      stepIds: (b.body.jobs as { step?: { id: string } }[]).map((j) => j.step?.id ?? crypto.randomUUID()),
    });
  }
  const s = await ctx
    .http()
    .post(`/v2/analytics/organizations/${org.slug}/suites`)
    .set(auth(token))
    .send({ name: `Suite ${tag}`, show_api_token: true, team_ids: [team.id] });
  check(s, 201, 'create suite');
  const suiteToken = s.body.api_token as string;
  const result = (name: string, outcome: string) => ({
    id: crypto.randomUUID(),
    scope: `Scope ${tag}`,
    name: `${name} ${tag}`,
    location: `./spec/${tag}_spec.rb:1`,
    result: outcome,
    ...(outcome === 'failed' ? { failure_reason: 'expected true' } : {}),
    history: { duration: 0.1 },
  });
  const up = await ctx
    .http()
    .post('/v1/uploads')
    .set(suiteAuth(suiteToken))
    .send({
      format: 'json',
      // A Buildkite run of the newest build (a build's tests and its test_engine show it).
      run_env: builds.length
        ? { ci: 'buildkite', key: builds[builds.length - 1]!.id, branch: 'main', commit_sha: 'abc123' }
        : { ci: 'generic', key: `run-${tag}`, branch: 'main', commit_sha: 'abc123' },
      data: [result('passes', 'passed'), result('fails', 'failed'), result('fails', 'passed')],
    });
  check(up, 202, 'upload');
  const suiteBase = `/v2/analytics/organizations/${org.slug}/suites/${s.body.slug}`;
  const runs = await ctx.http().get(`${suiteBase}/runs`).set(auth(token));
  check(runs, 200, 'list runs');
  const runId = runs.body[0].id as string;
  const failed = await ctx.http().get(`${suiteBase}/runs/${runId}/failed_executions`).set(auth(token));
  check(failed, 200, 'failed executions');
  const testId = failed.body[0].test_id as string;
  const executionId = failed.body[0].execution_id as string;
  // One test muted and the other skipped, so the muted and skipped lists name the tenant's tests.
  check(await ctx.http().put(`${suiteBase}/tests/${testId}/mute`).set(auth(token)), 200, 'mute test');
  const passing = (await ctx.http().get(`${suiteBase}/tests`).set(auth(token))).body.find((t: { id: string }) => t.id !== testId) as { id: string };
  check(await ctx.http().put(`${suiteBase}/tests/${passing.id}/skip`).set(auth(token)), 200, 'skip test');
  const webhookUrl = p.body.provider.webhook_url as string;
  const at = await ctx
    .http()
    .post(`${base}/agent-tokens`)
    .set(auth(token))
    .send({ description: `Agents ${tag}` });
  check(at, 201, 'create agent token');
  const agentRegistrationToken = at.body.token as string;
  const reg = await ctx
    .http()
    .post('/v3/register')
    .set(agentAuth(agentRegistrationToken))
    .send({ name: `agent-${tag}`, meta_data: ['queue=default'] });
  check(reg, 201, 'register agent');
  const agent = { id: reg.body.id as string, token: reg.body.access_token as string };
  check(await ctx.http().post('/v3/connect').set(agentAuth(agent.token)), 200, 'connect agent');
  // The agent runs every job, oldest first, each leaving a log and an artifact that name the tenant.
  const artifacts = new Map<string, string>();
  // The last build's first job uploads a step (so the build has a step upload to read).
  let uploadedFrom: string | undefined;
  for (
    let job = (await ctx.http().get('/v3/ping').set(agentAuth(agent.token))).body.job;
    job;
    job = (await ctx.http().get('/v3/ping').set(agentAuth(agent.token))).body.job
  ) {
    check(await ctx.http().put(`/v3/jobs/${job.id}/accept`).set(agentAuth(agent.token)), 200, 'accept job');
    check(await ctx.http().put(`/v3/jobs/${job.id}/start`).set(agentAuth(agent.token)), 200, 'start job');
    if (!uploadedFrom && job.id === builds[builds.length - 1]?.jobIds[0]) {
      uploadedFrom = job.id as string;
      const uploaded = await ctx
        .http()
        .post(`/v3/jobs/${job.id}/pipelines`)
        .set(agentAuth(agent.token))
        .send({ pipeline: { steps: [{ command: `echo ${tag}`, key: 'uploaded' }] } });
      check(uploaded, 201, 'pipeline upload');
    }
    check(
      await ctx
        .http()
        .post(`/v3/jobs/${job.id}/chunks`)
        .set(agentAuth(agent.token))
        .send({ sequence: 1, offset: 0, content: `${org.slug}: ${tag}\n` }),
      201,
      'log chunk',
    );
    // And an artifact naming the tenant, uploaded and finished.
    const content = `${org.slug}: ${tag}\n`;
    const hash = (algorithm: string) => crypto.createHash(algorithm).update(content).digest('hex');
    const made = await ctx
      .http()
      .post(`/v3/jobs/${job.id}/artifacts`)
      .set(agentAuth(agent.token))
      .send({ artifacts: [{ path: `out/${tag}.txt`, file_size: Buffer.byteLength(content), sha1sum: hash('sha1'), sha256sum: hash('sha256') }] });
    check(made, 201, 'create artifact');
    const form = made.body.upload_instructions as { action: { path: string }; data: Record<string, string> };
    let upload = ctx.http().post(form.action.path);
    for (const [k, v] of Object.entries(form.data)) upload = upload.field(k, v.replace('${artifact:path}', `out/${tag}.txt`));
    check(await upload.attach('file', Buffer.from(content), `${tag}.txt`), 204, 'upload artifact');
    const artifactId = made.body.artifact_ids[0] as string;
    check(
      await ctx
        .http()
        .put(`/v3/jobs/${job.id}/artifacts`)
        .set(agentAuth(agent.token))
        .send({ artifacts: [{ id: artifactId, state: 'finished' }] }),
      200,
      'finish artifact',
    );
    artifacts.set(job.id, artifactId);
    check(await ctx.http().put(`/v3/jobs/${job.id}/finish`).set(agentAuth(agent.token)).send({ exit_status: 0 }), 200, 'finish job');
  }
  // An annotation on the last build's first job (the job's, the job-by-id and the build's delete
  // routes reach it), and one on the build itself (the build's list shows its own by default).
  const lastBuild = builds[builds.length - 1];
  const annotations = [];
  if (lastBuild) {
    const annotated = `${base}/pipelines/${p.body.slug}/builds/${lastBuild.number}`;
    for (const on of [`${annotated}/jobs/${lastBuild.jobIds[0]}`, annotated]) {
      const made = await ctx
        .http()
        .post(`${on}/annotations`)
        .set(auth(token))
        .send({ body: `${org.slug}: ${tag}`, context: 'fixture' });
      check(made, 201, 'create annotation');
      annotations.push(made.body.id as string);
    }
  }
  const template = await ctx
    .http()
    .post(`${base}/pipeline-templates`)
    .set(auth(token))
    .send({ name: `Template ${tag}`, configuration: `steps:\n  - command: echo ${tag}\n`, available: true });
  check(template, 201, 'create pipeline template');
  // A custom emoji named after the organization (names are [\w+-]+, as its slug is).
  await ctx.services.emojis.add(org.id, { name: org.slug, url: `https://emoji.example.com/${tag}.png` });
  // A rule from the pipeline to itself (the one pipeline a tenant has), its description naming the tenant.
  const rule = await ctx
    .http()
    .post(`${base}/rules`)
    .set(auth(token))
    .send({ type: 'pipeline.trigger_build.pipeline', description: `Rule ${tag}`, value: { source_pipeline: p.body.slug, target_pipeline: p.body.id } });
  check(rule, 201, 'create rule');
  // A pipeline trigger, labelled after the tenant, and one delivery of it (written directly: a delivery that
  // built would add a build to the tenant and shift the build numbers the isolation cases rely on).
  const trigger = await ctx
    .http()
    .post(`${base}/pipelines/${p.body.slug}/triggers`)
    .set(auth(token))
    .send({ type: 'webhook', label: `Trigger ${tag}` });
  check(trigger, 201, 'create pipeline trigger');
  const triggerDelivery = { body: { id: crypto.randomUUID() } };
  await ctx.services.db('pipeline_trigger_deliveries').insert({
    id: triggerDelivery.body.id,
    trigger_id: trigger.body.id,
    received_at: new Date(),
    content_type: 'application/json',
    external_id: null,
    status: 'not_run',
    reason: 'branch_mismatch',
    builds: '[]',
    headers: JSON.stringify([{ name: 'content-type', value: null, redacted: true }]),
    payload: JSON.stringify({ tenant: tag, organization: org.slug }),
  });
  // A pipeline schedule, disabled so it never builds on its own.
  const schedule = await ctx
    .http()
    .post(`${base}/pipelines/${p.body.slug}/schedules`)
    .set(auth(token))
    .send({ cronline: '@daily', label: `Schedule ${tag}`, enabled: false });
  check(schedule, 201, 'create pipeline schedule');
  // A cluster, its default queue, an agent token of it and an agent registered with that token.
  const clusters = `${base}/clusters`;
  const cl = await ctx
    .http()
    .post(clusters)
    .set(auth(token))
    .send({ name: `Cluster ${tag}`, description: `${org.slug}: ${tag}` });
  check(cl, 201, 'create cluster');
  const cq = await ctx
    .http()
    .post(`${clusters}/${cl.body.id}/queues`)
    .set(auth(token))
    .send({ key: 'default', description: `${org.slug}: ${tag}` });
  check(cq, 201, 'create cluster queue');
  check(await ctx.http().put(`${clusters}/${cl.body.id}`).set(auth(token)).send({ default_queue_id: cq.body.id }), 200, 'set default queue');
  const ct = await ctx
    .http()
    .post(`${clusters}/${cl.body.id}/tokens`)
    .set(auth(token))
    .send({ description: `Cluster agents ${tag}` });
  check(ct, 201, 'create cluster token');
  const creg = await ctx
    .http()
    .post('/v3/register')
    .set(agentAuth(ct.body.token))
    .send({ name: `cluster-agent-${tag}` });
  check(creg, 201, 'register cluster agent');
  const cm = await ctx.http().post(`${clusters}/${cl.body.id}/maintainers`).set(auth(token)).send({ user: admin.id });
  check(cm, 201, 'create cluster maintainer');
  const secretValue = `cluster-secret-${crypto.randomBytes(16).toString('hex')}`;
  const cs = await ctx
    .http()
    .post(`${clusters}/${cl.body.id}/secrets`)
    .set(auth(token))
    .send({ key: 'TENANT_SECRET', value: secretValue, description: `${org.slug}: ${tag}` });
  check(cs, 201, 'create cluster secret');
  const cluster = {
    secretId: cs.body.id as string,
    secretValue,
    maintainerId: cm.body.id as string,
    id: cl.body.id as string,
    queueId: cq.body.id as string,
    tokenId: ct.body.id as string,
    token: ct.body.token as string,
    agent: { id: creg.body.id as string, token: creg.body.access_token as string },
  };
  // A notification service scoped to the team: its Slack URL is a secret no answer may hold.
  const slackUrl = `https://hooks.slack.com/services/${crypto.randomBytes(16).toString('hex')}`;
  const ns = await ctx
    .http()
    .post(`${base}/services`)
    .set(auth(token))
    .send({ provider: 'slack', description: `${org.slug}: ${tag}`, scope: 'some_teams', scope_uuids: [team.id], settings: { url: slackUrl } });
  check(ns, 201, 'create notification service');
  const notificationService = { id: ns.body.id as string, slackUrl };
  // A delivery of that service (what a finished build would have made), for the delivery history's operations.
  const deliveryId = crypto.randomUUID();
  await new OutboxRepository(ctx.services.db).insertDeliveries([
    {
      id: deliveryId,
      eventSeq: 1,
      event: 'build.finished',
      organizationId: org.id,
      targetKind: 'service',
      serviceId: notificationService.id,
      target: null,
      targetKey: `service:${notificationService.id}`,
      orderKey: lastBuild?.id ?? 'fixture',
      payload: { text: `${org.slug}: ${tag}` },
      nextAttemptAt: new Date(),
      createdAt: new Date(),
    },
  ]);
  // A pending invitation (the first record of the tenant's audit log).
  const inv = await ctx
    .http()
    .post(`${base}/invitations`)
    .set(auth(token))
    .send({ emails: [`invited-${tag}@example.com`], teams: [{ id: team.id, role: 'member' }] });
  check(inv, 201, 'create invitation');
  const invitationId = inv.body[0].id as string;
  const audit = await ctx.http().get(`${base}/audit_events`).set(auth(token));
  check(audit, 200, 'list audit events');
  const auditEventId = audit.body.items[0].uuid as string;
  // The GitHub connection every organization has (its repositories: the tenant's pipeline's).
  const connections = await ctx.http().get(`${base}/repository_connections`).set(auth(token));
  check(connections, 200, 'list repository connections');
  const connectionId = connections.body[0].id as string;
  const params: Params = {
    org_slug: org.slug,
    pipeline_slug: p.body.slug,
    build_number: String(builds[builds.length - 1]?.number ?? 1),
    suite_slug: s.body.slug,
    run_id: runId,
    test_id: testId,
    token: webhookUrl.split('/').pop()!,
    agent_id: agent.id,
    job_id: builds[builds.length - 1]?.jobIds[0] ?? crypto.randomUUID(),
    annotation_id: annotations[0] ?? crypto.randomUUID(),
    context: 'fixture',
    artifact_id: artifacts.get(builds[builds.length - 1]?.jobIds[0] ?? '') ?? crypto.randomUUID(),
    build_id: lastBuild?.id ?? crypto.randomUUID(),
    template_uuid: template.body.uuid as string,
    schedule_id: schedule.body.id as string,
    team_id: team.id,
    // The admin is a member of the team and of the organization; the team reaches the pipeline and the suite.
    user_id: admin.id,
    pipeline_id: p.body.id,
    suite_id: s.body.id,
    cluster_id: cluster.id,
    queue_id: cluster.queueId,
    token_id: cluster.tokenId,
    maintainer_id: cluster.maintainerId,
    secret_id: cluster.secretId,
    service_id: notificationService.id,
    delivery_id: deliveryId,
    step_id_or_key: builds[builds.length - 1]?.stepIds[0] ?? crypto.randomUUID(),
    step_upload_id: lastBuild ? await stepUploadOf(ctx, base, p.body.slug as string, lastBuild.number, token) : crypto.randomUUID(),
    event_uuid: auditEventId,
    invitation_id: invitationId,
    rule_uuid: rule.body.uuid as string,
    trigger_id: trigger.body.id as string,
    trigger_delivery_id: triggerDelivery.body.id as string,
    connection_id: connectionId,
  };
  return {
    label,
    org,
    admin,
    token,
    params,
    team,
    pipeline: { id: p.body.id, slug: p.body.slug, webhook_url: webhookUrl },
    builds,
    suite: { id: s.body.id, slug: s.body.slug },
    suiteToken,
    executionId,
    test: { scope: `Scope ${tag}`, name: `fails ${tag}` },
    agentRegistrationToken,
    agent,
    cluster,
    notificationService,
    pipelineTriggerToken: (trigger.body.endpoint_url as string).split('/').pop()!,
    identifiers: [
      notificationService.id,
      deliveryId,
      trigger.body.id as string,
      triggerDelivery.body.id as string,
      rule.body.uuid as string,
      cluster.id,
      cluster.queueId,
      cluster.tokenId,
      cluster.agent.id,
      cluster.maintainerId,
      cluster.secretId,
      org.id,
      org.slug,
      admin.id,
      admin.email,
      team.id,
      p.body.id,
      p.body.slug,
      ...builds.map((b) => b.id),
      ...builds.flatMap((b) => b.jobIds),
      s.body.id,
      s.body.slug,
      runId,
      testId,
      executionId,
      at.body.id,
      agent.id,
      ...annotations,
      ...artifacts.values(),
      template.body.uuid as string,
      schedule.body.id as string,
      invitationId,
      auditEventId,
      connectionId,
      tag,
    ],
  };
}

/**
 * A valid request body for each operation that takes one, aimed at tenant `t`. Every operation
 * of the spec must be listed here (with `undefined` when it takes no body): a new operation
 * without a fixture fails the completeness test, so the matrices stay complete.
 */
export const BODIES: Record<string, ((t: Tenant) => unknown) | undefined> = {
  getRoot: undefined,
  getHealth: undefined,
  getReadiness: undefined,
  getOpenApiJson: undefined,
  getOpenApiYaml: undefined,
  getOpenApi30Json: undefined,
  getAccessToken: undefined,
  revokeAccessToken: undefined,
  getUser: undefined,
  listOrganizations: undefined,
  getOrganization: undefined,
  listPipelines: undefined,
  createPipeline: (t) => ({
    name: `Made ${crypto.randomBytes(3).toString('hex')}`,
    repository: 'git@github.com:acme/made.git',
    configuration: 'steps:\n  - command: make\n',
    teams: [t.team.id],
  }),
  getPipeline: undefined,
  updatePipeline: () => ({ description: 'changed' }),
  deletePipeline: undefined,
  archivePipeline: undefined,
  unarchivePipeline: undefined,
  addPipelineWebhook: undefined,
  getPipelineWebhookSecret: undefined,
  rotatePipelineWebhookSecret: undefined,
  getGithubWebhookProcessing: undefined,
  enableGithubWebhookProcessing: undefined,
  disableGithubWebhookProcessing: undefined,
  listAllBuilds: undefined,
  listOrganizationBuilds: undefined,
  listPipelineBuilds: undefined,
  createBuild: () => ({ commit: 'HEAD', branch: 'main', message: 'made', env: { A: '1' }, meta_data: { k: 'v' } }),
  getBuild: undefined,
  cancelBuild: undefined,
  rebuildBuild: undefined,
  retryFailedJobs: () => ({ states: 'failed,soft_failed' }),
  unblockJob: () => ({ fields: { release: 'v1' } }),
  retryJob: undefined,
  getJobLog: undefined,
  deleteJobLog: undefined,
  getJobLogText: undefined,
  getJobLogHtml: undefined,
  getJobEnv: undefined,
  getJobEnvText: undefined,
  reprioritizeJob: () => ({ priority: 1 }),
  reprioritizeOrganizationJob: () => ({ priority: 2 }),
  listJobs: undefined,
  listStepUploads: undefined,
  getStepUpload: undefined,
  getJob: undefined,
  getOrganizationJob: undefined,
  retryOrganizationJob: undefined,
  unblockOrganizationJob: () => ({ fields: { release: 'v2' } }),
  getOrganizationJobLog: undefined,
  getOrganizationJobLogText: undefined,
  getOrganizationJobLogHtml: undefined,
  deleteOrganizationJobLog: undefined,
  getOrganizationJobEnv: undefined,
  getOrganizationJobEnvText: undefined,
  createAgentToken: () => ({ description: 'made' }),
  listAgents: undefined,
  getAgent: undefined,
  pauseAgent: () => ({ note: 'made', timeout_in_minutes: 5 }),
  resumeAgent: undefined,
  stopAgent: () => ({ force: false }),
  registerAgent: () => ({ name: `made-${crypto.randomBytes(3).toString('hex')}`, hostname: 'made.local', meta_data: ['queue=made'] }),
  connectAgent: undefined,
  disconnectAgent: undefined,
  pauseSelf: () => ({ note: 'made by the agent', timeout_in_minutes: 5 }),
  resumeSelf: undefined,
  stopSelf: () => ({ force: false }),
  agentHeartbeat: undefined,
  pingAgent: undefined,
  getAgentJob: undefined,
  acceptJob: undefined,
  acquireJob: undefined,
  startJob: () => ({ started_at: new Date().toISOString() }),
  saveJobHeaderTimes: () => ({ header_times: { '0': new Date().toISOString() } }),
  exportStep: () => ({ attribute: 'label' }),
  updateStep: () => ({ attribute: 'label', value: 'made' }),
  cancelStep: () => ({ force: false }),
  updateAgentJob: () => ({ timeout: '20' }),
  promiseJobFailure: () => ({ exit_status: 1 }),
  cancelBuildFromAgent: undefined,
  requestOidcToken: () => ({ audience: 'made' }),
  getOpenIdConfiguration: undefined,
  getOidcJwks: undefined,
  appendJobLogChunk: () => ({ sequence: 1, offset: 0, content: 'made\n' }),
  finishJob: () => ({ exit_status: 0 }),
  uploadPipeline: () => ({ pipeline: 'steps:\n  - command: made\n' }),
  uploadTestResults: () => ({ format: 'json', run_env: { key: `up-${crypto.randomBytes(3).toString('hex')}` }, data: [{ name: 'n', result: 'passed' }] }),
  listSuites: undefined,
  createSuite: (t) => ({ name: `Made ${crypto.randomBytes(3).toString('hex')}`, team_ids: [t.team.id] }),
  getSuite: undefined,
  updateSuite: () => ({ application_name: 'changed' }),
  deleteSuite: undefined,
  listFlakyTests: undefined,
  listRuns: undefined,
  getRun: undefined,
  listFailedExecutions: undefined,
  getTest: undefined,
  listTests: undefined,
  listBuildTests: undefined,
  listMutedTests: undefined,
  listSkippedTests: undefined,
  listSkippedTestsByPut: undefined,
  findTest: (t) => ({ scope: t.test.scope, name: t.test.name }),
  skipTest: undefined,
  muteTest: undefined,
  enableTest: undefined,
  updateTestLabels: () => ({ operator: 'add', labels: ['made'] }),
  updateExecutionTags: (t) => ({ executions: [{ id: t.executionId, tags: { 'mut.made': 'here' } }] }),
  deliverWebhook: () => ({ zen: 'Keep it logically awesome.', hook_id: 1 }),
  listBuildAnnotations: undefined,
  createBuildAnnotation: () => ({ body: 'Made **here**', style: 'info', context: 'made', priority: 5 }),
  deleteBuildAnnotation: undefined,
  listJobAnnotations: undefined,
  createJobAnnotation: () => ({ body: 'Made on the job', style: 'success', context: 'made' }),
  deleteJobAnnotation: undefined,
  listOrganizationJobAnnotations: undefined,
  createOrganizationJobAnnotation: () => ({ body: 'Made on the job by id', context: 'made-by-id' }),
  deleteOrganizationJobAnnotation: undefined,
  annotateFromJob: () => ({ body: 'Made by the agent', context: 'made', style: 'info', priority: 3, scope: 'build' }),
  removeAnnotationFromJob: undefined,
  setJobMetaData: () => ({ key: 'made', value: 'here' }),
  setJobMetaDataBatch: () => ({ items: [{ key: 'made', value: 'here' }] }),
  getJobMetaData: () => ({ key: 'made' }),
  jobMetaDataExists: () => ({ key: 'made' }),
  jobMetaDataKeys: undefined,
  getBuildMetaData: () => ({ key: 'made' }),
  buildMetaDataExists: () => ({ key: 'made' }),
  buildMetaDataKeys: undefined,
  listBuildArtifacts: undefined,
  listJobArtifacts: undefined,
  getArtifact: undefined,
  deleteArtifact: undefined,
  downloadArtifact: undefined,
  getArtifactContent: undefined,
  listJobArtifactsByJobId: undefined,
  getArtifactByJobId: undefined,
  deleteArtifactByJobId: undefined,
  downloadArtifactByJobId: undefined,
  uploadArtifactContent: undefined,
  createArtifacts: () => ({ artifacts: [{ path: 'made.txt', file_size: 4, sha1sum: 'a'.repeat(40) }] }),
  updateArtifacts: (t) => ({ artifacts: [{ id: t.params.artifact_id, state: 'finished' }] }),
  searchArtifacts: undefined,
  listPipelineTemplates: undefined,
  createPipelineTemplate: () => ({ name: `Made ${crypto.randomBytes(3).toString('hex')}`, configuration: 'steps:\n  - command: made\n', available: true }),
  getPipelineTemplate: undefined,
  updatePipelineTemplate: () => ({ description: 'changed' }),
  deletePipelineTemplate: undefined,
  getMeta: undefined,
  getOrganizationRateLimit: undefined,
  getOrganizationRateLimitStatus: undefined,
  listEmojis: undefined,
  listPipelineSchedules: undefined,
  createPipelineSchedule: () => ({ cronline: '0 3 * * 1-5 Europe/Berlin', label: 'made', branch: 'main', env: { MADE: '1' }, enabled: false }),
  getPipelineSchedule: undefined,
  updatePipelineSchedule: () => ({ label: 'changed', cronline: '@weekly' }),
  patchPipelineSchedule: () => ({ label: 'patched', cronline: '@weekly' }),
  deletePipelineSchedule: undefined,
  listRules: undefined,
  createRule: (t) => ({
    type: 'pipeline.artifacts_read.pipeline',
    description: 'made',
    value: { source_pipeline: t.params.pipeline_slug, target_pipeline: t.params.pipeline_id, conditions: ["source.build.branch == 'main'"] },
  }),
  getRule: undefined,
  deleteRule: undefined,
  listPipelineTriggers: undefined,
  createPipelineTrigger: () => ({
    type: 'webhook',
    label: 'made',
    enabled: false,
    build: { message: 'Made', commit: 'HEAD', branch: 'main', environment: { MADE: '1' } },
  }),
  getPipelineTrigger: undefined,
  updatePipelineTrigger: () => ({ label: 'changed', build: { branch: 'release' } }),
  deletePipelineTrigger: undefined,
  listPipelineTriggerDeliveries: undefined,
  getPipelineTriggerDelivery: undefined,
  getPipelineTriggerDeliveryRequest: undefined,
  listTeams: undefined,
  createTeam: () => ({ name: `Made ${crypto.randomBytes(3).toString('hex')}`, description: 'made', privacy: 'visible' }),
  getTeam: undefined,
  updateTeam: () => ({ description: 'changed' }),
  deleteTeam: undefined,
  listTeamMembers: undefined,
  // The admin is already a member: a second add is a 422 after the body is read (the matrices need only the body's shape).
  createTeamMember: (t) => ({ user_id: t.admin.id, role: 'member' }),
  getTeamMember: undefined,
  updateTeamMember: () => ({ role: 'maintainer' }),
  deleteTeamMember: undefined,
  listTeamPipelines: undefined,
  createTeamPipeline: (t) => ({ pipeline_id: t.pipeline.id, access_level: 'read_only' }),
  getTeamPipeline: undefined,
  updateTeamPipeline: () => ({ access_level: 'manage_build_and_read' }),
  deleteTeamPipeline: undefined,
  listTeamSuites: undefined,
  createTeamSuite: (t) => ({ suite_id: t.suite.id, access_level: ['read'] }),
  getTeamSuite: undefined,
  updateTeamSuite: () => ({ access_level: ['read', 'edit'] }),
  deleteTeamSuite: undefined,
  listOrganizationMembers: undefined,
  getOrganizationMember: undefined,
  updateOrganizationMember: () => ({ sso_mode: 'optional' }),
  removeOrganizationMember: undefined,
  listClusters: undefined,
  createCluster: () => ({ name: `Made ${crypto.randomBytes(3).toString('hex')}`, description: 'made', emoji: ':x:', color: '#FFFFFF' }),
  getCluster: undefined,
  updateCluster: () => ({ description: 'changed' }),
  patchCluster: () => ({ description: 'patched' }),
  deleteCluster: undefined,
  listClusterQueues: undefined,
  createClusterQueue: () => ({ key: `made-${crypto.randomBytes(3).toString('hex')}`, description: 'made' }),
  getClusterQueue: undefined,
  updateClusterQueue: () => ({ description: 'changed' }),
  patchClusterQueue: () => ({ description: 'patched' }),
  deleteClusterQueue: undefined,
  pauseClusterQueueDispatch: () => ({ note: 'made' }),
  resumeClusterQueueDispatch: undefined,
  listClusterAgentTokens: undefined,
  createClusterAgentToken: () => ({ description: 'made', allowed_ip_addresses: '10.0.0.0/8' }),
  getClusterAgentToken: undefined,
  updateClusterAgentToken: () => ({ description: 'changed' }),
  patchClusterAgentToken: () => ({ description: 'patched' }),
  revokeClusterAgentToken: undefined,
  listClusterMaintainers: undefined,
  createClusterMaintainer: (t) => ({ team: t.team.id }),
  getClusterMaintainer: undefined,
  deleteClusterMaintainer: undefined,
  listClusterSecrets: undefined,
  createClusterSecret: () => ({ key: `MADE_${crypto.randomBytes(3).toString('hex')}`, value: 'made', description: 'made', policy: '- build_branch: main\n' }),
  getClusterSecret: undefined,
  updateClusterSecret: () => ({ description: 'changed', policy: '- pipeline_slug: made\n' }),
  // The tenant's own value again: the secrets scan keeps looking for it.
  updateClusterSecretValue: (t) => ({ value: t.cluster.secretValue }),
  deleteClusterSecret: undefined,
  getJobSecret: undefined,
  listNotificationServices: undefined,
  createNotificationService: (t) => ({
    provider: 'webhook',
    description: 'made',
    scope: 'some_teams',
    scope_uuids: [t.team.id],
    settings: { url: 'https://hooks.example.com/made', token: 'made-token', events: ['build.finished'] },
    build_states: { build_failed: true },
  }),
  getNotificationService: undefined,
  updateNotificationService: (t) => ({ description: 'changed', scope: 'some_teams', scope_uuids: [t.team.id], settings: { theme: 'emoji' } }),
  deleteNotificationService: undefined,
  enableNotificationService: undefined,
  disableNotificationService: undefined,
  listNotificationDeliveries: undefined,
  getNotificationDelivery: undefined,
  redeliverNotificationDelivery: undefined,
  resetState: undefined,
  getClock: undefined,
  // Moves the clock by nothing: the matrices' other requests keep real time.
  setClock: () => ({ advance_seconds: 0 }),
  getApiSettings: undefined,
  // Loopback only, where the matrices' requests come from: the tenant keeps answering.
  updateApiSettings: () => ({ allowed_ip_addresses: '127.0.0.0/8 ::1/128 ::ffff:127.0.0.0/104', revoke_inactive_tokens_after_days: 365 }),
  enableTeams: undefined,
  listAuditEvents: undefined,
  getAuditEvent: undefined,
  listInvitations: undefined,
  createInvitations: (t) => ({
    emails: [`made-${crypto.randomBytes(4).toString('hex')}@example.com`],
    role: 'member',
    sso_mode: 'optional',
    teams: [{ id: t.team.id, role: 'member' }],
  }),
  getInvitation: undefined,
  revokeInvitation: undefined,
  listRepositoryConnections: undefined,
  getRepositoryConnection: undefined,
  listRepositoryConnectionRepositories: undefined,
  getPipelineSettings: undefined,
  updatePipelineSettings: (t) => ({
    default_branch: 'trunk',
    default_cluster_id: t.cluster.id,
    default_timeout_in_minutes: 30,
    maximum_timeout_in_minutes: 90,
  }),
  enableHostedAgentsTerminalAccess: undefined,
  disableHostedAgentsTerminalAccess: undefined,
  enablePublicPipelineCreation: undefined,
  disablePublicPipelineCreation: undefined,
  enableAdvancedQueueMetrics: undefined,
  configureBuildExport: () => ({ location: 'my-export-bucket', strategy_id: 's3' }),
  disableBuildExport: undefined,
};

/** Headers an operation needs besides its credential (the delivery's event header). */
export const EXTRA_HEADERS: Record<string, Record<string, string>> = {
  deliverWebhook: { 'X-GitHub-Event': 'ping' },
};

/** Sends `op` with a bearer token (when given) and the operation's fixture body. */
export function send(ctx: TestContext, op: SpecOperation, path: string, token: string | undefined, body?: unknown) {
  let req = ctx.http()[op.method](path);
  if (token) req = req.set(auth(token));
  for (const [k, v] of Object.entries(EXTRA_HEADERS[op.operationId] ?? {})) req = req.set(k, v);
  if (body !== undefined) req = typeof body === 'string' ? req.set('Content-Type', 'application/json').send(body) : req.send(body as object);
  return req;
}

// ---------------------------------------------------------------------------------------------
// The database, table by table

/** Every table of the store except Knex's own bookkeeping. */
export async function tableNames(ctx: TestContext): Promise<string[]> {
  const db = ctx.services.db;
  const rows: { name: string }[] =
    ctx.kind === 'sqlite'
      ? await db('sqlite_master').select('name').where({ type: 'table' }).andWhereNot('name', 'like', 'sqlite_%')
      : (
          await db.raw('select table_name as name from information_schema.tables where table_schema = ? and table_type = ?', [
            ctx.schema ?? 'public',
            'BASE TABLE',
          ])
        ).rows;
  return rows
    .map((r) => r.name)
    .filter((n) => !n.startsWith('knex_'))
    .sort();
}

/**
 * Columns that make a row belong to the owner of the row they point at. Every table must have
 * one, or be listed in OWNED_THROUGH_USER or be `organizations`/`users`, else ownedRows fails: a
 * new table cannot silently escape the snapshot.
 */
const OWNER_COLUMNS: Record<string, string> = {
  organization_id: 'organizations',
  pipeline_id: 'pipelines',
  build_id: 'builds',
  suite_id: 'suites',
  run_id: 'test_runs',
  test_id: 'tests',
  team_id: 'teams',
  access_token_id: 'access_tokens',
  job_id: 'jobs',
  cluster_id: 'clusters',
  trigger_id: 'pipeline_triggers',
};
/** Tables whose rows belong to the organizations their `user_id` is a member of. */
const OWNED_THROUGH_USER = ['access_tokens'];
/**
 * Tables that hold no organization's data: `rate_limits` counts requests per bucket and window,
 * written by every request (A's requests against B's paths count against A's own user); that
 * one organization's traffic leaves another's budget alone is test/reliability/rate-limits'.
 */
const NOT_TENANT_DATA = ['rate_limits'];

function key(row: Record<string, unknown>): string {
  return JSON.stringify(row, (_k, v) => (Buffer.isBuffer(v) ? v.toString('hex') : v));
}
const rowId = (row: Record<string, unknown>) => (row.id != null ? String(row.id) : key(row));

/**
 * The rows of every table that belong to organization `orgId`: its own row, its members' users
 * and tokens, rows pointing at any of those and, transitively, rows pointing at those. Sorted
 * JSON, so two snapshots compare byte for byte.
 */
export async function ownedRows(ctx: TestContext, orgId: string): Promise<Record<string, string[]>> {
  const data: Record<string, Record<string, unknown>[]> = {};
  for (const t of await tableNames(ctx)) if (!NOT_TENANT_DATA.includes(t)) data[t] = await ctx.services.db(t).select('*');
  for (const [t, rows] of Object.entries(data)) {
    const cols = Object.keys(rows[0] ?? {});
    if (rows.length && !cols.some((c) => c in OWNER_COLUMNS) && !['organizations', 'users', ...OWNED_THROUGH_USER].includes(t)) {
      throw new Error(`table ${t} has no column telling its owner: add it to OWNER_COLUMNS or OWNED_THROUGH_USER`);
    }
  }
  const users = new Set(data.organization_members!.filter((m) => m.organization_id === orgId).map((m) => String(m.user_id)));
  const owned: Record<string, Set<string>> = { organizations: new Set([orgId]), users };
  for (const t of OWNED_THROUGH_USER) owned[t] = new Set(data[t]!.filter((r) => users.has(String(r.user_id))).map(rowId));
  // Follow references until nothing new is found (the chains are a few links long).
  for (let changed = true; changed;) {
    changed = false;
    for (const [t, rows] of Object.entries(data)) {
      for (const row of rows) {
        const mine = Object.entries(OWNER_COLUMNS).some(([col, target]) => row[col] != null && owned[target]?.has(String(row[col])));
        const set = (owned[t] ??= new Set());
        if (mine && !set.has(rowId(row))) {
          set.add(rowId(row));
          changed = true;
        }
      }
    }
  }
  return Object.fromEntries(
    Object.entries(data).map(([t, rows]) => [
      t,
      rows
        .filter((r) => owned[t]?.has(rowId(r)))
        .map(key)
        .sort(),
    ]),
  );
}

/**
 * How long a suite's set-up may take to make its tenants: a tenant is an object of every kind the
 * paths name, some hundred requests, and CI runs suites side by side on two cores.
 */
export const TENANT_SETUP_MS = 120_000;
