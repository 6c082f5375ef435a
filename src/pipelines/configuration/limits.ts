/** Caps and patterns the configuration readers enforce. */

// The caps mirror the maxima of the OpenAPI contract, so anything normalised here is also a
// valid response body.
export const MAX_CONFIGURATION_BYTES = 256 * 1024;
export const MAX_STEPS = 500;
export const MAX_ERRORS = 20;
/**
 * Alias expansions allowed per document. Enough for 500 steps that each use a few shared
 * anchors (`<<: *defaults`, `agents: *agents`); a "billion laughs" document hits it within
 * milliseconds. Counted here rather than by the yaml library's `maxAliasCount`: that check runs
 * in `toJS`, which is itself superlinear in the number of aliases (a 250 KiB document of plain
 * aliases takes seconds there; one alias repeated inside its own anchor, minutes).
 */
export const MAX_ALIAS_EXPANSIONS = 2000;
/** Collections nested deeper than this are never a valid part of a step, so they are not read. */
export const MAX_DEPTH = 16;
/** Values read per call: bounds memory when aliases fan one anchor out many times. */
export const MAX_VALUES = 200_000;
export const MAX_LIST = 100;
export const MAX_ENV = 200;
export const MAX_NAME = 1000;
export const MAX_TEXT = 65536;
export const MAX_BRANCHES = 4096;
export const MAX_PROMPT = 4096;
export const MAX_KEY = 100;
export const MAX_SLUG = 100;
export const MAX_REF = 255;
export const MAX_SIGNAL = 100;
/** The documented limit of a `skip` reason. */
export const MAX_SKIP_REASON = 70;
export const MAX_TIMEOUT = 100_000;
export const MAX_CONCURRENCY = 100_000;
/** The jobs table's integer column holds it; Buildkite documents no bounds. */
export const MAX_PRIORITY = 2_147_483_647;

export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
export const FIELD_KEY = /^[A-Za-z0-9_\-/]+$/;
// Loose on purpose: `${VAR}` interpolation is legal in a slug until the agent uploads the
// pipeline, so only what can never be part of one (blanks, slashes) is refused.
export const PIPELINE_SLUG = /^[^\s/]+$/;
export const STEP_KINDS = 'command, commands, wait, block, input, trigger, group, plugins';
