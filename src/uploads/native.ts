/**
 * Test runners' own JSON reports -> upload results (importing_json.md, "Supported upload
 * formats": `rspec-json`, `jest-json`, `playwright-json` and `cucumber-json` are the "Native
 * JSON output" of RSpec, Jest, Playwright and Cucumber (Ruby)).
 * The docs name the formats but not how their fields become a result's; the mapping here is the
 * one Buildkite's own collectors use for the same runners (test-collector-ruby's RSpec and
 * Cucumber traces, test-collector-javascript's Jest and Playwright reporters), so a test
 * uploaded either way is the same test
 * (same scope, name and location). Every result made here is then checked like any other
 * (./results); a report that is not the runner's shape at all is a 422 on `data`.
 */
import { ValidationError } from '../core/errors';
import { isRecord } from '../core/guards';

export const NATIVE_FORMATS = ['rspec-json', 'jest-json', 'playwright-json', 'cucumber-json'] as const;
export type NativeFormat = (typeof NATIVE_FORMATS)[number];

const notA = (what: string) => ValidationError.field('data', `is not ${what}`);

const str = (v: unknown): string | null => (typeof v === 'string' ? v : null);
const seconds = (v: unknown, per: number): number | null => (typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v / per : null);

/** A failure's text as reason (its first line) and the rest as `expanded`, with a backtrace when there is one. */
function failure(text: string | null, backtrace?: unknown): { failure_reason?: string; failure_expanded?: { expanded: string[]; backtrace?: string[] }[] } {
  if (text === null) return {};
  const lines = text.split('\n');
  const trace = Array.isArray(backtrace) ? backtrace.filter((l): l is string => typeof l === 'string') : undefined;
  return {
    failure_reason: lines[0] ?? '',
    failure_expanded: [{ expanded: lines.slice(1), ...(trace?.length ? { backtrace: trace } : {}) }],
  };
}

/**
 * `rspec --format json`: `examples[]` with `description`, `full_description`, `status`,
 * `file_path`, `line_number`, `run_time` and a failure's `exception`. As the Ruby collector: the
 * scope is the example group's full description, the name the example's description, the
 * location `file:line`; `pending` is `skipped`.
 */
function fromRSpec(report: unknown): unknown[] {
  if (!isRecord(report) || !Array.isArray(report.examples)) throw notA('RSpec JSON (rspec --format json): it has no examples list');
  return report.examples.map((e: unknown) => {
    if (!isRecord(e)) return e; // rejected on its own by the checks
    const name = str(e.description);
    const full = str(e.full_description);
    // The group's full description is the example's without its own description at the end.
    const scope = full !== null && name !== null && full.endsWith(name) ? full.slice(0, full.length - name.length).trimEnd() : full;
    const file = str(e.file_path);
    const line = typeof e.line_number === 'number' ? e.line_number : null;
    const status = str(e.status);
    const exception = isRecord(e.exception) ? e.exception : null;
    const message = exception ? [str(exception.class), str(exception.message)].filter((s) => s !== null).join(': ') : null;
    return {
      scope,
      name,
      location: file !== null && line !== null ? `${file}:${line}` : null,
      file_name: file,
      result: status === 'passed' || status === 'failed' ? status : status === 'pending' ? 'skipped' : 'unknown',
      ...(status === 'failed' ? failure(message || null, exception?.backtrace) : {}),
      history: { section: 'top', duration: seconds(e.run_time, 1) },
    };
  });
}

/** Jest's statuses as the JavaScript collector reads them (and `skipped`/`disabled`, which it leaves out, as `skipped`). */
const JEST_RESULTS: Record<string, string> = {
  passed: 'passed',
  failed: 'failed',
  pending: 'pending',
  todo: 'skipped',
  skipped: 'skipped',
  disabled: 'skipped',
};

