/**
 * The `if` of a pipeline's notify entries, evaluated against the build an event is about, with
 * the variables the documentation names for conditional notifications: every one a step's `if`
 * has (the build's, `build.env()` included, the pipeline's and the organization's), the build's
 * state, and whether this build
 * started the pipeline passing (`pipeline.started_passing`, `build.fixed`) or failing
 * (`pipeline.started_failing`), told by the branch's previous finished build. A condition that
 * does not parse holds for nothing (it was refused when the pipeline was saved; one saved
 * before the reader knew it is left out, not sent unrestricted).
 */
import { NOTIFY_CONDITION_VARIABLES, STEP_NOTIFY_CONDITION_VARIABLES, parseCondition, type Value } from '../pipelines/filter-condition';
import type { FanOutContext } from './service';
import type { RenderedEvent } from './payload';
import { storedStepConditionContext } from '../builds/jobs/plan';
import { isRecord } from '../core/guards';

const VARIABLES = [...NOTIFY_CONDITION_VARIABLES, ...STEP_NOTIFY_CONDITION_VARIABLES];

/**
 * Whether an `if` of the event's notify entries (the build's, and its job's step's) names the
 * build creator's teams, which are read for the context only then.
 */
export function namesCreatorTeams(rendered: Pick<RenderedEvent, 'build' | 'job'>): boolean {
  const step: unknown = rendered.job?.step;
  const entries = [rendered.build?.notify, isRecord(step) ? step.notify : undefined].flatMap((n) => (Array.isArray(n) ? n : []));
  return entries.some((e) => {
    if (!isRecord(e) || typeof e.if !== 'string') return false;
    const parsed = parseCondition(e.if, VARIABLES);
    return parsed.ok && parsed.condition.variables().has('build.creator.teams');
  });
}

/** The variables of an entry's `if`: the build's, and at a step's moment (ctx.stepMoment) the step's; null otherwise. */
export function notifyConditionContext(ctx: FanOutContext): Map<string, Value> {
  const step = ctx.stepMoment;
  const b = ctx.rendered.build;
  const p = ctx.rendered.pipeline;
  const previous = ctx.previousFinishedState;
  // A build event's condition reads the state the event is about, not the one the build has
  // reached by fan-out (a quick build can be failed by then: its build.scheduled is not failed).
  const state = ctx.buildStateAtEvent ?? (b ? (b.blocked && b.state === 'passed' ? 'blocked' : b.state) : null);
  const startedPassing = state === 'passed' && previous === 'failed';
  const startedFailing = state === 'failed' && previous === 'passed';
  // Every variable a step's `if` has (one reader of a build for both), then the outcome's.
  const vars: Map<string, Value> =
    b && p ? storedStepConditionContext(b, p, ctx.rendered.organization, ctx.creatorTeams) : new Map<string, Value>([['build.pull_request.labels', []]]);
  const more: [string, Value][] = [
    // A step's entries (read at its moments) cannot know the build's state (the docs): null.
    ['build.state', step ? null : state],
    ['build.fixed', startedPassing],
    ['pipeline.started_passing', startedPassing],
    ['pipeline.started_failing', startedFailing],
    ['organization.slug', ctx.rendered.organization.slug],
    ['step.id', step?.id ?? null],
    ['step.key', step?.key ?? null],
    ['step.label', step?.label ?? null],
    ['step.type', step?.type ?? null],
    ['step.state', step?.state ?? null],
    ['step.outcome', step?.outcome ?? null],
  ];
  for (const [k, v] of more) vars.set(k, v);
  return vars;
}

/** Evaluates conditions against the event's build, and its step's moment if it is one (the context is built once per event). */
export function conditionOf(ctx: FanOutContext): (condition: string) => boolean {
  let vars: Map<string, Value> | undefined;
  return (condition) => {
    const parsed = parseCondition(condition, VARIABLES);
    if (!parsed.ok) return false;
    vars ??= notifyConditionContext(ctx);
    return parsed.condition.evaluate(vars);
  };
}
