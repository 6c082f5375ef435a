/**
 * The normalised steps of a pipeline: what the pipelines API stores and returns, whichever form
 * (YAML configuration or visual steps) was sent.
 */
import type { components } from '../../../generated/api';
import type { Matrix, MatrixAdjustment } from './matrix';
import type { Plugin } from './plugins';
import type { StepSecret } from './secrets';

export type ExitStatus = number | '*';
export type ConcurrencyMethod = 'ordered' | 'eager';

/** One step a step waits for (`depends_on`): a command step's or a group's key, and whether its failure lets the step run. */
export type StepDependency = { step: string; allow_failure: boolean };

/** What a step written in a group step keeps of that group (each of the group's steps the same). */
export type InGroup = {
  /** The key of the group step it was written in, if that group has one. */
  group_key?: string;
  /** Written in a group step: where that group is in the configuration's `steps` (its steps share it). */
  group_index?: number;
  /**
   * The label of the group step it was written in, if that group has one: its jobs'
   * `BUILDKITE_GROUP_LABEL`. Not shown by the API (src/pipelines/serialize.ts, stepJson).
   */
  group_label?: string;
};

export type ScriptStep = InGroup & {
  type: 'script';
  name: string | null;
  command: string | null;
  artifact_paths: string | null;
  branch_configuration: string | null;
  env: Record<string, string>;
  timeout_in_minutes: number | null;
  agent_query_rules: string[];
  /** With `concurrency_group`: how many jobs of the group may run at once (each job keeps its own). */
  concurrency: number | null;
  /** The concurrency group its jobs join (organization-wide, by name). */
  concurrency_group?: string;
  /** How the group lets its jobs run: `ordered` (the default: oldest first) or `eager`; absent when not written. */
  concurrency_method?: ConcurrencyMethod;
  parallelism: number | null;
  key: string | null;
  soft_fail: boolean | { exit_status: ExitStatus }[];
  retry: StepRetry | null;
  /** Dispatch priority of the step's jobs (the step's own, else the pipeline's top-level one). */
  priority?: number;
  /** One job per combination (matrix.ts). */
  matrix?: Matrix;
  plugins?: Plugin[];
  /** Cluster secrets the agent puts in the job's environment (the step's, then the pipeline's: secrets.ts). */
  secrets?: StepSecret[];
  /** On a job's copy of a matrix step only: the combination that job runs. */
  matrix_values?: Record<string, string>;
  /** The step's notifications as written (step-level kinds only: slack, basecamp_campfire, github_commit_status, github_check). */
  notify?: NotifyEntry[];
  /** Its condition (conditions.ts): a false one makes its jobs `broken` when it is planned into a build. */
  if?: string;
  /** Written: the steps it waits for instead of the wait and block steps before it (dependencies.ts); may be empty. */
  depends_on?: StepDependency[];
  /** With `depends_on`: a failed dependency does not stop it. */
  allow_dependency_failure?: boolean;
  /** Written (or its group's): its jobs are `broken`, never run; a string is the reason they show. */
  skip?: true | string;
  /** Its unfinished jobs are canceled as soon as the build is failing. */
  cancel_on_build_failing?: true;
};

/** Slack: one channel or user (`#general`, `@someone`, `workspace#channel`), or several with a custom message. */
export type NotifySlack = string | { channels?: string[]; message?: string };
/** A GitHub commit status: its `context` (the default one when absent); at the top level, how a blocked build shows. */
export type NotifyGitHubCommitStatus = { context?: string; blocked_builds_as_pending?: boolean };
export type GitHubCheckAnnotationLevel = Schemas['GitHubCheckAnnotationLevel'];
/** An annotation of a check's output on lines of a file (GitHub's check-run annotation). */
export type NotifyGitHubCheckAnnotation = {
  path: string;
  start_line: number;
  end_line: number;
  annotation_level: GitHubCheckAnnotationLevel;
  message: string;
  start_column?: number;
  end_column?: number;
};
export type NotifyGitHubCheckOutput = { title?: string; summary?: string; text?: string; annotations?: NotifyGitHubCheckAnnotation[] };
/** A GitHub check: its `name` (`context` in pipelines saved before it was read) and its `output`, as written. */
export type NotifyGitHubCheck = { name?: string; context?: string; output?: NotifyGitHubCheckOutput };
/**
 * One `notify` entry (notify.ts reads and checks them), kept exactly as written: one of the
 * documented kinds, with the optional `if` condition (filter-condition.ts syntax, with the
 * variables of NOTIFY_CONDITION_VARIABLES on top of the `filter_condition` ones).
 */
