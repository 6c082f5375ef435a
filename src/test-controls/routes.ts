/**
 * /_windsock/: the test-control operations (openapi/paths/test-controls.yaml). Off, every path
 * under it answers 404 as if it did not exist (nothing tells a scanner the controls are there);
 * on, the bearer must be the installation admin token (401 without a valid token, 403 for any
 * other token) before the validator or a handler sees the request.
 */
import express, { type NextFunction, type Request, type Response } from 'express';
import { NotFoundError } from '../core/errors';
import { authenticate, principalOf, type BearerAuthenticator } from '../http/middleware/auth';
import { operationRouter } from '../http/contract/operation';
import type { SpecDoc } from '../http/contract/spec-operations';
import type { TestControls } from './service';

export const TEST_CONTROLS_PATH = '/_windsock';

/** Mounted before the validator: off is a 404, on the installation admin token only. */
export function testControlsGate(controls: TestControls | undefined, tokens: BearerAuthenticator): express.Router {
  const router = express.Router();
  router.use(TEST_CONTROLS_PATH, (_req: Request, _res: Response, next: NextFunction) => {
    if (!controls) throw new NotFoundError('route');
    next();
  });
  if (controls) {
    router.use(TEST_CONTROLS_PATH, authenticate(tokens), async (_req: Request, res: Response, next: NextFunction) => {
      await controls.authorize(principalOf(res));
      next();
    });
  }
  return router;
}

export function testControlRoutes(spec: SpecDoc, controls: TestControls | undefined): express.RequestHandler {
  const ops = operationRouter(spec);
  if (!controls) return ops.router;
  ops.on('resetState', async (_req, res) => {
    res.json(await controls.reset());
  });
  ops.on('getClock', (_req, res) => {
    res.json(controls.clockState());
  });
  ops.on('setClock', (req, res) => {
    res.json(controls.setClock(req.body));
  });
  return ops.router;
}
