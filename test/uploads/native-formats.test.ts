/**
 * The test runners' own JSON reports as upload formats (importing_json.md, "Supported upload
 * formats"): `rspec-json` and `jest-json` as multipart `data`, each result made as the runner's
 * Buildkite collector would make it, then checked and stored like any other.
 */
import { auth, describeEachDatabase } from '../support/context';
import { givenSuite, suiteAuth, type SuiteFixture } from './helpers';

/** What `rspec --format json` writes, trimmed to the fields it always has. */
const RSPEC = {
  version: '3.13.0',
  examples: [
    {
      id: './spec/models/user_spec.rb[1:1:1]',
      description: 'is valid',
      full_description: 'User#email is valid',
      status: 'passed',
      file_path: './spec/models/user_spec.rb',
      line_number: 5,
      run_time: 0.25,
      pending_message: null,
    },
    {
      id: './spec/models/user_spec.rb[1:1:2]',
      description: 'rejects blanks',
      full_description: 'User#email rejects blanks',
      status: 'failed',
      file_path: './spec/models/user_spec.rb',
      line_number: 9,
      run_time: 1.5,
      pending_message: null,
      exception: {
        class: 'RSpec::Expectations::ExpectationNotMetError',
        message: 'expected true\n     got false',
        backtrace: ['./spec/models/user_spec.rb:10:in `block (3 levels)'],
      },
    },
    {
      id: './spec/models/user_spec.rb[1:2]',
      description: 'some day',
      full_description: 'User some day',
      status: 'pending',
      file_path: './spec/models/user_spec.rb',
      line_number: 14,
      run_time: 0,
      pending_message: 'Not yet implemented',
    },
  ],
  summary: { duration: 1.75, example_count: 3, failure_count: 1, pending_count: 1 },
};

/** What `jest --json --testLocationInResults` writes, trimmed. */
const JEST = {
  numFailedTests: 1,
  success: false,
  testResults: [
    {
      name: '/app/src/checkout.test.js',
      status: 'failed',
      assertionResults: [
        {
          ancestorTitles: ['Checkout', 'totals'],
          title: 'adds up',
          fullName: 'Checkout totals adds up',
          status: 'passed',
          duration: 12,
          failureMessages: [],
          location: { line: 3, column: 5 },
        },
        {
          ancestorTitles: ['Checkout'],
          title: 'rounds',
          fullName: 'Checkout rounds',
          status: 'failed',
          duration: 40,
          failureMessages: ['\u001b[31mError: expect(received).toBe(expected)\u001b[39m\nExpected: 2\nReceived: 3'],
          location: { line: 9, column: 3 },
        },
        { ancestorTitles: [], title: 'later', fullName: 'later', status: 'todo', duration: null, failureMessages: [], location: null },
        { ancestorTitles: ['Checkout'], title: 'skipped one', fullName: 'Checkout skipped one', status: 'pending', duration: 0, failureMessages: [] },
      ],
    },
  ],
};

/** What Playwright's `--reporter=json` writes, trimmed: one file, a describe, a retried test, two projects. */
const PLAYWRIGHT = {
  config: {},
  suites: [
    {
      title: 'login.spec.ts',
      file: 'login.spec.ts',
      line: 0,
      column: 0,
      specs: [
        {
          title: 'shows the form',
          file: 'login.spec.ts',
          line: 3,
          column: 5,
          tests: [
            { projectName: 'chromium', status: 'expected', results: [{ status: 'passed', duration: 1200, retry: 0 }] },
            { projectName: 'firefox', status: 'skipped', results: [{ status: 'skipped', duration: 0, retry: 0 }] },
          ],
        },
      ],
      suites: [
        {
          title: 'with a bad password',
          file: 'login.spec.ts',
          line: 8,
          column: 1,
          specs: [
            {
              title: 'says so',
              file: 'login.spec.ts',
              line: 9,
              column: 7,
              tests: [
                {
                  projectName: 'chromium',
                  status: 'flaky',
                  results: [
                    {
                      status: 'timedOut',
                      duration: 30000,
                      retry: 0,
                      error: {
                        message: 'Test timeout of 30000ms exceeded.',
                        stack: '\u001b[31mTest timeout of 30000ms exceeded.\u001b[39m\n    at login.spec.ts:10:5',
                      },
                    },
                    { status: 'passed', duration: 800, retry: 1 },
                  ],
                },
              ],
            },
          ],
        },
      ],
    },
  ],
};

