/** `GET /v2/user`: the user the request's token belongs to. */
import express from 'express';
import { principalOf } from '../http/auth';
import { serializeUser } from './serialize';

export function userRoutes() {
  const router = express.Router();
  router.get('/v2/user', (_req, res) => {
    res.json(serializeUser(principalOf(res).user));
  });
  return router;
}
