/**
 * `notify` in pipeline configurations (issue 17): the top level's and command steps' entries are
 * read in both dialects, checked (kinds, step-level kinds, URLs, `if` conditions) and kept
 * exactly as written: the pipeline's on `Pipeline.notify`, a step's on the step the API returns.
 * Nothing is sent here (src/notifications/ delivers them).
 */
import { normaliseVisualSteps, parseConfiguration } from '../../src/pipelines/configuration';
import { conditionError, CONDITION_VARIABLES, NOTIFY_CONDITION_VARIABLES } from '../../src/pipelines/filter-condition';
import { auth, describeEachDatabase } from '../support/context';
import { codesOf, errorsOf, yaml } from '../support/configuration';

const visualErrorsOf = (steps: unknown[]) => errorsOf(() => normaliseVisualSteps(steps));

const EVERY_KIND = yaml(
  'notify:',
  '  - email: "dev@acmeinc.com"',
  '    if: build.state != "failing"',
  '  - basecamp_campfire: "https://3.basecamp.com/1234567/integrations/qwertyuiop/buckets/1234567/chats/1234567/lines"',
  '  - slack: "#general"',
  '    if: build.branch == "main" && pipeline.started_failing',
  '  - slack:',
  '      channels: ["buildkite-community#sre", "#general"]',
  '      message: "SRE related information here..."',
  '  - webhook: "https://webhook.site/32raf257-168b-5aca-9067-3b410g78c23a"',
  '  - pagerduty_change_event: "636d22Yourc0418Key3b49eee3e8"',
  `    if: "build.state == 'passed'"`,
  '  - github_commit_status:',
  '      context: "my-custom-status"',
  '  - github_commit_status:',
  '      context: "buildkite/deploy"',
  '      blocked_builds_as_pending: true',
  '  - github_check:',
  '      context: "my-check"',
  '  - github_check:',
  '      name: "Test Suite"',
  'steps:',
  '  - label: tests',
  '    command: make test',
  '    notify:',
  '      - slack: "@someuser"',
  '      - github_commit_status: { context: "tests" }',
  '        if: build.branch == "main" || pipeline.started_passing',
  '      - github_check: { context: "tests" }',
  '      - github_check:',
  '          name: "Code Linting"',
  '          output:',
  '            title: "Test Results"',
  '            summary: "Detailed test execution summary"',
  '            annotations:',
  '              - path: "src/main.js"',
  '                start_line: 15',
  '                end_line: 15',
  '                annotation_level: "warning"',
  '                message: "Missing semicolon"',
  '      - basecamp_campfire: "https://3.basecamp.com/1234567/integrations/qwertyuiop/buckets/1234567/chats/1234567/lines"',
  '        if: step.outcome == "hard_failed"',
  '  - wait',
  '  - command: deploy',
  '',
);

const EVERY_KIND_TOP = [
  { email: 'dev@acmeinc.com', if: 'build.state != "failing"' },
  { basecamp_campfire: 'https://3.basecamp.com/1234567/integrations/qwertyuiop/buckets/1234567/chats/1234567/lines' },
  { slack: '#general', if: 'build.branch == "main" && pipeline.started_failing' },
  { slack: { channels: ['buildkite-community#sre', '#general'], message: 'SRE related information here...' } },
  { webhook: 'https://webhook.site/32raf257-168b-5aca-9067-3b410g78c23a' },
  { pagerduty_change_event: '636d22Yourc0418Key3b49eee3e8', if: "build.state == 'passed'" },
  { github_commit_status: { context: 'my-custom-status' } },
  { github_commit_status: { context: 'buildkite/deploy', blocked_builds_as_pending: true } },
  { github_check: { context: 'my-check' } },
  { github_check: { name: 'Test Suite' } },
];
const EVERY_KIND_STEP = [
  { slack: '@someuser' },
  { github_commit_status: { context: 'tests' }, if: 'build.branch == "main" || pipeline.started_passing' },
  { github_check: { context: 'tests' } },
  {
    github_check: {
      name: 'Code Linting',
      output: {
        title: 'Test Results',
        summary: 'Detailed test execution summary',
        annotations: [{ path: 'src/main.js', start_line: 15, end_line: 15, annotation_level: 'warning', message: 'Missing semicolon' }],
      },
    },
  },
  { basecamp_campfire: 'https://3.basecamp.com/1234567/integrations/qwertyuiop/buckets/1234567/chats/1234567/lines', if: 'step.outcome == "hard_failed"' },
];

