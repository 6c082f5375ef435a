/** `GET /v2/access-token` (the token the request came with) and `DELETE /v2/access-token` (revoke it). */
import express from 'express';
import { principalOf } from '../http/auth';
import { serializeAccessToken } from './serialize';
import type { AccessTokenService } from './service';

export function accessTokenRoutes(tokens: AccessTokenService) {
  const router = express.Router();

  router.get('/v2/access-token', (_req, res) => {
    const { token, user } = principalOf(res);
    res.json(serializeAccessToken(token, user));
  });

  router.delete('/v2/access-token', async (_req, res) => {
    await tokens.revoke(principalOf(res).token.id);
    res.status(204).end();
  });

  return router;
}
