/**
 * What the agent API's authentication (routes.ts `agentAuth`) leaves in `res.locals`: the agent
 * whose access token the request carries, or, on `/register`, the registration token's grant.
 * Declared on Express's `Locals` beside the HTTP floor's fields (src/http/middleware/locals.ts); read through
 * the accessors below, which refuse a request that was not authenticated rather than cast.
 */
import type { Agent } from '../agents/repository';
import type { Registration } from '../agents/service';
import { UnauthorizedError } from '../core/errors';

declare global {
  // eslint-disable-next-line @typescript-eslint/no-namespace -- Express's own augmentation point
  namespace Express {
    interface Locals {
      agent?: Agent;
      registration?: Registration;
    }
  }
}

/** The calling agent (every agent API operation but `/register`). */
export function agentOf(res: { locals: Express.Locals }): Agent {
  const agent: Agent | undefined = res.locals.agent;
  if (!agent) throw new UnauthorizedError('no agent access token');
  return agent;
}

/** The registration token's grant (`/register`). */
export function registrationOf(res: { locals: Express.Locals }): Registration {
  const registration: Registration | undefined = res.locals.registration;
  if (!registration) throw new UnauthorizedError('no registration token');
  return registration;
}
