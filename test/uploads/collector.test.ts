/**
 * The real JavaScript collector (npm `buildkite-test-collector`, jest reporter) uploading to
 * a Windsock on loopback. The collector swallows upload errors, so everything is asserted on
 * the server's state afterwards.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ok } from '../../clients/typescript/src';
import { describeEachDatabase } from '../support/context';
import { restClient } from '../support/sdk';
import { givenSuite } from './helpers';

const PROJECT = path.join(__dirname, '..', 'fixtures', 'flaky-project');

/** Runs the fixture project with the repository's jest; resolves with its exit code. */
function runCollectorProject(env: Record<string, string>): Promise<{ code: number | null; output: string }> {
  const childEnv: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) {
    // The collector reads the CI's own variables first (BUILDKITE_*, GITHUB_*, CIRCLE_*): a CI
    // running this suite must not leak its build into the fixture's runs. Proxies neither.
    if (/^(BUILDKITE|GITHUB|CIRCLE)_|^JEST_|proxy$/i.test(k)) continue;
    childEnv[k] = v;
  }
  Object.assign(childEnv, { NO_PROXY: '127.0.0.1,localhost', no_proxy: '127.0.0.1,localhost', ...env });
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [require.resolve('jest/bin/jest'), '--config', path.join(PROJECT, 'jest.config.js'), '--runInBand', '--ci'], {
      cwd: PROJECT,
      env: childEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let output = '';
    child.stdout.on('data', (d) => (output += d));
    child.stderr.on('data', (d) => (output += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, output }));
  });
}

describeEachDatabase('the buildkite-test-collector jest reporter', (ctx) => {
  let server: Server;
  let dir: string;
  beforeAll(async () => {
    server = ctx().app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'windsock-collector-'));
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('uploads two runs on one commit, and the test that failed then passed is the one flaky test', async () => {
    const s = await givenSuite(ctx(), 'Checkout JS');
    const { port } = server.address() as AddressInfo;
    const env = {
      BUILDKITE_ANALYTICS_BASE_URL: `http://127.0.0.1:${port}/v1/uploads`,
      BUILDKITE_ANALYTICS_TOKEN: s.apiToken,
      BUILDKITE_ANALYTICS_SHA: '1c3214fcceb2c14579a2c3c50cd78f1442fd8936',
      BUILDKITE_ANALYTICS_BRANCH: 'main',
      FLAKY_MARKER: path.join(dir, 'marker'),
    };
    const first = await runCollectorProject({ ...env, BUILDKITE_ANALYTICS_KEY: 'run-1' });
    expect({ code: first.code, errors: first.output.match(/Test Engine error.*/g) }).toEqual({ code: 1, errors: null });
    const second = await runCollectorProject({ ...env, BUILDKITE_ANALYTICS_KEY: 'run-2' });
    expect({ code: second.code, errors: second.output.match(/Test Engine error.*/g) }).toEqual({ code: 0, errors: null });

    // What the server then shows, read over the network through the SDK.
    const api = restClient(`http://127.0.0.1:${port}`, s.token);
    const suite = { org_slug: s.org.slug, suite_slug: s.suite.slug };
    const runs = await ok(api.GET('/v2/analytics/organizations/{org_slug}/suites/{suite_slug}/runs', { params: { path: suite } }));
    expect(runs.map((r) => [r.result, r.commit_sha, r.branch])).toEqual([
      ['passed', env.BUILDKITE_ANALYTICS_SHA, 'main'],
      ['failed', env.BUILDKITE_ANALYTICS_SHA, 'main'],
    ]);
    const stored = await ctx()
      .services.db('test_runs')
      .where({ suite_id: s.suite.id })
      .orderBy('created_at')
      .select('run_key', 'collector', 'test_runner', 'executions_count');
    expect(stored).toEqual([
      { run_key: 'run-1', collector: 'js-buildkite-test-collector', test_runner: 'jest', executions_count: 3 },
      { run_key: 'run-2', collector: 'js-buildkite-test-collector', test_runner: 'jest', executions_count: 3 },
    ]);

    const failed = await ok(
      api.GET('/v2/analytics/organizations/{org_slug}/suites/{suite_slug}/runs/{run_id}/failed_executions', {
        params: { path: { ...suite, run_id: runs[1]!.id } },
      }),
    );
    expect(failed).toHaveLength(1);
    expect(failed[0]).toMatchObject({ test_name: 'applies the discount', location: 'checkout.spec.js:9' });
    expect(failed[0]!.failure_reason).toMatch(/expect\(received\)\.toBe\(expected\)/);

    const flaky = await ok(api.GET('/v2/analytics/organizations/{org_slug}/suites/{suite_slug}/flaky-tests', { params: { path: suite } }));
    expect(flaky).toEqual([expect.objectContaining({ scope: 'Checkout', name: 'applies the discount', instances: 1 })]);
    const test = await ok(
      api.GET('/v2/analytics/organizations/{org_slug}/suites/{suite_slug}/tests/{test_id}', {
        params: { path: { ...suite, test_id: flaky[0]!.id } },
        headers: { 'Buildkite-Version': '2026-08-01' },
      }),
    );
    expect(test).toMatchObject({
      executions_count: 2,
      executions_count_by_result: { passed: 1, failed: 1 },
      labels: ['flaky'],
    });

    const todo = await ctx().services.db('tests').where({ suite_id: s.suite.id, name: 'handles refunds' }).first('skipped_count', 'executions_count');
    expect(todo).toEqual({ skipped_count: 2, executions_count: 2 });
  });
});
