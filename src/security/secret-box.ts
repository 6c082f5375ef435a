/**
 * Values the service must give back in the clear (cluster secrets, which jobs read) but never
 * store so: AES-256-GCM under a key derived from the server's keys (HKDF root, then the derive
 * HMAC for this purpose), a fresh 96-bit IV per value, and the row's id as associated data so a
 * sealed value copied to another row does not open there. Sealed form: `v1.<iv>.<tag>.<ciphertext>`,
 * each base64url.
 */
import crypto from 'node:crypto';
import type { Keys } from './keys';

export interface SecretBox {
  seal(plaintext: string, boundTo: string): string;
  /** The plaintext; throws when the value was not sealed by this key for `boundTo`. */
  open(sealed: string, boundTo: string): string;
}

export function secretBox(keys: Keys, purpose: string): SecretBox {
  const key = Buffer.from(keys.derive(`secret-box/${purpose}`, 'aes-256-gcm', 64), 'hex');
  return {
    seal(plaintext, boundTo) {
      const iv = crypto.randomBytes(12);
      const cipher = crypto.createCipheriv('aes-256-gcm', key, iv);
      cipher.setAAD(Buffer.from(boundTo, 'utf8'));
      const data = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()]);
      return ['v1', iv, cipher.getAuthTag(), data].map((p) => (typeof p === 'string' ? p : p.toString('base64url'))).join('.');
    },
    open(sealed, boundTo) {
      const [version, iv, tag, data] = sealed.split('.');
      if (version !== 'v1' || iv === undefined || tag === undefined || data === undefined) throw new Error('not a sealed value');
      const decipher = crypto.createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(boundTo, 'utf8'));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
    },
  };
}
