/** The visual `steps` list of the pipelines API. */
import { ValidationError } from '../../core/errors';
import { MAX_STEPS } from './limits';
import { asValidationError, ProblemList, VisualProblemReporter } from './problems';
import { text } from './property-readers';
import { checkDependencies, keptKey, type DependentStep } from './dependencies';
import { manualStep, scriptStep, triggerStep, waiterStep } from './step-readers';
import type { Step } from './step-types';
import { ValueBudget, valueFromJson } from './value-tree';

const VISUAL_TYPES = new Set<string>(['script', 'waiter', 'manual', 'trigger']);

/** Validate and normalise the visual `steps` array of the pipelines API (JSON objects already parsed). */
export function normaliseVisualSteps(input: unknown[]): Step[] {
  try {
    return normaliseVisualStepsOrThrow(input);
  } catch (error) {
    throw asValidationError(error, 'steps', 'is too large');
  }
}

function normaliseVisualStepsOrThrow(input: unknown[]): Step[] {
  if (!Array.isArray(input)) throw ValidationError.field('steps', 'must be a list of steps');
  if (input.length === 0) throw ValidationError.field('steps', "can't be blank");
  if (input.length > MAX_STEPS) throw ValidationError.field('steps', `is too long (maximum is ${MAX_STEPS} steps)`);

  const budget = new ValueBudget();
  const problems = new ProblemList();
  const steps: Step[] = [];
  const keys = new Set<string>();
  const dependents: DependentStep[] = [];
  for (let i = 0; i < input.length && !problems.full; i++) {
    const reporter = new VisualProblemReporter(problems, i);
    const v = valueFromJson(input[i], 0, budget);
    if (v.kind !== 'map') {
      reporter.failStep('must be an object');
      continue;
    }
    const type = v.get('type');
    const typeText = type === undefined ? undefined : text(type);
    if (typeText === undefined || typeText.trim() === '') {
      const missing = type === undefined || type.kind === 'null' || typeText !== undefined;
      reporter.fail('type', missing ? "can't be blank" : 'is not included in the list');
      continue;
    }
    if (!VISUAL_TYPES.has(typeText)) {
      reporter.fail('type', 'is not included in the list');
      continue;
    }
    const step =
      typeText === 'script'
        ? scriptStep(reporter, v, { agents: [] })
        : typeText === 'waiter'
          ? waiterStep(reporter, v)
          : typeText === 'manual'
            ? manualStep(reporter, v)
            : triggerStep(reporter, v);
    const key = keptKey(step);
    if (key !== null) {
      if (keys.has(key)) reporter.fail('key', 'has already been taken by another step');
      keys.add(key);
    }
    const dependencies = step.depends_on;
    if (dependencies) dependents.push({ reporter, key, group: null, dependencies, at: undefined });
    steps.push(step);
  }
  checkDependencies(dependents, new Map());
  problems.throwIfAny();
  return steps;
}
