/**
 * Every attribute Buildkite documents for each step type and for the top level of a pipeline,
 * with what Windsock does with it, so that nothing in a configuration is dropped without a word:
 * - `works`: read and acted on;
 * - `reported`: accepted (a real pipeline keeps working) but not acted on; the answer that
 *   accepted it says so in a `Warning` header;
 * - `refused`: a 422 naming it, because running the pipeline without it would do something
 *   different from what was written (steps out of order, a step that should not run...).
 * A step attribute the documentation does not define is refused, as Buildkite's published
 * pipeline schema does (`additionalProperties: false` on every step type); the top level stays
 * open, since pipelines keep YAML anchors under keys of their own there. README lists the same.
 */

export type AttributeState = 'works' | 'reported' | 'refused';
export type StepType = 'command' | 'wait' | 'block' | 'input' | 'trigger' | 'group';
type Catalogue = Record<string, [AttributeState] | [Exclude<AttributeState, 'works'>, string]>;

const WORKS: [AttributeState] = ['works'];
/** Every step type takes a condition (conditions.ts). */
const IF: Catalogue = { if: WORKS };
/** Every step type (and a group, for its steps) waits for the steps `depends_on` names (dependencies.ts). */
const DEPENDS_ON: Catalogue = { depends_on: WORKS, allow_dependency_failure: WORKS, ...IF };
/** Command and trigger steps (and a group's, for its steps) can be skipped: their jobs are `broken` (plan.ts). */
const SKIP: Catalogue = { skip: WORKS };
/** The docs' agent-applied `if_changed` (command, trigger and group steps): the agent drops the step at upload. */
const IF_CHANGED: Catalogue = { if_changed: ['reported', 'the agent applies it at upload; the server does not'] };
/**
 * A command step's and the top level's `notify` are kept (notify.ts); of their entries, those
 * Windsock cannot deliver are reported one by one (NOTIFY_KINDS_REPORTED). A group's `notify` is
 * not kept: Windsock keeps no group.
 */
const GROUP_NOTIFY: Catalogue = { notify: ['reported', "a group's notifications are not kept: put them on its command steps or the top level"] };

/** Notification kinds kept with the build but not delivered, and why (reported per entry). */
export const NOTIFY_KINDS_REPORTED: Readonly<Record<string, string>> = {
  pagerduty_change_event: "PagerDuty change events are sent through Buildkite's PagerDuty integration, which Windsock cannot reach; the entry is kept",
};

export const STEP_ATTRIBUTES: Record<StepType, Catalogue> = {
  command: {
    type: WORKS,
    command: WORKS,
    commands: WORKS,
    label: WORKS,
    name: WORKS,
    agents: WORKS,
    agent_query_rules: WORKS,
    artifact_paths: WORKS,
    artifacts: WORKS,
    branches: WORKS,
    branch_configuration: WORKS,
    env: WORKS,
    key: WORKS,
    id: WORKS,
    identifier: WORKS,
    matrix: WORKS,
    parallelism: WORKS,
    plugins: WORKS,
    priority: WORKS,
    retry: WORKS,
    soft_fail: WORKS,
    timeout_in_minutes: WORKS,
    timeout: WORKS,
    concurrency: WORKS,
    concurrency_group: WORKS,
    concurrency_method: WORKS,
    cancel_on_build_failing: WORKS,
    checkout: ['reported', 'checkout settings are not passed to the agent'],
    cache: ['reported', 'caches are a feature of Buildkite hosted agents'],
    image: ['reported', 'the image is not passed to the agent (BUILDKITE_IMAGE)'],
    ...IF_CHANGED,
    signature: ['reported', 'Windsock signs steps itself'],
    secrets: WORKS,
    notify: WORKS,
    ...DEPENDS_ON,
    ...SKIP,
  },
  wait: {
    type: WORKS,
    wait: WORKS,
    waiter: WORKS,
    continue_on_failure: WORKS,
    branches: WORKS,
    branch_configuration: WORKS,
    key: WORKS,
    id: WORKS,
    identifier: WORKS,
    ...DEPENDS_ON,
  },
  block: {
    type: WORKS,
    block: WORKS,
    label: WORKS,
    name: WORKS,
    prompt: WORKS,
    submit: WORKS,
    fields: WORKS,
    allowed_teams: WORKS,
    branches: WORKS,
    branch_configuration: WORKS,
    blocked_state: WORKS,
    key: WORKS,
    id: WORKS,
    identifier: WORKS,
    ...DEPENDS_ON,
  },
  input: {
    type: WORKS,
    input: WORKS,
    label: WORKS,
    name: WORKS,
    prompt: WORKS,
    fields: WORKS,
    blocked_state: WORKS,
    allowed_teams: WORKS,
    branches: WORKS,
    branch_configuration: WORKS,
    key: WORKS,
    id: WORKS,
    identifier: WORKS,
    ...DEPENDS_ON,
  },
  trigger: {
    type: WORKS,
    trigger: WORKS,
    trigger_project_slug: WORKS,
    build: WORKS,
    label: WORKS,
    name: WORKS,
    async: WORKS,
    trigger_async: WORKS,
    branches: WORKS,
    branch_configuration: WORKS,
    trigger_commit: WORKS,
    trigger_branch: WORKS,
    trigger_message: WORKS,
    trigger_env: WORKS,
    trigger_meta_data: WORKS,
    soft_fail: WORKS,
    parallelism: WORKS,
    ...IF_CHANGED,
    key: WORKS,
    id: WORKS,
    identifier: WORKS,
    ...DEPENDS_ON,
    ...SKIP,
  },
  group: {
    group: WORKS,
    label: WORKS,
    name: WORKS,
    steps: WORKS,
    // Kept on the group's command steps: their jobs' `group_key`.
    key: WORKS,
    id: WORKS,
    identifier: WORKS,
    ...GROUP_NOTIFY,
    ...IF_CHANGED,
    // Each merged into the group's steps (yaml-configuration.ts).
    ...DEPENDS_ON,
    ...SKIP,
  },
};

/** The documented top-level keys. Others are accepted without a word: YAML anchors live there. */
export const TOP_LEVEL_ATTRIBUTES: Catalogue = {
  steps: WORKS,
  env: WORKS,
  agents: WORKS,
  priority: WORKS,
  notify: WORKS,
  image: ['reported', 'the image is not passed to the agent (BUILDKITE_IMAGE)'],
  checkout: ['reported', 'checkout settings are not passed to the agent'],
  cache: ['reported', 'caches are a feature of Buildkite hosted agents'],
  secrets: WORKS,
};

export type Verdict = { state: 'works' } | { state: 'reported' | 'refused' | 'unknown'; why: string };

export function verdict(catalogue: Catalogue, attribute: string): Verdict {
  const entry = Object.hasOwn(catalogue, attribute) ? catalogue[attribute] : undefined;
  if (!entry) return { state: 'unknown', why: '' };
  return entry[0] === 'works' ? { state: 'works' } : { state: entry[0], why: entry[1] ?? '' };
}