describe('notify conditions', () => {
  it('allows the notify variables only when the caller asks for them; filter_condition is unchanged', () => {
    for (const name of NOTIFY_CONDITION_VARIABLES) {
      // `build.env` is a function: build.env("X").
      const condition = name === 'build.env' ? `${name}("X") == "x"` : `${name} == "x"`;
      if (!(CONDITION_VARIABLES as readonly string[]).includes(name)) expect(conditionError(condition)).toMatch(/unknown variable/);
      expect(conditionError(condition, NOTIFY_CONDITION_VARIABLES)).toBeNull();
    }
    for (const name of CONDITION_VARIABLES) expect(conditionError(`${name} == "x"`, NOTIFY_CONDITION_VARIABLES)).toBeNull();
    expect(conditionError('build.nope == 1', NOTIFY_CONDITION_VARIABLES)).toBe('is not a valid condition: unknown variable `build.nope` at character 1');
  });
});

describe('notify in a YAML configuration', () => {
  it('keeps every documented kind as written, top level and step level, and reports only what is not delivered', () => {
    const parsed = parseConfiguration(EVERY_KIND);
    expect(parsed.notify).toEqual(EVERY_KIND_TOP);
    expect(parsed.steps[0]).toMatchObject({ type: 'script', notify: EVERY_KIND_STEP });
    expect(parsed.steps[2]).not.toHaveProperty('notify');
    expect(parsed.notices).toEqual([
      'top level: "notify[5].pagerduty_change_event" is accepted but not acted on: PagerDuty change events are sent through Buildkite\'s PagerDuty integration, which Windsock cannot reach; the entry is kept',
    ]);
  });

  it('has no notify when none is written', () => {
    const parsed = parseConfiguration(yaml('steps:', '  - command: a'));
    expect(parsed.notify).toEqual([]);
    expect(parsed.steps[0]).not.toHaveProperty('notify');
    expect(parseConfiguration(yaml('- command: a')).notify).toEqual([]);
  });

  it('refuses bad entries, naming the line and the entry', () => {
    expect(
      codesOf(
        yaml(
          'notify:',
          '  - webhook: "ftp://example.com/hook"',
          '  - webhook: "not a url"',
          '  - teams: "#ci"',
          '  - email: "nobody"',
          '    if: build.state = "failed"',
          '  - slack: "#a"',
          '    email: "dev@example.com"',
          '  - slack: { channels: [], message: hi }',
          '  - github_check: "name"',
          '  - "#general"',
          '  - slack: "#b"',
          '    if: build.nope == "x"',
          'steps:',
          '  - command: a',
          '    notify:',
          '      - email: "dev@example.com"',
          '      - webhook: "https://example.com"',
          '      - pagerduty_change_event: key',
          '      - slack: "#ok"',
          '        if: build.branch ==',
          '  - command: b',
          '    notify: { slack: "#x" }',
        ),
      ),
    ).toEqual([
      'line 2: "notify[0].webhook" must be an http or https URL',
      'line 3: "notify[1].webhook" must be an http or https URL',
      'line 4: "notify[2].teams" is not a notification type: use one of email, webhook, slack, basecamp_campfire, pagerduty_change_event, github_commit_status, github_check',
      'line 5: "notify[3].email" must be an email address',
      'line 6: "notify[3].if" is not a valid condition: expected `&&`, `||` or the end of the condition but found `=` at character 13',
      'line 7: "notify[4]" must have exactly one notification type, not "slack" and "email"',
      'line 9: "notify[5].slack.channels" must be a non-empty list of channels such as "#general"',
      'line 10: "notify[6].github_check" must be a mapping with an optional "name" and "output"',
      'line 11: "notify[7]" must be a mapping with one of email, webhook, slack, basecamp_campfire, pagerduty_change_event, github_commit_status, github_check',
      'line 13: "notify[8].if" is not a valid condition: unknown variable `build.nope` at character 1',
      'step 1 (line 17): "notify[0].email" is a build-level notification only: put it in the pipeline\'s top-level notify',
      'step 1 (line 18): "notify[1].webhook" is a build-level notification only: put it in the pipeline\'s top-level notify',
      'step 1 (line 19): "notify[2].pagerduty_change_event" is a build-level notification only: put it in the pipeline\'s top-level notify',
      'step 1 (line 21): "notify[3].if" is not a valid condition: expected a value (a variable such as `build.branch`, a "string", a number, true, false, null, `!` or `(`) but the condition ended at character 16',
      'step 2 (line 23): "notify" must be a list of notifications, each a mapping such as {slack: "#channel"}',
    ]);
  });
});