export type NotifyEntry = (
  | { email: string }
  | { webhook: string }
  | { slack: NotifySlack }
  | { basecamp_campfire: string }
  | { pagerduty_change_event: string }
  | { github_commit_status: NotifyGitHubCommitStatus }
  | { github_check: NotifyGitHubCheck }
) & { if?: string };
export type NotifyKind = 'email' | 'webhook' | 'slack' | 'basecamp_campfire' | 'pagerduty_change_event' | 'github_commit_status' | 'github_check';
/** An automatic retry rule: which failures (exit status, and signal and signal reason when given: one, `*`, `none` or a list) and how often. */
export type AutomaticRetry = { exit_status: ExitStatus | number[]; limit: number; signal?: string | string[]; signal_reason?: string | string[] };
/** `retry.manual`: whether the retry button is allowed (with the reason when it is not), also for passed jobs. */
export type ManualRetry = { allowed: boolean; reason: string | null; permit_on_passed: boolean };
export type StepRetry = { automatic: AutomaticRetry[]; manual?: ManualRetry };
export type WaiterStep = InGroup & {
  type: 'waiter';
  continue_on_failure: boolean;
  /** Its branch filter, when written: on other branches the wait is no barrier (its job is `broken`). */
  branch_configuration?: string;
  if?: string;
  /** Its key, when written: what a step's `depends_on` names. */
  key?: string;
  /** Written: steps it waits for on top of every step before it. */
  depends_on?: StepDependency[];
  allow_dependency_failure?: boolean;
};
export type ManualField = {
  key: string;
  text?: string;
  select?: string;
  hint?: string;
  /** A text field's pattern, when written: a regular expression the whole value must match (the page's form checks it). */
  format?: string;
  required?: boolean;
  default?: string | string[];
  options?: { label: string; value: string }[];
  multiple?: boolean;
};
/** The state a build shows while this step blocks it (the docs' `blocked_state`; absent: `passed`). */
export type BlockedState = 'passed' | 'failed' | 'running';
export type ManualStep = InGroup & {
  type: 'manual';
  label: string;
  /** An input step: it holds its build from finishing, not the steps around it (block steps do both). */
  input?: true;
  prompt: string | null;
  /** The label of the button that unblocks it, when written (the docs' default: "Continue"). */
  submit?: string;
  /** The state its build shows while it blocks it, when written. */
  blocked_state?: BlockedState;
  fields: ManualField[];
  /** Who may unblock it, when written: members of these teams (slugs or ids) only, instead of who may build. */
  allowed_teams?: string[];
  branch_configuration: string | null;
  if?: string;
  /** Its key, when written: what `depends_on` names. */
  key?: string;
  depends_on?: StepDependency[];
  allow_dependency_failure?: boolean;
};
export type TriggerStep = InGroup & {
  type: 'trigger';
  name: string | null;
  trigger_project_slug: string;
  trigger_commit: string;
  /** "" means "the target pipeline's default branch", the real API's default. */
  trigger_branch: string;
  trigger_message: string | null;
  trigger_env: Record<string, string>;
  /** Meta-data of the triggered build; absent in steps stored before it was read. */
  trigger_meta_data?: Record<string, string>;
  trigger_async: boolean;
  branch_configuration: string | null;
  if?: string;
  /** Its key, when written: its job's `step_key`, what `depends_on` names. */
  key?: string;
  depends_on?: StepDependency[];
  allow_dependency_failure?: boolean;
  /** As a command step's `skip`. */
  skip?: true | string;
  /** A failed trigger job (its build failed, or could not be made) does not fail the build. */
  soft_fail?: true;
  /** When written (more than 1): that many trigger jobs, each making a build of its own. */
  parallelism?: number;
};
export type Step = ScriptStep | WaiterStep | ManualStep | TriggerStep;

