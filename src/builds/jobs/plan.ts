/**
 * Jobs of a new build, planned from the pipeline's steps: one job per step (one per parallel
 * copy, or per matrix combination, for script steps), their starting states, merged env,
 * dispatch priority, and each script job's signature.
 * Pure: no database, no clock of its own.
 */
import crypto from 'node:crypto';
import type { ScriptStep, Step } from '../../pipelines/configuration';
import { combinations, interpolate, interpolateJsonObject } from '../../pipelines/configuration/matrix';
import type { Plugin } from '../../pipelines/configuration/plugins';
import { matchesBranchFilter } from '../../pipelines/branch-filter';
import { envVariable, parseCondition, STEP_CONDITION_VARIABLES, type ConditionContext, type Value } from '../../pipelines/filter-condition';
import { buildEnvironment, type BuildEnvironmentSource } from '../environment';
import type { Keys } from '../../security/keys';
import { concurrencyOf, type JobConcurrency } from './concurrency';
import type { Build } from '../model';
import type { Pipeline } from '../../pipelines/repository';

export type JobType = Step['type'];

export interface StepSignature {
  value: string;
  algorithm: string;
  signed_fields: string[];
}

export interface PlannedJob {
  id: string;
  position: number;
  type: JobType;
  state: 'scheduled' | 'limited' | 'waiting' | 'blocked' | 'broken';
  name: string | null;
  stepKey: string | null;
  stepId: string;
  /** The group step its step was written in: one id per group of the configuration planned (null: none). */
  groupId: string | null;
  signature: StepSignature | null;
  step: Step;
  command: string | null;
  agentQueryRules: string[];
  env: Record<string, string>;
  artifactPaths: string | null;
  timeoutInMinutes: number | null;
  parallelGroupIndex: number | null;
  parallelGroupTotal: number | null;
  brokenReason: string | null;
  /** Dispatch priority (`jobs.priority`): the step's, for script jobs; 0 otherwise, as documented. */
  priority: number;
  /** The concurrency group it joins (script jobs whose step names one). */
  concurrency: JobConcurrency | null;
  /** The cluster of the job's pipeline when it was planned (./cluster-queue.ts); none when absent. */
  clusterId?: string | null;
  /** The cluster's queue the job targets, if it existed then. */
  clusterQueueId?: string | null;
}

export interface PlanContext {
  branch: string;
  pipelineEnv: Record<string, string>;
  buildEnv: Record<string, string>;
  repositoryUrl: string;
  /** The pipeline's `default_command_step_timeout` and `maximum_command_step_timeout`. */
  stepTimeouts?: StepTimeouts;
  /** Signs a script step's fields; see signStep. */
  sign: (fields: Record<string, unknown>) => StepSignature;
  /** What a step's `if` reads: the build and its pipeline (stepConditionContext). */
  conditions: ConditionContext;
}

export interface StepTimeouts {
  defaultMinutes: number | null;
  maximumMinutes: number | null;
}

/**
 * A command job's timeout, as the build timeouts documentation orders them: the step's own, else
 * the pipeline's default; the pipeline's maximum caps either, and applies when neither is set.
 */
export function commandTimeout(stepMinutes: number | null, t: StepTimeouts | undefined): number | null {
  const chosen = stepMinutes ?? t?.defaultMinutes ?? null;
  const max = t?.maximumMinutes ?? null;
  if (max === null) return chosen;
  return chosen === null ? max : Math.min(chosen, max);
}

export const SIGNED_FIELDS = ['command', 'env', 'matrix', 'plugins', 'repository_url'];

/** Deterministic JSON (sorted keys) so a verifier can rebuild the exact signed payload. */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value && typeof value === 'object') {
    const entries = Object.entries(value).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  return JSON.stringify(value ?? null);
}

/** The server's key for step signatures. */
export function stepSigningKey(keys: Keys): Buffer {
  return Buffer.from(keys.derive('step-signing', 'v1', 64), 'hex');
}

/** Signs steps' fields under `key`. */
export function signer(key: Buffer): (fields: Record<string, unknown>) => StepSignature {
  return (fields) => signStep(key, fields);
}

/**
 * A detached-payload JWS (RFC 7515 appendix F): `<header>..<signature>`, HS256 under the
 * server's pipeline signing key, over the canonical JSON of the signed fields.
 */
export function signStep(key: Buffer, fields: Record<string, unknown>): StepSignature {
  const header = Buffer.from(JSON.stringify({ alg: 'HS256', typ: 'JOSE' })).toString('base64url');
  const payload = Buffer.from(canonicalJson(fields)).toString('base64url');
  const signature = crypto.createHmac('sha256', key).update(`${header}.${payload}`).digest('base64url');
  return { value: `${header}..${signature}`, algorithm: 'HS256', signed_fields: SIGNED_FIELDS };
}

