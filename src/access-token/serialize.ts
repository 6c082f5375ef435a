import type { components } from '../../generated/api';
import type { AccessToken, User } from '../core/identity';
import { utcTime } from '../http/responses/format';

/** `GET /v2/access-token`: the token the request came with, and whose it is. */
export function serializeAccessToken(token: AccessToken, user: User): components['schemas']['AccessToken'] {
  return {
    uuid: token.id,
    scopes: token.scopes,
    description: token.description,
    created_at: utcTime(token.createdAt),
    expires_at: utcTime(token.expiresAt),
    user: { name: user.name, email: user.email },
  };
}
