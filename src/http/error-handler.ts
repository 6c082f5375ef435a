/**
 * The one place errors become HTTP answers: domain errors, express-openapi-validator errors,
 * body-parser errors and an unreachable database. Only 5xx are logged as errors, and a 5xx body
 * never carries a stack or SQL.
 */
import type { NextFunction, Request, Response } from 'express';
import { isUnavailableError } from '../db/knex';
import type { Logger } from './logger';
import {
  BadRequestError,
  ConflictError,
  PayloadTooLargeError,
  DomainError,
  FieldError,
  ForbiddenError,
  NotFoundError,
  RateLimitedError,
  SuiteTokenError,
  AgentTokenError,
  SignatureError,
  UnauthorizedError,
  UnavailableError,
  UnprocessableError,
  ValidationError,
} from './errors';

export const AUTH_MESSAGE =
  'Authentication required. Please supply a valid API Access Token: https://buildkite.com/docs/apis/rest-api#authentication';

export const SUITE_TOKEN_MESSAGE = 'Authentication required. Please supply a valid test suite API token as `Authorization: Token token="<token>"`';

interface ValidatorIssue {
  path?: string;
  message?: string;
  errorCode?: string;
}

interface HttpishError {
  status?: number;
  statusCode?: number;
  type?: string;
  errors?: ValidatorIssue[];
  message?: string;
}

/** `/body/steps/0/name` -> `steps[0].name`. */
function bodyField(path: string): string {
  const parts = path.replace(/^[./]?body[./]?/, '').split(/[./]/).filter(Boolean);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

/** A reason a person can act on, in the API's own words where it has them. */
function issueCode(issue: ValidatorIssue): string {
  const msg = issue.message ?? 'is invalid';
  const code = issue.errorCode ?? '';
  if (code.startsWith('required')) return "can't be blank";
  if (code.startsWith('enum')) return `is not included in the list (${msg.replace(/^must be equal to one of the allowed values:?\s*/, '')})`.replace(' ()', '');
  const maxLength = /must NOT have more than (\d+) characters/.exec(msg);
  if (maxLength) return `is too long (maximum is ${maxLength[1]} characters)`;
  return msg;
}

function fieldErrorsFrom(issues: ValidatorIssue[]): FieldError[] {
  return issues.slice(0, 100).map((i) => ({ field: bodyField(i.path ?? '') || 'body', code: issueCode(i) }));
}

const PATH_PARAM = /^[./]?params[./]([a-z_]+)/;
/** The API's word for what each path parameter names. */
const PATH_THINGS: Record<string, string> = {
  org_slug: 'organization',
  pipeline_slug: 'pipeline',
  build_number: 'build',
  suite_slug: 'suite',
  run_id: 'run',
  test_id: 'test',
  token: 'pipeline',
  agent_id: 'agent',
  job_id: 'job',
};

function isBodyIssue(i: ValidatorIssue): boolean {
  return /^[./]?body([./]|$)/.test(i.path ?? '');
}

export function errorHandler(logger: Logger) {
  // Express recognises error handlers by their four parameters.
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const send = (status: number, body: Record<string, unknown>) => {
      // Always JSON, even where a route answers text (a job's log.txt) and a layer before it chose that type.
      if (!res.headersSent) res.status(status).type('application/json').json(body);
      else res.end();
    };

    if (err instanceof DomainError) {
      if (err instanceof NotFoundError) return send(404, { message: err.message });
      if (err instanceof ValidationError) return send(422, { message: err.message, errors: err.errors });
      if (err instanceof UnprocessableError) return send(422, { message: err.message });
      if (err instanceof ConflictError) return send(409, { message: err.message });
      if (err instanceof PayloadTooLargeError) return send(413, { message: err.message });
      if (err instanceof ForbiddenError) return send(403, { message: err.message });
      if (err instanceof BadRequestError) return send(400, { message: err.message });
      if (err instanceof SuiteTokenError) {
        res.setHeader('WWW-Authenticate', 'Token realm="Test Engine"');
        return send(401, { message: SUITE_TOKEN_MESSAGE });
      }
      if (err instanceof AgentTokenError) {
        res.setHeader('WWW-Authenticate', 'Token realm="Agent"');
        return send(401, { message: err.message });
      }
      if (err instanceof SignatureError) return send(401, { message: err.message });
      if (err instanceof UnauthorizedError) {
        res.setHeader('WWW-Authenticate', 'Bearer');
        return send(401, { message: AUTH_MESSAGE });
      }
      if (err instanceof RateLimitedError) {
        res.setHeader('Retry-After', String(err.resetSeconds));
        return send(429, { message: err.message, scope: err.scope, limit: err.limit, current: err.current, reset: err.resetSeconds });
      }
      if (err instanceof UnavailableError) {
        res.setHeader('Retry-After', String(err.retryAfterSeconds));
        return send(503, { message: err.message });
      }
    }

    if (isUnavailableError(err)) {
      logger.warn({ reqId: res.locals.requestId, code: (err as { code?: string }).code }, 'database unavailable');
      res.setHeader('Retry-After', '5');
      return send(503, { message: 'The database is unavailable, please retry shortly' });
    }

    const e = (err ?? {}) as HttpishError;
    const status = e.status ?? e.statusCode;
    // The router could not percent-decode a path parameter (invalid UTF-8): it names nothing.
    if (err instanceof URIError && status === 400) return send(404, { message: 'Not Found' });
    // body-parser
    if (e.type === 'entity.parse.failed') return send(400, { message: `Problems parsing JSON: ${e.message ?? 'invalid JSON'}` });
    if (e.type === 'entity.too.large') return send(413, { message: 'Request body is too large' });
    if (e.type === 'encoding.unsupported' || e.type === 'charset.unsupported') return send(415, { message: e.message ?? 'Unsupported encoding' });

    // express-openapi-validator (request side; response-side failures stay 500 below)
    if (status && status >= 400 && status < 500 && Array.isArray(e.errors)) {
      if (status === 404 || status === 405) return send(404, { message: 'Not Found' });
      if (status === 415) return send(415, { message: 'Unsupported Media Type: send application/json' });
      if (status === 413) return send(413, { message: 'Request body is too large' });
      // A path parameter that breaks its schema (a slug over maxLength, a build number that is
      // not one) names nothing that can exist: the same 404 as a missing object.
      const pathParams = e.errors.map((i) => PATH_PARAM.exec(i.path ?? '')?.[1]);
      if (status === 400 && pathParams.every((p) => p !== undefined)) {
        const thing = PATH_THINGS[pathParams[0]!];
        return send(404, { message: thing ? `No ${thing} found` : 'Not Found' });
      }
      const body = e.errors.filter(isBodyIssue);
      if (status === 400 && body.length > 0 && body.length === e.errors.length) {
        return send(422, { message: 'Validation Failed', errors: fieldErrorsFrom(body) });
      }
      const first = e.errors[0];
      const where = first?.path ? first.path.replace(/^[./]?(query|params|headers)[./]/, '') : '';
      return send(400, { message: where ? `Invalid parameter ${where}: ${first?.message ?? 'is invalid'}` : (e.message ?? 'Bad Request') });
    }
    if (status && status >= 400 && status < 500) return send(status, { message: e.message ?? 'Bad Request' });

    logger.error({ reqId: res.locals.requestId, err }, 'unhandled error');
    return send(500, { message: 'Internal Server Error' });
  };
}