export function verifyStepSignature(key: Buffer, signature: string, fields: Record<string, unknown>): boolean {
  const [header, empty, sig] = signature.split('.');
  if (!header || empty !== '' || !sig) return false;
  const payload = Buffer.from(canonicalJson(fields)).toString('base64url');
  const expected = crypto.createHmac('sha256', key).update(`${header}.${payload}`).digest();
  const given = Buffer.from(sig, 'base64url');
  return given.length === expected.length && crypto.timingSafeEqual(given, expected);
}

/** The fields of a script job that its signature covers. */
export function signedFieldsOf(
  job: { command: string | null; env: Record<string, string>; matrix?: Record<string, string> | null; plugins?: Plugin[] | null },
  repositoryUrl: string,
): Record<string, unknown> {
  return { command: job.command ?? '', env: job.env, matrix: job.matrix ?? null, plugins: job.plugins ?? null, repository_url: repositoryUrl };
}

/**
 * The step each job of a script step runs: the step itself, or for a matrix one copy per
 * combination with its values put into label, command, env, agents and plugins, the
 * adjustment's `soft_fail` in place of the step's, and the values kept (`matrix_values`).
 */
export function scriptVariants(step: ScriptStep): ScriptStep[] {
  if (!step.matrix) return [step];
  const rest: ScriptStep = { ...step };
  delete rest.matrix;
  return combinations(step.matrix).map(({ values, soft_fail }) => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(step.env))
      Object.defineProperty(env, k, { value: interpolate(v, values), enumerable: true, writable: true, configurable: true });
    const variant: ScriptStep = {
      ...rest,
      name: step.name === null ? null : interpolate(step.name, values),
      command: step.command === null ? null : interpolate(step.command, values),
      env,
      agent_query_rules: step.agent_query_rules.map((rule) => interpolate(rule, values)),
      soft_fail: soft_fail ?? step.soft_fail,
      matrix_values: values,
    };
    if (step.plugins) variant.plugins = step.plugins.map((p) => interpolateJsonObject(p, values));
    return variant;
  });
}

/** Whether a step's condition holds for the build (one that no longer parses does not). */
function holds(condition: string, context: ConditionContext): boolean {
  const parsed = parseCondition(condition, STEP_CONDITION_VARIABLES);
  return parsed.ok && parsed.condition.evaluate(context);
}

/**
 * The variables of the would-be build that a `filter_condition` reads (CONDITION_VARIABLES, but
 * for what only a webhook says): what the build is created from, and its pipeline.
 */
export function buildConditionContext(
  b: Pick<Build, 'branch' | 'message' | 'commit' | 'source' | 'author' | 'pullRequest'> & { tag?: string | null },
  pipeline: Pick<Pipeline, 'slug' | 'defaultBranch' | 'repository'>,
): Map<string, Value> {
  return new Map<string, Value>([
    ['build.branch', b.branch],
    ['build.tag', b.tag ?? null],
    ['build.message', b.message],
    ['build.commit', b.commit],
    ['build.source', b.source],
    ['build.author.name', b.author?.name ?? null],
    ['build.author.email', b.author?.email ?? null],
    ['build.author.username', b.author?.username ?? null],
    ['build.pull_request.id', b.pullRequest?.id ?? null],
    ['build.pull_request.base_branch', b.pullRequest?.base ?? null],
    ['build.pull_request.labels', b.pullRequest?.labels ?? []],
    ['build.pull_request.repository', b.pullRequest?.repository ?? null],
    // Known when a provider's webhook made the build; null on others (the docs: null when unknown).
    ['build.pull_request.draft', b.pullRequest?.draft ?? null],
    ['build.pull_request.repository.fork', b.pullRequest?.fork ?? null],
    ['pipeline.slug', pipeline.slug],
    ['pipeline.default_branch', pipeline.defaultBranch],
    ['pipeline.repository', pipeline.repository],
  ]);
}

/** What a step's `if` reads: the build (as planned, or as stored for an upload), its pipeline and organization. */
export interface StepConditionSource extends BuildEnvironmentSource {
  build: BuildEnvironmentSource['build'] & Pick<Build, 'author' | 'webhookEvent'> & { creator: { id: string; name: string; email: string } | null };
  /** The slugs of the teams of the organization the build's creator is a member of. */
  creatorTeams: readonly string[];
  /** The env the build gives its steps: the pipeline's and the build's (`build.env()` reads them, then the `BUILDKITE_*` ones). */
  env: Readonly<Record<string, string>>;
}

