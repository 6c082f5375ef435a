/** `GET /v2/user`: the user the request's token belongs to. */
import { principalOf } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import { serializeUser } from './serialize';

export function userRoutes() {
  const api = operationRouter();
  api.on('getUser', (_req, res) => {
    res.json(serializeUser(principalOf(res).user));
  });
  return api.router;
}
