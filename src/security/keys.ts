/**
 * The server's secret key material. One root secret (JWT_SECRET, or for the embedded default a
 * random one generated once and kept with mode 0600 in the data directory) and keys derived
 * from it with HKDF, one per purpose, so that a credential of one kind can never be replayed
 * as another and no derived credential needs to be stored.
 */
import crypto, { KeyObject } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fieldOf } from '../core/guards';

export interface Keys {
  /** HS256 key for access tokens, as a KeyObject: jsonwebtoken is ~3x faster with it than with a string. */
  jwt: KeyObject;
  /** Derive a stable secret for `purpose` and `id` (webhook tokens, provider webhook secrets...). */
  derive(purpose: string, id: string, hexLength?: number): string;
}

export function keysFromSecret(secret: string): Keys {
  const root = Buffer.from(secret, 'utf8');
  const sub = (info: string) => Buffer.from(crypto.hkdfSync('sha256', root, Buffer.alloc(0), info, 32));
  const jwt = crypto.createSecretKey(sub('windsock/jwt'));
  const deriveKey = sub('windsock/derive');
  // Derived values are asked for on every build and pipeline response (webhook and badge URLs):
  // remember the most recent ones instead of computing an HMAC each time.
  const cache = new Map<string, string>();
  return {
    jwt,
    derive(purpose, id, hexLength = 50) {
      const key = `${purpose}\0${id}\0${hexLength}`;
      let value = cache.get(key);
      if (value === undefined) {
        value = crypto.createHmac('sha256', deriveKey).update(`${purpose}\0${id}`).digest('hex').slice(0, hexLength);
        if (cache.size >= 10_000) cache.delete(cache.keys().next().value!);
        cache.set(key, value);
      }
      return value;
    },
  };
}

/** The configured secret, or the one kept in `dataDir/jwt-secret` (created on first use). */
export function loadOrCreateSecret(configured: string | undefined, dataDir: string): string {
  if (configured) return configured;
  const file = path.join(dataDir, 'jwt-secret');
  try {
    return fs.readFileSync(file, 'utf8').trim();
  } catch (err) {
    if (fieldOf(err, 'code') !== 'ENOENT') throw err;
  }
  fs.mkdirSync(dataDir, { recursive: true, mode: 0o700 });
  const secret = crypto.randomBytes(48).toString('base64url');
  try {
    // 'wx': if another process created it first, use theirs rather than overwrite it.
    fs.writeFileSync(file, secret + '\n', { mode: 0o600, flag: 'wx' });
    return secret;
  } catch (err) {
    if (fieldOf(err, 'code') === 'EEXIST') return fs.readFileSync(file, 'utf8').trim();
    throw err;
  }
}

export function sha256Hex(value: string): string {
  return crypto.createHash('sha256').update(value).digest('hex');
}