/**
 * Every variable the docs' conditionals reference gives a step's `if`. What a build does not have
 * is null: a merge queue (Windsock has none), the webhook event behind a build that no GitHub
 * webhook made (its name and action, the label just added), an author's Buildkite identity.
 * `build.number` is null while a new build is planned: its number is given when it is written
 * (a pipeline upload's steps see it).
 */
export function stepConditionContext(s: StepConditionSource): Map<string, Value> {
  const { build: b, pipeline: p, organization: o } = s;
  const ctx = buildConditionContext(b, p);
  const more: [string, Value][] = [
    ['build.id', b.id],
    ['build.number', b.number],
    ['build.creator.id', b.creator?.id ?? null],
    ['build.creator.name', b.creator?.name ?? null],
    ['build.creator.email', b.creator?.email ?? null],
    ['build.creator.teams', s.creatorTeams],
    ['build.author.id', null],
    ['build.author.teams', []],
    ['build.pull_request.label', b.webhookEvent?.label ?? null],
    ['build.merge_queue.base_branch', null],
    ['build.merge_queue.base_commit', null],
    ['build.source_event', b.webhookEvent?.event ?? null],
    ['build.source_action', b.webhookEvent?.action ?? null],
    ['pipeline.id', p.id],
    ['organization.id', o.id],
    ['organization.slug', o.slug],
  ];
  for (const [k, v] of more) ctx.set(k, v);
  for (const [k, v] of Object.entries({ ...s.env, ...buildEnvironment(s) })) ctx.set(envVariable(k), v);
  return ctx;
}

/**
 * What a step's `if` reads of a stored build: its env the pipeline's (its template's, when it
 * has one) and the build's, as the build's steps had it when planned.
 */
export function storedStepConditionContext(
  build: StepConditionSource['build'] & Pick<Build, 'env'>,
  pipeline: StepConditionSource['pipeline'] & Pick<Pipeline, 'env' | 'template'>,
  organization: StepConditionSource['organization'],
  creatorTeams: readonly string[],
): Map<string, Value> {
  return stepConditionContext({ build, pipeline, organization, creatorTeams, env: { ...(pipeline.template ?? pipeline).env, ...build.env } });
}

/** A build takes at most this many jobs, uploads included (retried jobs count too): the docs' default quota, 'Jobs per build'. */
export const MAX_JOBS_PER_BUILD = 4000;

/**
 * Why a step's jobs do not run (they become `broken`), with the job's `broken_reason` as the
 * REST docs give it: the step's `skip` (its reason, free text, or none for `skip: true`); the
 * reason codes `branch_mismatch` (its branch filter excludes the build's branch) and
 * `conditional_failed` (its `if` is false). Null when the step runs.
 */
function exclusion(step: Step, ctx: PlanContext): { reason: string | null } | null {
  if ('skip' in step && step.skip !== undefined) return { reason: step.skip === true ? null : step.skip };
  const filter = 'branch_configuration' in step ? step.branch_configuration : null;
  if (filter && !matchesBranchFilter(filter, ctx.branch)) return { reason: 'branch_mismatch' };
  if (step.if !== undefined && !holds(step.if, ctx.conditions)) return { reason: 'conditional_failed' };
  return null;
}

/**
 * Jobs before the first wait or block step start `scheduled`; jobs behind one start `waiting`.
 * A group's wait and block steps hold back its own steps only, and a group is behind the
 * barriers written before it (the docs' "Parallel groups"; ./state.ts runs the same scopes).
 * A block step reached at once (nothing before it in its scope) starts `blocked`, else
 * `waiting`. A step that is skipped, or that its branch filter or condition leaves out, becomes
 * `broken` jobs.
 */