/** What Cucumber (Ruby) `--format json` writes, trimmed: a background, a passing, a failing and an undefined scenario. */
const CUCUMBER = [
  {
    uri: 'features/cart.feature',
    id: 'cart',
    keyword: 'Feature',
    name: 'Cart',
    line: 1,
    elements: [
      {
        keyword: 'Background',
        name: '',
        line: 3,
        type: 'background',
        steps: [{ keyword: 'Given ', name: 'a shop', line: 4, result: { status: 'passed', duration: 1_000_000 } }],
      },
      {
        id: 'cart;adds',
        keyword: 'Scenario',
        name: 'adds an item',
        line: 6,
        type: 'scenario',
        before: [{ result: { status: 'passed', duration: 500_000 } }],
        steps: [{ keyword: 'When ', name: 'I add', line: 7, result: { status: 'passed', duration: 250_000_000 } }],
      },
      {
        keyword: 'Background',
        name: '',
        line: 3,
        type: 'background',
        steps: [{ keyword: 'Given ', name: 'a shop', line: 4, result: { status: 'passed', duration: 1_000_000 } }],
      },
      {
        id: 'cart;removes',
        keyword: 'Scenario',
        name: 'removes an item',
        line: 10,
        type: 'scenario',
        steps: [
          {
            keyword: 'When ',
            name: 'I remove',
            line: 11,
            result: {
              status: 'failed',
              duration: 2_000_000_000,
              error_message: 'expected 0 items\ngot 1 (RuntimeError)\n./features/step_definitions/cart.rb:9',
            },
          },
          { keyword: 'Then ', name: 'it is empty', line: 12, result: { status: 'skipped' } },
        ],
      },
      {
        id: 'cart;later',
        keyword: 'Scenario',
        name: 'checks out',
        line: 14,
        type: 'scenario',
        steps: [{ keyword: 'When ', name: 'I pay', line: 15, result: { status: 'undefined' } }],
      },
    ],
  },
];

