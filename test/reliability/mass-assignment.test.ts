/**
 * Mass assignment (issue 7, item 4), generated from the spec: every create and update body is
 * sent with each server-owned field of its resource (readOnly in the spec) set to a canary, with
 * unknown fields, and with `__proto__` / `constructor` / `prototype` keys at the top and inside
 * every object-valued property (raw JSON, so the keys really arrive). The resource read back
 * afterwards never holds a canary, an update changes nothing, no answer is a 5xx, and
 * Object.prototype is untouched.
 */
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import {
  BODIES,
  check,
  deref,
  fillPath,
  givenTenant,
  propertiesOf,
  send,
  specOperations,
  suiteAuth,
  agentAuth,
  type Schema,
  type SpecOperation,
  type Tenant,
  TENANT_SETUP_MS,
} from './spec-operations';

const CANARY = 'mass-assign-canary';
const CANARY_NUMBER = 424242;
const CANARY_UUID = '0badc0de-0bad-4bad-8bad-0badc0de0bad';
const CANARY_TIME = '2001-02-03T04:05:06.000Z';
const CANARIES = [CANARY, String(CANARY_NUMBER), CANARY_UUID, CANARY_TIME];

/** A value of the schema's type that no server would choose. */
function canaryFor(schema: unknown): unknown {
  const s = deref(schema);
  const branches = (s.oneOf ?? s.anyOf) as unknown[] | undefined;
  if (branches) return canaryFor(branches.find((b) => deref(b).type !== 'null') ?? branches[0]);
  const types = ([] as unknown[]).concat(s.type ?? 'object');
  const type = types.find((t) => t !== 'null') ?? 'null';
  if (s.enum) return (s.enum as unknown[]).at(-1);
  switch (type) {
    case 'string':
      return s.format === 'uuid' ? CANARY_UUID : s.format === 'date-time' || /Timestamp/.test(JSON.stringify(schema)) ? CANARY_TIME : CANARY;
    case 'integer':
    case 'number':
      return CANARY_NUMBER;
    case 'boolean':
      return true;
    case 'array':
      return [CANARY];
    case 'null':
      return null;
    default:
      return { id: CANARY_UUID, name: CANARY, url: CANARY };
  }
}

const operations = specOperations();
const writes = operations.filter((op) => op.requestSchema && ['post', 'put', 'patch'].includes(op.method));

/**
 * How to read back what each create or update stored. A write operation missing here fails the
 * completeness test; one that stores nothing readable says why in NOT_READ_BACK.
 */