// ---------------------------------------------------------------------------------------------
// The types above are written out (stricter than the spec: every property the readers always
// set is required), so they are checked against the spec's step schemas here: a change on
// either side that the other does not follow fails `npm run typecheck` on these lines.

type Schemas = components['schemas'];
type SpecRetry = NonNullable<Schemas['ScriptStep']['retry']>;
/** Compiles only when a value of type `Actual` is a valid `Spec` (extra properties aside). */
type Conforms<Actual extends Spec, Spec> = Actual;
/** True when both have the same properties, apart from `Internal` ones the API never shows. */
type SameKeys<Actual, Spec, Internal extends PropertyKey = never> = [Exclude<keyof Actual, keyof Spec | Internal>, Exclude<keyof Spec, keyof Actual>] extends [
  never,
  never,
]
  ? true
  : false;
type Holds<Check extends true> = Check;

export type StepTypesFollowTheSpec = [
  // A trigger step is shown in its own shape (src/pipelines/serialize.ts, triggerStepJson).
  Conforms<Exclude<Step, TriggerStep>, Schemas['Step']>,
  Conforms<ScriptStep, Schemas['ScriptStep']>,
  Conforms<WaiterStep, Schemas['WaiterStep']>,
  Conforms<ManualStep, Schemas['ManualStep']>,
  Conforms<ExitStatus, Schemas['ExitStatusRule']>,
  Conforms<NotifyEntry, Schemas['NotifyEntry']>,
  Conforms<NonNullable<Schemas['NotifyEntry']['slack']>, NotifySlack>,
  Conforms<NotifyGitHubCommitStatus, Schemas['NotifyGitHubCommitStatus']>,
  Conforms<NotifyGitHubCheck, Schemas['NotifyGitHubCheck']>,
  // `matrix_values` is on a job's copy of a matrix step only, which the API does not show, nor
  // `group_label` (the job environment's BUILDKITE_GROUP_LABEL);
  // `soft_fail` and `skip` are in the JSON but not in the schema's properties (a boolean or a list
  // or string: see ScriptStep's description).
  Holds<SameKeys<ScriptStep, Schemas['ScriptStep'], 'matrix_values' | 'soft_fail' | 'skip' | 'group_label'>>,
  Holds<SameKeys<WaiterStep, Schemas['WaiterStep'], 'group_label'>>,
  Holds<SameKeys<ManualStep, Schemas['ManualStep'], 'group_label'>>,
  Holds<SameKeys<StepRetry, SpecRetry>>,
  Holds<SameKeys<AutomaticRetry, SpecRetry['automatic'][number]>>,
  Holds<SameKeys<ManualRetry, NonNullable<SpecRetry['manual']>>>,
  Holds<SameKeys<Exclude<NotifySlack, string>, Schemas['NotifySlack']>>,
  Holds<SameKeys<NotifyGitHubCommitStatus, Schemas['NotifyGitHubCommitStatus']>>,
  Holds<SameKeys<NotifyGitHubCheck, Schemas['NotifyGitHubCheck']>>,
  Holds<SameKeys<NotifyGitHubCheckOutput, Schemas['NotifyGitHubCheckOutput']>>,
  Holds<SameKeys<NotifyGitHubCheckAnnotation, Schemas['NotifyGitHubCheckAnnotation']>>,
  Holds<SameKeys<Record<NotifyKind | 'if', unknown>, Schemas['NotifyEntry']>>,
  Holds<SameKeys<ManualField, NonNullable<Schemas['ManualStep']['fields']>[number]>>,
  Holds<SameKeys<Matrix, NonNullable<Schemas['ScriptStep']['matrix']>>>,
  Holds<SameKeys<MatrixAdjustment, NonNullable<Schemas['ScriptStep']['matrix']>['adjustments'][number], 'soft_fail'>>,
];
