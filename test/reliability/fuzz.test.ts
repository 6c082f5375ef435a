/**
 * Issue 7, item 6: contract fuzzing. For every operation of the parsed spec, fast-check sends
 * valid and mutated parameters, headers and bodies, with and without credentials, to the real app
 * over loopback, against fixtures that exist (an organization with pipelines, builds and a suite
 * with runs and tests, a connected agent holding a job for the agent API), and checks:
 *   - no 5xx (the test app validates its responses, and a response that breaks the contract
 *     becomes a 500, so this also catches invalid bodies);
 *   - the status is documented for the operation;
 *   - the body is valid against the documented schema (an independent Ajv check, which also
 *     covers answers given before the app's validator runs: 401s, guards, meta routes);
 *   - input invalid by construction is always a 4xx.
 * The seed is fixed (FUZZ_SEED overrides it) and printed on failure; FUZZ_RUNS sets the
 * requests per operation and store.
 */
import http from 'node:http';
import crypto from 'node:crypto';
import fc from 'fast-check';
import request from 'supertest';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import {
  mergeAllOf,
  operationsFromSpec,
  outOfBoundsArb,
  responseValidator,
  typesOf,
  validArb,
  wrongTypeArb,
  type Hints,
  type Operation,
  type Param,
  type Schema,
} from './fuzz-operations';

const BASE_SEED = Number(process.env.FUZZ_SEED ?? 20261123);
const OPERATIONS = operationsFromSpec();
/** At least 5,000 requests per store: spread evenly over the operations. */
const RUNS = Number(process.env.FUZZ_RUNS ?? Math.ceil(5000 / OPERATIONS.length));
const SHA = 'abcd0b72a1e580e90712cdd9eb26d3fb41cd09c8';

const YAMLS = [
  'steps:\n  - command: make test\n',
  'env:\n  FOO: bar\nsteps:\n  - label: Test\n    command: npm test\n    branches: main\n  - wait\n  - block: Deploy?\n  - trigger: deployer\n',
  'steps:\n  - command: echo\n    parallelism: 2\n    soft_fail: true\n    retry:\n      automatic: true\n',
  'steps: [',
  'not: [a, pipeline',
  '',
];
const REPOS = ['git@github.com:acme/app.git', 'https://gitlab.com/acme/app.git', 'https://bitbucket.org/acme/app.git', 'https://example.com/x.git', ''];