const READ_BACK: Record<string, (t: Tenant, res: { body: Record<string, unknown> }) => string> = {
  createPipeline: (t, res) => `/v2/organizations/${t.org.slug}/pipelines/${res.body.slug}`,
  updatePipeline: (t) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}`,
  createBuild: (t, res) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/builds/${res.body.number}`,
  createSuite: (t, res) => `/v2/analytics/organizations/${t.org.slug}/suites/${res.body.slug}`,
  updateSuite: (t) => `/v2/analytics/organizations/${t.org.slug}/suites/${t.params.suite_slug}`,
  uploadTestResults: (t, res) => `/v2/analytics/organizations/${t.org.slug}/suites/${t.params.suite_slug}/runs/${res.body.run_id}`,
  registerAgent: (t, res) => `/v2/organizations/${t.org.slug}/agents/${res.body.id}`,
  createBuildAnnotation: (t) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/builds/${t.params.build_number}/annotations`,
  createJobAnnotation: (t) =>
    `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/builds/${t.params.build_number}/jobs/${t.params.job_id}/annotations`,
  createOrganizationJobAnnotation: (t) => `/v2/organizations/${t.org.slug}/jobs/${t.params.job_id}/annotations`,
  createPipelineTemplate: (t, res) => `/v2/organizations/${t.org.slug}/pipeline-templates/${res.body.uuid}`,
  updatePipelineTemplate: (t) => `/v2/organizations/${t.org.slug}/pipeline-templates/${t.params.template_uuid}`,
  createPipelineSchedule: (t, res) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/schedules/${res.body.id}`,
  updatePipelineSchedule: (t) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/schedules/${t.params.schedule_id}`,
  patchPipelineSchedule: (t) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/schedules/${t.params.schedule_id}`,
  createPipelineTrigger: (t, res) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/triggers/${res.body.id}`,
  updatePipelineTrigger: (t) => `/v2/organizations/${t.org.slug}/pipelines/${t.params.pipeline_slug}/triggers/${t.params.trigger_id}`,
  createRule: (t, res) => `/v2/organizations/${t.org.slug}/rules/${res.body.uuid}`,
  createTeam: (t, res) => `/v2/organizations/${t.org.slug}/teams/${res.body.id}`,
  updateTeam: (t) => `/v2/organizations/${t.org.slug}/teams/${t.params.team_id}`,
  createTeamMember: (t, res) => `/v2/organizations/${t.org.slug}/teams/${t.params.team_id}/members/${res.body.user_id}`,
  updateTeamMember: (t) => `/v2/organizations/${t.org.slug}/teams/${t.params.team_id}/members/${t.params.user_id}`,
  createTeamPipeline: (t, res) => `/v2/organizations/${t.org.slug}/teams/${t.params.team_id}/pipelines/${res.body.pipeline_id}`,
  updateTeamPipeline: (t) => `/v2/organizations/${t.org.slug}/teams/${t.params.team_id}/pipelines/${t.params.pipeline_id}`,
  createTeamSuite: (t, res) => `/v2/organizations/${t.org.slug}/teams/${t.params.team_id}/suites/${res.body.suite_id}`,
  updateTeamSuite: (t) => `/v2/organizations/${t.org.slug}/teams/${t.params.team_id}/suites/${t.params.suite_id}`,
  updateOrganizationMember: (t) => `/v2/organizations/${t.org.slug}/members/${t.params.user_id}`,
  createCluster: (t, res) => `/v2/organizations/${t.org.slug}/clusters/${res.body.id}`,
  updateCluster: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}`,
  patchCluster: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}`,
  createClusterQueue: (t, res) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/queues/${res.body.id}`,
  updateClusterQueue: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/queues/${t.params.queue_id}`,
  patchClusterQueue: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/queues/${t.params.queue_id}`,
  createClusterAgentToken: (t, res) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/tokens/${res.body.id}`,
  createClusterMaintainer: (t, res) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/maintainers/${res.body.id}`,
  createClusterSecret: (t, res) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/secrets/${res.body.id}`,
  updateClusterSecret: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/secrets/${t.params.secret_id}`,
  updateClusterSecretValue: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/secrets/${t.params.secret_id}`,
  updateClusterAgentToken: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/tokens/${t.params.token_id}`,
  patchClusterAgentToken: (t) => `/v2/organizations/${t.org.slug}/clusters/${t.params.cluster_id}/tokens/${t.params.token_id}`,
  createNotificationService: (t, res) => `/v2/organizations/${t.org.slug}/services/${res.body.id}`,
  updateNotificationService: (t) => `/v2/organizations/${t.org.slug}/services/${t.params.service_id}`,
  updateTestLabels: (t) => `/v2/analytics/organizations/${t.org.slug}/suites/${t.params.suite_slug}/tests/${t.params.test_id}`,
  updateApiSettings: (t) => `/v2/organizations/${t.org.slug}/api-settings`,
  updatePipelineSettings: (t) => `/v2/organizations/${t.org.slug}/pipeline-settings`,
  // The answer is the batch made: the one invitation of the fixture's batch.
  createInvitations: (t, res) => `/v2/organizations/${t.org.slug}/invitations/${(res.body as unknown as { id: string }[])[0]!.id}`,
};
const NOT_READ_BACK: Record<string, string> = {
  setClock: 'the clock is process state, not a resource, and the matrix context has the test controls off (404): test/fixtures-loading reads the clock back',
  deliverWebhook: "the body is the provider's event, not a resource: only the prototype cases apply (the builds it makes are createBuild's)",
  unblockJob: "the tenant's job is a script job, not a block step (422 after the body is parsed): test/builds/jobs reads unblocks back",
  createAgentToken: 'a registration token has no read operation (it is shown once); only the prototype cases apply',
  appendJobLogChunk: "a chunk of a job the tenant's agent holds; the fixture agent holds none (404 after the body is parsed): test/agents reads chunks back",
  finishJob: "the result of a job the tenant's agent holds; the fixture agent holds none (404 after the body is parsed): test/agents reads results back",
  startJob: "the start of a job the tenant's agent holds; the fixture agent holds none (404 after the body is parsed): test/agents reads starts back",
  saveJobHeaderTimes:
    "header times of a job the tenant's agent holds; the fixture agent holds none (404 after the body is parsed): test/agents/real-agent-protocol reads them back",
  exportStep: 'a read (the agent API reads with POST): nothing is stored',
  findTest: 'a read (find a test by scope and name, with POST): nothing is stored',
  updateExecutionTags:
    'the body is the tags themselves, which any accepted request replaces, so a read back differs by design; only the prototype cases apply: test/suites/quarantine reads tags back, and shows a rejected request changes none',
  updateStep:
    "a step of the job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/agents/real-agent-protocol reads labels back",
  requestOidcToken:
    "a token about the job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed), and nothing is stored: test/agents/oidc reads tokens",
  updateAgentJob:
    "a timeout of a job the tenant's agent holds; the fixture agent holds none (404 after the body is parsed): test/builds/jobs/agent-job-update reads it back",
  promiseJobFailure:
    "a promise of a job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/builds/jobs/agent-job-update reads it back",
  cancelStep:
    "cancels the jobs of a step of the job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/builds/jobs/agent-cancel reads cancels back",
  uploadPipeline:
    "steps for a job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/builds/jobs/pipeline-upload reads uploads back",
  createArtifacts: "artifacts of a job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/artifacts reads them back",
  updateArtifacts: "states of a job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/artifacts reads them back",
  annotateFromJob:
    "an annotation from a job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/annotations reads them back",
  setJobMetaData:
    "meta-data from a job the tenant's agent runs; the fixture agent runs none (404 after the body is parsed): test/annotations/meta-data reads it back",
  setJobMetaDataBatch: 'as setJobMetaData',
  getJobMetaData: 'a read (the agent API reads with POST): nothing is stored',
  jobMetaDataExists: 'a read (the agent API reads with POST): nothing is stored',
  getBuildMetaData: 'a read (the agent API reads with POST): nothing is stored',
  buildMetaDataExists: 'a read (the agent API reads with POST): nothing is stored',
  retryFailedJobs: 'the body says which jobs to retry and stores nothing: test/builds/jobs/reprioritize-retry-failed reads the retries back',
  reprioritizeJob: "the priority is the job's dispatch order: test/builds/jobs/reprioritize-retry-failed reads it back and watches dispatch follow it",
  reprioritizeOrganizationJob: 'as reprioritizeJob, by job id',
  unblockOrganizationJob: 'as unblockJob, by job id: test/builds/jobs/jobs reads an unblock by id back',
  pauseAgent: 'a pause is read back through getAgent by test/agents/pause-stop (who, when, note, timeout)',
  resumeAgent: 'stores nothing but the end of a pause: test/agents/pause-stop reads it back',
  stopAgent: 'a stop is a connection state: test/agents/pause-stop follows it to `stopped`',
  pauseSelf: 'as pauseAgent, by the agent itself: test/agents/pause-stop reads it back',
  resumeSelf: 'as resumeAgent, by the agent itself',
  stopSelf: 'as stopAgent, by the agent itself: test/agents/pause-stop follows it',
  pauseClusterQueueDispatch: 'a pause is read back through getClusterQueue by test/clusters (who, when, note); a second pause is a 422',
  configureBuildExport: 'build export is unavailable (403 after the body is checked): nothing is stored; test/organizations/pipeline-settings',
};

