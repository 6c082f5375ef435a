/**
 * Web sign-in sessions (table `web_sessions`, see its migration): an API token, checked, becomes
 * a random session id for the cookie. The row keeps the id's hash and the token sealed with a key
 * derived from the id, so each request authenticates the token again (revoked or expired tokens
 * end their sessions) without the token ever being readable in the cookie or the database alone.
 * The CSRF token of a session is derived from its id.
 */
import crypto from 'node:crypto';
import type { WebSessionRepository } from './session-repository';
import type { Principal } from '../core/identity';
import { clock } from '../core/clock';
import { UnauthorizedError } from '../core/errors';

/** Longest a session lasts, whatever its token's expiry. */
export const SESSION_MS = 7 * 24 * 3600_000;

export interface TokenAuthenticator {
  authenticate(bearer: string): Promise<Principal>;
}

const hash = (sid: string) => crypto.createHash('sha256').update(sid).digest('hex');
const keyOf = (sid: string) => Buffer.from(crypto.hkdfSync('sha256', Buffer.from(sid, 'utf8'), Buffer.alloc(0), 'windsock/web-session', 32));

function seal(sid: string, token: string): string {
  const iv = crypto.randomBytes(12);
  const cipher = crypto.createCipheriv('aes-256-gcm', keyOf(sid), iv);
  const body = Buffer.concat([cipher.update(token, 'utf8'), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function unseal(sid: string, sealed: string): string | null {
  try {
    const b = Buffer.from(sealed, 'base64');
    const decipher = crypto.createDecipheriv('aes-256-gcm', keyOf(sid), b.subarray(0, 12));
    decipher.setAuthTag(b.subarray(12, 28));
    return Buffer.concat([decipher.update(b.subarray(28)), decipher.final()]).toString('utf8');
  } catch {
    return null;
  }
}

export function csrfTokenOf(sid: string): string {
  return crypto.createHmac('sha256', keyOf(sid)).update('csrf').digest('base64url');
}

/** Constant-time comparison of two strings (CSRF tokens). */
export function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && crypto.timingSafeEqual(x, y);
}

export class WebSessions {
  constructor(
    private readonly sessions: WebSessionRepository,
    private readonly tokens: TokenAuthenticator,
  ) {}

  /** A new session for `token` (UnauthorizedError when the token is not valid); answers the session id and when it ends. */
  async create(token: string): Promise<{ sid: string; expiresAt: Date }> {
    const principal = await this.tokens.authenticate(token);
    const now = clock.nowMs();
    const expiresAtMs = Math.min(now + SESSION_MS, principal.token.expiresAt.getTime());
    const sid = crypto.randomBytes(32).toString('base64url');
    await this.sessions.deleteExpired(now);
    await this.sessions.insert({ idHash: hash(sid), sealedToken: seal(sid, token), createdAtMs: now, expiresAtMs });
    return { sid, expiresAt: new Date(expiresAtMs) };
  }

  /** The principal behind a session id, or null (unknown, expired, or its token no longer valid). */
  async principal(sid: string): Promise<Principal | null> {
    const row = await this.sessions.find(hash(sid));
    if (!row || row.expiresAtMs <= clock.nowMs()) return null;
    const token = unseal(sid, row.sealedToken);
    if (!token) return null;
    try {
      return await this.tokens.authenticate(token);
    } catch (e) {
      if (e instanceof UnauthorizedError) return null;
      throw e;
    }
  }

  async destroy(sid: string): Promise<void> {
    await this.sessions.delete(hash(sid));
  }
}
