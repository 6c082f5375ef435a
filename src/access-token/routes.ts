/** `GET /v2/access-token` (the token the request came with) and `DELETE /v2/access-token` (revoke it). */
import { principalOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { serializeAccessToken } from './serialize';
import type { AccessTokenService } from './service';

export function accessTokenRoutes(tokens: AccessTokenService) {
  const api = operationRouter();

  api.on('getAccessToken', (_req, res) => {
    const { token, user } = principalOf(res);
    res.json(serializeAccessToken(token, user));
  });

  api.on('revokeAccessToken', async (_req, res) => {
    await tokens.revoke(principalOf(res).token.id);
    res.status(204).end();
  });

  return api.router;
}