/** Writes that answer with a resource other than the one the body writes: their answers' fields are that resource's, not the server's. */
const ANSWERS_ANOTHER_RESOURCE: Record<string, string> = {
  retryFailedJobs: 'answers the build whose jobs it retried; the body names states, no field of the build',
  updateClusterSecretValue: 'answers the secret whose value it replaced; the body is the value, which no answer ever shows',
  pauseClusterQueueDispatch: "answers the queue it paused; the body is the pause's note, which the answer shows as dispatch_paused_note",
  configureBuildExport:
    "would answer the whole pipeline settings; the body is the export's location and strategy (and it answers 403: build export is unavailable)",
};

/**
 * The fields a client may not set: readOnly in the resource the operation answers with, unless
 * this operation's own body declares them (a queue's `key` is set by its create, and fixed after).
 */
function serverOwned(op: SpecOperation): [string, Schema][] {
  const declared = propertiesOf(op.requestSchema ?? {});
  return Object.entries(propertiesOf(op.responseSchema ?? {})).filter(([name, s]) => s.readOnly === true && !(name in declared));
}

/** Object-valued properties of the request body, where nested prototype keys can hide. */
function objectProperties(op: SpecOperation): string[] {
  return Object.entries(propertiesOf(op.requestSchema ?? {}))
    .filter(([, s]) =>
      [deref(s)].concat(((deref(s).oneOf as unknown[]) ?? []).map(deref)).some((x) => ([] as unknown[]).concat(x.type).includes('object') || x.$ref),
    )
    .map(([name]) => name);
}

