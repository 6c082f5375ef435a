import { auth, describeEachDatabase } from '../support/context';
import { givenSuite, result, suiteAuth } from './helpers';
import { existing } from '../support/rows';

const JUNIT = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites name="rspec">
  <testsuite name="models" tests="4">
    <testcase classname="spec.models.user" name="validates &lt;email&gt; &amp; name" file="./spec/models/user_spec.rb" line="12" time="0.125"/>
    <testcase classname="spec.models.user" name="saves" file="./spec/models/user_spec.rb" time="0.5">
      <failure message="expected 1, got 2" type="RSpec::Expectations::ExpectationNotMetError">expected 1
got 2
  # ./spec/models/user_spec.rb:20</failure>
    </testcase>
    <testcase classname="spec.models.user" name="later"><skipped/></testcase>
    <testcase name="no classname"/>
    <testsuite name="nested">
      <testcase classname="spec.models.nested" name="errors out" time="1"><error message="boom"/></testcase>
    </testsuite>
  </testsuite>
</testsuites>`;

const BILLION_LAUGHS = `<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol9 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
]>
<testsuite><testcase classname="x" name="&lol9;"/></testsuite>`;

const XXE = `<?xml version="1.0"?>
<!DOCTYPE foo [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<testsuite><testcase classname="x" name="&xxe;"/></testsuite>`;

describeEachDatabase('uploads (multipart)', (ctx) => {
  const multipart = (apiToken: string, format: string, data: string | Buffer | undefined, env: Record<string, string> = { key: 'run-1' }) => {
    const req = ctx().http().post('/v1/uploads').set(suiteAuth(apiToken)).field('format', format);
    for (const [k, v] of Object.entries(env)) req.field(`run_env[${k}]`, v);
    req.field('tags[team]', 'core');
    if (data !== undefined)
      req.attach('data', Buffer.from(data), {
        filename: format === 'junit' ? 'junit.xml' : 'results.json',
        contentType: format === 'junit' ? 'application/xml' : 'application/json',
      });
    return req;
  };

  it('takes a JSON file of results with run_env fields', async () => {
    const s = await givenSuite(ctx());
    const res = await multipart(s.apiToken, 'json', JSON.stringify([result('a', 'passed'), result('a', 'failed'), { result: 'passed' }]), {
      key: 'mp-1',
      CI: 'buildkite',
      branch: 'main',
      commit_sha: 'abc',
    }).expect(202);
    expect(res.body).toMatchObject({ queued: 2, skipped: 1, errors: [{ index: 2, id: null, field: 'name', code: "can't be blank" }] });
    const run = await ctx().http().get(`${s.base}/runs/${res.body.run_id}`).set(auth(s.token)).expect(200);
    expect(run.body).toMatchObject({ branch: 'main', commit_sha: 'abc', build_id: 'mp-1', result: 'failed' });
    const flaky = await ctx().http().get(`${s.base}/flaky-tests`).set(auth(s.token)).expect(200);
    expect(flaky.body.map((f: { name: string }) => f.name)).toEqual(['a']);
  });

  it('keeps out of storage what the TestResult schema forbids, as for a JSON body (a history section of 101 characters was stored)', async () => {
    const s = await givenSuite(ctx());
    const long = result('long section', 'passed', { history: { section: 'x'.repeat(101) } });
    const res = await multipart(s.apiToken, 'json', JSON.stringify([result('a', 'passed'), long])).expect(202);
    expect(res.body).toMatchObject({
      queued: 1,
      skipped: 1,
      errors: [{ index: 1, id: long.id, field: 'history.section', code: 'is too long (maximum is 100 characters)' }],
    });
  });

  it('refuses a JSON file that is not valid JSON or not an array', async () => {
    const s = await givenSuite(ctx());
    const bad = await multipart(s.apiToken, 'json', '[{"name": ').expect(422);
    expect(bad.body.errors).toEqual([{ field: 'data', code: expect.stringMatching(/^is not valid JSON/) }]);
    const obj = await multipart(s.apiToken, 'json', '{"name": "x"}').expect(422);
    expect(obj.body.errors).toEqual([{ field: 'data', code: 'must be a JSON array of test results' }]);
    const none = await multipart(s.apiToken, 'json', undefined).expect(422);
    expect(none.body.errors[0].field).toBe('data');
    const format = await multipart(s.apiToken, 'yaml', '[]').expect(422);
    expect(format.body.errors[0].field).toBe('format');
    const noKey = await multipart(s.apiToken, 'json', '[]', {}).expect(422);
    expect(noKey.body.errors.map((e: { field: string }) => e.field)).toContain('run_env');
  });

  it('parses JUnit XML: results from failure, error and skipped, entities decoded, a testcase without classname rejected', async () => {
    const s = await givenSuite(ctx());
    const res = await multipart(s.apiToken, 'junit', JUNIT, { key: 'junit-1', commit_sha: 'c1', branch: 'main' }).expect(202);
    expect(res.body).toMatchObject({ queued: 4, skipped: 1, errors: [{ index: 3, id: null, field: 'classname', code: "can't be blank" }] });
    const tests = await ctx()
      .services.db('tests')
      .where({ suite_id: s.suite.id })
      .orderBy('name')
      .select('name', 'scope', 'location', 'file_name', 'passed_count', 'failed_count', 'skipped_count', 'duration_sum');
    expect(tests).toEqual([
      { name: 'errors out', scope: 'spec.models.nested', location: null, file_name: null, passed_count: 0, failed_count: 1, skipped_count: 0, duration_sum: 1 },
      { name: 'later', scope: 'spec.models.user', location: null, file_name: null, passed_count: 0, failed_count: 0, skipped_count: 1, duration_sum: 0 },
      {
        name: 'saves',
        scope: 'spec.models.user',
        location: './spec/models/user_spec.rb',
        file_name: './spec/models/user_spec.rb',
        passed_count: 0,
        failed_count: 1,
        skipped_count: 0,
        duration_sum: 0.5,
      },
      {
        name: 'validates <email> & name',
        scope: 'spec.models.user',
        location: './spec/models/user_spec.rb:12',
        file_name: './spec/models/user_spec.rb',
        passed_count: 1,
        failed_count: 0,
        skipped_count: 0,
        duration_sum: 0.125,
      },
    ]);
    const failed = await ctx().http().get(`${s.base}/runs/${res.body.run_id}/failed_executions?include_failure_expanded=true`).set(auth(s.token)).expect(200);
    expect(failed.body.map((e: { test_name: string; failure_reason: string }) => [e.test_name, e.failure_reason])).toEqual([
      ['saves', 'expected 1, got 2'],
      ['errors out', 'boom'],
    ]);
    expect(failed.body[0].failure_expanded).toEqual([{ expanded: ['expected 1', 'got 2', '  # ./spec/models/user_spec.rb:20'], backtrace: [] }]);
    expect(failed.body[0].tags).toEqual({ team: 'core' });
  });

  it('answers a malformed document with a 422 naming the line and column', async () => {
    const s = await givenSuite(ctx());
    const res = await multipart(s.apiToken, 'junit', '<testsuite>\n  <testcase classname="a" name="b">\n</testsuite>').expect(422);
    expect(res.body.errors).toEqual([{ field: 'data', code: expect.stringMatching(/^is not well-formed XML: line 3, column \d+: /) }]);
    const notJUnit = await multipart(s.apiToken, 'junit', '<html><body/></html>').expect(422);
    expect(notJUnit.body.errors[0].code).toMatch(/not a JUnit document/);
  });

  it('refuses billion laughs and external entities without expanding or reading anything', async () => {
    const s = await givenSuite(ctx());
    for (const doc of [BILLION_LAUGHS, XXE, '<!DOCTYPE x SYSTEM "http://127.0.0.1:1/x.dtd"><testsuite/>']) {
      const started = Date.now();
      const res = await multipart(s.apiToken, 'junit', doc).expect(422);
      expect(res.body.errors).toEqual([{ field: 'data', code: 'contains a DOCTYPE or entity declaration, which is refused' }]);
      expect(Date.now() - started).toBeLessThan(5000);
    }
    // An undeclared entity is left as text, never resolved.
    const res = await multipart(s.apiToken, 'junit', '<testsuite><testcase classname="x" name="&xxe;"/></testsuite>').expect(202);
    expect(res.body.queued).toBe(1);
    expect(existing(await ctx().services.db('tests').where({ suite_id: s.suite.id }).first('name'), 'the test').name).toBe('&xxe;');
  });

  it('refuses suites nested without end and more than 5,000 test cases', async () => {
    const s = await givenSuite(ctx());
    const deep = '<testsuite>'.repeat(100) + '</testsuite>'.repeat(100);
    const nested = await multipart(s.apiToken, 'junit', deep).expect(422);
    expect(nested.body.errors[0].code).toMatch(/deeper than/);
    const many = `<testsuite>${'<testcase classname="a" name="b"/>'.repeat(5001)}</testsuite>`;
    const tooMany = await multipart(s.apiToken, 'junit', many).expect(422);
    expect(tooMany.body.errors[0].code).toMatch(/more than 5000 test cases/);
  });
});

/** A raw multipart body: supertest's own builder cannot send a broken one. */
describeEachDatabase('uploads (malformed multipart)', (ctx) => {
  const B = 'XB';
  const part = (name: string, value: string, file?: string) =>
    `--${B}\r\nContent-Disposition: form-data; name="${name}"${file ? `; filename="${file}"\r\nContent-Type: application/json` : ''}\r\n\r\n${value}\r\n`;
  const valid = part('format', 'json') + part('run_env[key]', 'r1') + part('data', '[]', 'a.json') + `--${B}--\r\n`;
  const send = (apiToken: string, body: string, contentType = `multipart/form-data; boundary=${B}`) =>
    ctx().http().post('/v1/uploads').set(suiteAuth(apiToken)).set('Content-Type', contentType).send(body);

  it('answers each malformed body with a 400 that says what is wrong, never a 500', async () => {
    const s = await givenSuite(ctx());
    // The valid body is taken, so each of the others fails by its own fault.
    await send(s.apiToken, valid).expect(202);
    const malformed: [string, string, string?][] = [
      ['a truncated part', valid.slice(0, valid.indexOf('[]'))],
      ['truncated part headers', `--${B}\r\nContent-Disposition: form-da`],
      ['a lone boundary', `--${B}`],
      ['a wrong boundary', valid.replaceAll(`--${B}`, '--YB')],
      ['an empty body', ''],
      ['a malformed part header', `--${B}\r\nno colon here\r\n\r\nx\r\n--${B}--\r\n`],
      ['a 200,000-character field name', part('n'.repeat(200_000), 'x') + `--${B}--\r\n`],
      ['no boundary', valid, 'multipart/form-data'],
    ];
    for (const [what, body, type] of malformed) {
      const res = await send(s.apiToken, body, type);
      expect({ what, status: res.status }).toEqual({ what, status: 400 });
      expect(res.body.message).toMatch(/^Malformed multipart body: /);
    }
    expect(
      await ctx()
        .services.db('test_runs')
        .where({ suite_id: s.suite.id })
        .count({ n: '*' })
        .then(([r]) => Number(r!.n)),
    ).toBe(1);
  });

  it('answers two data files with a 422 naming the field, and a file in another field likewise', async () => {
    const s = await givenSuite(ctx());
    const two = part('format', 'json') + part('run_env[key]', 'r1') + part('data', '[]', 'a.json') + part('data', '[]', 'b.json') + `--${B}--\r\n`;
    const res = await send(s.apiToken, two).expect(422);
    expect(res.body).toEqual({
      message: 'Validation Failed',
      errors: [{ field: 'data', code: 'only one file may be uploaded: send all results in one data file' }],
    });
    const other = part('format', 'json') + part('run_env[key]', 'r1') + part('tags[x]', '1', 'x.txt') + part('data', '[]', 'a.json') + `--${B}--\r\n`;
    const wrongField = await send(s.apiToken, other).expect(422);
    expect(wrongField.body.errors).toEqual([{ field: 'tags[x]', code: 'is a file: only data may be a file, send the other fields as text' }]);
  });

  it('refuses a field over 64 KiB with a 422 naming it', async () => {
    const s = await givenSuite(ctx());
    const long = part('format', 'json') + part('run_env[key]', 'k'.repeat(64 * 1024 + 1)) + part('data', '[]', 'a.json') + `--${B}--\r\n`;
    const res = await send(s.apiToken, long).expect(422);
    expect(res.body.errors).toEqual([{ field: 'run_env[key]', code: 'is too long (maximum is 65536 bytes)' }]);
  });
});
