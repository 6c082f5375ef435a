/**
 * API access tokens. A token is an HS256 JWT whose `jti` names a stored row; the signature
 * proves the token was issued here, and the row is the authority on scopes, the organizations
 * the token may reach, expiry and revocation. Nothing secret is stored.
 */
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { Knex } from 'knex';
import { toDate, toDateOrNull, parseJson } from '../db/values';
import { UnauthorizedError, ValidationError } from '../core/errors';
import type { Keys } from '../security/keys';
import { userFromRow } from '../user/repository';
import { orgFromRow } from '../organizations/repository';
import { SCOPES, type AccessToken, type Organization, type Principal, type Role, type Scope } from '../core/identity';

const ISSUER = 'windsock';

export class AccessTokenService {
  /**
   * Principals by the exact bearer string, for `cacheMs`: the signature is checked and the token
   * row and memberships are read once per window instead of on every request (a string that
   * verified once verifies again: the key never changes while the process runs; the expiry is
   * checked on every use). A revocation through this process takes effect at once; one made by
   * another process (the CLI, a second server) within `cacheMs`.
   */
  private readonly cache = new Map<string, { principal: Principal; until: number }>();

  constructor(
    private readonly db: Knex,
    private readonly keys: Keys,
    private readonly cacheMs = 1000,
  ) {}

  async create(input: {
    userId: string;
    organizationIds: string[];
    scopes: string[];
    description?: string | null;
    expiresAt: Date;
  }): Promise<{ token: AccessToken; jwt: string }> {
    const unknown = input.scopes.filter((s) => !(SCOPES as readonly string[]).includes(s));
    if (unknown.length) throw ValidationError.field('scopes', `unknown scope(s): ${unknown.join(', ')}`);
    if (input.expiresAt.getTime() <= Date.now()) throw ValidationError.field('expires_at', 'must be in the future');
    const token: AccessToken = {
      id: crypto.randomUUID(),
      description: input.description ?? null,
      scopes: [...new Set(input.scopes)] as Scope[],
      createdAt: new Date(),
      expiresAt: input.expiresAt,
    };
    await this.db.transaction(async (trx) => {
      await trx('access_tokens').insert({
        id: token.id,
        user_id: input.userId,
        description: token.description,
        scopes: JSON.stringify(token.scopes),
        created_at: token.createdAt,
        expires_at: token.expiresAt,
      });
      if (input.organizationIds.length) {
        await trx('access_token_organizations').insert(input.organizationIds.map((organization_id) => ({ access_token_id: token.id, organization_id })));
      }
    });
    const signed = jwt.sign({ sub: input.userId, exp: Math.floor(token.expiresAt.getTime() / 1000) }, this.keys.jwt, {
      algorithm: 'HS256',
      jwtid: token.id,
      issuer: ISSUER,
    });
    return { token, jwt: signed };
  }

  /** The principal behind a bearer token, or UnauthorizedError. */
  async authenticate(bearer: string): Promise<Principal> {
    const now = Date.now();
    const cached = this.cache.get(bearer);
    if (cached && cached.until > now && cached.principal.token.expiresAt.getTime() > now) return cached.principal;
    let claims: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(bearer, this.keys.jwt, { algorithms: ['HS256'], issuer: ISSUER });
      if (typeof decoded === 'string') throw new Error('not a JWT payload');
      claims = decoded;
    } catch {
      throw new UnauthorizedError('invalid token');
    }
    if (typeof claims.exp !== 'number' || typeof claims.jti !== 'string' || typeof claims.sub !== 'string') {
      throw new UnauthorizedError('invalid token');
    }
    const principal = await this.load(claims.jti, claims.sub);
    if (this.cacheMs > 0) {
      if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(bearer, { principal, until: now + this.cacheMs });
    }
    return principal;
  }

  private async load(tokenId: string, userId: string): Promise<Principal> {
    // One round trip: the token, its user, and each organization the token reaches where the
    // user is (still) a member (left joins: a token may reach none).
    const rows = await this.db('access_tokens as t')
      .join('users as u', 'u.id', 't.user_id')
      .leftJoin('access_token_organizations as ato', 'ato.access_token_id', 't.id')
      .leftJoin('organization_members as m', function () {
        this.on('m.organization_id', '=', 'ato.organization_id').andOn('m.user_id', '=', 't.user_id');
      })
      .leftJoin('organizations as o', 'o.id', 'm.organization_id')
      .where('t.id', tokenId)
      .select(
        't.*',
        'u.name as user_name',
        'u.email as user_email',
        'u.created_at as user_created_at',
        'm.role as member_role',
        'o.id as org_id',
        'o.slug as org_slug',
        'o.name as org_name',
        'o.teams_enabled as org_teams_enabled',
        'o.created_at as org_created_at',
      );
    const row = rows[0];
    if (!row || row.user_id !== userId || toDateOrNull(row.revoked_at) !== null || toDate(row.expires_at).getTime() <= Date.now()) {
      throw new UnauthorizedError('invalid token');
    }
    const organizations = new Map<string, Role>();
    const organizationsBySlug = new Map<string, { organization: Organization; role: Role }>();
    for (const r of rows) {
      if (!r.org_id) continue;
      const organization = orgFromRow({ id: r.org_id, slug: r.org_slug, name: r.org_name, teams_enabled: r.org_teams_enabled, created_at: r.org_created_at });
      organizations.set(organization.id, r.member_role as Role);
      organizationsBySlug.set(organization.slug, { organization, role: r.member_role as Role });
    }
    return {
      token: tokenFromRow(row),
      user: userFromRow({ id: row.user_id, name: row.user_name, email: row.user_email, created_at: row.user_created_at }),
      organizations,
      organizationsBySlug,
    };
  }

  async revoke(tokenId: string): Promise<boolean> {
    for (const [bearer, { principal }] of this.cache) if (principal.token.id === tokenId) this.cache.delete(bearer);
    const n = await this.db('access_tokens').where({ id: tokenId }).whereNull('revoked_at').update({ revoked_at: new Date() });
    return n > 0;
  }
}

function tokenFromRow(row: Record<string, unknown>): AccessToken {
  return {
    id: row.id as string,
    description: (row.description as string | null) ?? null,
    scopes: parseJson<Scope[]>(row.scopes, []),
    createdAt: toDate(row.created_at),
    expiresAt: toDate(row.expires_at),
  };
}