const PIPELINE_HINTS: Hints = {
  configuration: fc.constantFrom(...YAMLS),
  repository: fc.constantFrom(...REPOS),
  steps: fc.constantFrom(
    [{ type: 'script', name: 'Test', command: 'make test' }, { type: 'waiter' }, { type: 'manual', label: 'Go?' }],
    [{ type: 'trigger', trigger_project_slug: 'other', label: 'x' }],
    [{ type: 'bogus' }],
    [],
  ),
  branch_configuration: fc.constantFrom('main release/*', '!wip', '', null),
  provider_settings: fc.constantFrom(
    { trigger_mode: 'code' },
    { build_tags: true },
    { filter_enabled: true, filter_condition: 'build.branch == "main"' },
    { filter_condition: '((' },
    { nope: 1 },
  ),
  default_timeout_in_minutes: fc.constantFrom(1, 60, null),
  maximum_timeout_in_minutes: fc.constantFrom(30, 120, null),
};
const BUILD_HINTS: Hints = {
  commit: fc.constantFrom('HEAD', SHA),
  branch: fc.constantFrom('main', 'feature/x', 'wip'),
};
const UPLOAD_HINTS: Hints = {
  run_env: fc.record({
    key: fc.constantFrom('run-1', 'run-2', crypto.randomUUID()),
    ci: fc.constantFrom('buildkite', 'generic'),
    commit_sha: fc.constantFrom(SHA, null),
    branch: fc.constantFrom('main', null),
  }),
  data: fc.array(
    fc.record({
      name: fc.constantFrom('adds', 'subtracts', null),
      scope: fc.constantFrom('Math', null),
      result: fc.constantFrom('passed', 'failed', 'skipped', 'weird', null),
      location: fc.constantFrom('./m.test.js:3', null),
    }),
    { maxLength: 5 },
  ),
};
const DELIVERY_HINTS: Hints = {
  ref: fc.constantFrom('refs/heads/main', 'refs/tags/v1', 'refs/heads/feature'),
  after: fc.constantFrom(SHA, '0000000000000000000000000000000000000000'),
  head_commit: fc.constantFrom({ id: SHA, message: 'Fix' }, { id: SHA, message: 'Fix [skip ci]' }, null),
};
let unique = 0;
const uniqueName = fc.constant(null).map(() => `Fuzz ${(unique += 1)} ${crypto.randomBytes(3).toString('hex')}`);
const pipelineExtras = fc.record(
  {
    description: fc.option(fc.string({ maxLength: 40 })),
    default_branch: fc.constantFrom('main', 'trunk'),
    branch_configuration: fc.constantFrom('main release/*', '!wip', ''),
    visibility: fc.constantFrom('private', 'public'),
    tags: fc.option(fc.array(fc.constantFrom('a', 'b', 'linux'), { maxLength: 3 })),
    provider_settings: fc.constantFrom({ trigger_mode: 'code' }, { build_tags: true }, { filter_enabled: true, filter_condition: 'build.branch == "main"' }),
    skip_queued_branch_builds: fc.boolean(),
    cancel_running_branch_builds: fc.boolean(),
    allow_rebuilds: fc.boolean(),
    default_timeout_in_minutes: fc.constantFrom(10, null),
  },
  { requiredKeys: [] },
);
const stepsOrYaml = fc.oneof(
  fc.constantFrom(...YAMLS.slice(0, 3)).map((configuration) => ({ configuration })),
  fc.constant({ steps: [{ type: 'script', name: 'Test', command: 'make test' }, { type: 'waiter' }, { type: 'manual', label: 'Go?' }] }),
);
/** Bodies a real client would send, so that creates and updates get through to the stores. */
const REALISTIC: Record<string, fc.Arbitrary<unknown>> = {
  createPipeline: fc
    .tuple(uniqueName, fc.constantFrom(...REPOS.slice(0, 3)), stepsOrYaml, pipelineExtras)
    .map(([name, repository, steps, extra]) => ({ name, repository, ...steps, ...extra })),
  updatePipeline: fc
    .tuple(fc.option(uniqueName), fc.option(fc.constantFrom(...REPOS.slice(0, 3))), fc.option(fc.constantFrom(...YAMLS.slice(0, 3))), pipelineExtras)
    .map(([name, repository, configuration, extra]) => ({
      ...(name ? { name } : {}),
      ...(repository ? { repository } : {}),
      ...(configuration ? { configuration } : {}),
      ...extra,
    })),
  createBuild: fc.record(
    {
      commit: fc.constantFrom('HEAD', SHA),
      branch: fc.constantFrom('main', 'feature/x', 'release/1'),
      message: fc.string({ maxLength: 30 }),
      env: fc.dictionary(fc.stringMatching(/^[A-Z_][A-Z0-9_]{0,8}$/), fc.string({ maxLength: 10 }), { maxKeys: 3 }),
      meta_data: fc.dictionary(fc.string({ minLength: 1, maxLength: 8 }), fc.string({ maxLength: 10 }), { maxKeys: 3 }),
      author: fc.constantFrom({ name: 'A', email: 'a@example.com' }, {}),
      ignore_pipeline_branch_filters: fc.boolean(),
      pull_request_id: fc.constantFrom(42, '7'),
      pull_request_base_branch: fc.constant('main'),
    },
    { requiredKeys: ['commit', 'branch'] },
  ),
  createSuite: fc
    .tuple(
      uniqueName,
      fc.record(
        { default_branch: fc.constantFrom('main', null), application_name: fc.option(fc.string({ maxLength: 20 })), show_api_token: fc.boolean() },
        { requiredKeys: [] },
      ),
    )
    .map(([name, extra]) => ({ name, ...extra })),
  deliverWebhook: fc.constantFrom(
    {
      ref: 'refs/heads/main',
      after: SHA,
      deleted: false,
      head_commit: { id: SHA, message: 'Fix', author: { name: 'A', email: 'a@example.com' } },
      pusher: { name: 'a' },
      repository: { full_name: 'acme/app' },
    },
    { ref: 'refs/heads/feature', after: SHA, head_commit: { id: SHA, message: 'Fix [skip ci]' } },
    { zen: 'Keep it logically awesome.', hook_id: 1 },
    {
      action: 'opened',
      number: 7,
      pull_request: {
        title: 'PR',
        draft: false,
        head: { ref: 'feature', sha: SHA, repo: { full_name: 'acme/app' } },
        base: { ref: 'main', repo: { full_name: 'acme/app' } },
        labels: [],
      },
    },
  ),
};

const HINTS: Record<string, Hints> = {
  createPipeline: PIPELINE_HINTS,
  updatePipeline: PIPELINE_HINTS,
  createBuild: BUILD_HINTS,
  uploadTestResults: UPLOAD_HINTS,
};

type AuthKind = 'admin' | 'readonly' | 'none' | 'garbage';
type PathChoice = { fixture: string } | { raw: string };
type Body =
  | { kind: 'none' }
  | { kind: 'json'; value: unknown }
  | { kind: 'raw'; type: string; text: string }
  | { kind: 'multipart'; fields: Record<string, string>; file: string | null };

interface Input {
  auth: AuthKind;
  path: Record<string, PathChoice>;
  query: Record<string, unknown>;
  headers: Record<string, string>;
  body: Body;
  /** Why the input is invalid by construction, or null when it may be valid. */
  invalid: string[];
}

