/**
 * Structured logs (pino) and the per-request line. Secrets never reach a log: no headers are
 * logged, and the credential inside a webhook delivery path is redacted.
 */
import crypto from 'node:crypto';
import pino, { Logger } from 'pino';
import type { NextFunction, Request, Response } from 'express';
import { localsOf } from './locals';

export type { Logger };

export function createLogger(level: string, destination?: pino.DestinationStream): Logger {
  return pino({ level, base: { service: 'windsock' } }, destination);
}

/** A path safe to log: webhook delivery tokens are credentials. */
export function loggablePath(path: string): string {
  return path.replace(/\/deliver\/[^/?#]+/, '/deliver/[redacted]');
}

const REQUEST_ID = /^[A-Za-z0-9._-]{1,100}$/;

export function requestLogger(logger: Logger) {
  return (req: Request, res: Response, next: NextFunction) => {
    const incoming = req.get('x-request-id');
    const id = incoming && REQUEST_ID.test(incoming) ? incoming : crypto.randomUUID();
    res.locals.requestId = id;
    res.setHeader('X-Request-Id', id);
    const start = process.hrtime.bigint();
    res.on('finish', () => {
      const status = res.statusCode;
      const line = {
        reqId: id,
        method: req.method,
        path: loggablePath(req.path),
        status,
        ms: Number(process.hrtime.bigint() - start) / 1e6,
        // The spec's operation id (http/spec-paths.ts): what the request was, without its ids.
        operation: localsOf(res).operationId,
        org: localsOf(res).organization?.slug,
      };
      // A 503 is the service refusing while its database is away (logged once, at error, by the
      // database watch) or while shutting down: expected, so not an error line per request.
      if (status === 503) logger.warn(line, 'request refused');
      else if (status >= 500) logger.error(line, 'request failed');
      else logger.info(line, 'request');
    });
    next();
  };
}
