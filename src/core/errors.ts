/**
 * Domain errors. Services throw these without knowing about HTTP; `toHttp` in
 * src/http/middleware/error-handler.ts maps each one to a status and a body in one place.
 */

export interface FieldError {
  field: string;
  code: string;
}

export class DomainError extends Error {}

/** 404 `No <thing> found`. `thing` is the API's own word: pipeline, build, organization... */
export class NotFoundError extends DomainError {
  constructor(readonly thing: string) {
    super(`No ${thing} found`);
  }
}

/** 404 for a webhook delivery to a token no pipeline has: the token is the credential, so it counts as a failed authentication. */
export class WebhookTokenError extends NotFoundError {
  constructor() {
    super('pipeline');
  }
}

/** 404 `Pipeline trigger not found` (the docs' words) for a `bktr_` token no trigger has; a failed authentication as WebhookTokenError. */
export class TriggerTokenError extends WebhookTokenError {
  constructor() {
    super();
    this.message = 'Pipeline trigger not found';
  }
}

/** 422 `Validation Failed` with one entry per field at fault. */
export class ValidationError extends DomainError {
  constructor(
    readonly errors: FieldError[],
    message = 'Validation Failed',
  ) {
    super(message);
  }
  static field(field: string, code: string): ValidationError {
    return new ValidationError([{ field, code }]);
  }
}

/** 422 with a reason and no field (e.g. `Pipeline could not be archived.`). */
export class UnprocessableError extends DomainError {}

/** 413 with a reason: what the request would store is over a size cap (e.g. a job's log). */
export class PayloadTooLargeError extends DomainError {}

/** 409: the request conflicts with the current state of a resource. */
export class ConflictError extends DomainError {}

/** 403. `scope` set: the token lacks that scope; otherwise a plain `Forbidden`. */
export class ForbiddenError extends DomainError {
  constructor(readonly scope?: string) {
    super(scope ? `Your access token doesn't have the ${scope} scope` : 'Forbidden');
  }
}

/** 403 with its own reason: a rule does not allow what was asked (src/rules/policy.ts, a step's `allowed_teams`). */
export class RefusedError extends ForbiddenError {
  constructor(reason: string) {
    super();
    this.message = reason;
  }
}

/** 401 for a missing, malformed, expired or revoked credential. */
export class UnauthorizedError extends DomainError {}

/** 401 of the upload API, whose credential is a test suite's API token, not an access token. */
export class SuiteTokenError extends UnauthorizedError {}
/** 401 for an agent API call without a valid registration or agent token. */
export class AgentTokenError extends UnauthorizedError {}
/** 401 for a webhook delivery whose signature or token does not match: the message says which header. */
export class SignatureError extends DomainError {}

/** 400 for a malformed query (bad per_page, unknown state value...). */
export class BadRequestError extends DomainError {}

/** 503: a dependency (the database) cannot be reached right now. */
export class UnavailableError extends DomainError {
  constructor(
    message = 'Service temporarily unavailable, please retry',
    readonly retryAfterSeconds = 5,
  ) {
    super(message);
  }
}

/** 429, with the body and headers of the real API. */
export class RateLimitedError extends DomainError {
  constructor(
    readonly scope: string,
    readonly limit: number,
    readonly current: number,
    readonly resetSeconds: number,
    message = `You have exceeded your API rate limit. Please wait ${resetSeconds} seconds before making more requests.`,
  ) {
    super(message);
  }
}

/** 403 for a request from an address outside its organization's API IP allow-list (its API settings). */
export class IpNotAllowedError extends ForbiddenError {
  constructor(address: string) {
    super();
    this.message = `Your IP address (${address}) isn't allowed to access this organization's API`;
  }
}
