/**
 * Compiled by `npm run typecheck`, never run: each `@ts-expect-error` line is a mistake the
 * compiler must refuse because the handler's types are the spec's (src/http/contract/operation.ts). If the
 * spec stopped making it a mistake, the directive would be unused and typecheck would fail; if a
 * handler relied on something the spec changed, typecheck fails in the handler itself.
 */
import type { components } from '../../generated/api';
import type { BuildState, JobState } from '../../src/builds/model';
import type { Job } from '../../src/builds/jobs/model';
import type { ListQuery } from '../../src/builds/service';
import { operationRouter, type OperationHandler, type OperationRequest } from '../../src/http/contract/operation';

type Schemas = components['schemas'];

/** Passes a value through, checked against `T`. */
const expectType = <T>(value: T): T => value;
declare const build: Schemas['Build'];

// createBuild: the body is CreateBuildRequest; the answer is a Build, with 201.
export const createBuild: OperationHandler<'createBuild'> = (req, res) => {
  expectType<string>(req.body.commit);
  expectType<string>(req.params.pipeline_slug);
  // @ts-expect-error: CreateBuildRequest has no `comit`
  expectType<unknown>(req.body.comit);
  // @ts-expect-error: `message` is a string (or null), not a number
  expectType<number | null | undefined>(req.body.message);
  // @ts-expect-error: createBuild has no query parameters
  expectType<unknown>(req.query.branch);
  // @ts-expect-error: createBuild's path has no build number
  expectType<unknown>(req.params.build_number);
  res.status(201).json(build);
  // @ts-expect-error: createBuild documents no 200, so an answer without status(201) is refused
  res.json(build);
  // @ts-expect-error: 202 is not a status createBuild documents
  res.status(202);
  // @ts-expect-error: the 201 body must be a Build
  res.status(201).json({ id: build.id, number: build.number });
};

// getBuild: the build number is the spec's integer (the binder converts it); the query is typed.
export const getBuild: OperationHandler<'getBuild'> = (req, res) => {
  expectType<number>(req.params.build_number);
  expectType<boolean | undefined>(req.query.include_retried_jobs);
  // @ts-expect-error: the path parameter is build_number, not buildNumber
  expectType<unknown>(req.params.buildNumber);
  // @ts-expect-error: a build number is not text
  expectType<string>(req.params.build_number);
  // @ts-expect-error: an undocumented query parameter is not typed, so a handler cannot read one
  expectType<unknown>(req.query.include_jobs);
  res.json(build);
  // @ts-expect-error: a Build's `state` is one of the spec's build states
  res.json({ ...build, state: 'done' });
};

// listAllBuilds: the filters and paging of the spec, as the validator leaves them.
export const listAllBuilds: OperationHandler<'listAllBuilds'> = (req, res) => {
  expectType<number | undefined>(req.query.page);
  expectType<ListQuery>(req.query);
  type States = NonNullable<typeof req.query.state>;
  expectType<States>(['passed', 'finished']);
  // @ts-expect-error: `state` takes the spec's filter values only
  expectType<States>('bogus');
  res.json([build]);
  // @ts-expect-error: the list answers an array of builds
  res.json(build);
};

// unblockJob: the body is optional in the spec, so the handler must allow for none.
export const unblockJob: OperationHandler<'unblockJob'> = (req) => {
  expectType<Schemas['UnblockJobRequest'] | undefined>(req.body);
  // @ts-expect-error: the body may be absent
  expectType<Schemas['UnblockJobRequest']>(req.body);
};

// A handler written for one operation cannot be bound to another.
const api = operationRouter();
// @ts-expect-error: getBuild's request (with a build number) is not what createBuild receives
api.on('createBuild', (_req: OperationRequest<'getBuild'>) => undefined);
// @ts-expect-error: not an operationId of the spec
api.on('createBuilds', () => undefined);

// The states are the spec's enums: `finished` is a filter, not a state; a job state is not free text.
expectType<BuildState[]>(['scheduled', 'passed']);
// @ts-expect-error: `finished` is only a filter value
expectType<BuildState>('finished');
expectType<Job['state']>('timed_out' satisfies JobState);
// @ts-expect-error: not a job state of the spec
expectType<Job['state']>('done');