describeEachDatabase('native JSON upload formats', (ctx) => {
  const send = (s: SuiteFixture, format: string, report: unknown, key = 'r1') =>
    ctx()
      .http()
      .post('/v1/uploads')
      .set(suiteAuth(s.apiToken))
      .field('format', format)
      .field('run_env[key]', key)
      .field('run_env[commit_sha]', 'c1')
      .attach('data', Buffer.from(typeof report === 'string' ? report : JSON.stringify(report)), { filename: 'report.json', contentType: 'application/json' });
  const get = (s: SuiteFixture, path: string) => ctx().http().get(`${s.base}${path}`).set(auth(s.token));
  const legacyTests = async (s: SuiteFixture) =>
    ((await get(s, '/tests').expect(200)).body as { scope: string; name: string; location: string | null; file_name: string }[])
      .map((t) => [t.scope, t.name, t.location, t.file_name])
      // By name, then scope: tests of one upload share their time, so the list's own order does not decide.
      .sort((a, b) => String(a[1]).localeCompare(String(b[1])) || String(a[0]).localeCompare(String(b[0])));

  it('takes rspec-json: the examples as the RSpec collector reports them', async () => {
    const s = await givenSuite(ctx());
    const res = await send(s, 'rspec-json', RSPEC).expect(202);
    expect(res.body).toMatchObject({ queued: 3, skipped: 0, errors: [] });
    expect(await legacyTests(s)).toEqual([
      ['User#email', 'is valid', './spec/models/user_spec.rb:5', './spec/models/user_spec.rb'],
      ['User#email', 'rejects blanks', './spec/models/user_spec.rb:9', './spec/models/user_spec.rb'],
      ['User', 'some day', './spec/models/user_spec.rb:14', './spec/models/user_spec.rb'],
    ]);
    const failed = (await get(s, `/runs/${res.body.run_id}/failed_executions?include_failure_expanded=true`).expect(200)).body;
    expect(failed).toEqual([
      expect.objectContaining({
        test_name: 'rejects blanks',
        location: './spec/models/user_spec.rb:9',
        duration: 1.5,
        failure_reason: 'RSpec::Expectations::ExpectationNotMetError: expected true',
        failure_expanded: [{ expanded: ['     got false'], backtrace: ['./spec/models/user_spec.rb:10:in `block (3 levels)'] }],
      }),
    ]);
    const tests = (await get(s, '/tests?period=1day').set({ 'Buildkite-Version': '2026-08-01' }).expect(200)).body as {
      name: string;
      executions_count_by_result: Record<string, number>;
    }[];
    expect(tests.find((t) => t.name === 'some day')!.executions_count_by_result).toEqual({ passed: 0, failed: 0, skipped: 1 });
  });

  it('takes jest-json: the assertion results as the JavaScript collector reports them', async () => {
    const s = await givenSuite(ctx());
    const res = await send(s, 'jest-json', JEST).expect(202);
    expect(res.body).toMatchObject({ queued: 4, skipped: 0, errors: [] });
    expect(await legacyTests(s)).toEqual([
      ['Checkout totals', 'adds up', '/app/src/checkout.test.js:3', '/app/src/checkout.test.js'],
      ['', 'later', null, '/app/src/checkout.test.js'],
      ['Checkout', 'rounds', '/app/src/checkout.test.js:9', '/app/src/checkout.test.js'],
      ['Checkout', 'skipped one', null, '/app/src/checkout.test.js'],
    ]);
    const failed = (await get(s, `/runs/${res.body.run_id}/failed_executions?include_failure_expanded=true`).expect(200)).body;
    expect(failed).toEqual([
      expect.objectContaining({
        test_name: 'rounds',
        duration: 0.04,
        failure_reason: 'Error: expect(received).toBe(expected)',
        failure_expanded: [{ expanded: ['Expected: 2', 'Received: 3'] }],
      }),
    ]);
    const byResult = (await get(s, '/tests?period=1day').set({ 'Buildkite-Version': '2026-08-01' }).expect(200)).body as {
      name: string;
      executions_count_by_result: Record<string, number>;
    }[];
    expect(Object.fromEntries(byResult.map((t) => [t.name, t.executions_count_by_result]))).toEqual({
      'adds up': { passed: 1, failed: 0 },
      rounds: { passed: 0, failed: 1 },
      later: { passed: 0, failed: 0, skipped: 1 },
      'skipped one': { passed: 0, failed: 0, pending: 1 },
    });
  });

  it('takes playwright-json: every attempt of every project’s test, as the JavaScript collector reports them', async () => {
    const s = await givenSuite(ctx());
    const res = await send(s, 'playwright-json', PLAYWRIGHT).expect(202);
    expect(res.body).toMatchObject({ queued: 4, skipped: 0, errors: [] });
    expect(await legacyTests(s)).toEqual([
      [' chromium login.spec.ts with a bad password says so', 'says so', 'login.spec.ts:9:7', 'login.spec.ts'],
      [' chromium login.spec.ts shows the form', 'shows the form', 'login.spec.ts:3:5', 'login.spec.ts'],
      [' firefox login.spec.ts shows the form', 'shows the form', 'login.spec.ts:3:5', 'login.spec.ts'],
    ]);
    const failed = (await get(s, `/runs/${res.body.run_id}/failed_executions?include_failure_expanded=true`).expect(200)).body;
    expect(failed).toEqual([
      expect.objectContaining({
        test_name: 'says so',
        duration: 30,
        failure_reason: 'Test timeout of 30000ms exceeded.',
        failure_expanded: [{ expanded: ['    at login.spec.ts:10:5'] }],
      }),
    ]);
    // The retry that passed is an execution too: the test passed and failed on one commit.
    const flaky = (await get(s, '/flaky-tests').expect(200)).body as { name: string }[];
    expect(flaky.map((t) => t.name)).toEqual(['says so']);
  });

  it('takes cucumber-json: the scenarios, with their backgrounds, as the Ruby collector reports them', async () => {
    const s = await givenSuite(ctx());
    const res = await send(s, 'cucumber-json', CUCUMBER).expect(202);
    expect(res.body).toMatchObject({ queued: 3, skipped: 0, errors: [] });
    expect(await legacyTests(s)).toEqual([
      ['Cart', 'adds an item', 'features/cart.feature:6', 'features/cart.feature'],
      ['Cart', 'checks out', 'features/cart.feature:14', 'features/cart.feature'],
      ['Cart', 'removes an item', 'features/cart.feature:10', 'features/cart.feature'],
    ]);
    const failed = (await get(s, `/runs/${res.body.run_id}/failed_executions?include_failure_expanded=true`).expect(200)).body;
    expect(failed).toEqual([
      expect.objectContaining({
        test_name: 'removes an item',
        duration: 2.001,
        failure_reason: 'expected 0 items',
        failure_expanded: [{ expanded: ['got 1 (RuntimeError)', './features/step_definitions/cart.rb:9'] }],
      }),
    ]);
    const tests = (await get(s, '/tests?period=1day').set({ 'Buildkite-Version': '2026-08-01' }).expect(200)).body as {
      name: string;
      duration_sum: number;
      executions_count_by_result: Record<string, number>;
    }[];
    expect(Object.fromEntries(tests.map((t) => [t.name, [t.executions_count_by_result, t.duration_sum]]))).toEqual({
      'adds an item': [{ passed: 1, failed: 0 }, 0.2515],
      'removes an item': [{ passed: 0, failed: 1 }, 2.001],
      'checks out': [{ passed: 0, failed: 0, skipped: 1 }, 0],
    });
  });

  it('rejects a bad entry on its own, and refuses a report of another shape or not JSON with a 422 on data', async () => {
    const s = await givenSuite(ctx());
    const partly = await send(s, 'rspec-json', { examples: [RSPEC.examples[0], { status: 'passed' }, 'junk'] }).expect(202);
    expect(partly.body).toMatchObject({
      queued: 1,
      skipped: 2,
      errors: [
        { index: 1, field: 'name', code: "can't be blank" },
        { index: 2, field: 'data', code: 'must be an object' },
      ],
    });
    const rspecAsJest = await send(s, 'jest-json', RSPEC).expect(422);
    expect(rspecAsJest.body).toEqual({ message: 'Validation Failed', errors: [{ field: 'data', code: expect.stringContaining('not Jest JSON') }] });
    const jestAsRspec = await send(s, 'rspec-json', JEST).expect(422);
    expect(jestAsRspec.body.errors).toEqual([{ field: 'data', code: expect.stringContaining('not RSpec JSON') }]);
    expect((await send(s, 'jest-json', { testResults: [{ name: 'x' }] }).expect(422)).body.errors[0].code).toMatch(/assertionResults/);
    expect((await send(s, 'rspec-json', '{"examples": [').expect(422)).body.errors[0].code).toMatch(/not valid JSON/);
    expect((await send(s, 'playwright-json', CUCUMBER).expect(422)).body.errors[0].code).toMatch(/not Playwright JSON/);
    expect((await send(s, 'cucumber-json', PLAYWRIGHT).expect(422)).body.errors[0].code).toMatch(/not Cucumber JSON/);
    expect((await send(s, 'cucumber-json', [{ uri: 'x.feature' }]).expect(422)).body.errors[0].code).toMatch(/elements/);
    // A format the docs do not name stays refused, naming the field.
    expect((await send(s, 'mocha-json', {}).expect(422)).body.errors[0].field).toBe('format');
  });
});