const isObjectSchema = (s: unknown) =>
  [deref(s)].concat(((deref(s).oneOf as unknown[]) ?? []).map(deref)).some((x) => ([] as unknown[]).concat(x.type).includes('object'));

/** Array properties whose items are objects: the prototype keys can hide in an item too. */
function objectArrayProperties(op: SpecOperation): string[] {
  return Object.entries(propertiesOf(op.requestSchema ?? {}))
    .filter(([, s]) => ([] as unknown[]).concat(s.type).includes('array') && s.items !== undefined && isObjectSchema(s.items))
    .map(([name]) => `${op.operationId}.${name}`);
}

/** For each of those, the body an item is sent in and a valid item. */
const ARRAY_ITEMS: Record<string, (t: Tenant) => { body: Record<string, unknown>; item: Record<string, unknown> }> = {
  'createPipeline.steps': (t) => {
    const { configuration: _yaml, ...body } = BODIES.createPipeline!(t) as Record<string, unknown>;
    return { body, item: { type: 'script', name: 'Test', command: 'make' } };
  },
  'createPipeline.teams': (t) => ({ body: BODIES.createPipeline!(t) as Record<string, unknown>, item: { id: t.team.id, access_level: 'read_only' } }),
  // The tenant's pipeline is defined by YAML, so this is refused; the body is still parsed and read.
  'updatePipeline.steps': () => ({ body: {}, item: { type: 'script', command: 'make' } }),
  'updatePipeline.teams': (t) => ({ body: {}, item: { id: t.team.id, access_level: 'read_only' } }),
  'uploadTestResults.data': (t) => ({ body: BODIES.uploadTestResults!(t) as Record<string, unknown>, item: { name: 'item', result: 'passed' } }),
  'updateExecutionTags.executions': (t) => ({ body: {}, item: { id: t.executionId, tags: { 'mut.item': 'here' } } }),
  'setJobMetaDataBatch.items': (t) => ({ body: BODIES.setJobMetaDataBatch!(t) as Record<string, unknown>, item: { key: 'made', value: 'here' } }),
  'createArtifacts.artifacts': (t) => ({
    body: BODIES.createArtifacts!(t) as Record<string, unknown>,
    item: { path: 'item.txt', file_size: 1, sha1sum: 'b'.repeat(40) },
  }),
  'createCluster.maintainers': (t) => ({ body: BODIES.createCluster!(t) as Record<string, unknown>, item: { team: t.team.id } }),
  'updateArtifacts.artifacts': (t) => ({ body: BODIES.updateArtifacts!(t) as Record<string, unknown>, item: { id: t.params.artifact_id, state: 'error' } }),
  'createInvitations.teams': (t) => ({ body: BODIES.createInvitations!(t) as Record<string, unknown>, item: { id: t.team.id, role: 'member' } }),
};

