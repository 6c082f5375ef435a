/**
 * API access tokens. A token is an HS256 JWT whose `jti` names a stored row; the signature
 * proves the token was issued here, and the row is the authority on scopes, the organizations
 * the token may reach, expiry and revocation. Nothing secret is stored.
 */
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import { UnauthorizedError, ValidationError } from '../core/errors';
import { SCOPES, type AccessToken, type Principal, type Scope } from '../core/identity';
import type { Keys } from '../security/keys';
import type { AccessTokenRepository, ListedToken } from './repository';
import { clock } from '../core/clock';

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
    private readonly tokens: AccessTokenRepository,
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
    if (input.expiresAt.getTime() <= clock.nowMs()) throw ValidationError.field('expires_at', 'must be in the future');
    const token: AccessToken = {
      id: crypto.randomUUID(),
      description: input.description ?? null,
      scopes: [...new Set(input.scopes)] as Scope[],
      createdAt: clock.now(),
      expiresAt: input.expiresAt,
    };
    await this.tokens.insert(token, input.userId, input.organizationIds);
    // `iat` from the service's clock (jsonwebtoken would take real time), as `exp` is.
    const iat = Math.floor(clock.nowMs() / 1000);
    const signed = jwt.sign({ sub: input.userId, iat, exp: Math.floor(token.expiresAt.getTime() / 1000) }, this.keys.jwt, {
      algorithm: 'HS256',
      jwtid: token.id,
      issuer: ISSUER,
    });
    return { token, jwt: signed };
  }

  /** The principal behind a bearer token, or UnauthorizedError. */
  async authenticate(bearer: string): Promise<Principal> {
    // Expiry is judged by the service's clock (a frozen or shifted clock expires tokens as it
    // says); how long a cached answer is reused is a real interval, whatever the clock says.
    const now = clock.nowMs();
    const realNow = Date.now();
    const cached = this.cache.get(bearer);
    if (cached && cached.until > realNow && cached.principal.token.expiresAt.getTime() > now) return cached.principal;
    let claims: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(bearer, this.keys.jwt, { algorithms: ['HS256'], issuer: ISSUER, clockTimestamp: Math.floor(now / 1000) });
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
      this.cache.set(bearer, { principal, until: realNow + this.cacheMs });
    }
    return principal;
  }

  private async load(tokenId: string, userId: string): Promise<Principal> {
    const stored = await this.tokens.findWithPrincipal(tokenId);
    if (!stored || stored.userId !== userId || stored.revokedAt !== null || stored.principal.token.expiresAt.getTime() <= clock.nowMs()) {
      throw new UnauthorizedError('invalid token');
    }
    return stored.principal;
  }

  /** Stored tokens, without secrets (see AccessTokenRepository.list). */
  list(filter: { userId?: string; organizationId?: string }): Promise<ListedToken[]> {
    return this.tokens.list(filter);
  }

  async revoke(tokenId: string): Promise<boolean> {
    for (const [bearer, { principal }] of this.cache) if (principal.token.id === tokenId) this.cache.delete(bearer);
    return this.tokens.revoke(tokenId, clock.now());
  }
}