/** An arbitrary and whether its values are invalid by construction. */
type Gen = { arb: fc.Arbitrary<unknown>; invalid: string | null };

/** Extra fixtures of a path parameter: the archived pipeline, the newest build (likely still cancelable). */
const OTHER_FIXTURES: Record<string, string[]> = { pipeline_slug: ['archived'], build_number: ['latest', 'latest'], org_slug: ['other'] };

function pathArb(p: Param): fc.Arbitrary<{ choice: PathChoice; invalid: string | null }> {
  const fixture = fc
    .oneof({ weight: 12, arbitrary: fc.constant(p.name) }, ...(OTHER_FIXTURES[p.name] ?? []).map((f) => ({ weight: 2, arbitrary: fc.constant(f) })))
    .map((f) => ({ choice: { fixture: f } as PathChoice, invalid: null }));
  const random = validArb(p.schema)
    .filter((v) => String(v) !== '')
    .map((v) => ({ choice: { raw: String(v) } as PathChoice, invalid: null }));
  const oob = outOfBoundsArb(p.schema);
  const wrong = p.schema.type === 'integer' ? fc.constantFrom('abc', '1.5', '-1', '0', '99999999999', '9'.repeat(400), '1e400', 'Infinity', 'NaN') : null;
  const bad = [oob, wrong]
    .filter((a): a is fc.Arbitrary<unknown> => a !== null)
    .map((a) => a.filter((v) => String(v) !== '').map((v) => ({ choice: { raw: String(v).slice(0, 3000) } as PathChoice, invalid: `path ${p.name}` })));
  return fc.oneof({ weight: 12, arbitrary: fixture }, { weight: 2, arbitrary: random }, ...bad.map((arbitrary) => ({ weight: 1, arbitrary })));
}

/** Query values are strings on the wire: a wrong type is text that is not a number or a boolean. */
function queryGens(p: Param): Gen[] {
  const gens: Gen[] = [{ arb: validArb(p.schema), invalid: null }];
  const types = typesOf(p.schema);
  if (types && types.has('integer')) gens.push({ arb: fc.constantFrom('abc', '1.5', 'x1', '[]'), invalid: `query ${p.name} type` });
  if (types && types.has('boolean')) gens.push({ arb: fc.constantFrom('maybe', '2', 'yes!'), invalid: `query ${p.name} type` });
  // `name[]=a&name[]=b` where one value is expected, `meta_data=x` where `meta_data[k]=v` is.
  if (types && !types.has('array') && !types.has('object')) gens.push({ arb: fc.constant(['a', 'b']), invalid: `query ${p.name} array` });
  if (types && types.has('object')) gens.push({ arb: fc.constant('plain'), invalid: `query ${p.name} not an object` });
  const oob = outOfBoundsArb(p.schema);
  // Short enough to stay under Node's 16 KiB header limit.
  if (oob) gens.push({ arb: oob.map((v) => (typeof v === 'string' ? v.slice(0, (p.schema.maxLength ?? 0) + 2000) : v)), invalid: `query ${p.name} bounds` });
  if (p.schema.oneOf) {
    for (const alt of p.schema.oneOf as Schema[]) {
      const o = outOfBoundsArb(alt);
      if (o) gens.push({ arb: o.map((v) => (typeof v === 'string' ? v.slice(0, (alt.maxLength ?? 0) + 2000) : v)), invalid: `query ${p.name} bounds` });
    }
  }
  return gens;
}

/** Places in a body schema a mutation can target: declared properties up to two levels down. */
function bodySites(schema: Schema, prefix: string[] = [], depth = 0): { path: string[]; schema: Schema; required: boolean }[] {
  const s = mergeAllOf(schema);
  if (depth > 1 || !s.properties) return [];
  const required = new Set<string>(s.required ?? []);
  return Object.entries(s.properties as Record<string, Schema>).flatMap(([k, v]) => [
    { path: [...prefix, k], schema: v, required: required.has(k) },
    ...bodySites(v, [...prefix, k], depth + 1),
  ]);
}

function setAt(obj: unknown, path: string[], value: unknown, remove = false): unknown {
  const root = obj && typeof obj === 'object' && !Array.isArray(obj) ? { ...(obj as object) } : {};
  let cur = root as Record<string, unknown>;
  for (const k of path.slice(0, -1)) {
    const next = cur[k];
    cur[k] = next && typeof next === 'object' && !Array.isArray(next) ? { ...(next as object) } : {};
    cur = cur[k] as Record<string, unknown>;
  }
  const last = path[path.length - 1]!;
  if (remove) delete cur[last];
  else cur[last] = value;
  return root;
}

