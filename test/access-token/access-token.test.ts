import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import { AUTH_MESSAGE } from '../../src/http/middleware/error-handler';
import { clock } from '../../src/core/clock';
import { auth, describeEachDatabase } from '../support/context';
import { existing } from '../support/rows';

const UTC = /^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2} UTC$/;

describeEachDatabase('access token', (ctx) => {
  it('GET /v2/access-token describes the calling token, in the sample shape, with no scope needed', async () => {
    const org = await ctx().givenOrg();
    const user = await ctx().givenUser(org);
    const token = await ctx().givenToken(user, [org], ['read_builds']);
    const res = await ctx().http().get('/v2/access-token').set(auth(token)).expect(200);
    expect(Object.keys(res.body).sort()).toEqual(['created_at', 'description', 'expires_at', 'scopes', 'user', 'uuid']);
    expect(res.body.scopes).toEqual(['read_builds']);
    expect(res.body.created_at).toMatch(UTC);
    expect(res.body.expires_at).toMatch(UTC);
    expect(res.body.user).toEqual({ name: user.name, email: user.email });
    expect(res.body.uuid).toBe((jwt.decode(token) as jwt.JwtPayload).jti);
  });

  it('DELETE /v2/access-token revokes the calling token at once', async () => {
    const { token } = await ctx().givenAdmin();
    await ctx().http().delete('/v2/access-token').set(auth(token)).expect(204);
    const res = await ctx().http().get('/v2/access-token').set(auth(token)).expect(401);
    expect(res.body).toEqual({ message: AUTH_MESSAGE });
  });

  describe('401 for every bad credential, with WWW-Authenticate and the same body', () => {
    const cases: [string, () => Promise<Record<string, string>>][] = [
      ['no header', async () => ({})],
      ['basic auth', async () => ({ Authorization: 'Basic dXNlcjpwYXNz' })],
      ['empty bearer', async () => ({ Authorization: 'Bearer ' })],
      ['garbage', async () => ({ Authorization: 'Bearer not-a-jwt' })],
      [
        'expired token',
        async () => {
          const { user, org } = await ctx().givenAdmin();
          // The JWT's exp is in whole seconds, floor((now + 1000) / 1000): both it and the stored
          // expiry have passed 1.1 s later by the service's clock (put back after each case).
          const t = await ctx().givenToken(user, [org], undefined, new Date(clock.nowMs() + 1000));
          clock.advance(1100);
          return auth(t);
        },
      ],
      [
        'wrong secret',
        async () => {
          const { token } = await ctx().givenAdmin();
          const claims = jwt.decode(token) as jwt.JwtPayload;
          return auth(jwt.sign(claims, 'another-secret-another-secret-another', { algorithm: 'HS256' }));
        },
      ],
      [
        'alg none',
        async () => {
          const { token } = await ctx().givenAdmin();
          const claims = jwt.decode(token) as jwt.JwtPayload;
          const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');
          return auth(`${enc({ alg: 'none', typ: 'JWT' })}.${enc(claims)}.`);
        },
      ],
    ];
    afterEach(() => clock.set({ kind: 'real' }));
    it.each(cases)('%s', async (_name, headers) => {
      const res = await ctx()
        .http()
        .get('/v2/access-token')
        .set(await headers())
        .expect(401);
      expect(res.headers['www-authenticate']).toBe('Bearer');
      expect(res.body).toEqual({ message: AUTH_MESSAGE });
    });
  });

  it('a token of a deleted user stops working', async () => {
    const { user, token } = await ctx().givenAdmin();
    await ctx().services.db('users').where({ id: user.id }).delete();
    await ctx().http().get('/v2/access-token').set(auth(token)).expect(401);
  });

  it('GET /v2/user needs read_user and answers the user object', async () => {
    const org = await ctx().givenOrg();
    const user = await ctx().givenUser(org);
    const without = await ctx().givenToken(user, [org], ['read_pipelines']);
    const denied = await ctx().http().get('/v2/user').set(auth(without)).expect(403);
    expect(denied.body).toEqual({ message: "Your access token doesn't have the read_user scope" });
    const withScope = await ctx().givenToken(user, [org], ['read_user']);
    const res = await ctx().http().get('/v2/user').set(auth(withScope)).expect(200);
    expect(res.body).toEqual({
      id: user.id,
      graphql_id: Buffer.from(`User---${user.id}`).toString('base64'),
      name: user.name,
      email: user.email,
      avatar_url: expect.stringMatching(/^https:\/\/www\.gravatar\.com\/avatar\/[0-9a-f]{32}$/),
      created_at: user.createdAt.toISOString(),
    });
  });
});

describeEachDatabase('tokens with given secrets', (ctx) => {
  const secret = () => `given-${crypto.randomBytes(24).toString('base64url')}`;

  it('authenticate by the secret (only its SHA-256 is stored), reach only their organizations, and revoke', async () => {
    const { org, user } = await ctx().givenAdmin();
    const other = await ctx().givenOrg();
    const value = secret();
    const token = await ctx().services.tokens.createWithSecret({
      userId: user.id,
      organizationIds: [org.id],
      scopes: ['read_pipelines'],
      expiresAt: new Date(Date.now() + 3600_000),
      secret: value,
    });
    const row = existing(await ctx().services.db('access_tokens').where({ id: token.id }).first(), 'the token');
    expect(row.secret_hash).toBe(crypto.createHash('sha256').update(value).digest('hex'));
    expect(JSON.stringify(row)).not.toContain(value);
    const res = await ctx().http().get('/v2/access-token').set(auth(value)).expect(200);
    expect(res.body.uuid).toBe(token.id);
    await ctx().http().get(`/v2/organizations/${org.slug}/pipelines`).set(auth(value)).expect(200);
    await ctx().http().get(`/v2/organizations/${other.slug}/pipelines`).set(auth(value)).expect(404);
    await ctx()
      .http()
      .get('/v2/access-token')
      .set(auth(`${value}x`))
      .expect(401);
    await ctx().http().delete('/v2/access-token').set(auth(value)).expect(204);
    await ctx().http().get('/v2/access-token').set(auth(value)).expect(401);
  });

  it('refuse a short secret, a secret with other characters, and a secret given twice', async () => {
    const { org, user } = await ctx().givenAdmin();
    const input = { userId: user.id, organizationIds: [org.id], scopes: ['read_pipelines'], expiresAt: new Date(Date.now() + 3600_000) };
    await expect(ctx().services.tokens.createWithSecret({ ...input, secret: 'a'.repeat(31) })).rejects.toThrow('Validation Failed');
    await expect(ctx().services.tokens.createWithSecret({ ...input, secret: `${'a'.repeat(32)}.b` })).rejects.toThrow('Validation Failed');
    const value = secret();
    await ctx().services.tokens.createWithSecret({ ...input, secret: value });
    await expect(ctx().services.tokens.createWithSecret({ ...input, secret: value })).rejects.toThrow('Validation Failed');
  });
});
