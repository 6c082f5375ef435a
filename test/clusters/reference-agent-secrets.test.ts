/**
 * `buildkite-agent secret get` end to end: the reference agent, registered with a cluster's
 * token, runs a step of the cluster's pipeline that reads secrets through its shim (one key, the
 * JSON and env formats, a key the policy refuses), and the job's log shows what the step printed.
 * Then steps' `secrets`: the agent reads them before the command runs, puts them in its
 * environment and redacts their values from the log; one the policy refuses fails the job unrun.
 */
import { redactor } from '../../src/cli/agent';
import { auth, describeEachDatabase, type TestContext } from '../support/context';
import { onLoopback, withReferenceAgents } from '../support/agents';
import { givenBuild, givenPipeline } from '../support/given';
import { buildRef, finishedBuild, jobLogText, restClient } from '../support/sdk';

/** A cluster with a default queue, a registration token and these secrets (key, value, policy). */
async function givenClusterWithSecrets(ctx: TestContext, secrets: readonly (readonly [string, string, string | undefined])[]) {
  const { org, token } = await ctx.givenAdmin();
  const base = `/v2/organizations/${org.slug}/clusters`;
  const cluster = (await ctx.http().post(base).set(auth(token)).send({ name: 'Secrets' }).expect(201)).body;
  const queue = (await ctx.http().post(`${base}/${cluster.id}/queues`).set(auth(token)).send({ key: 'default' }).expect(201)).body;
  await ctx.http().put(`${base}/${cluster.id}`).set(auth(token)).send({ default_queue_id: queue.id }).expect(200);
  const reg = (await ctx.http().post(`${base}/${cluster.id}/tokens`).set(auth(token)).send({ description: 'ref' }).expect(201)).body.token as string;
  for (const [key, value, policy] of secrets)
    await ctx
      .http()
      .post(`${base}/${cluster.id}/secrets`)
      .set(auth(token))
      .send({ key, value, ...(policy ? { policy } : {}) })
      .expect(201);
  return { org, token, cluster, reg };
}

describe("the reference agent's log redaction", () => {
  /** Sends `pieces` through the redactor as flushes would, the last one final: what the log gets. */
  const stream = (values: string[], pieces: string[]) => {
    const r = redactor(values);
    let kept = '';
    let log = '';
    pieces.forEach((piece, n) => {
      const { send, keep } = r.split(kept + piece, n === pieces.length - 1);
      log += send;
      kept = keep;
    });
    return log + kept;
  };

  it('replaces every value, the longest first, however the output is cut between flushes', () => {
    const values = ['tok-123', 'tok-1234567', 'cde', 'deXY'];
    const text = 'a tok-1234567 b tok-123 c abcdeXY d deXY e';
    const expected = 'a [REDACTED] b [REDACTED] c ab[REDACTED]XY d [REDACTED] e';
    expect(stream(values, [text])).toBe(expected);
    // Every way of cutting the text in two, and in three, gives the same log.
    for (let i = 0; i <= text.length; i++) {
      expect(stream(values, [text.slice(0, i), text.slice(i)])).toBe(expected);
      for (let j = i; j <= text.length; j += 3) expect(stream(values, [text.slice(0, i), text.slice(i, j), text.slice(j)])).toBe(expected);
    }
    // Held back: the last characters, one fewer than the longest secret; all of it at the end.
    expect(redactor(values).split('printed: tok-', false)).toEqual({ send: 'pri', keep: 'nted: tok-' });
    expect(redactor(values).split('printed: tok-', true)).toEqual({ send: 'printed: tok-', keep: '' });
    expect(redactor([]).split('anything', false)).toEqual({ send: 'anything', keep: '' });
  });
});

const SECRETS = [
  ['DEPLOY_KEY', "it's-a-key", undefined],
  ['API_TOKEN', 'tok-123', '- build_branch: main\n'],
  ['PROD_ONLY', 'never', '- build_branch: production\n'],
] as const;