const PROTO_KEYS = '"__proto__":{"polluted":"yes"},"constructor":{"prototype":{"polluted":"yes"}},"prototype":{"polluted":"yes"}';

/** `{` the prototype keys, then the members of `obj` `}`, as text. */
function protoFirst(obj: unknown): string {
  const members = obj && typeof obj === 'object' && !Array.isArray(obj) ? JSON.stringify(obj).slice(1, -1) : '';
  return `{${PROTO_KEYS}${members ? ',' + members : ''}}`;
}

/** The JSON text of `body` with the prototype keys first inside the object at `at` (top level when undefined). */
function withProtoKeys(body: Record<string, unknown>, at?: string): string {
  if (at === undefined) return protoFirst(body);
  const { [at]: inner, ...rest } = body;
  const members = JSON.stringify(rest).slice(1, -1);
  return `{"${at}":${protoFirst(inner)}${members ? ',' + members : ''}}`;
}

const prototypeNames = Object.getOwnPropertyNames(Object.prototype).sort();
function expectNoPollution() {
  expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  expect(Object.getOwnPropertyNames(Object.prototype).sort()).toEqual(prototypeNames);
  expect((Object.prototype as unknown as Record<string, unknown>).polluted).toBeUndefined();
}

/** `body` with `[item]` at `at`, the item starting with the prototype keys. */
function withProtoItem(body: Record<string, unknown>, at: string, item: Record<string, unknown>): string {
  const { [at]: _drop, ...rest } = body;
  const members = JSON.stringify(rest).slice(1, -1);
  return `{"${at}":[${protoFirst(item)}]${members ? ',' + members : ''}}`;
}

describe('the mass-assignment matrix covers the spec', () => {
  it('has an item for every array of objects in a body', () => {
    expect(writes.flatMap(objectArrayProperties).filter((name) => !(name in ARRAY_ITEMS))).toEqual([]);
  });

  it('reads back every create and update', () => {
    expect(writes.map((o) => o.operationId).filter((id) => !(id in READ_BACK) && !(id in NOT_READ_BACK))).toEqual([]);
  });

  it('marks every server-owned field of a written resource readOnly', () => {
    // A field in the answer that the request cannot carry is the server's: the spec must say so.
    const unmarked = writes
      .filter((op) => !(op.operationId in ANSWERS_ANOTHER_RESOURCE))
      .flatMap((op) => {
        const req = propertiesOf(op.requestSchema!);
        return Object.entries(propertiesOf(op.responseSchema ?? {}))
          .filter(([name, s]) => !(name in req) && !s.readOnly)
          .map(([name]) => `${op.operationId}.${name}`);
      });
    expect(unmarked).toEqual([]);
  });
});

