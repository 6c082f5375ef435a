/**
 * Pipeline steps from either source the pipelines API accepts: a YAML `configuration` (the
 * document `buildkite-agent pipeline upload` takes) or the visual `steps` list. Both become the
 * same normalised `Step[]`, so what is stored is exactly what the API returns, whichever form
 * was sent. No HTTP and no database here: every problem is reported as one ValidationError that
 * lists each fault, so a client can fix them all in one round trip.
 *
 * Both inputs are first read into a small neutral value tree (`V`) that keeps YAML line numbers,
 * so one set of step rules serves both dialects and only the wording of errors differs.
 */

export type {
  AutomaticRetry,
  ExitStatus,
  ManualField,
  ManualRetry,
  ManualStep,
  ScriptStep,
  Step,
  StepRetry,
  TriggerStep,
  WaiterStep,
} from './step-types';
export { parseConfiguration, type ParsedConfiguration } from './yaml-configuration';
export { normaliseVisualSteps } from './visual-steps';
