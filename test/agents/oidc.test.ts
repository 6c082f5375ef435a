/**
 * `buildkite-agent oidc request-token` (POST /v3/jobs/{id}/oidc/tokens, as the agent's
 * api/oidc.go sends it) and the issuer's discovery documents: a token about the job the agent
 * runs, with the claims the agent's OIDC reference page documents, verifiable with the key
 * `/.well-known/jwks` publishes, as a relying party (AWS, GCP, Azure) would verify it.
 */
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import { keysFromSecret } from '../../src/security/keys';
import { OidcIssuer } from '../../src/security/oidc';
import { auth, describeEachDatabase, PUBLIC_URL } from '../support/context';
import { agentAuth, givenAgent, givenBuildAndAgent, takeNextJob } from '../support/agents';
import { yaml } from '../support/configuration';

describe('the OIDC issuer', () => {
  it('derives one key from the server secret: every instance and restart publishes and signs with the same', () => {
    const one = new OidcIssuer(keysFromSecret('a'.repeat(64)), 'http://ci.example/');
    const again = new OidcIssuer(keysFromSecret('a'.repeat(64)), 'http://ci.example');
    const other = new OidcIssuer(keysFromSecret('b'.repeat(64)), 'http://ci.example');
    expect(again.jwks()).toEqual(one.jwks());
    expect(other.jwks().keys[0]!.kid).not.toBe(one.jwks().keys[0]!.kid);
    const iat = Math.floor(Date.now() / 1000);
    const token = one.sign({ iss: one.issuer, sub: 'x', iat, exp: iat + 60 });
    const key = crypto.createPublicKey({ key: again.jwks().keys[0]!, format: 'jwk' });
    expect(jwt.verify(token, key, { algorithms: ['ES256'], issuer: 'http://ci.example' })).toMatchObject({ sub: 'x' });
    expect(() => jwt.verify(token, crypto.createPublicKey({ key: other.jwks().keys[0]!, format: 'jwk' }), { algorithms: ['ES256'] })).toThrow(/signature/);
  });
});

describeEachDatabase('the agent API: OIDC tokens', (ctx) => {
  async function setup() {
    const s = await givenBuildAndAgent(ctx(), yaml('steps:', '  - { command: deploy.sh, key: deploy }'));
    const agent = await givenAgent(ctx(), s.reg, 'tagged', ['os=linux']);
    const job = await takeNextJob(ctx(), agent);
    const request = (body: Record<string, unknown>, token = agent.token) =>
      ctx().http().post(`/v3/jobs/${job.id}/oidc/tokens`).set(agentAuth(token)).send(body);
    const verify = async (token: string) => {
      const jwks = (await ctx().http().get('/.well-known/jwks').expect(200)).body as { keys: crypto.JsonWebKey[] };
      const header = jwt.decode(token, { complete: true })!.header;
      const key = jwks.keys.find((k) => (k as { kid?: string }).kid === header.kid)!;
      return jwt.verify(token, crypto.createPublicKey({ key, format: 'jwk' }), { algorithms: ['ES256'], issuer: PUBLIC_URL }) as Record<string, unknown>;
    };
    return { ...s, agent, job, request, verify };
  }

  it('issues a token with the documented claims, verifiable with the published key', async () => {
    const s = await setup();
    const discovery = (await ctx().http().get('/.well-known/openid-configuration').expect(200)).body;
    expect(discovery).toMatchObject({ issuer: PUBLIC_URL, jwks_uri: `${PUBLIC_URL}/.well-known/jwks`, id_token_signing_alg_values_supported: ['ES256'] });
    const res = await s.request({}).expect(200);
    const claims = await s.verify(res.body.token);
    expect(claims).toEqual({
      iss: PUBLIC_URL,
      sub: `organization:${s.org.slug}:pipeline:${s.slug}:ref:refs/heads/main:commit:abc123:step:deploy`,
      aud: `https://buildkite.com/${s.org.slug}`,
      iat: expect.any(Number),
      nbf: expect.any(Number),
      exp: expect.any(Number),
      organization_slug: s.org.slug,
      pipeline_slug: s.slug,
      build_number: s.build.number,
      build_branch: 'main',
      build_commit: 'abc123',
      step_key: 'deploy',
      job_id: s.job.id,
      agent_id: s.agent.id,
      build_source: 'api',
      runner_environment: 'self-hosted',
    });
    // Five minutes, the documented default.
    expect([claims.nbf, (claims.exp as number) - (claims.iat as number)]).toEqual([claims.iat, 300]);
  });

  it('takes an audience, a lifetime, optional claims, AWS session tags and a custom subject', async () => {
    const s = await setup();
    const res = await s
      .request({
        audience: 'sts.amazonaws.com',
        lifetime: 900,
        claims: ['organization_id', 'pipeline_id', 'build_id', 'cluster_id', 'agent_tag:os', 'agent_tag:missing'],
        aws_session_tags: ['organization_slug', 'build_number', 'cluster_id', 'build_tag', 'exp'],
        subject_claim: 'build_id',
      })
      .expect(200);
    const claims = await s.verify(res.body.token);
    expect(claims).toMatchObject({
      aud: 'sts.amazonaws.com',
      sub: s.build.id,
      organization_id: s.org.id,
      build_id: s.build.id,
      cluster_id: null,
      'agent_tag:os': 'linux',
      'agent_tag:missing': null,
      // Strings only, as AWS requires: numbers as text, nulls (and a claim the build lacks) as "".
      'https://aws.amazon.com/tags': {
        principal_tags: {
          organization_slug: [s.org.slug],
          build_number: [String(s.build.number)],
          cluster_id: [''],
          build_tag: [''],
          exp: [expect.stringMatching(/^\d+$/)],
        },
      },
    });
    expect(typeof claims.pipeline_id).toBe('string');
    expect((claims.exp as number) - (claims.iat as number)).toBe(900);
  });

  it('refuses an unknown claim, a subject the job has no value for, and a job the agent does not run', async () => {
    const s = await setup();
    const unknown = await s.request({ claims: ['favourite_colour'] }).expect(422);
    expect(unknown.body.errors[0]).toMatchObject({ field: 'claims' });
    expect((await s.request({ subject_claim: 'cluster_id' }).expect(422)).body.errors[0]).toMatchObject({
      field: 'subject_claim',
      code: 'the job has no cluster_id',
    });
    await s.request({ subject_claim: 'pipeline_slug' }).expect(422);
    // A name an object has by its prototype is no claim.
    expect((await s.request({ aws_session_tags: ['constructor'] }).expect(422)).body.errors[0]).toMatchObject({ field: 'aws_session_tags' });
    await s.request({ lifetime: -1 }).expect(422);
    const other = await givenAgent(ctx(), s.reg, 'other');
    const refused = await s.request({}, other.token);
    expect([404, 422]).toContain(refused.status);
    // Not the REST API's: a user token is no agent token.
    await ctx().http().post(`/v3/jobs/${s.job.id}/oidc/tokens`).set(auth(s.token)).send({}).expect(401);
  });
});
