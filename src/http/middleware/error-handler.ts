/**
 * The one place errors become HTTP answers: domain errors, express-openapi-validator errors,
 * body-parser errors and an unreachable database, and (clientErrorHandler) what Node's HTTP parser
 * refuses. Only 5xx are logged as errors, and a 5xx body never carries a stack or SQL.
 */
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { NextFunction, Request, Response } from 'express';
import { isUnavailableError } from '../../db/knex';
import type { Logger } from './logger';
import { PATH_THINGS } from '../contract/parameters';
import { readableReason } from '../../core/schema-messages';
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
} from '../../core/errors';
import { fieldOf, numberField, stringField } from '../../core/guards';

export const AUTH_MESSAGE = 'Authentication required. Please supply a valid API Access Token: https://buildkite.com/docs/apis/rest-api#authentication';

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

/** What an error thrown by Express's parsers, the router or the validator tells of itself (its fields of those types). */
function httpishOf(err: unknown): HttpishError {
  const errors = fieldOf(err, 'errors');
  return {
    status: numberField(err, 'status'),
    statusCode: numberField(err, 'statusCode'),
    type: stringField(err, 'type'),
    errors: Array.isArray(errors)
      ? errors.map((i: unknown) => ({ path: stringField(i, 'path'), message: stringField(i, 'message'), errorCode: stringField(i, 'errorCode') }))
      : undefined,
    message: stringField(err, 'message'),
  };
}

/** `/body/steps/0/name` -> `steps[0].name`. */
function bodyField(path: string): string {
  const parts = path
    .replace(/^[./]?body[./]?/, '')
    .split(/[./]/)
    .filter(Boolean);
  return parts.reduce((acc, p) => (/^\d+$/.test(p) ? `${acc}[${p}]` : acc ? `${acc}.${p}` : p), '');
}

function issueCode(issue: ValidatorIssue): string {
  return readableReason(issue.message, issue.errorCode);
}

/**
 * One entry per field: a oneOf (`pull_request_id`: a number or a string of digits) fails once
 * per branch, and the type mismatches of the branches not taken say less than the limit the
 * value broke in the branch it fits, so those are dropped when there is something better. That
 * holds across depths too: an object sent for a nullable object (`oneOf: [X, null]`) that lacks
 * a field of X is reported at that field, not also as `must be null`.
 */
function bestIssues(issues: ValidatorIssue[]): ValidatorIssue[] {
  const byField = new Map<string, ValidatorIssue[]>();
  for (const i of issues) {
    const key = i.path ?? '';
    byField.set(key, [...(byField.get(key) ?? []), i]);
  }
  const keyIssue = (i: ValidatorIssue) => /property name must be valid/.test(i.message ?? '');
  const vague = (i: ValidatorIssue) => /^must be [a-z,]+$/.test(i.message ?? '') || /^must match (exactly one|a) schema in (oneOf|anyOf)/.test(i.message ?? '');
  const deeper = (key: string) => [...byField.keys()].some((k) => k !== key && (k.startsWith(`${key}/`) || k.startsWith(`${key}.`)));
  return [...byField.entries()].flatMap(([key, list]) => {
    // A key that breaks `propertyNames` comes as two issues: that one, and the rule it broke.
    if (list.some(keyIssue)) {
      const rule = list.find((i) => !keyIssue(i));
      return [{ ...list[0], message: `has an invalid key: ${rule ? readableReason(rule.message, rule.errorCode) : 'is invalid'}`, errorCode: 'propertyNames' }];
    }
    const specific = list.filter((i) => !vague(i));
    if (specific.length) return specific;
    // Only vague here, and something specific below it: the branch the value fits said more.
    if (key && deeper(key)) return [];
    const types = list.flatMap((i) => /^must be ([a-z,]+)$/.exec(i.message ?? '')?.[1]?.split(',') ?? []);
    return types.length ? [{ ...list[0], message: `must be ${[...new Set(types)].join(',')}`, errorCode: 'type.openapi.validation' }] : [list[0]!];
  });
}

/** The value at a validator path (`/body/steps/0/name`) in the body, if it is there. */
function valueAt(body: unknown, path: string): unknown {
  const parts = path
    .replace(/^[./]?body[./]?/, '')
    .split(/[./]/)
    .filter(Boolean);
  return parts.reduce<unknown>((acc, p) => fieldOf(acc, p), body);
}