function bodyArb(op: Operation): fc.Arbitrary<{ body: Body; invalid: string | null }> {
  if (!op.body) {
    // An operation that takes no body ignores one, even malformed (it is never parsed).
    return fc.oneof(
      { weight: 8, arbitrary: fc.constant({ body: { kind: 'none' } as Body, invalid: null }) },
      {
        weight: 1,
        arbitrary: fc.constantFrom('{', '[[[', '{"a":1}').map((text) => ({ body: { kind: 'raw', type: 'application/json', text } as Body, invalid: null })),
      },
      { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 2 }).map((value) => ({ body: { kind: 'json', value } as Body, invalid: null })) },
    );
  }
  const random = validArb(op.body, HINTS[op.id] ?? (op.id === 'deliverWebhook' ? DELIVERY_HINTS : {}));
  const realistic = REALISTIC[op.id];
  // Mutations apply to realistic bodies too, so that one broken field is all that is wrong.
  const valid = realistic ? fc.oneof({ weight: 3, arbitrary: realistic }, { weight: 1, arbitrary: random }) : random;
  const gens: fc.Arbitrary<{ body: Body; invalid: string | null }>[] = [];
  const json = (value: unknown, invalid: string | null) => ({ body: { kind: 'json', value } as Body, invalid });
  gens.push(valid.map((v) => json(v, null)));
  // Unknown fields, __proto__ and constructor keys: ignored, never an error or a crash.
  gens.push(
    fc
      .tuple(
        valid,
        fc.dictionary(fc.constantFrom('__proto__', 'constructor', 'prototype', 'zzz_unknown', 'id', 'created_at'), fc.jsonValue({ maxDepth: 2 }), {
          maxKeys: 3,
        }),
      )
      .map(([v, extra]) => json(v && typeof v === 'object' && !Array.isArray(v) ? JSON.parse(JSON.stringify({ ...extra, ...v })) : v, null)),
  );
  for (const site of bodySites(op.body)) {
    const wrong = wrongTypeArb(site.schema, !site.required);
    if (wrong) gens.push(fc.tuple(valid, wrong).map(([v, w]) => json(setAt(v, site.path, w), `body ${site.path.join('.')} type`)));
    const oob = outOfBoundsArb(site.schema);
    if (oob) gens.push(fc.tuple(valid, oob).map(([v, w]) => json(setAt(v, site.path, w), `body ${site.path.join('.')} bounds`)));
    // A missing required property (of a parent that is present).
    if (site.required) gens.push(valid.map((v) => json(setAt(v, site.path, undefined, true), `body ${site.path.join('.')} missing`)));
  }
  if (typesOf(op.body)?.has('object')) {
    gens.push(fc.constantFrom([], 'text', 42, null, true).map((v) => json(v, 'body type')));
  }
  gens.push(
    fc.constantFrom('{', '{"a":', '[1,2', 'nul').map((text) => ({ body: { kind: 'raw', type: 'application/json', text } as Body, invalid: 'malformed JSON' })),
  );
  gens.push(fc.constant({ body: { kind: 'raw', type: 'text/plain', text: 'hello' } as Body, invalid: 'not JSON' }));
  let multipart: fc.Arbitrary<{ body: Body; invalid: string | null }> | undefined;
  if (op.multipart) {
    // The collectors' multipart form: format, run_env[...] fields and a data file (JSON results or JUnit XML), sane or not.
    const file = fc.oneof(
      fc.constantFrom(
        '[{"name":"a","result":"passed"},{"name":"a","result":"failed"}]',
        '<testsuite><testcase classname="A" name="b" file="a.rb"><failure message="x">y</failure></testcase></testsuite>',
        '<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e "e">]><testsuite/>',
        '<testsuite><testcase name="no class"/>',
        '{}',
        'null',
        '',
      ),
      fc.jsonValue({ maxDepth: 3 }).map((v) => JSON.stringify(v)),
      fc.string({ maxLength: 200, unit: 'binary' }),
    );
    const fields = fc.record(
      {
        format: fc.constantFrom('json', 'json', 'junit', 'junit', 'bogus'),
        'run_env[key]': fc.constantFrom('mp-1', 'mp-2', 'mp-3', ''),
        'run_env[CI]': fc.constantFrom('buildkite', 'x'),
        'tags[os]': fc.constant('linux'),
      },
      { requiredKeys: ['format', 'run_env[key]'] },
    );
    multipart = fc
      .tuple(fields, fc.option(file, { freq: 8 }))
      .map(([f, data]) => ({ body: { kind: 'multipart', fields: f, file: data } as Body, invalid: null }));
  }
  gens.push(fc.constant({ body: { kind: 'none' } as Body, invalid: op.bodyRequired ? 'no body' : null }));
  // Valid bodies carry most of the weight: they reach the services.
  return fc.oneof(
    { weight: gens.length, arbitrary: gens[0]! },
    ...(multipart ? [{ weight: gens.length, arbitrary: multipart }] : []),
    ...gens.slice(1).map((arbitrary) => ({ weight: 1, arbitrary })),
  );
}

