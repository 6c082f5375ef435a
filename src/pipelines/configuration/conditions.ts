/**
 * A step's `if` (the docs' "Conditionals in steps"): a condition in the `filter_condition`
 * syntax (src/pipelines/filter-condition.ts), evaluated when the step is planned into a build
 * (at the build's creation, or at the upload that adds it); a step whose condition is false
 * becomes a `broken` job, as the docs say. Checked here when the configuration is read.
 */
import { MAX_TEXT } from './limits';
import { quote, tooLong, type ProblemReporter } from './problems';
import { findProperty, text } from './property-readers';
import { conditionProblem, parseCondition, STEP_CONDITION_VARIABLES } from '../filter-condition';
import type { ConfigMap } from './value-tree';

/** The step's `if`, checked; undefined when it has none (or a null one). */
export function stepCondition(reporter: ProblemReporter, stepMap: ConfigMap, branchesNames: readonly string[]): string | undefined {
  const found = findProperty(stepMap, ['if']);
  if (!found) return undefined;
  const [path, v] = found;
  const condition = text(v);
  if (condition === undefined) return void reporter.fail(path, 'must be a condition, such as build.branch == "main"', v);
  if (condition.length > MAX_TEXT) return void reporter.fail(path, tooLong(MAX_TEXT), v);
  const parsed = parseCondition(condition, STEP_CONDITION_VARIABLES);
  if (!parsed.ok) return void reporter.fail(path, conditionProblem(parsed.error), v);
  // Documented: "it cannot be used at the same time as the branches attribute".
  const branches = findProperty(stepMap, branchesNames);
  if (branches) return void reporter.fail(path, `cannot be used together with ${quote(branches[0])}`, v);
  return condition;
}

/** A group's condition and its step's, both to hold (each on lines of its own: a `//` comment ends at a line's end). */
export function bothConditions(group: string | undefined, step: string | undefined): string | undefined {
  if (group === undefined) return step;
  if (step === undefined) return group;
  return `(${group}\n) && (${step}\n)`;
}