/** A required field sent as null is blank, whatever type it wanted. */
function fieldErrorsFrom(issues: ValidatorIssue[], body: unknown): FieldError[] {
  return bestIssues(issues)
    .slice(0, 100)
    .map((i) => {
      const blank = /^must be [a-z,]+$/.test(i.message ?? '') && valueAt(body, i.path ?? '') === null;
      return { field: bodyField(i.path ?? '') || 'body', code: blank ? "can't be blank" : issueCode(i) };
    });
}

const PATH_PARAM = /^[./]?params[./]([a-z_]+)/;

function isBodyIssue(i: ValidatorIssue): boolean {
  return /^[./]?body([./]|$)/.test(i.path ?? '');
}

/**
 * The answer the spec's `x-invalid-body` names for a body that breaks the operation's schema
 * (e.g. reprioritize: 400 `Priority must be an integer`, as the real API answers), if any.
 * express-openapi-validator puts the matched operation on `req.openapi.schema`.
 */
function invalidBodyAnswer(req: Request): { status: number; message: string } | undefined {
  const own = fieldOf(fieldOf(fieldOf(req, 'openapi'), 'schema'), 'x-invalid-body');
  const status = numberField(own, 'status');
  const message = stringField(own, 'message');
  return status !== undefined && message !== undefined ? { status, message } : undefined;
}

/** What a domain error answers: the status, the JSON body and the headers that go with it. */
export interface ErrorAnswer {
  status: number;
  body: { message: string } & Record<string, unknown>;
  headers: Record<string, string>;
}

/**
 * The one table from domain errors to answers: the API's error handler answers by it, and the web
 * pages take their status codes from it (rendering the message as HTML), so a page and the API
 * never disagree on what an error is. Undefined for a DomainError the table does not know.
 */
export function domainErrorAnswer(err: DomainError): ErrorAnswer | undefined {
  const answer = (status: number, body: ErrorAnswer['body'], headers: Record<string, string> = {}): ErrorAnswer => ({ status, body, headers });
  if (err instanceof NotFoundError) return answer(404, { message: err.message });
  if (err instanceof ValidationError) return answer(422, { message: err.message, errors: err.errors });
  if (err instanceof UnprocessableError) return answer(422, { message: err.message });
  if (err instanceof ConflictError) return answer(409, { message: err.message });
  if (err instanceof PayloadTooLargeError) return answer(413, { message: err.message });
  if (err instanceof ForbiddenError) return answer(403, { message: err.message });
  if (err instanceof BadRequestError) return answer(400, { message: err.message });
  if (err instanceof SuiteTokenError) return answer(401, { message: SUITE_TOKEN_MESSAGE }, { 'WWW-Authenticate': 'Token realm="Test Engine"' });
  if (err instanceof AgentTokenError) return answer(401, { message: err.message }, { 'WWW-Authenticate': 'Token realm="Agent"' });
  if (err instanceof SignatureError) return answer(401, { message: err.message });
  if (err instanceof UnauthorizedError) return answer(401, { message: AUTH_MESSAGE }, { 'WWW-Authenticate': 'Bearer' });
  if (err instanceof RateLimitedError)
    return answer(
      429,
      { message: err.message, scope: err.scope, limit: err.limit, current: err.current, reset: err.resetSeconds },
      { 'Retry-After': String(err.resetSeconds) },
    );
  if (err instanceof UnavailableError) return answer(503, { message: err.message }, { 'Retry-After': String(err.retryAfterSeconds) });
  return undefined;
}

/**
 * The areas whose docs give a 422 as one sentence of Rails' full messages (`{ "message":
 * "Validation failed: Reason for failure" }`: clusters.md, teams.md, pipeline_schedules.md,
 * pipeline_templates.md), where pipelines and builds give `Validation Failed` with `errors`.
 */
const FULL_MESSAGE_TAGS: ReadonlySet<string> = new Set(['clusters', 'teams', 'pipeline-schedules', 'pipeline-templates']);