const DELIVERY_EVENT_HEADERS: Record<string, string[]> = {
  'X-GitHub-Event': ['push', 'pull_request', 'ping', 'deployment', 'fork', 'issues'],
  'X-Gitlab-Event': ['Push Hook', 'Tag Push Hook', 'Merge Request Hook'],
  'X-Event-Key': ['repo:push', 'pullrequest:created'],
};

function headerArb(p: Param): fc.Arbitrary<{ value: string | undefined; invalid: string | null }> {
  const ascii = fc.string({ unit: fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789=:-_ '.split('')), maxLength: 40 });
  const known = DELIVERY_EVENT_HEADERS[p.name];
  return fc.oneof(
    { weight: 30, arbitrary: fc.constant({ value: undefined, invalid: null }) },
    { weight: known ? 30 : 2, arbitrary: (known ? fc.constantFrom(...known) : ascii).map((value) => ({ value, invalid: null })) },
    { weight: known ? 2 : 1, arbitrary: fc.constant({ value: 'x'.repeat((p.schema.maxLength ?? 100) + 1), invalid: `header ${p.name} bounds` }) },
  );
}

function inputArb(op: Operation): fc.Arbitrary<Input> {
  const authArb: fc.Arbitrary<AuthKind> =
    op.auth === 'none'
      ? fc.constant('none')
      : fc.oneof(
          { weight: 14, arbitrary: fc.constant<AuthKind>('admin') },
          { weight: op.auth === 'bearer' ? 2 : 0, arbitrary: fc.constant<AuthKind>('readonly') },
          { weight: 2, arbitrary: fc.constant<AuthKind>('none') },
          { weight: 1, arbitrary: fc.constant<AuthKind>('garbage') },
        );
  const pathParams = op.params.filter((p) => p.in === 'path');
  const queryParams = op.params.filter((p) => p.in === 'query');
  const headerParams = op.params.filter((p) => p.in === 'header');
  const pathRec = fc.record(Object.fromEntries(pathParams.map((p) => [p.name, pathArb(p)])));
  const queryRec = fc.record(
    Object.fromEntries(
      queryParams.map((p) => {
        const gens = queryGens(p);
        return [
          p.name,
          fc.oneof(
            { weight: 3 * gens.length, arbitrary: fc.constant({ value: undefined, invalid: null as string | null }) },
            { weight: 2 * gens.length, arbitrary: gens[0]!.arb.map((value) => ({ value, invalid: null as string | null })) },
            ...gens.slice(1).map((g) => ({ weight: 1, arbitrary: g.arb.map((value) => ({ value, invalid: g.invalid })) })),
          ),
        ];
      }),
    ),
  );
  const headerRec = fc.record(Object.fromEntries(headerParams.map((p) => [p.name, headerArb(p)])));
  return fc.record({ auth: authArb, path: pathRec, query: queryRec, headers: headerRec, body: bodyArb(op) }).map(({ auth: a, path, query, headers, body }) => {
    const invalid = [
      ...Object.values(path).map((v) => v.invalid),
      ...Object.values(query).map((v) => v.invalid),
      ...Object.values(headers).map((v) => v.invalid),
      body.invalid,
    ].filter((x): x is string => x !== null);
    return {
      auth: a,
      path: Object.fromEntries(Object.entries(path).map(([k, v]) => [k, v.choice])),
      query: Object.fromEntries(
        Object.entries(query)
          .filter(([, v]) => v.value !== undefined)
          .map(([k, v]) => [k, v.value]),
      ),
      headers: Object.fromEntries(
        Object.entries(headers)
          .filter(([, v]) => v.value !== undefined)
          .map(([k, v]) => [k, v.value!]),
      ),
      body: body.body,
      invalid,
    };
  });
}

/**
 * encodeURIComponent, except that a lone surrogate (which has no UTF-8 form) is sent as the bytes
 * its CESU-8 encoding would have: a malformed percent-escape the server must survive.
 */
function encodePath(value: string): string {
  return value.replace(/[\s\S]/gu, (ch) => {
    const code = ch.codePointAt(0)!;
    if (code >= 0xd800 && code <= 0xdfff)
      return `%${(0xe0 | (code >> 12)).toString(16)}%${(0x80 | ((code >> 6) & 0x3f)).toString(16)}%${(0x80 | (code & 0x3f)).toString(16)}`.toUpperCase();
    return encodeURIComponent(ch);
  });
}

/** `key=v`, `key[]=a&key[]=b` for arrays, `key[k]=v` for objects: the forms the API takes. */
function queryString(q: Record<string, unknown>): string {
  const parts: string[] = [];
  const e = encodePath;
  for (const [k, v] of Object.entries(q)) {
    if (Array.isArray(v)) for (const item of v) parts.push(`${e(k)}[]=${e(String(item))}`);
    else if (v && typeof v === 'object') for (const [kk, vv] of Object.entries(v)) parts.push(`${e(k)}[${e(kk)}]=${e(String(vv))}`);
    else parts.push(`${e(k)}=${e(String(v))}`);
  }
  return parts.join('&');
}

interface Fixtures {
  org: { id: string; slug: string };
  otherOrgSlug: string;
  adminToken: string;
  readToken: string;
  adminUserId: string;
  pipeline: { id: string; slug: string };
  archived: { id: string; slug: string };
  webhookToken: string;
  suiteSlug: string;
  suiteToken: string;
  runId: string;
  testId: string;
  registrationToken: string;
  /** A connected agent holding a job of the fixture pipeline. */
  agent: { id: string; token: string; jobId: string };
}

/** A registered, connected agent. */
async function connectedAgent(c: TestContext, registrationToken: string): Promise<{ id: string; token: string }> {
  const reg = await c
    .http()
    .post('/v3/register')
    .set({ Authorization: `Token ${registrationToken}` })
    .send({ name: 'fuzz', meta_data: ['queue=default'] })
    .expect(201);
  await c
    .http()
    .post('/v3/connect')
    .set({ Authorization: `Token ${reg.body.access_token}` })
    .expect(200);
  return { id: reg.body.id, token: reg.body.access_token };
}

/** Compiled once for both stores: a schema's validator depends on nothing but the document. */
const check = responseValidator();

describeEachDatabase('contract fuzzing', (ctx) => {
  let server: http.Server;
  let fx: Fixtures;
  let sent = 0;
  const statusCounts = new Map<number, number>();
  const byOperation = new Map<string, Map<number, number>>();

  beforeAll(async () => {
    server = http.createServer(ctx().app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const c: TestContext = ctx();
    const { org, user, token } = await c.givenAdmin();
    const readToken = await c.givenToken(user, [org], ['read_user', 'read_organizations', 'read_pipelines', 'read_builds', 'read_suites']);
    const other = await c.givenOrg();
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const p = await c
      .http()
      .post(base)
      .set(auth(token))
      .send({ name: 'Fuzz target', repository: 'git@github.com:acme/app.git', configuration: YAMLS[1] })
      .expect(201);
    for (const branch of ['main', 'main', 'feature/x']) {
      await c
        .http()
        .post(`${base}/${p.body.slug}/builds`)
        .set(auth(token))
        .send({ commit: SHA, branch, message: 'm', meta_data: { k: 'v' } })
        .expect(201);
    }
    await c.http().put(`${base}/${p.body.slug}/builds/2/cancel`).set(auth(token)).expect(200);
    await c.http().put(`${base}/${p.body.slug}/builds/1/rebuild`).set(auth(token)).expect(200);
    const archived = await c
      .http()
      .post(base)
      .set(auth(token))
      .send({ name: 'Fuzz archived', repository: 'https://gitlab.com/acme/app.git', configuration: YAMLS[0] })
      .expect(201);
    await c.http().post(`${base}/${archived.body.slug}/archive`).set(auth(token)).expect(200);
    const suite = await c
      .http()
      .post(`/v2/analytics/organizations/${org.slug}/suites`)
      .set(auth(token))
      .send({ name: 'Fuzz suite', show_api_token: true })
      .expect(201);
    const uploaded = await c
      .http()
      .post('/v1/uploads')
      .set({ Authorization: `Token token="${suite.body.api_token}"` })
      .send({
        format: 'json',
        run_env: { key: 'run-1', commit_sha: SHA, branch: 'main', ci: 'buildkite' },
        data: [
          { name: 'adds', scope: 'Math', result: 'passed', location: './m.test.js:3' },
          {
            name: 'adds',
            scope: 'Math',
            result: 'failed',
            location: './m.test.js:3',
            failure_reason: 'boom',
            failure_expanded: [{ expanded: ['x'], backtrace: ['y'] }],
          },
        ],
      })
      .expect(202);
    const failed = await c
      .http()
      .get(`/v2/analytics/organizations/${org.slug}/suites/${suite.body.slug}/runs/${uploaded.body.run_id}/failed_executions`)
      .set(auth(token))
      .expect(200);
    const registrationToken = (await c.http().post(`/v2/organizations/${org.slug}/agent-tokens`).set(auth(token)).send({ description: 'fuzz' }).expect(201))
      .body.token as string;
    const agent = await connectedAgent(c, registrationToken);
    const held = await c
      .http()
      .get('/v3/ping')
      .set({ Authorization: `Token ${agent.token}` })
      .expect(200);
    fx = {
      org,
      otherOrgSlug: other.slug,
      adminToken: token,
      readToken,
      adminUserId: user.id,
      pipeline: { id: p.body.id, slug: p.body.slug },
      archived: { id: archived.body.id, slug: archived.body.slug },
      webhookToken: String(p.body.provider.webhook_url).split('/').pop()!,
      suiteSlug: suite.body.slug,
      suiteToken: suite.body.api_token,
      runId: uploaded.body.run_id,
      testId: failed.body[0].test_id,
      registrationToken,
      agent: { ...agent, jobId: held.body.job.id },
    };
  });

  afterAll(async () => {
    await new Promise<void>((resolve) => server?.close(() => resolve()));
    const statuses = [...statusCounts]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    if (process.env.FUZZ_VERBOSE) {
      for (const [id, m] of byOperation)
        process.stdout.write(
          `${id}: ${[...m]
            .sort(([a], [b]) => a - b)
            .map(([s, n]) => `${s}: ${n}`)
            .join(', ')}\n`,
        );
    }
    process.stdout.write(
      `\ncontract fuzzing [${ctx()?.kind}]: ${sent} requests over ${OPERATIONS.length} operations (seed ${BASE_SEED}, ${RUNS} runs each); statuses ${statuses}\n`,
    );
  });

  /** A new pipeline or suite for a delete, so the shared fixtures survive. */
  async function disposable(kind: 'pipeline' | 'suite'): Promise<string> {
    const c = ctx();
    if (kind === 'pipeline') {
      const r = await c
        .http()
        .post(`/v2/organizations/${fx.org.slug}/pipelines`)
        .set(auth(fx.adminToken))
        .send({ name: `Doomed ${crypto.randomUUID()}`, repository: REPOS[0], configuration: YAMLS[0] })
        .expect(201);
      return r.body.slug;
    }
    const r = await c
      .http()
      .post(`/v2/analytics/organizations/${fx.org.slug}/suites`)
      .set(auth(fx.adminToken))
      .send({ name: `Doomed ${crypto.randomUUID()}` })
      .expect(201);
    return r.body.slug;
  }

  async function resolvePath(op: Operation, choices: Record<string, PathChoice>): Promise<string> {
    let url = op.path;
    for (const [name, choice] of Object.entries(choices)) {
      let value: string;
      if ('raw' in choice) value = choice.raw;
      else if (choice.fixture === 'archived') value = op.id === 'deletePipeline' ? await disposable('pipeline') : fx.archived.slug;
      else if (choice.fixture === 'other') value = fx.otherOrgSlug;
      else if (choice.fixture === 'latest' && op.id === 'cancelBuild') {
        // A build of its own, so that cancels do not all meet an already canceled build.
        const r = await ctx()
          .http()
          .post(`/v2/organizations/${fx.org.slug}/pipelines/${fx.pipeline.slug}/builds`)
          .set(auth(fx.adminToken))
          .send({ commit: SHA, branch: 'main' })
          .expect(201);
        value = String(r.body.number);
      } else if (choice.fixture === 'latest') {
        const [row] = await ctx().services.db('builds').where({ pipeline_id: fx.pipeline.id }).max({ n: 'number' });
        value = String(row?.n ?? 1);
      } else if (name === 'build_id') {
        value = String((await ctx().services.db('builds').where({ pipeline_id: fx.pipeline.id }).first('id'))?.id ?? 'x');
      } else if (name === 'pipeline_slug') value = op.id === 'deletePipeline' ? await disposable('pipeline') : fx.pipeline.slug;
      else if (name === 'suite_slug') value = op.id === 'deleteSuite' ? await disposable('suite') : fx.suiteSlug;
      else
        value =
          {
            org_slug: fx.org.slug,
            build_number: '1',
            run_id: fx.runId,
            test_id: fx.testId,
            token: fx.webhookToken,
            agent_id: fx.agent.id,
            job_id: fx.agent.jobId,
          }[name] ?? 'x';
      url = url.replace(`{${name}}`, encodePath(value));
    }
    return url;
  }

  async function credentials(op: Operation, kind: AuthKind): Promise<Record<string, string>> {
    if (kind === 'none') return {};
    if (kind === 'garbage')
      return { Authorization: op.auth === 'suite' ? 'Token token="nope"' : op.auth === 'agent' ? `Token ${'n'.repeat(43)}` : 'Bearer not.a.token' };
    if (op.auth === 'suite') return { Authorization: `Token token="${fx.suiteToken}"` };
    if (op.auth === 'agent') {
      if (op.id === 'registerAgent') return { Authorization: `Token ${fx.registrationToken}` };
      // Disconnecting is what that operation does: give it an agent of its own.
      const agent = op.id === 'disconnectAgent' ? await connectedAgent(ctx(), fx.registrationToken) : fx.agent;
      return { Authorization: `Token ${agent.token}` };
    }
    // Revoking is what that operation does: give it a token of its own.
    if (op.id === 'revokeAccessToken') {
      return auth(await ctx().givenToken({ id: fx.adminUserId } as never, [fx.org as never], kind === 'readonly' ? ['read_builds'] : undefined));
    }
    return auth(kind === 'readonly' ? fx.readToken : fx.adminToken);
  }

  /** Puts back what a write may have changed on the shared pipeline: its slug, archive state, branch filter, rebuilds. */
  async function heal() {
    const db = ctx().services.db;
    await db('pipelines').where({ id: fx.pipeline.id }).update({ slug: fx.pipeline.slug, archived_at: null, branch_configuration: null, allow_rebuilds: true });
    await db('pipelines').where({ id: fx.archived.id }).update({ slug: fx.archived.slug, archived_at: new Date() });
  }

  async function send(op: Operation, input: Input) {
    const url = await resolvePath(op, input.path);
    const qs = queryString(input.query);
    let req = request(server)[op.method](qs ? `${url}?${qs}` : url);
    req = req.set(await credentials(op, input.auth)).set(input.headers);
    if (input.body.kind === 'json') req = req.set('Content-Type', 'application/json').send(JSON.stringify(input.body.value));
    else if (input.body.kind === 'raw') req = req.set('Content-Type', input.body.type).send(input.body.text);
    else if (input.body.kind === 'multipart') {
      for (const [k, v] of Object.entries(input.body.fields)) req = req.field(k, v);
      if (input.body.file !== null) req = req.attach('data', Buffer.from(input.body.file), { filename: 'results', contentType: 'application/octet-stream' });
    }
    const res = await req;
    sent += 1;
    statusCounts.set(res.status, (statusCounts.get(res.status) ?? 0) + 1);
    const mine = byOperation.get(op.id) ?? new Map<number, number>();
    byOperation.set(op.id, mine.set(res.status, (mine.get(res.status) ?? 0) + 1));
    if (process.env.FUZZ_VERBOSE === op.id) process.stdout.write(`${op.id} ${res.status} ${input.body.kind} ${JSON.stringify(res.body).slice(0, 200)}\n`);
    return { url: qs ? `${url}?${qs}` : url, res };
  }

  /** What is wrong with an answer, or null: the properties of this file. */
  function verdict(op: Operation, input: Pick<Input, 'auth' | 'invalid'>, url: string, res: request.Response): string | null {
    const body = res.type === 'application/json' ? res.body : res.text;
    const show = `${op.method.toUpperCase()} ${url} (auth ${input.auth}) -> ${res.status} ${JSON.stringify(body).slice(0, 600)}`;
    if (res.status >= 500) return `5xx: ${show}`;
    if (!op.statuses.includes(String(res.status))) return `undocumented status ${res.status} (documented: ${op.statuses.join(', ')}): ${show}`;
    if (op.responseSchemas[String(res.status)]) {
      if (res.type !== 'application/json') return `not JSON (${res.type}): ${show}`;
      const problem = check(op, res.status, res.body);
      if (problem) return `body breaks the ${res.status} schema (${problem}): ${show}`;
    }
    if (input.invalid.length && (res.status < 400 || res.status >= 500)) return `invalid input (${input.invalid.join('; ')}) answered ${res.status}: ${show}`;
    return null;
  }

  it('a response that breaks the contract fails the property: the app turns it into a 500, and the Ajv check flags it too', async () => {
    const op = OPERATIONS.find((o) => o.id === 'getPipeline')!;
    const url = `/v2/organizations/${fx.org.slug}/pipelines/${fx.pipeline.slug}`;
    const real = await ctx().services.pipelines.get(
      {
        principal: await ctx().services.tokens.authenticate(fx.adminToken),
        organization: { ...fx.org, name: '', teamsEnabled: false, createdAt: new Date() } as never,
        role: 'admin',
      },
      fx.pipeline.slug,
    );
    const spy = jest.spyOn(ctx().services.pipelines, 'get').mockResolvedValueOnce({ ...real, pipeline: { ...real.pipeline, name: 42 as never } });
    try {
      const res = await request(server).get(url).set(auth(fx.adminToken));
      expect(res.status).toBe(500);
      expect(verdict(op, { auth: 'admin', invalid: [] }, url, res)).toMatch(/^5xx/);
    } finally {
      spy.mockRestore();
    }
    const good = await request(server).get(url).set(auth(fx.adminToken)).expect(200);
    expect(verdict(op, { auth: 'admin', invalid: [] }, url, good)).toBeNull();
    expect(check(op, 200, { ...good.body, name: 42 })).toMatch(/name/);
    expect(check(op, 200, { ...good.body, id: undefined })).toMatch(/id/);
  });

  it.each(OPERATIONS.map((op, i) => [op.id, op, i] as const))('%s', async (_id, op, index) => {
    const seed = BASE_SEED + index;
    const property = fc.asyncProperty(inputArb(op), async (input) => {
      const { url, res } = await send(op, input);
      if (op.method !== 'get' && /pipeline_slug/.test(op.path)) await heal();
      const problem = verdict(op, input, url, res);
      if (problem) throw new Error(problem);
    });
    try {
      await fc.assert(property, { seed, numRuns: RUNS, endOnFailure: true });
    } catch (err) {
      throw new Error(
        `${op.id} [${ctx().kind}] failed with seed ${seed} (replay all with FUZZ_SEED=${BASE_SEED}):\n${(err as Error).message}\n${String((err as Error).cause ?? '')}`,
      );
    }
  });
});
