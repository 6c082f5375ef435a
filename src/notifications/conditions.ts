/**
 * The `if` of a pipeline's notify entries, evaluated against the build an event is about, with
 * the variables the documentation names for conditional notifications: the build's (state,
 * branch, commit, creator...), the pipeline's and the organization's, and whether this build
 * started the pipeline passing (`pipeline.started_passing`, `build.fixed`) or failing
 * (`pipeline.started_failing`), told by the branch's previous finished build. A condition that
 * does not parse holds for nothing (it was refused when the pipeline was saved; one saved
 * before the reader knew it is left out, not sent unrestricted).
 */
import { NOTIFY_CONDITION_VARIABLES, STEP_NOTIFY_CONDITION_VARIABLES, parseCondition, type Value } from '../pipelines/filter-condition';
import type { FanOutContext } from './service';
import { buildConditionContext } from '../builds/jobs/plan';

const VARIABLES = [...NOTIFY_CONDITION_VARIABLES, ...STEP_NOTIFY_CONDITION_VARIABLES];

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
  // The build's and pipeline's own variables are a step `if`'s (one reader of a build for both).
  const vars: Map<string, Value> = b && p ? buildConditionContext(b, p) : new Map<string, Value>([['build.pull_request.labels', []]]);
  const more: [string, Value][] = [
    ['build.id', b?.id ?? null],
    ['build.number', b?.number ?? null],
    // A step's entries (read at its moments) cannot know the build's state (the docs): null.
    ['build.state', step ? null : state],
    ['build.creator.name', b?.creator?.name ?? null],
    ['build.creator.email', b?.creator?.email ?? null],
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
