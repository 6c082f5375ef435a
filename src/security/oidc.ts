/**
 * The issuer of jobs' OIDC tokens (`buildkite-agent oidc request-token`): an EC P-256 key derived
 * from the server's secret (so every instance of one deployment, and every restart, signs with
 * the same key and publishes the same JWKS, and nothing is stored), the tokens it signs (ES256
 * JWTs), and the discovery documents a relying party reads. The issuer is the server's
 * PUBLIC_URL, where `/.well-known/openid-configuration` and `/.well-known/jwks` are served.
 */
import crypto from 'node:crypto';
import jwt from 'jsonwebtoken';
import type { components } from '../../generated/api';
import type { Keys } from './keys';

type Jwk = components['schemas']['Jwk'];

/** The order of the P-256 group: a private key is a number from 1 to ORDER - 1. */
const ORDER = BigInt('0xffffffff00000000ffffffffffffffffbce6faada7179e84f3b9cac2fc632551');

/** The claims the token always carries (`build_tag` when the build has one), as the docs list them. */
export const STANDARD_CLAIMS = [
  'iss',
  'sub',
  'aud',
  'iat',
  'nbf',
  'exp',
  'organization_slug',
  'pipeline_slug',
  'build_number',
  'build_branch',
  'build_tag',
  'build_commit',
  'step_key',
  'job_id',
  'agent_id',
  'build_source',
  'runner_environment',
] as const;

export class OidcIssuer {
  readonly issuer: string;
  private readonly privateKey: crypto.KeyObject;
  private readonly publicKey: crypto.KeyObject;
  private readonly publicJwk: Jwk;

  constructor(keys: Keys, publicUrl: string) {
    this.issuer = publicUrl.replace(/\/+$/, '');
    // 32 bytes from the secret, made a valid scalar: (n mod (ORDER - 1)) + 1.
    const seed = BigInt(`0x${keys.derive('oidc-signing', 'v1', 64)}`);
    const d = Buffer.from(((seed % (ORDER - 1n)) + 1n).toString(16).padStart(64, '0'), 'hex');
    const ecdh = crypto.createECDH('prime256v1');
    ecdh.setPrivateKey(d);
    const point = ecdh.getPublicKey(null, 'uncompressed');
    const x = point.subarray(1, 33).toString('base64url');
    const y = point.subarray(33, 65).toString('base64url');
    this.privateKey = crypto.createPrivateKey({ key: { kty: 'EC', crv: 'P-256', x, y, d: d.toString('base64url') }, format: 'jwk' });
    this.publicKey = crypto.createPublicKey(this.privateKey);
    // RFC 7638: the thumbprint of the required members, in lexicographic order.
    const kid = crypto
      .createHash('sha256')
      .update(JSON.stringify({ crv: 'P-256', kty: 'EC', x, y }))
      .digest('base64url');
    this.publicJwk = { kty: 'EC', crv: 'P-256', x, y, kid, use: 'sig', alg: 'ES256' };
  }

  /** A token of `claims` as they are: the caller sets `iss` (this issuer), `iat`, `nbf` and `exp`. */
  sign(claims: Record<string, unknown>): string {
    return jwt.sign(claims, this.privateKey, { algorithm: 'ES256', keyid: this.publicJwk.kid });
  }

  /**
   * The claims of a token this issuer signed that holds at `nowSeconds` (issued, not before and
   * not expired by then), or null for any other: a bad signature, another issuer, a token from
   * the future or past its `exp`.
   */
  verify(token: string, nowSeconds: number): Record<string, unknown> | null {
    try {
      const claims = jwt.verify(token, this.publicKey, { algorithms: ['ES256'], issuer: this.issuer, clockTimestamp: nowSeconds });
      if (typeof claims === 'string' || typeof claims.iat !== 'number' || claims.iat > nowSeconds || typeof claims.exp !== 'number') return null;
      return { ...claims };
    } catch {
      return null;
    }
  }

  jwks(): components['schemas']['Jwks'] {
    return { keys: [this.publicJwk] };
  }

  discovery(): components['schemas']['OpenIdConfiguration'] {
    return {
      issuer: this.issuer,
      jwks_uri: `${this.issuer}/.well-known/jwks`,
      response_types_supported: ['id_token'],
      subject_types_supported: ['public'],
      id_token_signing_alg_values_supported: ['ES256'],
      claims_supported: [...STANDARD_CLAIMS],
      scopes_supported: ['openid'],
    };
  }
}
