/**
 * The web sign-in sessions' table (`web_sessions`): its queries, rows in and out. What a row
 * holds (the session id's hash, the token sealed with a key derived from the id) is decided by
 * ./sessions.ts.
 */
import type { Knex } from 'knex';

export interface WebSessionRow {
  idHash: string;
  sealedToken: string;
  createdAtMs: number;
  expiresAtMs: number;
}

export class WebSessionRepository {
  constructor(private readonly db: Knex) {}

  /** Forgets the sessions that ended before `nowMs`. */
  async deleteExpired(nowMs: number): Promise<void> {
    await this.db('web_sessions').where('expires_at_ms', '<', nowMs).delete();
  }

  async insert(session: WebSessionRow): Promise<void> {
    await this.db('web_sessions').insert({
      id_hash: session.idHash,
      sealed_token: session.sealedToken,
      created_at_ms: session.createdAtMs,
      expires_at_ms: session.expiresAtMs,
    });
  }

  /** The session whose id hashes to `idHash`, or null. */
  async find(idHash: string): Promise<{ sealedToken: string; expiresAtMs: number } | null> {
    const row = await this.db('web_sessions').where({ id_hash: idHash }).first('sealed_token', 'expires_at_ms');
    return row ? { sealedToken: row.sealed_token, expiresAtMs: Number(row.expires_at_ms) } : null;
  }

  async delete(idHash: string): Promise<void> {
    await this.db('web_sessions').where({ id_hash: idHash }).delete();
  }
}