describe('notify: the GitHub attributes the docs list', () => {
  it("refuses a step's blocked_builds_as_pending, a check's unknown attributes and bad annotations", () => {
    expect(
      codesOf(
        yaml(
          'notify:',
          '  - github_commit_status: { blocked_builds_as_pending: "yes" }',
          '  - github_check: { name: "x", title: "y" }',
          'steps:',
          '  - command: a',
          '    notify:',
          '      - github_commit_status: { context: c, blocked_builds_as_pending: true }',
          '      - github_check:',
          '          output:',
          '            annotations:',
          '              - { path: a.js, start_line: 3, end_line: 2, annotation_level: warning, message: m }',
          '              - { path: a.js, start_line: 0, end_line: 2, annotation_level: error, message: m }',
          '              - { start_line: 1, end_line: 1, annotation_level: notice, message: m, start_column: 2 }',
        ),
      ),
    ).toEqual([
      'line 2: "notify[0].github_commit_status.blocked_builds_as_pending" must be true or false',
      'line 3: "notify[1].github_check.title" is not an attribute of this notification: use "name" or "output" or "context"',
      'step 1 (line 7): "notify[0].github_commit_status.blocked_builds_as_pending" is a build-level option only: a step\'s status is not the build\'s',
      'step 1 (line 11): "notify[1].github_check.output.annotations[0].end_line" must not be before start_line',
      'step 1 (line 12): "notify[1].github_check.output.annotations[1].annotation_level" must be one of notice, warning, failure',
      'step 1 (line 12): "notify[1].github_check.output.annotations[1].start_line" must be a positive whole number',
      'step 1 (line 13): "notify[1].github_check.output.annotations[2].path" can\'t be blank',
    ]);
  });
});

describe('notify: a GitHub kind alone', () => {
  it('is the kind with its defaults, as the pipeline schema allows', () => {
    const parsed = parseConfiguration(yaml('notify:', '  - "github_check"', 'steps:', '  - command: a', '    notify: ["github_commit_status"]'));
    expect(parsed.notify).toEqual([{ github_check: {} }]);
    expect(parsed.steps[0]).toMatchObject({ notify: [{ github_commit_status: {} }] });
  });
});

describe("notify: build.state in a step's if", () => {
  it('is kept, and said to read null: a step cannot know the state of the entire build (the docs)', () => {
    const parsed = parseConfiguration(
      yaml('steps:', '  - command: a', '    notify:', '      - slack: "#a"', '        if: build.state == "failed" || step.outcome == "hard_failed"'),
    );
    expect(parsed.steps[0]).toMatchObject({ notify: [{ slack: '#a', if: 'build.state == "failed" || step.outcome == "hard_failed"' }] });
    expect(parsed.notices).toEqual([
      'step 1: "notify[0].if" is accepted but not acted on: `build.state` reads null in a step\'s notification: a step cannot know the state of the entire build (use `step.outcome`)',
    ]);
  });
});

describe('notify in visual steps', () => {
  it('keeps a script step’s step-level entries', () => {
    const steps = normaliseVisualSteps([{ type: 'script', command: 'make', notify: EVERY_KIND_STEP }]);
    expect(steps[0]).toMatchObject({ notify: EVERY_KIND_STEP });
  });

  it('refuses bad entries with field errors naming the path', () => {
    expect(
      visualErrorsOf([
        { type: 'script', command: 'make' },
        { type: 'script', command: 'make', notify: [{ slack: '#ok' }, { email: 'dev@example.com' }] },
        { type: 'script', command: 'make', notify: [{ slack: '#ok', if: 'build.branch ==' }, { nope: 'x' }, { github_check: { context: 'a', extra: 1 } }] },
      ]),
    ).toEqual([
      { field: 'steps[1].notify[1].email', code: "is a build-level notification only: put it in the pipeline's top-level notify" },
      {
        field: 'steps[2].notify[0].if',
        code: 'is not a valid condition: expected a value (a variable such as `build.branch`, a "string", a number, true, false, null, `!` or `(`) but the condition ended at character 16',
      },
      { field: 'steps[2].notify[1].nope', code: 'is not a notification type: use one of slack, basecamp_campfire, github_commit_status, github_check' },
      { field: 'steps[2].notify[2].github_check.extra', code: 'is not an attribute of this notification: use "name" or "output" or "context"' },
    ]);
  });
});