/** A field as Rails' `humanize` names it in a full message: `default_queue_id` is "Default queue". */
function humanize(field: string): string {
  const words = field.replace(/_id$/, '').replace(/[_.]/g, ' ').trim();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

/**
 * A 422 with field errors as the operation's area answers it: in FULL_MESSAGE_TAGS' areas the
 * message is `Validation failed: Name can't be blank, ...` (the field errors stay beside it);
 * elsewhere the body is left as it is.
 */
function withAreaMessage(req: Request, status: number, body: Record<string, unknown>): Record<string, unknown> {
  const errors = body.errors;
  if (status !== 422 || body.message !== 'Validation Failed' || !Array.isArray(errors) || !errors.length) return body;
  const tags = fieldOf(fieldOf(fieldOf(req, 'openapi'), 'schema'), 'tags');
  if (!Array.isArray(tags) || !tags.some((t) => typeof t === 'string' && FULL_MESSAGE_TAGS.has(t))) return body;
  const sentences = errors.map((e) => `${humanize(stringField(e, 'field') ?? '')} ${stringField(e, 'code') ?? ''}`.trim());
  return { ...body, message: `Validation failed: ${sentences.join(', ')}` };
}

export function errorHandler(logger: Logger) {
  // Express recognises error handlers by their four parameters.
  return (err: unknown, req: Request, res: Response, _next: NextFunction) => {
    const send = (status: number, body: Record<string, unknown>) => {
      // Always JSON, even where a route answers text (a job's log.txt) and a layer before it chose that type.
      if (!res.headersSent)
        res
          .status(status)
          .type('application/json')
          .json(withAreaMessage(req, status, body));
      else res.end();
    };

    const known = err instanceof DomainError ? domainErrorAnswer(err) : undefined;
    if (known) {
      if (!res.headersSent) for (const [name, value] of Object.entries(known.headers)) res.setHeader(name, value);
      return send(known.status, known.body);
    }

    if (isUnavailableError(err)) {
      // The outage itself is logged once, where the database is watched (src/db/knex.ts).
      logger.debug({ reqId: res.locals.requestId, code: fieldOf(err, 'code') }, 'database unavailable');
      res.setHeader('Retry-After', '5');
      return send(503, { message: 'The database is unavailable, please retry shortly' });
    }

    const e = httpishOf(err);
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
        // An operation whose real counterpart answers a bad body its own way says so in the spec.
        const own = invalidBodyAnswer(req);
        return send(own?.status ?? 422, { message: own?.message ?? 'Validation Failed', errors: fieldErrorsFrom(body, req.body) });
      }
      const first = bestIssues(e.errors)[0];
      const where = first?.path ? first.path.replace(/^[./]?(query|params|headers)[./]/, '').replace(/[./].*$/, '') : '';
      return send(400, { message: where ? `Invalid parameter ${where}: ${readableReason(first?.message, first?.errorCode)}` : (e.message ?? 'Bad Request') });
    }
    if (status && status >= 400 && status < 500) return send(status, { message: e.message ?? 'Bad Request' });

    logger.error({ reqId: res.locals.requestId, err }, 'unhandled error');
    return send(500, { message: 'Internal Server Error' });
  };
}

/** What Node's HTTP parser could not take, as the status and message a client is told. */
function clientErrorAnswer(err: NodeJS.ErrnoException & { reason?: string }): { status: number; message: string } | undefined {
  switch (err.code) {
    case 'HPE_HEADER_OVERFLOW':
      return { status: 431, message: 'Request header fields too large: the request line and headers may take at most 16 KB' };
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 413, message: 'Request body is too large: chunk extensions too long' };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return { status: 408, message: 'Request timeout: the request was not received in time' };
    case 'ECONNRESET':
    case 'EPIPE':
      return undefined;
    default:
      // llhttp's reason is a fixed phrase ("Duplicate Content-Length", "Invalid method"), never request data.
      return err.code?.startsWith('HPE_') ? { status: 400, message: `Malformed HTTP request: ${err.reason ?? err.code}` } : undefined;
  }
}

/**
 * The http server's `clientError` handler: a request Node's parser refuses before any route sees
 * it (a garbage request line, Content-Length with Transfer-Encoding, a duplicate Content-Length,
 * headers over 16 KB, a request not received in time) gets the same JSON error shape as every
 * other error, then the connection is closed. Nothing is written when a response on that
 * connection has already started (it would corrupt it). The raw packet is never logged: it may
 * hold an Authorization header.
 */
export function clientErrorHandler(logger: Logger, responseStarted: (socket: Duplex) => boolean) {
  return (err: NodeJS.ErrnoException & { reason?: string }, socket: Duplex): void => {
    const answer = clientErrorAnswer(err);
    logger.debug({ code: err.code, status: answer?.status }, 'client error');
    if (!answer || !socket.writable || responseStarted(socket)) {
      socket.destroy();
      return;
    }
    const body = JSON.stringify({ message: answer.message });
    socket.end(
      `HTTP/1.1 ${answer.status} ${STATUS_CODES[answer.status]}\r\n` +
        'Content-Type: application/json; charset=utf-8\r\n' +
        `Content-Length: ${Buffer.byteLength(body)}\r\n` +
        'Connection: close\r\n\r\n' +
        body,
      () => socket.destroy(),
    );
  };
}