// eslint-disable-next-line no-control-regex -- the ANSI colour codes Jest writes into failure messages
const ANSI = /\u001b\[[0-9;]*m/g;

/**
 * `jest --json`: `testResults[]`, one per file (`name`, its path), each with `assertionResults[]`
 * (`ancestorTitles`, `title`, `status`, `duration` in ms, `failureMessages`, and `location` with
 * `--testLocationInResults`). As the JavaScript collector: the scope is the ancestor titles
 * joined by spaces, the name the title, the location `file:line` when Jest gave one.
 */
function fromJest(report: unknown): unknown[] {
  if (!isRecord(report) || !Array.isArray(report.testResults)) throw notA('Jest JSON (jest --json): it has no testResults list');
  const out: unknown[] = [];
  for (const file of report.testResults) {
    if (!isRecord(file) || !Array.isArray(file.assertionResults)) throw notA('Jest JSON (jest --json): a testResults entry has no assertionResults list');
    const path = str(file.name);
    for (const a of file.assertionResults) {
      if (!isRecord(a)) {
        out.push(a);
        continue;
      }
      const ancestors = Array.isArray(a.ancestorTitles) ? a.ancestorTitles.filter((t): t is string => typeof t === 'string') : [];
      const line = isRecord(a.location) && typeof a.location.line === 'number' ? a.location.line : null;
      const status = str(a.status);
      const messages = Array.isArray(a.failureMessages) ? a.failureMessages.filter((m): m is string => typeof m === 'string') : [];
      out.push({
        scope: ancestors.join(' '),
        name: str(a.title),
        location: path !== null && line !== null ? `${path}:${line}` : null,
        file_name: path,
        result: (status !== null && JEST_RESULTS[status]) || 'unknown',
        ...(status === 'failed' ? failure(messages.length ? messages.join(' ').replace(ANSI, '') : null) : {}),
        history: { section: 'top', duration: seconds(a.duration, 1000) },
      });
    }
  }
  return out;
}

/** Playwright's result statuses as the JavaScript collector reads them. */
const PLAYWRIGHT_RESULTS: Record<string, string> = { passed: 'passed', failed: 'failed', timedOut: 'failed', skipped: 'skipped', interrupted: 'unknown' };

/**
 * `--reporter=json`: `suites[]` (a file each; `suites[]` within for `describe` blocks) with
 * `specs[]`, each with `tests[]` (one per project) and their `results[]` (one per attempt). As
 * the JavaScript collector, which reports every attempt: the scope is the test's title path
 * (root, project, file, describes, title) joined by spaces, the name its title, the location
 * `file:line:column`; `timedOut` is `failed`, `interrupted` `unknown`.
 */
function fromPlaywright(report: unknown): unknown[] {
  if (!isRecord(report) || !Array.isArray(report.suites)) throw notA('Playwright JSON (--reporter=json): it has no suites list');
  const out: unknown[] = [];
  // The report's nesting was bounded when it was parsed (parseUploadJson), so recursion is too.
  const walk = (suite: unknown, titles: string[]) => {
    if (!isRecord(suite)) return;
    const path = [...titles, str(suite.title) ?? ''];
    for (const spec of Array.isArray(suite.specs) ? suite.specs : []) {
      if (!isRecord(spec)) {
        out.push(spec);
        continue;
      }
      const title = str(spec.title);
      const file = str(spec.file);
      const where =
        file !== null && typeof spec.line === 'number' ? [file, spec.line, ...(typeof spec.column === 'number' ? [spec.column] : [])].join(':') : null;
      for (const test of Array.isArray(spec.tests) ? spec.tests : []) {
        if (!isRecord(test)) continue;
        const scope = ['', str(test.projectName) ?? '', ...path, title ?? ''].join(' ');
        for (const r of Array.isArray(test.results) ? test.results : []) {
          if (!isRecord(r)) continue;
          const status = str(r.status);
          const error = isRecord(r.error) ? r.error : Array.isArray(r.errors) && isRecord(r.errors[0]) ? r.errors[0] : null;
          const text = error
            ? [str(error.stack) ?? str(error.message), str(error.snippet)]
                .filter((t) => t !== null)
                .join('\n')
                .replace(ANSI, '')
            : null;
          out.push({
            scope,
            name: title,
            location: where,
            file_name: file,
            result: (status !== null && PLAYWRIGHT_RESULTS[status]) || 'unknown',
            ...(text ? failure(text) : {}),
            history: { section: 'top', duration: seconds(r.duration, 1000) },
          });
        }
      }
    }
    for (const child of Array.isArray(suite.suites) ? suite.suites : []) walk(child, path);
  };
  for (const file of report.suites) walk(file, []);
  return out;
}

/**
 * Cucumber (Ruby) `--format json`: features (`uri`, `name`) with `elements[]`, the scenarios
 * (a `background` element's steps belong to the scenario after it), each with `steps[]` and
 * `before`/`after` hooks, whose `result` has `status`, `duration` (nanoseconds) and
 * `error_message`. As the Ruby collector: the scope is the feature's name, the name the
 * scenario's, the location `file:line`; a scenario failed when a step or hook failed, passed
 * when every one passed, else skipped.
 */
function fromCucumber(report: unknown): unknown[] {
  if (!Array.isArray(report)) throw notA('Cucumber JSON (--format json): it is not a list of features');
  const out: unknown[] = [];
  for (const feature of report) {
    if (!isRecord(feature) || !Array.isArray(feature.elements)) throw notA('Cucumber JSON (--format json): a feature has no elements list');
    const uri = str(feature.uri);
    let background: unknown[] = [];
    for (const el of feature.elements) {
      if (!isRecord(el)) {
        out.push(el);
        continue;
      }
      const steps = [el.before, el.steps, el.after].flatMap((list) => (Array.isArray(list) ? (list as unknown[]) : []));
      if (el.type === 'background') {
        background = steps;
        continue;
      }
      const outcomes = [...background, ...steps].map((step) => (isRecord(step) && isRecord(step.result) ? step.result : {}));
      background = [];
      const statuses = outcomes.map((r) => str(r.status));
      const failed = outcomes.find((r) => r.status === 'failed' || r.status === 'ambiguous');
      const nanos = outcomes.reduce<number>((sum, r) => sum + (typeof r.duration === 'number' && r.duration >= 0 ? r.duration : 0), 0);
      out.push({
        scope: str(feature.name),
        name: str(el.name),
        location: uri !== null && typeof el.line === 'number' ? `${uri}:${el.line}` : null,
        file_name: uri,
        result: failed ? 'failed' : statuses.every((st) => st === 'passed') ? 'passed' : 'skipped',
        ...(failed ? failure(str(failed.error_message) ?? String(failed.status)) : {}),
        history: { section: 'top', duration: nanos / 1e9 },
      });
    }
  }
  return out;
}

/** A runner's report (parsed JSON) as the upload's list of results, unchecked. */
export function nativeResults(format: NativeFormat, report: unknown): unknown[] {
  switch (format) {
    case 'rspec-json':
      return fromRSpec(report);
    case 'jest-json':
      return fromJest(report);
    case 'playwright-json':
      return fromPlaywright(report);
    case 'cucumber-json':
      return fromCucumber(report);
  }
}
