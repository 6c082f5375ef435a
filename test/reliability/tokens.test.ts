/**
 * Issue 7, item 2: token attacks. Every forged, stale or malformed credential is a 401 with the
 * same body and `WWW-Authenticate: Bearer`, on reads and on writes, and no write happens: the
 * rows of every table a write could touch are counted before and after.
 */
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import { AUTH_MESSAGE } from '../../src/http/middleware/error-handler';
import { auth, describeEachDatabase, type TestContext } from '../support/context';

const enc = (o: object) => Buffer.from(JSON.stringify(o)).toString('base64url');

/** The claims of a real token, to forge variants of it. */
function claimsOf(token: string): jwt.JwtPayload {
  return jwt.decode(token) as jwt.JwtPayload;
}

describeEachDatabase('token attacks', (ctx) => {
  let org: { slug: string; id: string };
  let userId: string;
  let valid: string;
  let pipelineSlug: string;

  const c = (): TestContext => ctx();
  /** Signed with the server's own key: only the claims are wrong. */
  const signServer = (payload: object, opts: jwt.SignOptions = {}) => jwt.sign(payload, c().services.keys.jwt, { algorithm: 'HS256', ...opts });

  beforeAll(async () => {
    const admin = await c().givenAdmin();
    org = admin.org;
    userId = admin.user.id;
    valid = admin.token;
    const res = await c()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .set(auth(valid))
      .send({ name: 'Target', repository: 'git@github.com:acme/target.git', configuration: 'steps:\n  - command: make\n' })
      .expect(201);
    pipelineSlug = res.body.slug;
  });

  const counts = async () => {
    const db = c().services.db;
    const n = async (table: string, where?: (q: ReturnType<typeof db>) => void) => {
      const q = db(table);
      if (where) where(q);
      const [row] = await q.count({ n: '*' });
      return Number(row!.n);
    };
    return {
      pipelines: await n('pipelines'),
      archived: await n('pipelines', (q) => q.whereNotNull('archived_at')),
      builds: await n('builds'),
      jobs: await n('jobs'),
      suites: await n('suites'),
      tokens: await n('access_tokens'),
      revoked: await n('access_tokens', (q) => q.whereNotNull('revoked_at')),
      users: await n('users'),
    };
  };

  /** Requests that would write if admitted, and one read. */
  const attempts = () => [
    c()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines`)
      .send({ name: `Forged ${crypto.randomUUID()}`, repository: 'git@github.com:acme/x.git', configuration: 'steps:\n  - command: x\n' }),
    c().http().post(`/v2/organizations/${org.slug}/pipelines/${pipelineSlug}/builds`).send({ commit: 'HEAD', branch: 'main' }),
    c().http().post(`/v2/organizations/${org.slug}/pipelines/${pipelineSlug}/archive`),
    c().http().patch(`/v2/organizations/${org.slug}/pipelines/${pipelineSlug}`).send({ description: 'forged' }),
    c()
      .http()
      .post(`/v2/analytics/organizations/${org.slug}/suites`)
      .send({ name: `Forged ${crypto.randomUUID()}` }),
    c().http().delete(`/v2/organizations/${org.slug}/pipelines/${pipelineSlug}`),
    c().http().delete('/v2/access-token'),
    c().http().get('/v2/access-token'),
  ];

  /** Every attempt with these headers (and path suffix) is a 401 with the one body, and nothing changed. */
  async function expectRefused(headers: Record<string, string>, query = '') {
    const before = await counts();
    for (const req of attempts()) {
      if (query) req.query(query);
      const res = await req.set(headers);
      expect({ status: res.status, body: res.body, challenge: res.headers['www-authenticate'] }).toEqual({
        status: 401,
        body: { message: AUTH_MESSAGE },
        challenge: 'Bearer',
      });
    }
    expect(await counts()).toEqual(before);
    // The target is untouched.
    const p = await c().http().get(`/v2/organizations/${org.slug}/pipelines/${pipelineSlug}`).set(auth(valid)).expect(200);
    expect(p.body.archived_at).toBeNull();
    expect(p.body.description).toBeNull();
  }

  it('the control: the genuine token passes the same requests (so a 401 below is the credential, not the request)', async () => {
    await c().http().get('/v2/access-token').set(auth(valid)).expect(200);
    const res = await c()
      .http()
      .post(`/v2/organizations/${org.slug}/pipelines/${pipelineSlug}/builds`)
      .set(auth(valid))
      .send({ commit: 'HEAD', branch: 'main' });
    expect(res.status).toBe(201);
  });

  const forged: [string, () => Promise<string>][] = [
    ['alg none', async () => `${enc({ alg: 'none', typ: 'JWT' })}.${enc(claimsOf(valid))}.`],
    ['alg none with the original signature kept', async () => `${enc({ alg: 'none', typ: 'JWT' })}.${enc(claimsOf(valid))}.${valid.split('.')[2]}`],
    ['wrong secret', async () => jwt.sign(claimsOf(valid), 'another-secret-another-secret-another', { algorithm: 'HS256' })],
    ['HS512 with the server key', async () => jwt.sign(claimsOf(valid), c().services.keys.jwt, { algorithm: 'HS512' })],
    [
      'RS256 signed by another key pair',
      async () => {
        const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
        return jwt.sign(claimsOf(valid), privateKey, { algorithm: 'RS256' });
      },
    ],
    [
      'expired (exp in the past, its row still valid)',
      async () => {
        const { exp: _exp, ...rest } = claimsOf(valid);
        return signServer({ ...rest, exp: Math.floor(Date.now() / 1000) - 60 });
      },
    ],
    [
      'expired row (the JWT still within exp)',
      async () => {
        const { user } = await c().givenAdmin();
        const t = await c().givenToken(user, [org as never]);
        await c()
          .services.db('access_tokens')
          .where({ id: claimsOf(t).jti })
          .update({ expires_at: new Date(Date.now() - 60_000) });
        return t;
      },
    ],
    ['not yet valid (nbf in the future)', async () => signServer({ ...claimsOf(valid), nbf: Math.floor(Date.now() / 1000) + 3600 })],
    [
      'no exp',
      async () => {
        const { exp: _exp, ...rest } = claimsOf(valid);
        return signServer(rest);
      },
    ],
    [
      'tampered scopes claim (payload edited, signature kept)',
      async () => {
        const [h, , s] = valid.split('.');
        return `${h}.${enc({ ...claimsOf(valid), scopes: ['write_pipelines', 'write_builds'] })}.${s}`;
      },
    ],
    [
      'tampered organizations claim (payload edited, signature kept)',
      async () => {
        const other = await c().givenAdmin();
        const [h, , s] = other.token.split('.');
        return `${h}.${enc({ ...claimsOf(other.token), organizations: [org.id], sub: userId })}.${s}`;
      },
    ],
    [
      'another user as sub (re-signed with the server key)',
      async () => {
        const other = await c().givenAdmin();
        return signServer({ ...claimsOf(other.token), sub: userId });
      },
    ],
    ['unknown jti (re-signed with the server key)', async () => signServer({ ...claimsOf(valid), jti: crypto.randomUUID() })],
    [
      'revoked jti',
      async () => {
        const { user } = await c().givenAdmin();
        const t = await c().givenToken(user, [org as never]);
        await c().http().delete('/v2/access-token').set(auth(t)).expect(204);
        return t;
      },
    ],
    [
      'deleted user',
      async () => {
        const user = await c().givenUser(org as never, 'admin');
        const t = await c().givenToken(user, [org as never]);
        // Its tokens and memberships go with it (ON DELETE CASCADE).
        await c().services.db('users').where({ id: user.id }).delete();
        return t;
      },
    ],
    ['another issuer (re-signed with the server key)', async () => signServer({ ...claimsOf(valid), iss: 'someone-else' })],
  ];

  it.each(forged)('forged or stale token: %s', async (_name, make) => {
    await expectRefused(auth(await make()));
  });

  const malformed: [string, () => string][] = [
    ['Bearer', () => 'Bearer'],
    ['Bearer (trailing space)', () => 'Bearer '],
    ['Bearer  x (two spaces)', () => 'Bearer  x'],
    ['bearer x (lower case scheme, garbage)', () => 'bearer x'],
    ['two tokens', () => `Bearer ${valid} ${valid}`],
    ['two tokens, comma separated', () => `Bearer ${valid}, Bearer ${valid}`],
    ['very long (8 KiB)', () => `Bearer ${'a'.repeat(8192)}`],
    ['very long valid-looking (a valid token padded past 4 KiB)', () => `Bearer ${valid}${'A'.repeat(4096)}`],
    ['Token scheme with a valid JWT', () => `Token ${valid}`],
    ['Token token="<valid>" (the upload API form)', () => `Token token="${valid}"`],
    ['Basic', () => `Basic ${Buffer.from(`${valid}:`).toString('base64')}`],
    ['the JWT alone', () => valid],
    ['control characters', () => 'Bearer \tx'],
  ];

  it.each(malformed)('malformed Authorization header: %s', async (_name, header) => {
    await expectRefused({ Authorization: header() });
  });

  it('no Authorization header', async () => {
    await expectRefused({});
  });

  it('a token in the query string (?access_token=) is not a credential', async () => {
    await expectRefused({}, `access_token=${encodeURIComponent(valid)}`);
  });

  it('the genuine token still works after every attack (none of them revoked or changed it)', async () => {
    await c().http().get('/v2/access-token').set(auth(valid)).expect(200);
  });
});