describeEachDatabase('buildkite-agent secret get', (ctx) => {
  const { endpoint } = onLoopback(ctx);

  it('reads the cluster secrets the policy allows, in the three formats, and fails on one it refuses', async () => {
    const { org, token, cluster, reg } = await givenClusterWithSecrets(ctx(), SECRETS);
    const { slug } = await givenPipeline(ctx(), org.slug, token, {
      cluster_id: cluster.id,
      configuration: [
        'steps:',
        '  - command: |',
        '      echo "one=$(buildkite-agent secret get deploy_key)"',
        '      echo "json=$(buildkite-agent secret get DEPLOY_KEY api_token)"',
        '      buildkite-agent secret get --format env api_token deploy_key',
        '      buildkite-agent secret get PROD_ONLY || echo "refused: $?"',
      ].join('\n'),
    });
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const api = restClient(endpoint(), token);
    const ref = buildRef(org.slug, slug, build.number);
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'secrets', spawn: 1, pollIntervalMs: 20 }, async () => {
      const b = await finishedBuild(api, ref, 3000);
      const log = await jobLogText(api, ref, b.jobs[0]!.id);
      expect(b.jobs[0]!.state).toBe('passed');
      expect(log).toContain("one=it's-a-key\n");
      expect(log).toContain(`json={"DEPLOY_KEY":"it's-a-key","api_token":"tok-123"}\n`);
      expect(log).toContain("API_TOKEN='tok-123'\nDEPLOY_KEY='it'\\''s-a-key'\n");
      expect(log).toContain('PROD_ONLY: 403');
      expect(log).toContain('refused: 1\n');
      expect(log).not.toContain('never');
    });
  });

  it("puts a step's secrets in its command's environment, redacted from the log, and fails a job whose secret the policy refuses without running it", async () => {
    const { org, token, cluster, reg } = await givenClusterWithSecrets(ctx(), SECRETS);
    const { slug } = await givenPipeline(ctx(), org.slug, token, {
      cluster_id: cluster.id,
      configuration: [
        'secrets:',
        '  - DEPLOY_KEY',
        'steps:',
        '  - command: |',
        '      test "$DEPLOY_KEY" = "it\'s-a-key" && echo "deploy key in place"',
        '      test "$MY_TOKEN" = "tok-123" && echo "token in place"',
        '      echo "printed: $MY_TOKEN and $DEPLOY_KEY"',
        '    secrets:',
        '      MY_TOKEN: API_TOKEN',
        '  - command: echo "ran with $PROD_ONLY"',
        '    secrets: [PROD_ONLY]',
      ].join('\n'),
    });
    const build = await givenBuild(ctx(), org.slug, slug, token);
    const api = restClient(endpoint(), token);
    const ref = buildRef(org.slug, slug, build.number);
    await withReferenceAgents({ endpoint: endpoint(), token: reg, tags: [], name: 'step-secrets', spawn: 1, pollIntervalMs: 20 }, async () => {
      const b = await finishedBuild(api, ref, 3000);
      const [used, refused] = b.jobs;
      const usedLog = await jobLogText(api, ref, used!.id);
      expect(used!.state).toBe('passed');
      expect(usedLog).toContain('deploy key in place\n');
      expect(usedLog).toContain('token in place\n');
      expect(usedLog).toContain('printed: [REDACTED] and [REDACTED]\n');
      expect(usedLog).not.toContain('tok-123');
      expect(usedLog).not.toContain("it's-a-key");

      const refusedLog = await jobLogText(api, ref, refused!.id);
      expect(refused!.state).toBe('failed');
      expect(refused!.exit_status).toBe(-1);
      expect(refusedLog).toContain('Failed to fetch secrets for job: secret PROD_ONLY: 403 ');
      expect(refusedLog).not.toContain('ran with');
    });
  });
});