describeEachDatabase('mass assignment', (ctx) => {
  let t: Tenant;
  let requests = 0;
  let fiveHundreds = 0;

  beforeAll(async () => {
    t = await givenTenant(ctx(), 'mass');
  }, TENANT_SETUP_MS);

  afterAll(() => {
    process.stdout.write(
      `mass-assignment [${ctx().kind}]: ${writes.length} write operations, ${fieldCases.length} server-owned field cases, ${readable.length} unknown-field cases, ${protoCases.length} prototype-key cases, ${requests} requests, ${fiveHundreds} 5xx\n`,
    );
  });

  /** Sends a write as the tenant's admin (or with its suite token for the upload API). */
  async function write(c: TestContext, op: SpecOperation, body: unknown) {
    requests++;
    let res;
    if (op.auth === 'suiteToken' || op.auth === 'agentToken') {
      const credential =
        op.auth === 'suiteToken' ? suiteAuth(t.suiteToken) : agentAuth(op.operationId === 'registerAgent' ? t.agentRegistrationToken : t.agent.token);
      const req = c.http()[op.method](fillPath(op, t.params)).set(credential);
      res = await (typeof body === 'string' ? req.set('Content-Type', 'application/json').send(body) : req.send(body as object));
    } else {
      res = await send(c, op, fillPath(op, t.params), op.auth === 'bearer' ? t.token : undefined, body);
    }
    if (res.status >= 500) fiveHundreds++;
    return res;
  }

  async function read(path: string) {
    requests++;
    const res = await ctx().http().get(path).set(auth(t.token));
    check(res, 200, `read back ${path}`);
    return res;
  }

  const readable = writes.filter((op) => op.operationId in READ_BACK);
  const fieldCases = readable.flatMap((op) => serverOwned(op).map(([field, schema]) => [op.operationId, field, op, schema] as const));

  it.each(fieldCases)('%s with server-owned %s: not stored', async (_id, field, op, schema) => {
    const isUpdate = op.method !== 'post';
    const path = isUpdate ? READ_BACK[op.operationId]!(t, { body: {} }) : undefined;
    const before = path ? (await read(path)).body : undefined;
    const value = canaryFor(schema);
    const body = isUpdate ? { [field]: value } : { ...(BODIES[op.operationId]!(t) as object), [field]: value };
    const res = await write(ctx(), op, body);
    expect(res.status).toBeLessThan(500);
    if (res.status >= 300) return;
    const back = await read(path ?? READ_BACK[op.operationId]!(t, res));
    if (before) expect(back.body).toEqual(before);
    for (const text of [res.text, back.text]) expect(CANARIES.filter((c) => text.includes(c))).toEqual([]);
    if (typeof value === 'boolean' || value === null) expect(back.body[field]).not.toBe(value === null ? CANARY : value);
  });

  it.each(readable.map((op) => [op.operationId, op] as const))('%s with unknown fields: ignored', async (_id, op) => {
    const isUpdate = op.method !== 'post';
    const path = isUpdate ? READ_BACK[op.operationId]!(t, { body: {} }) : undefined;
    const before = path ? (await read(path)).body : undefined;
    const unknown = { [`${CANARY}_field`]: CANARY, is_admin: true, role: 'admin', organization_id: CANARY_UUID, owner: { id: CANARY_UUID } };
    const res = await write(ctx(), op, isUpdate ? unknown : { ...(BODIES[op.operationId]!(t) as object), ...unknown });
    expect(res.status).toBeLessThan(500);
    if (res.status >= 300) return;
    const back = await read(path ?? READ_BACK[op.operationId]!(t, res));
    if (before) expect(back.body).toEqual(before);
    for (const text of [res.text, back.text]) expect(CANARIES.filter((c) => text.includes(c))).toEqual([]);
  });

  const protoCases = writes.flatMap((op) =>
    [undefined, ...objectProperties(op), ...objectArrayProperties(op).map((n) => `${n.split('.')[1]}[0]`)].map(
      (at) => [op.operationId, at ?? 'the top level', op, at] as const,
    ),
  );

  it.each(protoCases)('%s with prototype keys at %s: no pollution, nothing odd stored', async (_id, _where, op, at) => {
    const isUpdate = op.method !== 'post' && op.operationId in READ_BACK;
    const path = isUpdate ? READ_BACK[op.operationId]!(t, { body: {} }) : undefined;
    const before = path ? (await read(path)).body : undefined;
    const base = isUpdate ? {} : (BODIES[op.operationId]!(t) as Record<string, unknown>);
    const arrayItem = at?.endsWith('[0]') ? ARRAY_ITEMS[`${op.operationId}.${at.slice(0, -3)}`]!(t) : undefined;
    const res = await write(ctx(), op, arrayItem ? withProtoItem(arrayItem.body, at!.slice(0, -3), arrayItem.item) : withProtoKeys(base, at));
    expectNoPollution();
    expect(res.status).toBeLessThan(500);
    expect(res.text).not.toContain('polluted');
    // The body parsed: the keys reached the application.
    expect(res.text).not.toContain('Problems parsing JSON');
    if (res.status >= 300 || !(op.operationId in READ_BACK)) return;
    const back = await read(path ?? READ_BACK[op.operationId]!(t, res));
    expect(back.text).not.toContain('polluted');
    if (before) expect(back.body).toEqual(before);
  });

  it('saw no 5xx', () => {
    expect(fiveHundreds).toBe(0);
    expect(requests).toBeGreaterThan(50);
  });
});