export function planJobs(steps: Step[], ctx: PlanContext): PlannedJob[] {
  const jobs: PlannedJob[] = [];
  /** Behind a barrier written outside any group. */
  let behindBarrier = false;
  /** The configuration's groups by `group_index`: each one's id, whether it is behind a barrier, and the jobs before it. */
  const groups = new Map<number, { id: string; behindBarrier: boolean; jobsBefore: number }>();
  const base = (
    step: Step,
    stepId: string,
    groupId: string | null,
  ): Omit<PlannedJob, 'id' | 'position' | 'type' | 'state' | 'name' | 'stepKey' | 'clusterId' | 'clusterQueueId'> => ({
    stepId,
    groupId,
    step,
    signature: null,
    command: null,
    agentQueryRules: [],
    env: {},
    artifactPaths: null,
    timeoutInMinutes: null,
    parallelGroupIndex: null,
    parallelGroupTotal: null,
    brokenReason: null,
    priority: 0,
    concurrency: null,
  });
  for (const step of steps) {
    const stepId = crypto.randomUUID();
    const index = step.group_index;
    const group = index === undefined ? null : (groups.get(index) ?? { id: crypto.randomUUID(), behindBarrier, jobsBefore: jobs.length });
    if (index !== undefined && group) groups.set(index, group);
    const groupId = group?.id ?? null;
    const behind = group ? group.behindBarrier : behindBarrier;
    const excluded = exclusion(step, ctx);
    // A step with `depends_on` waits for those steps (the build's machine lets it go), not for the barriers.
    const dependsOn = step.depends_on;
    const startState = excluded ? 'broken' : dependsOn ? (dependsOn.length > 0 ? 'waiting' : 'scheduled') : behind ? 'waiting' : 'scheduled';
    const barrier = () => {
      if (group) group.behindBarrier = true;
      else behindBarrier = true;
    };
    const brokenReason = excluded ? excluded.reason : null;
    switch (step.type) {
      case 'script': {
        // A matrix step has no parallelism (the parser refuses both together).
        const total = step.parallelism && step.parallelism > 1 ? step.parallelism : null;
        // A job of a concurrency group that could run waits for the group's room (concurrency.ts).
        const concurrency = concurrencyOf(step);
        for (const variant of scriptVariants(step)) {
          const env = { ...ctx.pipelineEnv, ...ctx.buildEnv, ...variant.env };
          // How Buildkite hands plugins to the agent: JSON in the job's environment.
          if (variant.plugins) env.BUILDKITE_PLUGINS = JSON.stringify(variant.plugins);
          const signature = ctx.sign(
            signedFieldsOf({ command: variant.command, env, matrix: variant.matrix_values, plugins: variant.plugins }, ctx.repositoryUrl),
          );
          for (let i = 0; i < (total ?? 1); i++) {
            jobs.push({
              ...base(variant, stepId, groupId),
              id: crypto.randomUUID(),
              position: jobs.length,
              type: 'script',
              state: startState === 'scheduled' && concurrency ? 'limited' : startState,
              name: variant.name,
              stepKey: variant.key,
              signature,
              command: variant.command,
              agentQueryRules: variant.agent_query_rules,
              env,
              artifactPaths: variant.artifact_paths,
              timeoutInMinutes: commandTimeout(variant.timeout_in_minutes, ctx.stepTimeouts),
              parallelGroupIndex: total ? i : null,
              parallelGroupTotal: total,
              brokenReason,
              priority: variant.priority ?? 0,
              concurrency,
            });
          }
        }
        break;
      }
      case 'waiter':
        // A wait step whose condition is false is no barrier: broken, the state machine passes it by.
        jobs.push({
          ...base(step, stepId, groupId),
          id: crypto.randomUUID(),
          position: jobs.length,
          type: 'waiter',
          state: excluded ? 'broken' : 'waiting',
          name: null,
          stepKey: step.key ?? null,
          brokenReason,
        });
        if (!excluded) barrier();
        break;
      case 'manual': {
        // Reached at once: first of the build (or of its group, not behind a barrier), or with
        // `depends_on` naming nothing; an input step depends on none of the steps before it (documented).
        const first = group ? !group.behindBarrier && jobs.length === group.jobsBefore : jobs.length === 0;
        const reachedAtOnce = dependsOn ? dependsOn.length === 0 : step.input === true || first;
        jobs.push({
          ...base(step, stepId, groupId),
          id: crypto.randomUUID(),
          position: jobs.length,
          type: 'manual',
          state: excluded ? 'broken' : reachedAtOnce ? 'blocked' : 'waiting',
          name: step.label,
          stepKey: step.key ?? null,
          brokenReason,
        });
        // An input step holds back none of the steps after it (documented).
        if (!excluded && !step.input) barrier();
        break;
      }
      case 'trigger': {
        // A parallel trigger step: one trigger job (and so one build) per index.
        const total = step.parallelism ?? null;
        for (let i = 0; i < (total ?? 1); i++) {
          jobs.push({
            ...base(step, stepId, groupId),
            id: crypto.randomUUID(),
            position: jobs.length,
            type: 'trigger',
            state: startState,
            name: step.name,
            stepKey: step.key ?? null,
            parallelGroupIndex: total ? i : null,
            parallelGroupTotal: total,
            brokenReason,
          });
        }
        break;
      }
    }
  }
  return jobs;
}
