/**
 * Pipeline steps from either source the pipelines API accepts: a YAML `configuration` (the
 * document `buildkite-agent pipeline upload` takes) or the visual `steps` list. Both become the
 * same normalised `Step[]`, so what is stored is exactly what the API returns, whichever form
 * was sent. No HTTP and no database here: every problem is reported as one ValidationError that
 * lists each fault, so a client can fix them all in one round trip.
 *
 * Both inputs are first read into a small neutral value tree (`ConfigValue`, value-tree.ts) that keeps YAML line numbers,
 * so one set of step rules serves both dialects and only the wording of errors differs.
 *
 * The modules of this folder, in the order the input flows through them:
 * - limits.ts: the caps and patterns every reader enforces;
 * - value-tree.ts: the neutral value tree, and how JSON (the visual steps) becomes one;
 * - yaml-reader.ts: how a parsed YAML document becomes one (aliases, merge keys, line numbers);
 * - problems.ts: the error collector and the reporters that word a problem for each dialect;
 * - property-readers.ts: readers for property values (text, numbers, env, agents, retry...);
 * - step-readers.ts: one reader per step type, shared by both dialects;
 * - notify.ts: the `notify` lists of the top level and of command steps;
 * - yaml-configuration.ts and visual-steps.ts: the two entry points;
 * - step-types.ts: the normalised steps they return;
 * - matrix.ts, plugins.ts: the `matrix` and `plugins` of a command step (matrix.ts also expands a
 *   matrix into jobs when a build is planned);
 * - step-attributes.ts: every documented attribute of each step type, and what Windsock does
 *   with it.
 */

export type {
  AutomaticRetry,
  BlockedState,
  ConcurrencyMethod,
  ExitStatus,
  ManualField,
  ManualRetry,
  ManualStep,
  NotifyEntry,
  NotifyGitHubCheck,
  NotifyGitHubCommitStatus,
  NotifyKind,
  NotifySlack,
  ScriptStep,
  Step,
  StepDependency,
  StepRetry,
  TriggerStep,
  WaiterStep,
} from './step-types';
export { NOTIFY_KINDS, STEP_NOTIFY_KINDS } from './notify';
export { parseConfiguration, type ParsedConfiguration } from './yaml-configuration';
export { normaliseVisualSteps } from './visual-steps';