describeEachDatabase('notify through the pipelines API', (ctx) => {
  async function setup() {
    const { org, token } = await ctx().givenAdmin();
    const base = `/v2/organizations/${org.slug}/pipelines`;
    const stored = async (slug: string) => (await ctx().services.pipelines.findInOrganization(org.id, slug))!;
    return { org, token, base, stored };
  }

  it('stores and returns a YAML pipeline’s notify: the top level on the pipeline, a step’s on its step; only undelivered kinds are warned about', async () => {
    const s = await setup();
    const created = await ctx()
      .http()
      .post(s.base)
      .set(auth(s.token))
      .send({ name: 'Notified', repository: 'git@github.com:acme/app.git', configuration: EVERY_KIND });
    expect(created.status).toBe(201);
    expect(created.body.steps[0].notify).toEqual(EVERY_KIND_STEP);
    const warning = created.headers.warning as string;
    expect(warning).toContain('pagerduty_change_event');
    // Only the kinds Windsock does not deliver are mentioned, never notify as a whole.
    expect(warning).not.toContain('\\"notify\\" is accepted');
    expect(warning).not.toMatch(/notify\[\d\]\.(slack|email|webhook|github|basecamp)/);
    const got = await ctx().http().get(`${s.base}/notified`).set(auth(s.token)).expect(200);
    expect(got.body.steps[0].notify).toEqual(EVERY_KIND_STEP);
    expect((await s.stored('notified')).notify).toEqual(EVERY_KIND_TOP);

    // Without pagerduty: no Warning at all.
    const updated = await ctx()
      .http()
      .patch(`${s.base}/notified`)
      .set(auth(s.token))
      .send({ configuration: yaml('notify:', '  - slack: "#ci"', 'steps:', '  - command: a', '    notify: [{github_check: {}}]') });
    expect(updated.status).toBe(200);
    expect(updated.headers.warning).toBeUndefined();
    expect(updated.body.steps[0].notify).toEqual([{ github_check: {} }]);
    expect((await s.stored('notified')).notify).toEqual([{ slack: '#ci' }]);
  });

  it('stores and returns visual steps’ notify; a visual-steps pipeline has no top-level notify', async () => {
    const s = await setup();
    const created = await ctx()
      .http()
      .post(s.base)
      .set(auth(s.token))
      .send({ name: 'Visual', repository: 'git@github.com:acme/app.git', steps: [{ type: 'script', command: 'make', notify: EVERY_KIND_STEP }] });
    expect(created.status).toBe(201);
    expect(created.body.steps[0].notify).toEqual(EVERY_KIND_STEP);
    expect(created.headers.warning).toBeUndefined();
    const got = await ctx().http().get(`${s.base}/visual`).set(auth(s.token)).expect(200);
    expect(got.body.steps[0].notify).toEqual(EVERY_KIND_STEP);
    expect((await s.stored('visual')).notify).toEqual([]);
  });

  it('refuses bad entries with 422 and field errors (bad URL, unknown type, bad if, step-level email)', async () => {
    const s = await setup();
    const post = (body: Record<string, unknown>) =>
      ctx()
        .http()
        .post(s.base)
        .set(auth(s.token))
        .send({ name: 'Bad', repository: 'git@github.com:acme/app.git', ...body });
    const bad = await post({
      configuration: yaml(
        'notify:',
        '  - webhook: "javascript:alert(1)"',
        '  - carrier_pigeon: "coop"',
        '  - slack: "#ci"',
        '    if: build.state === "passed"',
        'steps:',
        '  - command: a',
        '    notify: [{email: "dev@example.com"}]',
      ),
    });
    expect(bad.status).toBe(422);
    expect(bad.body.errors).toEqual([
      { field: 'configuration', code: 'line 2: "notify[0].webhook" must be an http or https URL' },
      {
        field: 'configuration',
        code: 'line 3: "notify[1].carrier_pigeon" is not a notification type: use one of email, webhook, slack, basecamp_campfire, pagerduty_change_event, github_commit_status, github_check',
      },
      {
        field: 'configuration',
        code: 'line 5: "notify[2].if" is not a valid condition: expected a value (a variable such as `build.branch`, a "string", a number, true, false, null, `!` or `(`) but found `=` at character 15',
      },
      {
        field: 'configuration',
        code: 'step 1 (line 8): "notify[0].email" is a build-level notification only: put it in the pipeline\'s top-level notify',
      },
    ]);
    const visual = await post({ steps: [{ type: 'script', command: 'a', notify: [{ webhook: 'https://example.com/hook' }, { slack: 5 }] }] });
    expect(visual.status).toBe(422);
    expect(visual.body.errors).toEqual([
      { field: 'steps[0].notify[0].webhook', code: "is a build-level notification only: put it in the pipeline's top-level notify" },
    ]);
    // Nothing was stored.
    expect(await s.stored('bad')).toBeNull();
  });
});