// createPipelineTemplate: the body is CreatePipelineTemplateRequest; the answer a PipelineTemplate, with 201.
declare const template: Schemas['PipelineTemplate'];
export const createPipelineTemplate: OperationHandler<'createPipelineTemplate'> = (req, res) => {
  expectType<string>(req.body.configuration);
  expectType<boolean | undefined>(req.body.available);
  // @ts-expect-error: a template's path has no pipeline slug
  expectType<unknown>(req.params.pipeline_slug);
  // @ts-expect-error: `available` is a boolean, not a string
  expectType<string | undefined>(req.body.available);
  res.status(201).json(template);
  // @ts-expect-error: the 201 body must be a PipelineTemplate (uuid, not id)
  res.status(201).json({ id: template.uuid });
};

// getOrganizationRateLimit: the answer's scopes hold `rest` and `graphql`, whose counts are integers.
const graphql = { limit: 0, current: 0, reset: 222, reset_at: '2026-11-25T10:50:00.000Z', enforced: false };
export const getOrganizationRateLimit: OperationHandler<'getOrganizationRateLimit'> = (_req, res) => {
  // @ts-expect-error: `current` is a number
  res.json({ scopes: { rest: { limit: 200, current: '5', reset: 42, reset_at: '2026-11-25T10:47:00.000Z', enforced: true }, graphql } });
};
export const getOrganizationRateLimitWithoutGraphql: OperationHandler<'getOrganizationRateLimit'> = (_req, res) => {
  // @ts-expect-error: the docs' answer has a `graphql` scope
  res.json({ scopes: { rest: { limit: 200, current: 5, reset: 42, reset_at: '2026-11-25T10:47:00.000Z', enforced: true } } });
};
// Pipeline schedules: the schedule id is a path parameter, cronline is required on create only,
// and next_build_at is null while a schedule is disabled.
export const updatePipelineSchedule: OperationHandler<'updatePipelineSchedule'> = (req, res) => {
  expectType<string>(req.params.schedule_id);
  expectType<string | undefined>(req.body.cronline);
  // @ts-expect-error: an update need not send a cronline
  expectType<string>(req.body.cronline);
  // @ts-expect-error: a schedule answers the schedule, not a list
  res.json([] as Schemas['PipelineSchedule'][]);
};
export const createPipelineSchedule: OperationHandler<'createPipelineSchedule'> = (req) => {
  expectType<string>(req.body.cronline);
};
expectType<Schemas['PipelineSchedule']['next_build_at']>(null);
// createClusterAgentToken: the answer with the secret is the only one that may carry `token`.
declare const clusterToken: Schemas['ClusterAgentToken'];
export const createClusterAgentToken: OperationHandler<'createClusterAgentToken'> = (req, res) => {
  expectType<string>(req.params.cluster_id);
  expectType<string | null | undefined>(req.body.allowed_ip_addresses);
  res.status(201).json({ ...clusterToken, token: 'secret' });
  // @ts-expect-error: the 201 body must carry the token (ClusterAgentTokenWithSecret)
  res.status(201).json(clusterToken);
};

// getJobSecret: the agent API's secret read takes the key from the query, as a required string.
export const getJobSecret: OperationHandler<'getJobSecret'> = (req, res) => {
  expectType<string>(req.query.key);
  // @ts-expect-error: the answer needs the key (as name and key), the value and the uuid
  res.json({ value: 'v' });
};

declare const testSummary: Schemas['TestSummary'];
declare const buildTest: Schemas['BuildTest'];

// updateTestLabels: the operator is add or remove; the answer is a Test with its labels.
export const updateTestLabels: OperationHandler<'updateTestLabels'> = (req, res) => {
  expectType<'add' | 'remove'>(req.body.operator);
  expectType<string[]>(req.body.labels);
  expectType<string>(req.params.test_id);
  // @ts-expect-error: the operator is add or remove, nothing else
  expectType<'replace'>(req.body.operator);
  // @ts-expect-error: the answer is a Test, which has labels
  res.json(testSummary);
  res.json({ ...testSummary, labels: ['flaky'] });
};

// skipTest: no body; the answer is the test without labels.
export const skipTest: OperationHandler<'skipTest'> = (req, res) => {
  // @ts-expect-error: skipTest takes no body
  expectType<{ state: string }>(req.body);
  res.json(testSummary);
  // @ts-expect-error: a test's id is required in the answer
  res.json({ name: testSummary.name });
};

// listBuildTests: include and result are text the service reads; each test has its state.
export const listBuildTests: OperationHandler<'listBuildTests'> = (req, res) => {
  expectType<string | undefined>(req.query.include);
  expectType<string | undefined>(req.query.result);
  res.json([buildTest]);
  // @ts-expect-error: a build's test has a quarantine state from the spec's three
  res.json([{ ...buildTest, state: 'quarantined' }]);
};
