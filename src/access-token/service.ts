/**
 * API access tokens. An issued token is an HS256 JWT whose `jti` names a stored row; the
 * signature proves the token was issued here, and the row is the authority on scopes, the
 * organizations the token may reach, expiry and revocation. Nothing secret is stored.
 *
 * A token may also have a given secret (WINDSOCK_ADMIN_TOKEN, a fixture file's tokens), so a
 * consumer's CI knows it in advance: only its SHA-256 is stored, and a bearer that is not a JWT
 * (no `.`) is looked up by that hash. A given secret follows GIVEN_SECRET (32 to 256 letters,
 * digits, `-`, `_`, `~`, `+`, `/`, `=`): long enough not to be guessed, sendable as a bearer, and
 * never mistaken for a JWT.
 */
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import { UnauthorizedError, ValidationError } from '../core/errors';
import { clock } from '../core/clock';
import { SCOPES, type AccessToken, type Principal } from '../core/identity';
import type { Keys } from '../security/keys';
import type { AccessTokenRepository, ListedToken } from './repository';
import { isOneOf } from '../db/row-types';

const ISSUER = 'windsock';

/** What a given secret must be; see the module header. */
export const GIVEN_SECRET = { pattern: /^[A-Za-z0-9_~+/=-]{32,256}$/, description: '32 to 256 characters: letters, digits, -, _, ~, +, / or =' };

/** Why `secret` cannot be a given token secret, or null when it can. */
export function givenSecretProblem(secret: string): string | null {
  if (secret.length < 32) return `is ${secret.length} characters long; a token secret needs at least 32`;
  return GIVEN_SECRET.pattern.test(secret) ? null : `must be ${GIVEN_SECRET.description}`;
}

export function hashSecret(secret: string): string {
  return crypto.createHash('sha256').update(secret).digest('hex');
}

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

  /** `installationAdmin`: the first start's admin token (src/bootstrap.ts). */
  async create(input: TokenInput, opts: { installationAdmin?: boolean } = {}): Promise<{ token: AccessToken; jwt: string }> {
    const token = this.newToken(input);
    await this.tokens.insert(token, input.userId, input.organizationIds, opts.installationAdmin ? { secretHash: null, installationAdmin: true } : undefined);
    // `iat` from the service's clock (jsonwebtoken would take real time), as `exp` is.
    const iat = Math.floor(clock.nowMs() / 1000);
    const signed = jwt.sign({ sub: input.userId, iat, exp: Math.floor(token.expiresAt.getTime() / 1000) }, this.keys.jwt, {
      algorithm: 'HS256',
      jwtid: token.id,
      issuer: ISSUER,
    });
    return { token, jwt: signed };
  }

  /** A token whose secret is given: stored as the secret's SHA-256; `installationAdmin` marks the first start's admin token. */
  async createWithSecret(input: TokenInput & { secret: string; installationAdmin?: boolean }): Promise<AccessToken> {
    const problem = givenSecretProblem(input.secret);
    if (problem) throw ValidationError.field('token', `The token ${problem}`);
    const token = this.newToken(input);
    await this.tokens.insert(token, input.userId, input.organizationIds, {
      secretHash: hashSecret(input.secret),
      installationAdmin: input.installationAdmin ?? false,
    });
    return token;
  }

  private newToken(input: TokenInput): AccessToken {
    const unknown = input.scopes.filter((s) => !isOneOf(SCOPES, s));
    if (unknown.length) throw ValidationError.field('scopes', `unknown scope(s): ${unknown.join(', ')}`);
    const scopes = input.scopes.filter((s) => isOneOf(SCOPES, s));
    if (input.expiresAt.getTime() <= clock.nowMs()) throw ValidationError.field('expires_at', 'must be in the future');
    return {
      id: crypto.randomUUID(),
      description: input.description ?? null,
      scopes: [...new Set(scopes)],
      createdAt: input.createdAt ?? clock.now(),
      expiresAt: input.expiresAt,
    };
  }

  /** The installation admin token (the first start's), if it still stands. */
  installationAdmin(): Promise<{ id: string; secretHash: string | null } | null> {
    return this.tokens.findInstallationAdmin();
  }

  /** Forget every cached principal (a reset rewrote the tokens table). */
  clearCache(): void {
    this.cache.clear();
  }

  /** The principal behind a bearer token, or UnauthorizedError. */
  async authenticate(bearer: string): Promise<Principal> {
    // Expiry is judged by the service's clock (a frozen or shifted clock expires tokens as it
    // says); how long a cached answer is reused is a real interval, whatever the clock says.
    const now = clock.nowMs();
    const realNow = Date.now();
    const cached = this.cache.get(bearer);
    if (cached && cached.until > realNow && cached.principal.token.expiresAt.getTime() > now) return cached.principal;
    const principal = bearer.includes('.') ? await this.authenticateJwt(bearer) : await this.authenticateSecret(bearer, now);
    if (this.cacheMs > 0) {
      if (this.cache.size >= 10_000) this.cache.delete(this.cache.keys().next().value!);
      this.cache.set(bearer, { principal, until: realNow + this.cacheMs });
    }
    return principal;
  }

  /** A given secret: looked up by its hash, compared in constant time, then the same checks as a JWT's row. */
  private async authenticateSecret(bearer: string, now: number): Promise<Principal> {
    const hash = hashSecret(bearer);
    const stored = await this.tokens.findWithPrincipalByHash(hash);
    if (
      !stored ||
      !crypto.timingSafeEqual(Buffer.from(stored.secretHash), Buffer.from(hash)) ||
      stored.revokedAt !== null ||
      stored.principal.token.expiresAt.getTime() <= now
    ) {
      throw new UnauthorizedError('invalid token');
    }
    return stored.principal;
  }

  private async authenticateJwt(bearer: string): Promise<Principal> {
    let claims: jwt.JwtPayload;
    try {
      const decoded = jwt.verify(bearer, this.keys.jwt, { algorithms: ['HS256'], issuer: ISSUER, clockTimestamp: Math.floor(clock.nowMs() / 1000) });
      if (typeof decoded === 'string') throw new Error('not a JWT payload');
      claims = decoded;
    } catch {
      throw new UnauthorizedError('invalid token');
    }
    if (typeof claims.exp !== 'number' || typeof claims.jti !== 'string' || typeof claims.sub !== 'string') {
      throw new UnauthorizedError('invalid token');
    }
    return this.load(claims.jti, claims.sub);
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

export interface TokenInput {
  userId: string;
  organizationIds: string[];
  scopes: string[];
  description?: string | null;
  expiresAt: Date;
  /** Default: now (a fixture may date a token in the past). */
  createdAt?: Date;
}
