/**
 * Test Engine OIDC authentication (test_collection/oidc.md): a suite's `oidc_policy`, kept and
 * shown by the suites API, lets the OIDC token a job requests with `buildkite-agent oidc
 * request-token --audience "$SUITE_URL"` upload test results in place of the suite's API
 * token, when the policy's statement for the token's issuer and claims grants `write_uploads`.
 */
import { keysFromSecret } from '../../src/security/keys';
import { OidcIssuer } from '../../src/security/oidc';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { agentAuth, givenBuildAndAgent, movableClock, takeNextJob } from '../support/agents';
import { yaml } from '../support/configuration';
import { result, upload } from './helpers';

describeEachDatabase('Test Engine uploads with an OIDC token', (ctx) => {
  const clock = movableClock();
  afterEach(() => clock.reset());

  async function setup(policy: unknown) {
    const s = await givenBuildAndAgent(ctx(), yaml('steps:', '  - { command: rspec, key: specs }'));
    const job = await takeNextJob(ctx(), s.agent);
    const suites = `/v2/analytics/organizations/${s.org.slug}/suites`;
    const created = await ctx().http().post(suites).set(auth(s.token)).send({ name: 'Specs', oidc_policy: policy }).expect(201);
    const suite = created.body as { slug: string; web_url: string; oidc_policy: unknown };
    /** What the job's `buildkite-agent oidc request-token` gets. */
    const requestToken = async (body: Record<string, unknown> = { audience: suite.web_url }) =>
      (await ctx().http().post(`/v3/jobs/${job.id}/oidc/tokens`).set(agentAuth(s.agent.token)).send(body).expect(200)).body.token as string;
    const uploadWith = (token: string) =>
      ctx()
        .http()
        .post('/v1/uploads')
        .set({ Authorization: `Token token="${token}"` })
        .send(upload({ key: s.build.id, ci: 'buildkite' }, [result('adds up', 'passed')]));
    return { ...s, suites, suite, requestToken, uploadWith };
  }

  /** The docs' policy, for this organization and pipeline. */
  const docsPolicy = (org: string, pipeline: string) =>
    [
      '- iss: "https://agent.buildkite.com"',
      '  claims:',
      `    organization_slug: "${org}"`,
      '    pipeline_slug:',
      '      in:',
      `        - "${pipeline}"`,
      '        - "another-pipeline"',
      '  scopes:',
      '    - "read_suites"',
      '    - "write_uploads"',
      '',
    ].join('\n');

  it('takes an upload with a token the docs’ policy allows, and shows, replaces and clears the policy', async () => {
    const s = await setup(null);
    expect(s.suite.oidc_policy).toBeNull();
    const base = `${s.suites}/${s.suite.slug}`;
    // Without a policy no OIDC token uploads.
    expect((await s.uploadWith(await s.requestToken()).expect(401)).body.message).toEqual(expect.any(String));

    const set = await ctx()
      .http()
      .patch(base)
      .set(auth(s.token))
      .send({ oidc_policy: docsPolicy(s.org.slug, s.slug) })
      .expect(200);
    const statements = [
      {
        iss: 'https://agent.buildkite.com',
        scopes: ['read_suites', 'write_uploads'],
        claims: { organization_slug: s.org.slug, pipeline_slug: { in: [s.slug, 'another-pipeline'] } },
      },
    ];
    expect(set.body.oidc_policy).toEqual(statements);
    expect((await ctx().http().get(base).set(auth(s.token)).expect(200)).body.oidc_policy).toEqual(statements);

    const accepted = await s.uploadWith(await s.requestToken()).expect(202);
    expect(accepted.body).toMatchObject({ queued: 1, skipped: 0, run_url: `${s.suite.web_url}/runs/${accepted.body.run_id}` });
    const runs = (await ctx().http().get(`${base}/runs`).set(auth(s.token)).expect(200)).body as { id: string; build_id: string }[];
    expect(runs).toEqual([expect.objectContaining({ id: accepted.body.run_id, build_id: s.build.id })]);

    // An update replaces the whole policy (a JSON array this time: only another pipeline may upload) ...
    const other = [{ iss: PUBLIC_URL, scopes: ['write_uploads'], claims: { pipeline_slug: 'another-pipeline' } }];
    expect((await ctx().http().patch(base).set(auth(s.token)).send({ oidc_policy: other }).expect(200)).body.oidc_policy).toEqual(other);
    await s.uploadWith(await s.requestToken()).expect(401);
    // ... and null clears it. A malformed one changes nothing.
    const bad = await ctx()
      .http()
      .patch(base)
      .set(auth(s.token))
      .send({ oidc_policy: [{ iss: PUBLIC_URL, scope: ['write_uploads'], claims: {} }] })
      .expect(422);
    expect(bad.body.errors).toEqual([
      { field: 'oidc_policy[0].scope', code: 'is not a statement property (iss, scopes, claims)' },
      { field: 'oidc_policy[0].scopes', code: 'must list the scopes the statement grants' },
    ]);
    expect((await ctx().http().get(base).set(auth(s.token)).expect(200)).body.oidc_policy).toEqual(other);
    expect((await ctx().http().patch(base).set(auth(s.token)).send({ oidc_policy: null }).expect(200)).body.oidc_policy).toBeNull();
    await s.uploadWith(await s.requestToken()).expect(401);
  });

  it('refuses a token for another suite, without write_uploads, expired, tampered with, or not this server’s', async () => {
    const s = await setup(null);
    const base = `${s.suites}/${s.suite.slug}`;
    await ctx()
      .http()
      .patch(base)
      .set(auth(s.token))
      .send({ oidc_policy: docsPolicy(s.org.slug, s.slug) })
      .expect(200);
    // No statement is no policy.
    const other = (await ctx().http().post(s.suites).set(auth(s.token)).send({ name: 'Other', oidc_policy: [] }).expect(201)).body;
    expect(other.oidc_policy).toBeNull();

    // The audience names the suite: another suite's URL (without a policy), the default audience, the API URL.
    await s.uploadWith(await s.requestToken({ audience: other.web_url })).expect(401);
    await s.uploadWith(await s.requestToken({})).expect(401);
    await s.uploadWith(await s.requestToken({ audience: `${PUBLIC_URL}/v2/analytics/organizations/${s.org.slug}/suites/${s.suite.slug}` })).expect(401);
    // A trailing slash is the same URL.
    await s.uploadWith(await s.requestToken({ audience: `${s.suite.web_url}/` })).expect(202);

    const token = await s.requestToken({ audience: s.suite.web_url, lifetime: 60 });
    const [header, payload, signature] = token.split('.');
    const forged = Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(payload!, 'base64url').toString()), pipeline_slug: 'another-pipeline' })).toString(
      'base64url',
    );
    await s.uploadWith(`${header}.${forged}.${signature}`).expect(401);
    // The same claims signed by another server's key.
    const elsewhere = new OidcIssuer(keysFromSecret('another server'.repeat(4)), PUBLIC_URL);
    await s.uploadWith(elsewhere.sign(JSON.parse(Buffer.from(payload!, 'base64url').toString()))).expect(401);
    clock.advance(61_000);
    await s.uploadWith(token).expect(401);
    clock.reset();

    // A statement that matches but grants no write_uploads decides: the next one is not read.
    const readOnly = [
      { iss: 'https://agent.buildkite.com', scopes: ['read_suites'], claims: { pipeline_slug: s.slug } },
      { iss: 'https://agent.buildkite.com', scopes: ['write_uploads'], claims: {} },
    ];
    await ctx().http().patch(base).set(auth(s.token)).send({ oidc_policy: readOnly }).expect(200);
    await s.uploadWith(await s.requestToken()).expect(401);
    // Garbage in the token's place is a 401 like an unknown API token.
    await s.uploadWith('a.b.c').expect(401);
  });
});
